import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code } from "@toolmesh/errors";
import { type LocalRuntimeSchema, RuntimeKind } from "@toolmesh/proto";
import { failure } from "@toolmesh/testkit";
import { beforeEach, describe, expect, it } from "vitest";
import { admin, setup, spec } from "./memory-registry.js";

// What RegisterTool refuses (validation.ts, field-checks.ts), field by field, and every runtime
// kind it accepts.
/** A tool spec's local runtime with pool settings. */
function warmLocal(value: MessageInitShape<typeof LocalRuntimeSchema>) {
  return { runtime: { kind: { case: "local" as const, value: { command: "node", ...value } } } };
}

describe("RegisterTool", () => {
  let ctx: ReturnType<typeof setup>;
  beforeEach(() => {
    ctx = setup();
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
    [
      "a cache on a tool with side effects",
      { cacheTtlMs: 1000, idempotent: true, sideEffects: true },
      "tool.cache_ttl_ms: only a read-only, idempotent tool may be cached",
    ],
    [
      "a cache on a tool that is not idempotent",
      { cacheTtlMs: 1000 },
      "tool.cache_ttl_ms: only a read-only, idempotent tool may be cached",
    ],
    [
      "a cache size without a cache",
      { cacheMaxEntries: 10 },
      "tool.cache_max_entries: needs cache_ttl_ms",
    ],
    [
      "a price in a lower-case currency",
      { price: { currency: "usd", perCallMicros: 1n } },
      "tool.price.currency: must be 1-8 upper-case letters",
    ],
    [
      "a breaker open for more than an hour",
      { circuitBreaker: { openMs: 3_600_001 } },
      "tool.circuit_breaker.open_ms: is 3600001; at most 3600000 (1 hour) allowed",
    ],
    [
      "more warm instances than instances",
      {
        runtime: {
          kind: { case: "local", value: { command: "node", minInstances: 2, maxInstances: 1 } },
        },
      },
      "tool.runtime.local.min_instances: is 2, more than max_instances (1)",
    ],
    [
      "warm hours across midnight",
      {
        runtime: {
          kind: {
            case: "docker",
            value: {
              image: "toolmesh/echo:1",
              minInstances: 1,
              warmHours: [{ startHour: 22, endHour: 6 }],
            },
          },
        },
      },
      "tool.runtime.docker.warm_hours[0]: end_hour must be after start_hour",
    ],
    [
      "17 instances",
      warmLocal({ maxInstances: 17 }),
      "tool.runtime.local.max_instances: is 17; at most 16 allowed",
    ],
    [
      "warm hours starting at hour 24",
      warmLocal({ minInstances: 1, warmHours: [{ startHour: 24, endHour: 24 }] }),
      "tool.runtime.local.warm_hours[0]: start_hour must be 0-23 and end_hour 1-24 (UTC)",
    ],
    [
      "warm hours on day 7",
      warmLocal({ minInstances: 1, warmHours: [{ startHour: 8, endHour: 18, weekdays: [1, 7] }] }),
      "tool.runtime.local.warm_hours[0].weekdays: days are 0 (Sunday) to 6 (Saturday)",
    ],
    [
      "warm hours without warm instances",
      warmLocal({ warmHours: [{ startHour: 8, endHour: 18 }] }),
      "tool.runtime.local.warm_hours: apply to min_instances: set min_instances too",
    ],
    [
      "two containers on one fixed port",
      {
        runtime: {
          kind: {
            case: "docker",
            value: { image: "toolmesh/echo:1", port: 8080, maxInstances: 2 },
          },
        },
      },
      "tool.runtime.docker.max_instances: is 2, but every instance would listen on port 8080",
    ],
    [
      "warm instances of a tool that names secrets",
      {
        secrets: [{ secret: "held-key", target: { case: "env", value: "API_KEY" } }],
        runtime: { kind: { case: "local", value: { command: "node", minInstances: 1 } } },
      },
      "tool.runtime.local.min_instances: cannot keep instances warm for a tool that names secrets",
    ],
    [
      "a health interval of 10 ms",
      { runtime: { kind: { case: "local", value: { command: "node", healthIntervalMs: 10 } } } },
      "tool.runtime.local.health_interval_ms: must be 0 (the Dispatcher's default) or between 100",
    ],
  ];
  it("keeps a warm pool's settings: two instances, one warm on weekdays' office hours, checked each second", async () => {
    const local = {
      command: "node",
      minInstances: 1,
      maxInstances: 2,
      warmHours: [{ startHour: 8, endHour: 18, weekdays: [1, 2, 3, 4, 5] }],
      healthIntervalMs: 1000,
    };
    await ctx.client.registerTool(
      { tool: spec("data.query", { runtime: { kind: { case: "local", value: local } } }) },
      admin,
    );
    const kept = [...ctx.store.tools()].find((t) => t.spec?.name === "data.query")?.spec?.runtime
      ?.kind;
    expect(kept?.case).toBe("local");
    expect(kept?.value).toMatchObject(local);
  });
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
