import type { MessageInitShape } from "@bufbuild/protobuf";
import { createClient, createRouterTransport } from "@connectrpc/connect";
import { authInterceptor, principal } from "@toolmesh/auth";
import { Code, ConnectError } from "@toolmesh/errors";
import { createLogger } from "@toolmesh/log";
import {
  ChangeType,
  RegistryService,
  RuntimeKind,
  SchemaFormat,
  type ToolSpecSchema,
  ToolStatus,
  WatchEventType,
} from "@toolmesh/proto";
import { schemaHash, ValidatorCache } from "@toolmesh/schema";
import { failure } from "@toolmesh/testkit";
import { beforeEach, describe, expect, it } from "vitest";
import { RecordedEvents } from "../src/events.js";
import { createRegistryHandlers } from "../src/handlers.js";
import { MemoryRegistryStore } from "../src/memory-store.js";
import { denyAll, type ToolVisibility } from "../src/visibility.js";

type Spec = MessageInitShape<typeof ToolSpecSchema>;

/** A valid spec; tests override one field at a time. */
function spec(name: string, overrides: Record<string, unknown> = {}): Spec {
  return {
    name,
    description: `The ${name} tool`,
    category: "data",
    inputSchema: { type: "object", properties: { q: { type: "string" } }, required: ["q"] },
    requiredScopes: ["read:data"],
    runtime: { kind: { case: "grpc", value: { address: "127.0.0.1:7200" } } },
    ...overrides,
  } as Spec;
}

const tokens: Record<string, ReturnType<typeof principal>> = {
  admin: principal("ops", ["admin"]),
  service: principal("dispatcher", ["service"]),
  agent: principal("agent-7", ["agent"], "user-1"),
  toolAgent: principal("toolmesh-tool-agent", ["tool-agent"]),
};
const auth = (token: keyof typeof tokens) => ({ headers: { authorization: `Bearer ${token}` } });
const admin = auth("admin");
const agent = auth("agent");

function setup(visibility: ToolVisibility = denyAll) {
  const store = new MemoryRegistryStore();
  const events = new RecordedEvents();
  const shutdown = new AbortController();
  const transport = createRouterTransport(
    (router) => {
      router.service(
        RegistryService,
        createRegistryHandlers({
          store,
          events,
          visibility,
          validators: new ValidatorCache(),
          log: createLogger("test", "silent"),
          shutdownSignal: shutdown.signal,
        }),
      );
    },
    {
      router: {
        interceptors: [
          authInterceptor(async (token) => {
            const p = tokens[token];
            if (!p) throw new ConnectError("bearer token rejected", Code.Unauthenticated);
            return p;
          }),
        ],
      },
    },
  );
  return { store, events, shutdown, client: createClient(RegistryService, transport) };
}

