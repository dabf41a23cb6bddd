import { clone, create, type JsonObject } from "@bufbuild/protobuf";
import { Code } from "@toolmesh/errors";
import { AuditAction, CacheUse, CallStatus, ToolSpecSchema, TraceEventKind } from "@toolmesh/proto";
import { defineTool, type ServedTools, serveTools, toolSpec } from "@toolmesh/sdk";
import {
  allowSpec,
  chainServices,
  eventually,
  failure,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// Result caching against real processes: a read-only idempotent tool's repeated call is answered
// from the cache without running it, recorded as a hit naming the call it came from; another
// user, other arguments or a new definition of the tool are never answered from an old entry;
// hits and misses show in metrics and usage; a tool with side effects cannot have a cache.
describe("result cache", () => {
  let stack: TestStack;
  let served: ServedTools;
  const tokens: Record<string, string> = {};
  let runs = 0;
  const admin = () => stack.as(stack.adminToken);
  const call = (who: string, args: JsonObject) =>
    stack
      .dispatcherClient()
      .dispatch({ tool: "cached.lookup", arguments: args }, stack.as(tokens[who] ?? ""));

  const lookup = defineTool({
    name: "cached.lookup",
    description: "Looks a word up (and counts its runs).",
    inputSchema: { type: "object", properties: { q: { type: "string" } } },
    handler: (args: { q?: string }) => {
      runs++;
      return { q: args.q ?? "", run: runs };
    },
  });

  beforeAll(async () => {
    stack = await startStack({ services: [...chainServices, "callback"] });
    tokens.ann = await stack.agentToken("reader", { onBehalfOf: "ann" });
    tokens.bob = await stack.agentToken("reader", { onBehalfOf: "bob" });
    tokens.stranger = await stack.agentToken("stranger");
    for (const who of ["agent:reader", "user:ann", "user:bob"])
      await stack.permissionClient.grant({ grant: allowSpec(who, "glob:**", ["*"]) }, admin());
    served = await serveTools([lookup], { port: 0 });
    const spec = toolSpec(lookup, served.address);
    spec.idempotent = true;
    spec.cacheTtlMs = 60_000;
    await stack.registryClient.registerTool({ tool: spec }, admin());
    await eventually(() => call("ann", { q: "warm-up" }));
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await stack?.stop();
  });

  it("answers a repeated call from the cache, recorded as a hit of the call it came from", async () => {
    const first = await call("ann", { q: "tide" });
    expect(first.cachedFrom).toBe("");
    const ranBefore = runs;
    const second = await call("ann", { q: "tide" });
    expect(runs).toBe(ranBefore);
    expect(second).toMatchObject({
      status: CallStatus.SUCCESS,
      output: first.output,
      cachedFrom: first.callId,
      attempts: 0,
    });
    expect(second.callId).not.toBe(first.callId);

    // Other arguments, and another user of the same agent, run the tool.
    expect((await call("ann", { q: "moon" })).cachedFrom).toBe("");
    expect((await call("bob", { q: "tide" })).cachedFrom).toBe("");
    expect(runs).toBe(ranBefore + 2);
    // A caller the grants do not allow is refused, never answered from the cache.
    expect((await failure(call("stranger", { q: "tide" }))).code).toBe(Code.PermissionDenied);

    const records = await eventually(async () => {
      const { records } = await stack
        .auditClient()
        .queryRecords({ callId: second.callId }, admin());
      expect(records.some((r) => r.action === AuditAction.TOOL_CALL)).toBe(true);
      return records;
    });
    const end = records.find((r) => r.action === AuditAction.TOOL_CALL);
    expect(end).toMatchObject({ cache: CacheUse.HIT, cachedFrom: first.callId, attempts: 0 });
    const trace = await stack.auditClient().getTrace({ traceId: second.traceId }, admin());
    const hit = trace.events.find((e) => e.kind === TraceEventKind.CACHE_HIT);
    expect(hit?.payload).toMatchObject({ cached_from: first.callId });

    const metrics = await (await fetch(`${stack.service("dispatcher").url}/metrics`)).text();
    expect(metrics).toMatch(
      /toolmesh_dispatcher_cache_lookups_total\{tool="cached\.lookup",result="hit"\} 1\b/,
    );
    await eventually(async () => {
      const { usage } = await stack
        .callbackClient()
        .getUsage({ agentId: "reader", userId: "ann", tool: "cached.lookup" }, admin());
      expect(usage.reduce((n, u) => n + u.cacheHits, 0n)).toBe(1n);
      expect(usage.reduce((n, u) => n + u.cacheMisses, 0n)).toBe(3n);
    }, 20_000);
  });

  it("never answers a new definition of the tool from an old entry", async () => {
    const first = await call("ann", { q: "reef" });
    expect((await call("ann", { q: "reef" })).cachedFrom).toBe(first.callId);
    const tool = (await stack.registryClient.getTool({ name: "cached.lookup" }, admin())).tool;
    const spec = clone(ToolSpecSchema, tool?.spec ?? create(ToolSpecSchema));
    spec.description = "Looks a word up, now in two dictionaries.";
    await stack.registryClient.updateTool({ tool: spec }, admin());
    // Once the Dispatcher sees the new definition, the same call runs the tool again.
    await eventually(async () => expect((await call("ann", { q: "reef" })).cachedFrom).toBe(""));
  });

  it("never answers from an entry a revoked grant let in", async () => {
    // A second grant also allows ann: calls are now authorised by it too, and cached so.
    const { grant } = await stack.permissionClient.grant(
      { grant: allowSpec("user:ann", "tool:cached.lookup", ["*"]) },
      admin(),
    );
    const under = await eventually(async () => {
      const first = await call("ann", { q: "kelp" });
      expect((await call("ann", { q: "kelp" })).cachedFrom).toBe(first.callId);
      return first;
    });
    await stack.permissionClient.revoke({ grantId: grant?.id ?? "" }, admin());
    // Once the Dispatcher sees the revocation, the entry made under the grant answers no call.
    await eventually(async () => {
      const again = await call("ann", { q: "kelp" });
      expect(again.status).toBe(CallStatus.SUCCESS);
      expect(again.cachedFrom).not.toBe(under.callId);
    });
  });

  it("refuses a cache on a tool with side effects", async () => {
    const spec = create(ToolSpecSchema, toolSpec(lookup, served.address));
    spec.name = "cached.writer";
    spec.sideEffects = true;
    spec.idempotent = true;
    spec.cacheTtlMs = 1000;
    const refused = await failure(stack.registryClient.registerTool({ tool: spec }, admin()));
    expect(refused.code).toBe(Code.InvalidArgument);
    expect(refused.rawMessage).toContain("cache_ttl_ms");
  });
});
