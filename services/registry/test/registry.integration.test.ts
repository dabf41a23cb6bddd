import { create, fromBinary, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { Code, ConnectError } from "@toolmesh/errors";
import { buckets, subjects } from "@toolmesh/nats";
import {
  AuditAction,
  ChangeType,
  GrantSchema,
  RegistryChangedSchema,
  RegistryService,
  SchemaFormat,
  type ToolSpecSchema,
  WatchEventType,
} from "@toolmesh/proto";
import {
  allowSpec,
  failure,
  lastRecordWritten,
  type OneService,
  startOneService,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

function spec(
  name: string,
  description = `The ${name} tool`,
): MessageInitShape<typeof ToolSpecSchema> {
  return {
    name,
    description,
    category: "data",
    inputSchema: { type: "object", properties: { sql: { type: "string" } }, required: ["sql"] },
    requiredScopes: ["read:data"],
    runtime: { kind: { case: "grpc", value: { address: "127.0.0.1:7200" } } },
  };
}

describe("registry service process", () => {
  let registry: OneService;
  const headers: Record<string, { headers: { authorization: string } }> = {};

  const transports: Record<string, () => Transport> = {
    grpc: () => createGrpcTransport({ baseUrl: registry.url }),
    connect: () =>
      createConnectTransport({ baseUrl: registry.url, httpVersion: "1.1", useBinaryFormat: false }),
  };
  const client = (kind = "grpc") =>
    createClient(RegistryService, (transports[kind] as () => Transport)());

  beforeAll(async () => {
    registry = await startOneService("registry", { reconnect: true });
    headers.admin = await registry.bearer("ops", ["admin"]);
    headers.service = await registry.bearer("dispatcher", ["service"]);
    headers.agent = await registry.bearer("agent-7", ["agent"], "user-1");
  });
  afterAll(async () => {
    await registry?.stop();
  });
  const as = (who: string) => headers[who] as { headers: { authorization: string } };

  for (const kind of ["grpc", "connect"]) {
    it(`registers, reads, lists and exports over ${kind}`, async () => {
      const c = client(kind);
      const name = `${kind}.query`;
      const { tool } = await c.registerTool({ tool: spec(name) }, as("admin"));
      expect(tool?.spec?.version).toBe("1");
      expect(tool?.schemaHash).toMatch(/^[0-9a-f]{64}$/);
      expect((await c.getTool({ name }, as("admin"))).tool?.spec?.description).toBe(
        `The ${name} tool`,
      );
      const listed = await c.listTools({ keyword: kind }, as("service"));
      expect(listed.tools.map((t) => t.spec?.name)).toEqual([name]);
      const exported = await c.exportToolSchemas(
        { format: SchemaFormat.OPENAI, names: [name] },
        as("admin"),
      );
      expect(exported.tools[0]?.exportedName).toBe(`${kind}__query`);
      const bad = await failure(
        c.registerTool(
          {
            tool: {
              ...spec(`${kind}.bad`),
              inputSchema: { type: "object", properties: { a: { type: "nope" } } },
            },
          },
          as("admin"),
        ),
      );
      expect(bad.code).toBe(Code.InvalidArgument);
      expect(bad.rawMessage).toContain("tool.input_schema: does not compile (ajv, strict mode)");
      const unauthenticated = await failure(c.listTools({}));
      expect(unauthenticated.code).toBe(Code.Unauthenticated);
      expect(unauthenticated.rawMessage).toContain("authorization: Bearer");
      const badToken = await failure(
        c.listTools({}, { headers: { authorization: "Bearer a.b.c" } }),
      );
      expect(badToken.code).toBe(Code.Unauthenticated);
      const denied = await failure(c.registerTool({ tool: spec(`${kind}.agent`) }, as("agent")));
      expect(denied.code).toBe(Code.PermissionDenied);
      expect(denied.rawMessage).toBe(
        "RegisterTool needs the role admin or tool-agent; your token has the roles agent",
      );
    });
  }

  it("publishes RegistryChanged and an admin AuditRecord for each write", async () => {
    await client().registerTool({ tool: spec("events.tool") }, as("admin"));
    const { jsm } = registry;
    const changed = await jsm.streams.getMessage("TOOLMESH_CHANGES", {
      last_by_subj: subjects.registryChanged("tool", "events.tool"),
    });
    expect(fromBinary(RegistryChangedSchema, changed.data)).toMatchObject({
      type: ChangeType.PUT,
      kind: "tool",
      name: "events.tool",
      changedBy: "ops",
    });
    expect(await lastRecordWritten(jsm, "registry")).toMatchObject({
      action: AuditAction.ADMIN,
      tool: "events.tool",
      agentId: "ops",
      reason: "register tool",
      source: "registry",
    });
  });

  it("gives exactly one ALREADY_EXISTS-free winner when registrations race", async () => {
    const c = client();
    const results = await Promise.allSettled(
      Array.from({ length: 5 }, () => c.registerTool({ tool: spec("race.tool") }, as("admin"))),
    );
    const codes = results.map((r) =>
      r.status === "fulfilled" ? "ok" : ConnectError.from(r.reason).code,
    );
    expect(codes.filter((x) => x === "ok")).toHaveLength(1);
    expect(codes.filter((x) => x === Code.AlreadyExists)).toHaveLength(4);
  });

  it("refuses a stale expected_revision with ABORTED", async () => {
    const c = client("connect");
    await c.registerTool({ tool: spec("cas.tool") }, as("admin"));
    const updated = await c.updateTool(
      { tool: spec("cas.tool", "second"), expectedRevision: 1n },
      as("admin"),
    );
    expect(updated.tool?.revision).toBe(2n);
    expect(updated.tool?.spec?.version).toBe("2");
    const racing = await Promise.allSettled(
      ["a", "b", "c"].map((d) =>
        c.updateTool({ tool: spec("cas.tool", d), expectedRevision: 2n }, as("admin")),
      ),
    );
    expect(racing.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    for (const r of racing.filter((r) => r.status === "rejected"))
      expect(ConnectError.from((r as PromiseRejectedResult).reason).code).toBe(Code.Aborted);
    const stale = await failure(
      c.updateTool({ tool: spec("cas.tool", "third"), expectedRevision: 1n }, as("admin")),
    );
    expect(stale.code).toBe(Code.Aborted);
    const kept = (await c.getTool({ name: "cas.tool" }, as("admin"))).tool;
    expect(kept?.revision).toBe(3n);
    expect(["a", "b", "c"]).toContain(kept?.spec?.description);
  });

  it("WatchTools streams the snapshot, SNAPSHOT_END and then changes", async () => {
    const c = client();
    const abort = new AbortController();
    const stream = c
      .watchTools({}, { ...as("service"), signal: abort.signal })
      [Symbol.asyncIterator]();
    const snapshot: string[] = [];
    for (;;) {
      const { value } = await stream.next();
      if (value.type === WatchEventType.SNAPSHOT_END) break;
      expect(value.type).toBe(WatchEventType.SNAPSHOT);
      snapshot.push(value.name);
    }
    const listed = await c.listTools({ pageSize: 500 }, as("admin"));
    expect(snapshot.sort()).toEqual(listed.tools.map((t) => t.spec?.name ?? "").sort());
    await c.registerTool({ tool: spec("watch.tool") }, as("admin"));
    expect((await stream.next()).value).toMatchObject({
      type: WatchEventType.PUT,
      name: "watch.tool",
    });
    await c.deregisterTool({ name: "watch.tool" }, as("admin"));
    expect((await stream.next()).value).toMatchObject({
      type: WatchEventType.DELETE,
      name: "watch.tool",
    });
    const again = await c.registerTool({ tool: spec("watch.tool") }, as("admin"));
    expect(again.tool?.spec?.version).toBe("2");
    expect((await stream.next()).value).toMatchObject({
      type: WatchEventType.PUT,
      name: "watch.tool",
    });
    abort.abort();
    await expect(stream.next()).rejects.toMatchObject({ code: Code.Canceled });
    const agentWatch = await failure(
      (async () => {
        for await (const _ of c.watchTools({}, as("agent"))) break;
      })(),
    );
    expect(agentWatch.code).toBe(Code.PermissionDenied);
  });

  it("an agent sees nothing without grants, then only the tools a grant allows", async () => {
    const c = client("connect");
    await c.registerTool({ tool: spec("granted.query") }, as("admin"));
    await c.registerTool({ tool: spec("secret.query") }, as("admin"));
    expect((await c.listTools({}, as("agent"))).tools).toEqual([]);
    const hidden = await failure(c.getTool({ name: "secret.query" }, as("agent")));
    expect(hidden.code).toBe(Code.NotFound);
    expect(hidden.rawMessage).toBe('tool "secret.query" not found; no tools are available to you');

    // The grant as the Permission service stores it: its bucket, key grants.<id>, binary Grant.
    const kv = await registry.nc.jetstream().views.kv(buckets.permission.name, { history: 5 });
    const grant = create(GrantSchema, {
      id: "g-agent-7",
      spec: allowSpec("agent:agent-7", "tool:granted.query", ["read:data"]),
    });
    // The agent acts for user-1, and both must be allowed: one grant each.
    const userGrant = create(GrantSchema, {
      id: "g-user-1",
      spec: allowSpec("user:user-1", "glob:**", ["*"]),
    });
    await kv.put(buckets.permission.grantKey(grant.id), toBinary(GrantSchema, grant));
    await kv.put(buckets.permission.grantKey(userGrant.id), toBinary(GrantSchema, userGrant));
    // The registry binds the bucket once it appears (it polls every 500 ms), then decides locally.
    await expect
      .poll(async () => (await c.listTools({}, as("agent"))).tools.map((t) => t.spec?.name), {
        timeout: 10_000,
        interval: 100,
      })
      .toEqual(["granted.query"]);
    expect((await c.getTool({ name: "granted.query" }, as("agent"))).tool?.spec?.name).toBe(
      "granted.query",
    );
    expect((await failure(c.getTool({ name: "secret.query" }, as("agent")))).code).toBe(
      Code.NotFound,
    );
    const exported = await c.exportToolSchemas({ format: SchemaFormat.MCP }, as("agent"));
    expect(exported.tools.map((t) => t.tool)).toEqual(["granted.query"]);
  });

  it("keeps every tool and group across a service restart", async () => {
    const c = client();
    await c.registerTool({ tool: spec("restart.a") }, as("admin"));
    await c.registerTool({ tool: spec("restart.b") }, as("admin"));
    await c.putGroup(
      { group: { name: "restart", tools: ["restart.b", "restart.a"], example: "b then a" } },
      as("admin"),
    );
    const before = await c.listTools({ pageSize: 500 }, as("admin"));

    expect(await registry.process.stop()).toBe(0);
    await registry.start();

    const after = await client().listTools({ pageSize: 500 }, as("admin"));
    expect(after.tools).toEqual(before.tools);
    const group = (await client().getGroup({ name: "restart" }, as("admin"))).group;
    expect(group?.tools).toEqual(["restart.b", "restart.a"]);
    expect(group?.example).toBe("b then a");
    const updated = await client().updateTool({ tool: spec("restart.a", "changed") }, as("admin"));
    expect(updated.tool?.spec?.version).toBe("2");
    expect(updated.tool?.groups).toEqual(["restart"]);
  });

  it("keeps the store across a NATS restart and keeps serving writes after it", async () => {
    const before = await client().listTools({ pageSize: 500 }, as("admin"));
    await registry.nats.stop();
    await registry.nats.start();
    // Writes succeed once the service has reconnected; until then they fail, never hang.
    await expect
      .poll(
        async () => {
          try {
            await client().registerTool({ tool: spec("after.nats.restart") }, as("admin"));
            return "registered";
          } catch (error) {
            return ConnectError.from(error).code === Code.AlreadyExists ? "registered" : "retry";
          }
        },
        { timeout: 20_000, interval: 200 },
      )
      .toBe("registered");
    expect(
      (await client().getTool({ name: "after.nats.restart" }, as("admin"))).tool?.spec?.name,
    ).toBe("after.nats.restart");
    const after = await client().listTools({ pageSize: 500 }, as("admin"));
    expect(after.tools.map((t) => t.spec?.name)).toEqual(
      [...before.tools.map((t) => t.spec?.name), "after.nats.restart"].sort(),
    );
  });
});