describe("RegisterTool", () => {
  let ctx: ReturnType<typeof setup>;
  beforeEach(() => {
    ctx = setup();
  });

  it("stores the spec with derived fields and announces the write", async () => {
    const { tool } = await ctx.client.registerTool({ tool: spec("data.query") }, admin);
    expect(tool?.spec?.name).toBe("data.query");
    expect(tool?.spec?.version).toBe("1");
    expect(tool?.spec?.status).toBe(ToolStatus.ACTIVE);
    expect(tool?.revision).toBe(1n);
    expect(tool?.updatedBy).toBe("ops");
    expect(tool?.schemaHash).toBe(schemaHash(spec("data.query").inputSchema, undefined));
    expect(tool?.schemaHash).toMatch(/^[0-9a-f]{64}$/);
    expect(ctx.events.writes).toMatchObject([
      { type: ChangeType.PUT, kind: "tool", name: "data.query", reason: "register tool" },
    ]);
    const { tool: read } = await ctx.client.getTool({ name: "data.query" }, admin);
    expect(read?.spec?.description).toBe("The data.query tool");
  });

  it("keeps an explicit version", async () => {
    const { tool } = await ctx.client.registerTool(
      { tool: spec("data.query", { version: "2.1.0" }) },
      admin,
    );
    expect(tool?.spec?.version).toBe("2.1.0");
  });

  it("refuses a name that exists with ALREADY_EXISTS, also when two race", async () => {
    const results = await Promise.allSettled([
      ctx.client.registerTool({ tool: spec("data.query") }, admin),
      ctx.client.registerTool({ tool: spec("data.query") }, admin),
    ]);
    const rejected = results.filter((r) => r.status === "rejected");
    expect(rejected).toHaveLength(1);
    const error = ConnectError.from((rejected[0] as PromiseRejectedResult).reason);
    expect(error.code).toBe(Code.AlreadyExists);
    expect(error.rawMessage).toBe(
      'tool "data.query" already exists; use UpdateTool to change it, or DeregisterTool first',
    );
    expect(ctx.events.writes).toHaveLength(1);
  });

  const badInputs: [string, Record<string, unknown>, string][] = [
    ["an empty name", { name: "" }, "tool.name: is required"],
    [
      "a name over 64 characters",
      { name: `a${"b".repeat(64)}` },
      "tool.name: is 65 characters; at most 64 allowed",
    ],
    ["an upper-case name", { name: "Data.query" }, 'tool.name: "Data.query" is not a valid name'],
    ["a name starting with a digit", { name: "1tool" }, 'tool.name: "1tool" is not a valid name'],
    ["a name with ..", { name: "data..query" }, 'tool.name: "data..query" is not a valid name'],
    ["a name ending in a dot", { name: "data." }, 'tool.name: "data." is not a valid name'],
    ["a name with a space", { name: "data query" }, 'tool.name: "data query" is not a valid name'],
    ["no description", { description: "  " }, "tool.description: is required"],
    [
      "a description over 4 KiB",
      { description: "x".repeat(4097) },
      "tool.description: is 4097 bytes; at most 4096 allowed",
    ],
    ["a version over 64 characters", { version: "v".repeat(65) }, "tool.version: is 65 characters"],
    [
      "a category over 64 characters",
      { category: "c".repeat(65) },
      "tool.category: is 65 characters",
    ],
    [
      "no input schema",
      { inputSchema: undefined },
      'tool.input_schema: is required: a JSON Schema with "type": "object"',
    ],
    [
      "a non-object input schema",
      { inputSchema: { type: "string" } },
      'tool.input_schema: must be an object schema: set "type": "object"',
    ],
    [
      "an input schema with an unknown keyword",
      { inputSchema: { type: "object", foo: 1 } },
      'tool.input_schema: does not compile (ajv, strict mode): strict mode: unknown keyword: "foo"',
    ],
    [
      "an input schema with a bad type",
      { inputSchema: { type: "object", properties: { a: { type: "strin" } } } },
      "tool.input_schema: does not compile (ajv, strict mode): schema is invalid: data/properties/a/type must be equal to one of the allowed values",
    ],
    [
      "a required property that is not defined",
      { inputSchema: { type: "object", required: ["x"] } },
      'tool.input_schema: does not compile (ajv, strict mode): strict mode: required property "x" is not defined',
    ],
    [
      "an input schema over 64 KiB",
      { inputSchema: { type: "object", description: "d".repeat(70_000) } },
      "tool.input_schema: is 70034 bytes of JSON; at most 65536 allowed",
    ],
    [
      "an output schema that does not compile",
      { outputSchema: { type: "nope" } },
      "tool.output_schema: does not compile (ajv, strict mode)",
    ],
    [
      "a malformed scope",
      { requiredScopes: ["read"] },
      'tool.required_scopes[0]: "read" is not a scope; expected action:resource such as read:data',
    ],
    [
      "a scope listed twice",
      { requiredScopes: ["read:data", "read:data"] },
      "tool.required_scopes: lists a scope twice",
    ],
    [
      "33 scopes",
      { requiredScopes: Array.from({ length: 33 }, (_, i) => `read:s${i}`) },
      "tool.required_scopes: has 33 entries; at most 32 allowed",
    ],
    [
      "a timeout over 10 minutes",
      { timeoutMs: 600_001 },
      "tool.timeout_ms: is 600001; at most 600000 (10 minutes) allowed",
    ],
    [
      "11 retry attempts",
      { retryPolicy: { maxAttempts: 11 } },
      "tool.retry_policy.max_attempts: is 11; at most 10 allowed",
    ],
    [
      "a backoff over a minute",
      { retryPolicy: { maxAttempts: 2, initialBackoffMs: 60_001 } },
      "tool.retry_policy.initial_backoff_ms: is 60001; at most 60000 allowed",
    ],
    [
      "an initial backoff above the max",
      { retryPolicy: { maxAttempts: 2, initialBackoffMs: 500, maxBackoffMs: 100 } },
      "tool.retry_policy.initial_backoff_ms: is larger than max_backoff_ms",
    ],
    ["an empty knowhub slug", { knowhubSlugs: [""] }, "tool.knowhub_slugs[0]: is empty"],
    [
      "an approver role with a space",
      { approverRoles: ["pay approver"] },
      "tool.approver_roles[0]: must be 1-32 characters of a-z, 0-9, _ and -, starting with a letter",
    ],
    [
      "33 labels",
      { labels: Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`k${i}`, "v"])) },
      "tool.labels: has 33 entries; at most 32 allowed",
    ],
    [
      "a bad label key",
      { labels: { "Bad Key": "v" } },
      'tool.labels["Bad Key"]: key must be 1-63 lowercase letters',
    ],
    [
      "no runtime",
      { runtime: undefined },
      "tool.runtime: is required: set exactly one of grpc, local, remote, docker or mcp",
    ],
    [
      "an empty runtime",
      { runtime: {} },
      "tool.runtime: is required: set exactly one of grpc, local, remote, docker or mcp",
    ],
    [
      "an MCP runtime with both a URL and a command",
      {
        runtime: { kind: { case: "mcp", value: { url: "http://x/mcp", command: "x", tool: "t" } } },
      },
      "tool.runtime.mcp: set exactly one of url (streamable HTTP) and command (stdio)",
    ],
    [
      "an MCP runtime without the tool's name",
      { runtime: { kind: { case: "mcp", value: { url: "http://x/mcp" } } } },
      "tool.runtime.mcp.tool: is required",
    ],
    [
      "a gRPC runtime without address",
      { runtime: { kind: { case: "grpc", value: {} } } },
      "tool.runtime.grpc.address: is required: host:port",
    ],
    [
      "a gRPC address without port",
      { runtime: { kind: { case: "grpc", value: { address: "localhost" } } } },
      'tool.runtime.grpc.address: "localhost" is not host:port',
    ],
    [
      "a gRPC port out of range",
      { runtime: { kind: { case: "grpc", value: { address: "host:70000" } } } },
      'tool.runtime.grpc.address: "host:70000" is not host:port',
    ],
    [
      "a local runtime without command",
      { runtime: { kind: { case: "local", value: { command: " " } } } },
      "tool.runtime.local.command: is required: the executable to start",
    ],
    [
      "a local env name that is not a variable",
      { runtime: { kind: { case: "local", value: { command: "node", env: { "A-B": "1" } } } } },
      'tool.runtime.local.env["A-B"]: is not an environment variable name',
    ],
    [
      "a local http path without slash",
      { runtime: { kind: { case: "local", value: { command: "node", httpPath: "invoke" } } } },
      'tool.runtime.local.http_path: must start with "/"',
    ],
    [
      "65 local args",
      {
        runtime: {
          kind: {
            case: "local",
            value: { command: "node", args: Array.from({ length: 65 }, () => "a") },
          },
        },
      },
      "tool.runtime.local.args: has 65 entries; at most 64 allowed",
    ],
    [
      "a remote runtime without url",
      { runtime: { kind: { case: "remote", value: {} } } },
      "tool.runtime.remote.url: is required: an http:// or https:// URL",
    ],
    [
      "a remote ftp url",
      { runtime: { kind: { case: "remote", value: { url: "ftp://x/y" } } } },
      'tool.runtime.remote.url: "ftp://x/y" is not an http:// or https:// URL',
    ],
    [
      "a remote url that is not a URL",
      { runtime: { kind: { case: "remote", value: { url: "not a url" } } } },
      'tool.runtime.remote.url: "not a url" is not an http:// or https:// URL',
    ],
    [
      "a bad remote header name",
      {
        runtime: { kind: { case: "remote", value: { url: "https://x", headers: { "a b": "1" } } } },
      },
      'tool.runtime.remote.headers["a b"]: is not an HTTP header name',
    ],
  ];
  for (const [what, overrides, message] of badInputs) {
    it(`refuses ${what} with INVALID_ARGUMENT naming the field`, async () => {
      const error = await failure(
        ctx.client.registerTool({ tool: spec("data.query", overrides) }, admin),
      );
      expect(error.code).toBe(Code.InvalidArgument);
      expect(error.rawMessage).toContain(message);
      expect([...ctx.store.tools()]).toHaveLength(0);
      expect(ctx.events.writes).toHaveLength(0);
    });
  }

  it("refuses a request without a tool", async () => {
    const error = await failure(ctx.client.registerTool({}, admin));
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toBe("tool: is required");
  });

  it("accepts every runtime kind", async () => {
    await ctx.client.registerTool(
      {
        tool: spec("a.local", {
          runtime: {
            kind: {
              case: "local",
              value: { command: "node", args: ["tool.js"], env: { MODE: "x" } },
            },
          },
        }),
      },
      admin,
    );
    await ctx.client.registerTool(
      {
        tool: spec("a.remote", {
          runtime: {
            kind: {
              case: "remote",
              value: { url: "https://api.example.com/run", headers: { "x-api-key": "s3cret" } },
            },
          },
        }),
      },
      admin,
    );
    await ctx.client.registerTool(
      {
        tool: spec("a.docker", {
          runtime: {
            kind: {
              case: "docker",
              value: {
                image: "toolmesh/echo:1",
                env: { TOKEN: "s3cret" },
                resources: { memoryBytes: 64n * 1024n * 1024n, cpuMillis: 500, pids: 32 },
                secrets: [{ name: "github-token", env: "GITHUB_TOKEN" }],
              },
            },
          },
        }),
      },
      admin,
    );
    await ctx.client.registerTool(
      {
        tool: spec("a.v6", {
          runtime: { kind: { case: "grpc", value: { address: "[::1]:7200" } } },
        }),
      },
      admin,
    );
    await ctx.client.registerTool(
      {
        tool: spec("a.mcp", {
          runtime: {
            kind: {
              case: "mcp",
              value: { command: "npx", args: ["mcp-server"], tool: "echo", env: { KEY: "s3cret" } },
            },
          },
        }),
      },
      admin,
    );
    const { runtimes } = await ctx.client.listRuntimes({}, admin);
    expect(runtimes.map((r) => [r.kind, r.toolCount, r.tools])).toEqual([
      [RuntimeKind.GRPC, 1, ["a.v6"]],
      [RuntimeKind.LOCAL, 1, ["a.local"]],
      [RuntimeKind.REMOTE, 1, ["a.remote"]],
      [RuntimeKind.DOCKER, 1, ["a.docker"]],
      [RuntimeKind.MCP, 1, ["a.mcp"]],
    ]);
  });
});

