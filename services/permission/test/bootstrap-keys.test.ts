import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { createApiKeyVerifier, toolAgentIdentity } from "@toolmesh/auth";
import { createLogger } from "@toolmesh/log";
import { ChangeType } from "@toolmesh/proto";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { bootstrapKeys } from "../src/bootstrap.js";
import { RecordedPermissionEvents } from "../src/events.js";
import { MemoryPermissionStore } from "../src/memory-store.js";

// The first-start bootstrap over the in-memory store: token files, the keys they hold, what is
// announced and logged, and that a second start leaves everything as it was.
describe("bootstrapKeys (in memory)", () => {
  let dataDir: string;
  let store: MemoryPermissionStore;
  let events: RecordedPermissionEvents;
  const lines: string[] = [];
  const log = createLogger(
    "permission-test",
    "info",
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(String(chunk));
        done();
      },
    }),
  );

  beforeEach(async () => {
    dataDir = path.join(await mkdtemp(path.join(tmpdir(), "toolmesh-bootstrap-")), "data");
    store = new MemoryPermissionStore();
    events = new RecordedPermissionEvents();
    lines.length = 0;
  });
  afterEach(async () => {
    await rm(path.dirname(dataDir), { recursive: true, force: true });
  });

  it("writes an admin and a service token (mode 0600) that authenticate with their roles", async () => {
    await bootstrapKeys({ store, events, dataDir, log });
    const verify = createApiKeyVerifier(store.keys);
    const principals = [];
    for (const name of ["admin.token", "service.token"]) {
      const file = path.join(dataDir, name);
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      principals.push(verify((await readFile(file, "utf8")).trim()));
    }
    expect(principals.map((p) => [p.agentId, p.roles])).toEqual([
      ["admin", ["admin"]],
      ["toolmesh-service", ["service", "knowhub"]],
    ]);
    const announced = events.changes.slice(0, 2);
    expect(announced.map((c) => [c.by.agentId, c.change.type, c.change.reason])).toEqual([
      [
        "toolmesh-bootstrap",
        ChangeType.PUT,
        `bootstrapped admin API key ${principals[0]?.keyId} for agent "admin"`,
      ],
      [
        "toolmesh-bootstrap",
        ChangeType.PUT,
        `bootstrapped service, knowhub API key ${principals[1]?.keyId} for agent "toolmesh-service"`,
      ],
    ]);
    const logged = lines.join("");
    expect(logged).toContain(path.join(dataDir, "admin.token"));
    for (const name of ["admin.token", "service.token"]) {
      const token = (await readFile(path.join(dataDir, name), "utf8")).trim();
      expect(logged).not.toContain(token.slice(-43));
    }
  });

  it("gives the tool agent its key and the CodingAgent a key with one grant: the coding tools", async () => {
    await bootstrapKeys({ store, events, dataDir, log });
    const verify = createApiKeyVerifier(store.keys);
    const read = async (name: string) => {
      const file = path.join(dataDir, name);
      expect((await stat(file)).mode & 0o777).toBe(0o600);
      return verify((await readFile(file, "utf8")).trim());
    };
    const toolAgent = await read(toolAgentIdentity.tokenFile);
    const coding = await read(toolAgentIdentity.codingTokenFile);
    expect([toolAgent.agentId, toolAgent.roles]).toEqual(["toolmesh-tool-agent", ["tool-agent"]]);
    expect([coding.agentId, coding.roles]).toEqual(["toolmesh-coding-agent", ["agent"]]);
    const decide = (name: string, scopes: string[]) =>
      store.policy.decide(coding, { name, requiredScopes: scopes, groups: [] }).allowed;
    expect(decide("coding.write_file", ["build:tools"])).toBe(true);
    expect(decide("data.query", [])).toBe(false);
    expect(decide("coding.write_file", ["write:data"])).toBe(false);
    expect(events.changes.at(-1)?.change.reason).toMatch(
      /^bootstrapped grant [0-9a-f]+: allow agent "toolmesh-coding-agent" scope build:tools on coding\.\*$/,
    );
  });

  it("does nothing on a later start: same files, no new keys, no events", async () => {
    await bootstrapKeys({ store, events, dataDir, log });
    const admin = await readFile(path.join(dataDir, "admin.token"), "utf8");
    await bootstrapKeys({ store, events, dataDir, log });
    expect(await readFile(path.join(dataDir, "admin.token"), "utf8")).toBe(admin);
    expect(store.keys.size).toBe(4);
    expect(events.changes).toHaveLength(5);
    expect(lines.at(-1)).toContain("admin key already bootstrapped");
  });
});
