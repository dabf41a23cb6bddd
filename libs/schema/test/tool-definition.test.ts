import { clone, create } from "@bufbuild/protobuf";
import { ToolSchema, ToolSpecSchema } from "@toolmesh/proto";
import { describe, expect, it } from "vitest";
import { pinBroken, recordDefinition, TOOL_HISTORY_LIMIT } from "../src/index.js";

function registered() {
  const tool = create(ToolSchema, {
    revision: 1n,
    spec: create(ToolSpecSchema, {
      name: "data.query",
      version: "1",
      description: "Queries data.",
      inputSchema: { type: "object" },
      runtime: { kind: { case: "grpc", value: { address: "127.0.0.1:7200" } } },
    }),
  });
  recordDefinition(tool, undefined);
  return tool;
}

/** The tool after an update that `change`s its spec. */
function updated(
  previous: ReturnType<typeof registered>,
  change: (spec: NonNullable<typeof previous.spec>) => void,
) {
  const tool = clone(ToolSchema, previous);
  tool.revision = previous.revision + 1n;
  if (tool.spec) {
    change(tool.spec);
    tool.spec.version = String(tool.revision);
  }
  recordDefinition(tool, previous);
  return tool;
}

describe("tool definitions", () => {
  it("keeps a local tool's definition when only its instances change, not its command", () => {
    const local = (value: Record<string, unknown>) =>
      create(ToolSpecSchema, { runtime: { kind: { case: "local", value: value as never } } })
        .runtime;
    const first = updated(registered(), (s) => {
      s.runtime = local({ command: "node" });
    });
    const warm = updated(first, (s) => {
      s.runtime = local({
        command: "node",
        minInstances: 1,
        maxInstances: 2,
        warmHours: [{ startHour: 8, endHour: 18 }],
        healthIntervalMs: 500,
      });
    });
    expect(warm.definitionHash).toBe(first.definitionHash);
    expect(pinBroken(warm, first.definitionHash)).toBeUndefined();
    const moved = updated(warm, (s) => {
      s.runtime = local({ command: "python3", minInstances: 1, maxInstances: 2 });
    });
    expect(moved.definitionHash).not.toBe(first.definitionHash);
    expect(moved.history.at(-1)?.changed).toEqual(["runtime"]);
  });

  it("names each part that changed since a pinned definition", () => {
    const first = registered();
    const pin = first.definitionHash;
    expect(pinBroken(first, pin)).toBeUndefined();
    const second = updated(first, (s) => {
      s.description = "Queries data and mails it.";
    });
    expect(second.history.at(-1)?.changed).toEqual(["description"]);
    const third = updated(second, (s) => {
      s.runtime = create(ToolSpecSchema, {
        runtime: { kind: { case: "remote", value: { url: "https://elsewhere.example" } } },
      }).runtime;
    });
    expect(pinBroken(third, pin)).toBe(
      "its description, runtime changed since version 1 (revision 1); now version 3 (revision 3)",
    );
    // The schemas never changed: a schema pin still holds.
    expect(
      pinBroken(third, first.schemaHash || third.history[0]?.schemaHash || ""),
    ).toBeUndefined();
  });

  it("leaves history alone when only other fields change, and keeps at most the limit", () => {
    let tool = registered();
    const pin = tool.definitionHash;
    const same = updated(tool, (s) => {
      s.category = "other";
    });
    expect(same.history).toHaveLength(1);
    expect(same.definitionHash).toBe(pin);
    for (let i = 0; i < TOOL_HISTORY_LIMIT + 2; i++)
      tool = updated(tool, (s) => {
        s.description = `version ${i}`;
      });
    expect(tool.history).toHaveLength(TOOL_HISTORY_LIMIT);
    expect(pinBroken(tool, pin)).toContain(`not among the last ${TOOL_HISTORY_LIMIT}`);
  });
});