describe("UpdateTool", () => {
  it("bumps version, revision and schema hash", async () => {
    const { client, events } = setup();
    const first = (await client.registerTool({ tool: spec("data.query") }, admin)).tool;
    const changed = spec("data.query", {
      inputSchema: {
        type: "object",
        properties: { q: { type: "string" }, limit: { type: "integer" } },
        required: ["q"],
      },
    });
    const second = (await client.updateTool({ tool: changed, expectedRevision: 1n }, admin)).tool;
    expect(second?.spec?.version).toBe("2");
    expect(second?.revision).toBe(2n);
    expect(second?.schemaHash).not.toBe(first?.schemaHash);
    expect(second?.createdAt).toEqual(first?.createdAt);
    const third = (await client.updateTool({ tool: changed }, admin)).tool;
    expect(third?.spec?.version).toBe("3");
    expect(third?.schemaHash).toBe(second?.schemaHash);
    expect(events.writes.map((w) => w.reason)).toEqual([
      "register tool",
      "update tool",
      "update tool",
    ]);
  });

  it("refuses a stale expected_revision with ABORTED and keeps the tool", async () => {
    const { client } = setup();
    await client.registerTool({ tool: spec("data.query") }, admin);
    await client.updateTool({ tool: spec("data.query", { description: "v2" }) }, admin);
    const error = await failure(
      client.updateTool(
        { tool: spec("data.query", { description: "v3" }), expectedRevision: 1n },
        admin,
      ),
    );
    expect(error.code).toBe(Code.Aborted);
    expect(error.rawMessage).toBe(
      'tool "data.query" is at revision 2, not 1; GetTool, reapply your change and retry',
    );
    expect((await client.getTool({ name: "data.query" }, admin)).tool?.spec?.description).toBe(
      "v2",
    );
  });

  it("refuses an unknown tool with NOT_FOUND and a hint", async () => {
    const { client } = setup();
    await client.registerTool({ tool: spec("data.query") }, admin);
    const error = await failure(client.updateTool({ tool: spec("data.querry") }, admin));
    expect(error.code).toBe(Code.NotFound);
    expect(error.rawMessage).toBe('tool "data.querry" not found; did you mean data.query?');
  });

  it("validates like RegisterTool", async () => {
    const { client } = setup();
    await client.registerTool({ tool: spec("data.query") }, admin);
    const error = await failure(
      client.updateTool({ tool: spec("data.query", { timeoutMs: 700_000 }) }, admin),
    );
    expect(error.code).toBe(Code.InvalidArgument);
    expect(error.rawMessage).toContain("tool.timeout_ms");
  });
});

