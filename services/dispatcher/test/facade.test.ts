import { AuditAction, CallStatus } from "@toolmesh/proto";
import { eventually } from "@toolmesh/testkit";
import { startedForFile } from "@toolmesh/testkit/hooks";
import { describe, expect, it } from "vitest";
import { startSurfaces } from "./surfaces-fixture.js";

// The plain HTTP facade (GET /health, GET /tools, POST /run_tool) and exported tool names,
// against real processes (surfaces-fixture.ts), each call leaving the same records as Dispatch.
describe("agent surfaces", () => {
  const s = startedForFile(startSurfaces);

  it("facade: GET /health needs no credential; GET /tools and POST /run_tool need one", async () => {
    // SERVING once the registry and grant snapshots are loaded (calls would fail closed before).
    const health = await eventually(async () => {
      const res = await fetch(s.url("/health"));
      if (res.status !== 200) throw new Error(`health answered ${res.status}`);
      return res;
    });
    expect(await health.json()).toEqual({ status: "SERVING" });

    const anonymous = await fetch(s.url("/tools"));
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ code: "unauthenticated" });

    const table = await fetch(s.url("/tools"), { headers: s.bearer(s.agent) });
    expect(table.status).toBe(200);
    const body = (await table.json()) as {
      runtimes: { kind: string; tool_count: number }[];
      tools: { name: string; runtime: string; state: string; side_effects: boolean }[];
    };
    expect(body.tools.map((t) => t.name)).toEqual(["data.echo", "data.fail", "mail.send"]);
    expect(body.runtimes).toEqual([{ kind: "grpc", tool_count: 3 }]);
    expect(body.tools[2]).toMatchObject({ runtime: "grpc", side_effects: true, state: "EXTERNAL" });
  });

  it("facade: POST /run_tool runs the chain and leaves the same records as Dispatch", async () => {
    const viaDispatch = await s.stack
      .dispatcherClient()
      .dispatch({ tool: "data.echo", arguments: { text: "same-a" } }, s.stack.as(s.agent));
    expect(viaDispatch.status).toBe(CallStatus.SUCCESS);
    const res = await fetch(s.url("/run_tool"), {
      method: "POST",
      headers: { ...s.bearer(s.agent), "content-type": "application/json" },
      body: JSON.stringify({ tool_id: "data.echo", params: { text: "same-b" } }),
    });
    expect(res.status).toBe(200);
    const out = (await res.json()) as Record<string, unknown>;
    expect(out).toMatchObject({ status: "CALL_STATUS_SUCCESS", output: { text: "same-b" } });
    expect(out.call_id).toEqual(expect.any(String));
    const a = await s.recordsOf(s.byText("same-a"));
    const b = await s.recordsOf(s.byText("same-b"));
    expect(b).toEqual({
      ...a,
      audit: { ...a.audit, arguments: { text: "same-b" } },
      outcome: { ...a.outcome, output: { text: "same-b" } },
    });
  });

  it("facade: errors are JSON with the RPC's code and details; refusals are recorded", async () => {
    const post = (body: string) =>
      fetch(s.url("/run_tool"), {
        method: "POST",
        headers: { ...s.bearer(s.agent), "content-type": "application/json" },
        body,
      });
    const bad = await post(
      JSON.stringify({ tool_id: "data.echo", params: { text: "", limit: 0 } }),
    );
    expect(bad.status).toBe(400);
    const error = (await bad.json()) as {
      code: string;
      message: string;
      details: { type: string; debug: unknown }[];
    };
    expect(error.code).toBe("invalid_argument");
    expect(error.message).toContain("- /limit: must be >= 1");
    expect(error.details[0]?.type).toBe("toolmesh.common.v1.ValidationFailure");
    const unknown = await post(JSON.stringify({ tool_id: "data.nope", params: {} }));
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { message: string }).message).toContain("data.echo");
    expect((await post("{not json")).status).toBe(400);
    expect((await post(JSON.stringify({ params: {} }))).status).toBe(400);
    const refused = await s.recordsOf((a) => a.tool === "data.nope");
    expect(refused.audit).toMatchObject({
      action: AuditAction.TOOL_REFUSED,
      status: CallStatus.REFUSED,
    });
    const wrongMethod = await fetch(s.url("/run_tool"), { headers: s.bearer(s.agent) });
    expect(wrongMethod.status).toBe(405);
  });

  it("Dispatch and DispatchBatch accept exported names (data__query style)", async () => {
    const res = await s.stack
      .dispatcherClient()
      .dispatch({ tool: "data__echo", arguments: { text: "exported" } }, s.stack.as(s.agent));
    expect(res.status).toBe(CallStatus.SUCCESS);
    const records = await s.recordsOf(s.byText("exported"));
    expect(records.audit.tool).toBe("data.echo");
  });
});