describe("groups", () => {
  it("keep order and example, and drive Tool.groups", async () => {
    const { client } = setup();
    for (const name of ["data.query", "data.export", "mail.send"])
      await client.registerTool({ tool: spec(name) }, admin);
    const { group } = await client.putGroup(
      {
        group: {
          name: "reporting",
          description: "Query then export",
          tools: ["data.query", "data.export"],
          example: "query, then export the rows",
        },
      },
      admin,
    );
    expect(group?.tools).toEqual(["data.query", "data.export"]);
    expect(group?.updatedAt).toBeDefined();
    expect((await client.getGroup({ name: "reporting" }, admin)).group?.example).toBe(
      "query, then export the rows",
    );
    expect((await client.getTool({ name: "data.export" }, admin)).tool?.groups).toEqual([
      "reporting",
    ]);

    await client.putGroup(
      { group: { name: "reporting", tools: ["mail.send", "data.query"] } },
      admin,
    );
    expect((await client.getTool({ name: "data.export" }, admin)).tool?.groups).toEqual([]);
    expect((await client.getTool({ name: "mail.send" }, admin)).tool?.groups).toEqual([
      "reporting",
    ]);
    const filtered = await client.listTools({ group: "reporting" }, admin);
    expect(filtered.tools.map((t) => t.spec?.name)).toEqual(["data.query", "mail.send"]);

    await client.deleteGroup({ name: "reporting" }, admin);
    expect((await client.getTool({ name: "mail.send" }, admin)).tool?.groups).toEqual([]);
    const gone = await failure(client.getGroup({ name: "reporting" }, admin));
    expect(gone.code).toBe(Code.NotFound);
  });

  it("a tool registered later sees no stale groups; deregistering removes it from groups", async () => {
    const { client, events } = setup();
    await client.registerTool({ tool: spec("data.query") }, admin);
    await client.registerTool({ tool: spec("data.export") }, admin);
    await client.putGroup({ group: { name: "a", tools: ["data.query", "data.export"] } }, admin);
    await client.putGroup({ group: { name: "b", tools: ["data.query"] } }, admin);
    expect((await client.getTool({ name: "data.query" }, admin)).tool?.groups).toEqual(["a", "b"]);
    const res = await client.deregisterTool({ name: "data.query" }, admin);
    expect(res.removedFromGroups).toEqual(["a", "b"]);
    expect((await client.getGroup({ name: "a" }, admin)).group?.tools).toEqual(["data.export"]);
    expect((await client.getGroup({ name: "b" }, admin)).group?.tools).toEqual([]);
    expect(events.writes.filter((w) => w.type === ChangeType.DELETE).map((w) => w.name)).toEqual([
      "data.query",
    ]);
    const again = (await client.registerTool({ tool: spec("data.query") }, admin)).tool;
    expect(again?.groups).toEqual([]);
    expect(again?.spec?.version).toBe("2");
  });

  it("refuse unknown tools, duplicates and bad names", async () => {
    const { client, store } = setup();
    await client.registerTool({ tool: spec("data.query") }, admin);
    const unknown = await failure(
      client.putGroup({ group: { name: "g", tools: ["data.query", "nope", "nada"] } }, admin),
    );
    expect(unknown.code).toBe(Code.InvalidArgument);
    expect(unknown.rawMessage).toBe(
      'group.tools: unknown tools "nope", "nada"; register them first',
    );
    const duplicate = await failure(
      client.putGroup({ group: { name: "g", tools: ["data.query", "data.query"] } }, admin),
    );
    expect(duplicate.rawMessage).toBe(
      'group.tools: lists "data.query" twice; each tool appears once, in usage order',
    );
    const badName = await failure(client.putGroup({ group: { name: "G!", tools: [] } }, admin));
    expect(badName.rawMessage).toContain('group.name: "G!" is not a valid name');
    const missing = await failure(client.putGroup({}, admin));
    expect(missing.rawMessage).toBe("group: is required");
    const tooMany = await failure(
      client.putGroup(
        { group: { name: "g", tools: Array.from({ length: 101 }, (_, i) => `t${i}`) } },
        admin,
      ),
    );
    expect(tooMany.rawMessage).toBe("group.tools: has 101 entries; at most 100 allowed");
    expect([...store.groups()]).toHaveLength(0);
  });

  it("DeleteGroup and DeregisterTool of unknown names are NOT_FOUND", async () => {
    const { client } = setup();
    await client.registerTool({ tool: spec("data.query") }, admin);
    await client.putGroup({ group: { name: "reporting", tools: ["data.query"] } }, admin);
    const group = await failure(client.deleteGroup({ name: "reportin" }, admin));
    expect(group.code).toBe(Code.NotFound);
    expect(group.rawMessage).toBe('group "reportin" not found; did you mean reporting?');
    const tool = await failure(client.deregisterTool({ name: "nope" }, admin));
    expect(tool.code).toBe(Code.NotFound);
    const empty = await failure(client.deregisterTool({ name: "" }, admin));
    expect(empty.rawMessage).toBe("name: is required");
  });

  it("ListGroups pages by name", async () => {
    const { client } = setup();
    for (const name of ["c", "a", "b"])
      await client.putGroup({ group: { name, tools: [] } }, admin);
    const first = await client.listGroups({ pageSize: 2 }, admin);
    expect(first.groups.map((g) => g.name)).toEqual(["a", "b"]);
    const second = await client.listGroups({ pageSize: 2, pageToken: first.nextPageToken }, admin);
    expect(second.groups.map((g) => g.name)).toEqual(["c"]);
    expect(second.nextPageToken).toBe("");
    const bad = await failure(client.listGroups({ pageToken: "%%%" }, admin));
    expect(bad.code).toBe(Code.InvalidArgument);
  });
});

describe("ListTools", () => {
  let ctx: ReturnType<typeof setup>;
  beforeEach(async () => {
    ctx = setup();
    const c = ctx.client;
    await c.registerTool(
      { tool: spec("data.query", { description: "Run SQL against the warehouse" }) },
      admin,
    );
    await c.registerTool({ tool: spec("data.export", { status: ToolStatus.DEPRECATED }) }, admin);
    await c.registerTool(
      {
        tool: spec("search.web", {
          category: "search",
          runtime: { kind: { case: "remote", value: { url: "https://s.example/q" } } },
        }),
      },
      admin,
    );
    await c.registerTool(
      {
        tool: spec("code.run", {
          category: "code",
          status: ToolStatus.DISABLED,
          runtime: { kind: { case: "local", value: { command: "python3" } } },
        }),
      },
      admin,
    );
    await c.putGroup({ group: { name: "research", tools: ["search.web", "data.query"] } }, admin);
  });
  const names = (res: { tools: { spec?: { name: string } }[] }) =>
    res.tools.map((t) => t.spec?.name);

  it("filters by category, keyword, runtime kind, group and status, ordered by name", async () => {
    const c = ctx.client;
    expect(names(await c.listTools({}, admin))).toEqual([
      "code.run",
      "data.export",
      "data.query",
      "search.web",
    ]);
    expect(names(await c.listTools({ category: "data" }, admin))).toEqual([
      "data.export",
      "data.query",
    ]);
    expect(names(await c.listTools({ keyword: "WAREHOUSE" }, admin))).toEqual(["data.query"]);
    expect(names(await c.listTools({ keyword: "Search.W" }, admin))).toEqual(["search.web"]);
    expect(names(await c.listTools({ runtimeKind: RuntimeKind.LOCAL }, admin))).toEqual([
      "code.run",
    ]);
    expect(names(await c.listTools({ group: "research" }, admin))).toEqual([
      "data.query",
      "search.web",
    ]);
    expect(names(await c.listTools({ status: ToolStatus.DEPRECATED }, admin))).toEqual([
      "data.export",
    ]);
    expect(
      names(await c.listTools({ category: "data", status: ToolStatus.ACTIVE }, admin)),
    ).toEqual(["data.query"]);
  });

  it("pages with opaque tokens bound to the filters", async () => {
    const c = ctx.client;
    const first = await c.listTools({ pageSize: 3 }, admin);
    expect(names(first)).toEqual(["code.run", "data.export", "data.query"]);
    expect(first.nextPageToken).not.toBe("");
    const second = await c.listTools({ pageSize: 3, pageToken: first.nextPageToken }, admin);
    expect(names(second)).toEqual(["search.web"]);
    expect(second.nextPageToken).toBe("");
    const exact = await c.listTools({ pageSize: 4 }, admin);
    expect(exact.nextPageToken).toBe("");

    const mismatched = await failure(
      c.listTools({ category: "data", pageToken: first.nextPageToken }, admin),
    );
    expect(mismatched.code).toBe(Code.InvalidArgument);
    expect(mismatched.rawMessage).toBe(
      "page_token: was issued for different filters; repeat the request with the same filters, or start again without a page_token",
    );
    const malformed = await failure(c.listTools({ pageToken: "not-a-token" }, admin));
    expect(malformed.code).toBe(Code.InvalidArgument);
    expect(malformed.rawMessage).toBe(
      "page_token: malformed page token; pass the next_page_token of the previous response unchanged, or omit it for the first page",
    );
    const tooBig = await failure(c.listTools({ pageSize: 501 }, admin));
    expect(tooBig.rawMessage).toBe("page_size: is 501; at most 500 allowed");
    const badKind = await failure(c.listTools({ runtimeKind: 9 as RuntimeKind }, admin));
    expect(badKind.rawMessage).toBe("runtime_kind: 9 is not a RuntimeKind");
    const badStatus = await failure(c.listTools({ status: 9 as ToolStatus }, admin));
    expect(badStatus.rawMessage).toBe("status: 9 is not a ToolStatus");
  });

  it("ListRuntimes counts by status", async () => {
    const { runtimes } = await ctx.client.listRuntimes({}, admin);
    const grpc = runtimes.find((r) => r.kind === RuntimeKind.GRPC);
    expect(grpc).toMatchObject({
      toolCount: 2,
      activeCount: 1,
      deprecatedCount: 1,
      disabledCount: 0,
      tools: ["data.export", "data.query"],
    });
    expect(runtimes.find((r) => r.kind === RuntimeKind.LOCAL)).toMatchObject({
      toolCount: 1,
      disabledCount: 1,
    });
  });

  it("GetTool NOT_FOUND lists near names; an empty name is INVALID_ARGUMENT", async () => {
    const near = await failure(ctx.client.getTool({ name: "data.qery" }, admin));
    expect(near.code).toBe(Code.NotFound);
    expect(near.rawMessage).toBe('tool "data.qery" not found; did you mean data.query?');
    const far = await failure(ctx.client.getTool({ name: "zzzzzzzzzzzz" }, admin));
    expect(far.rawMessage).toBe(
      'tool "zzzzzzzzzzzz" not found; see ListTools for the tools available to you',
    );
    const empty = await failure(ctx.client.getTool({ name: "" }, admin));
    expect(empty.rawMessage).toBe("name: is required");
  });

  it("ExportToolSchemas renders OpenAI, Anthropic and MCP definitions", async () => {
    const c = ctx.client;
    await c.updateTool({ tool: spec("data.query", { outputSchema: { type: "object" } }) }, admin);
    const openai = await c.exportToolSchemas({ format: SchemaFormat.OPENAI }, admin);
    expect(openai.tools.map((t) => [t.tool, t.exportedName])).toEqual([
      ["data.query", "data__query"],
      ["search.web", "search__web"],
    ]);
    expect(openai.tools[0]?.definition).toEqual({
      type: "function",
      function: {
        name: "data__query",
        description: "The data.query tool",
        parameters: spec("x").inputSchema,
      },
    });
    const anthropic = await c.exportToolSchemas(
      { format: SchemaFormat.ANTHROPIC, names: ["data.query"] },
      admin,
    );
    expect(anthropic.tools[0]?.definition).toEqual({
      name: "data__query",
      description: "The data.query tool",
      input_schema: spec("x").inputSchema,
    });
    const mcp = await c.exportToolSchemas({ format: SchemaFormat.MCP, group: "research" }, admin);
    expect(mcp.tools.map((t) => t.exportedName)).toEqual(["search.web", "data.query"]);
    expect(mcp.tools[1]?.definition).toEqual({
      name: "data.query",
      description: "The data.query tool",
      inputSchema: spec("x").inputSchema,
      outputSchema: { type: "object" },
    });
    expect(mcp.tools[0]?.definition).not.toHaveProperty("outputSchema");
    const withDeprecated = await c.exportToolSchemas(
      { format: SchemaFormat.MCP, includeDeprecated: true },
      admin,
    );
    expect(withDeprecated.tools.map((t) => t.tool)).toEqual([
      "data.export",
      "data.query",
      "search.web",
    ]);
    await c.registerTool({ tool: spec("data__query") }, admin);
    const clash = await c.exportToolSchemas(
      { format: SchemaFormat.OPENAI, names: ["data.query", "data__query"] },
      admin,
    );
    const clashNames = clash.tools.map((t) => t.exportedName);
    expect(new Set(clashNames).size).toBe(2);
    expect(clashNames[0]).toBe("data__query");
    expect(clashNames[1]).toMatch(/^data__query_[0-9a-f]{8}$/);
    const longName = `a${".b".repeat(31)}`;
    await c.registerTool({ tool: spec(longName) }, admin);
    const long = await c.exportToolSchemas(
      { format: SchemaFormat.ANTHROPIC, names: [longName] },
      admin,
    );
    expect(long.tools[0]?.exportedName).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
    const disabledByName = await c.exportToolSchemas(
      { format: SchemaFormat.MCP, names: ["code.run"] },
      admin,
    );
    expect(disabledByName.tools).toEqual([]);
  });

  it("ExportToolSchemas refuses a missing format, unknown names and unknown groups", async () => {
    const c = ctx.client;
    const format = await failure(c.exportToolSchemas({}, admin));
    expect(format.code).toBe(Code.InvalidArgument);
    expect(format.rawMessage).toBe(
      "format: set one of SCHEMA_FORMAT_OPENAI, SCHEMA_FORMAT_ANTHROPIC, SCHEMA_FORMAT_MCP",
    );
    const names = await failure(
      c.exportToolSchemas(
        { format: SchemaFormat.OPENAI, names: ["data.query", "nope", "data.qury"] },
        admin,
      ),
    );
    expect(names.code).toBe(Code.NotFound);
    expect(names.rawMessage).toContain('tools "nope", "data.qury" not found');
    const group = await failure(
      c.exportToolSchemas({ format: SchemaFormat.OPENAI, group: "researc" }, admin),
    );
    expect(group.code).toBe(Code.NotFound);
    expect(group.rawMessage).toBe('group "researc" not found; did you mean research?');
  });
});

describe("auth and visibility", () => {
  it("writes need admin (UpdateTool also service); WatchTools needs admin or service", async () => {
    const { client } = setup();
    const denied = await failure(client.registerTool({ tool: spec("data.query") }, agent));
    expect(denied.code).toBe(Code.PermissionDenied);
    expect(denied.rawMessage).toBe(
      "RegisterTool needs the role admin or tool-agent; your token has the roles agent",
    );
    for (const call of [
      client.updateTool({ tool: spec("data.query") }, agent),
      client.deregisterTool({ name: "data.query" }, agent),
      client.putGroup({ group: { name: "g" } }, agent),
      client.deleteGroup({ name: "g" }, agent),
    ]) {
      expect((await failure(call)).code).toBe(Code.PermissionDenied);
    }
    const watch = await failure(
      (async () => {
        for await (const _ of client.watchTools({}, agent)) break;
      })(),
    );
    expect(watch.code).toBe(Code.PermissionDenied);
    expect((await failure(client.listTools({}))).code).toBe(Code.Unauthenticated);
  });

  it("the tool agent writes its own grpc tools and registers the tools it built only disabled", async () => {
    const { client, store } = setup();
    const toolAgent = auth("toolAgent");
    const local = { kind: { case: "local", value: { command: "sh" } } };
    await client.registerTool({ tool: spec("coding.write_file") }, toolAgent);
    await client.updateTool(
      { tool: spec("coding.write_file", { description: "moved" }) },
      toolAgent,
    );
    const built = await client.registerTool(
      { tool: spec("text.shout", { status: ToolStatus.DISABLED, runtime: local }) },
      toolAgent,
    );
    expect(built.tool?.spec?.status).toBe(ToolStatus.DISABLED);
    expect(built.tool?.updatedBy).toBe("toolmesh-tool-agent");
    const refusals = [
      [
        client.registerTool({ tool: spec("text.loud") }, toolAgent),
        'a tool the tool agent builds is registered with status TOOL_STATUS_DISABLED, for an operator to enable; "text.loud" asked for ACTIVE',
      ],
      [
        client.updateTool({ tool: spec("text.shout") }, toolAgent),
        'the tool agent may update only its own tools (coding.*); an admin changes "text.shout"',
      ],
      [
        client.registerTool({ tool: spec("coding.run", { runtime: local }) }, toolAgent),
        'the tool agent\'s own tools (coding.*) must have a grpc runtime; "coding.run" has local',
      ],
      [client.deregisterTool({ name: "text.shout" }, toolAgent), undefined],
      [client.putGroup({ group: { name: "g" } }, toolAgent), undefined],
    ] as const;
    for (const [call, message] of refusals) {
      const refused = await failure(call);
      expect(refused.code).toBe(Code.PermissionDenied);
      if (message) expect(refused.rawMessage).toBe(message);
    }
    expect(store.tool("text.loud")).toBeUndefined();
    expect(store.tool("text.shout")?.spec?.status).toBe(ToolStatus.DISABLED);
    // An operator enables it.
    await client.updateTool({ tool: spec("text.shout", { runtime: local }) }, admin);
    expect(store.tool("text.shout")?.spec?.status).toBe(ToolStatus.ACTIVE);
  });

  it("an agent sees nothing under deny-all, and NOT_FOUND for tools that exist", async () => {
    const { client } = setup(denyAll);
    await client.registerTool({ tool: spec("data.query") }, admin);
    await client.putGroup({ group: { name: "g", tools: ["data.query"] } }, admin);
    expect((await client.listTools({}, agent)).tools).toEqual([]);
    const get = await failure(client.getTool({ name: "data.query" }, agent));
    expect(get.code).toBe(Code.NotFound);
    expect(get.rawMessage).toBe('tool "data.query" not found; no tools are available to you');
    expect((await client.listGroups({}, agent)).groups).toEqual([]);
    expect((await failure(client.getGroup({ name: "g" }, agent))).code).toBe(Code.NotFound);
    expect((await client.exportToolSchemas({ format: SchemaFormat.OPENAI }, agent)).tools).toEqual(
      [],
    );
    const named = await failure(
      client.exportToolSchemas({ format: SchemaFormat.OPENAI, names: ["data.query"] }, agent),
    );
    expect(named.code).toBe(Code.NotFound);
    const runtimes = await client.listRuntimes({}, agent);
    expect(runtimes.runtimes.every((r) => r.toolCount === 0)).toBe(true);
  });

  it("an agent sees only the tools visibility allows, with runtime secrets redacted", async () => {
    const visibility: ToolVisibility = {
      canUse: (p, tool) => p.agentId === "agent-7" && (tool.spec?.name ?? "").startsWith("data."),
      ready: () => true,
    };
    const { client } = setup(visibility);
    await client.registerTool(
      {
        tool: spec("data.query", {
          runtime: {
            kind: {
              case: "remote",
              value: { url: "https://x.example", headers: { "x-api-key": "s3cret" } },
            },
          },
        }),
      },
      admin,
    );
    await client.registerTool({ tool: spec("mail.send") }, admin);
    await client.putGroup({ group: { name: "g", tools: ["mail.send", "data.query"] } }, admin);
    expect((await client.listTools({}, agent)).tools.map((t) => t.spec?.name)).toEqual([
      "data.query",
    ]);
    const seen = (await client.getTool({ name: "data.query" }, agent)).tool;
    const runtime = seen?.spec?.runtime?.kind;
    expect(runtime?.case === "remote" && runtime.value.headers).toEqual({
      "x-api-key": "[redacted]",
    });
    const asAdmin = (await client.getTool({ name: "data.query" }, admin)).tool?.spec?.runtime?.kind;
    expect(asAdmin?.case === "remote" && asAdmin.value.headers).toEqual({ "x-api-key": "s3cret" });
    expect((await failure(client.getTool({ name: "mail.send" }, agent))).rawMessage).toBe(
      'tool "mail.send" not found; see ListTools for the tools available to you',
    );
    expect((await client.getGroup({ name: "g" }, agent)).group?.tools).toEqual(["data.query"]);
    const exported = await client.exportToolSchemas(
      { format: SchemaFormat.ANTHROPIC, group: "g" },
      agent,
    );
    expect(exported.tools.map((t) => t.tool)).toEqual(["data.query"]);
    const named = await failure(
      client.exportToolSchemas({ format: SchemaFormat.ANTHROPIC, names: ["mail.send"] }, agent),
    );
    expect(named.code).toBe(Code.NotFound);
  });

  it("an agent gets UNAVAILABLE while visibility is not ready", async () => {
    const { client } = setup({ canUse: () => true, ready: () => false });
    const error = await failure(client.listTools({}, agent));
    expect(error.code).toBe(Code.Unavailable);
    expect((await client.listTools({}, admin)).tools).toEqual([]);
  });
});

describe("WatchTools", () => {
  it("streams the snapshot, SNAPSHOT_END, then changes, and ends on shutdown", async () => {
    const { client, shutdown } = setup();
    await client.registerTool({ tool: spec("b.tool") }, admin);
    await client.registerTool({ tool: spec("a.tool") }, admin);
    const stream = client.watchTools({}, auth("service"))[Symbol.asyncIterator]();
    const next = async () => (await stream.next()).value;
    expect(await next()).toMatchObject({ type: WatchEventType.SNAPSHOT, name: "a.tool" });
    expect(await next()).toMatchObject({ type: WatchEventType.SNAPSHOT, name: "b.tool" });
    expect(await next()).toMatchObject({ type: WatchEventType.SNAPSHOT_END, name: "" });
    await client.registerTool({ tool: spec("c.tool") }, admin);
    const put = await next();
    expect(put).toMatchObject({ type: WatchEventType.PUT, name: "c.tool" });
    expect(put.tool?.spec?.name).toBe("c.tool");
    await client.deregisterTool({ name: "a.tool" }, admin);
    const deleted = await next();
    expect(deleted).toMatchObject({ type: WatchEventType.DELETE, name: "a.tool" });
    expect(deleted.tool).toBeUndefined();
    shutdown.abort();
    expect((await stream.next()).done).toBe(true);
  });
});
