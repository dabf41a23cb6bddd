import { Code } from "@toolmesh/errors";
import { allowSpec, eventually, failure, refusedJwts, retryWhile } from "@toolmesh/testkit";
import { startedForFile } from "@toolmesh/testkit/hooks";
import { beforeAll, describe, expect, it } from "vitest";
import { startPermissionStack } from "./harness.js";

// API keys issued here are verified by the Registry from its own watched snapshot.
describe("the Registry authenticates with permission-issued keys", () => {
  const stack = startedForFile(startPermissionStack);
  const secrets: string[] = [];
  const registry = () => stack.registryClient;

  beforeAll(async () => {
    secrets.push(stack.adminToken, stack.serviceToken);
    // The Registry started before the permission bucket existed; it picks it up within 500 ms.
    await retryWhile(
      () => registry().listTools({}, stack.as(stack.adminToken)),
      [Code.Unavailable],
      5000,
      "the Registry binding the permission bucket",
    );
  }, 60_000);

  it("refuses a missing, malformed, unknown, expired and wrong-audience token", async () => {
    const { expired, wrongAudience } = await refusedJwts(stack.jwtSecret);
    const cases: [Record<string, string>, string][] = [
      [{}, "missing credential"],
      [{ authorization: "Token abc" }, "malformed authorization header"],
      [{ authorization: `Bearer tmk_${"1".repeat(16)}_${"x".repeat(43)}` }, "unknown API key"],
      [{ authorization: `Bearer ${expired}` }, "the JWT has expired"],
      [{ authorization: `Bearer ${wrongAudience}` }, "claim aud does not match"],
    ];
    for (const [headers, message] of cases) {
      const error = await failure(registry().listTools({}, { headers }));
      expect(error.code, message).toBe(Code.Unauthenticated);
      expect(error.rawMessage).toContain(message);
    }
  });

  it("lets the operator flow work: agent key, grant, the agent lists only its tools", async () => {
    const admin = stack.as(stack.adminToken);
    const key = await stack.client.createApiKey({ agentId: "analyst-1", name: "analyst" }, admin);
    secrets.push(key.secret);
    const asAgent = stack.as(key.secret);
    expect((await registry().listTools({}, asAgent)).tools).toEqual([]);
    await stack.client.grant(
      { grant: allowSpec("agent:analyst-1", "glob:data.*", ["read:data"]) },
      admin,
    );
    // The Registry decides from its own grant snapshot; wait for it to see the grant.
    const names = await eventually(
      async () => {
        const listed = (await registry().listTools({}, asAgent)).tools.map((t) => t.spec?.name);
        expect(listed).not.toEqual([]);
        return listed;
      },
      1000,
      "the Registry seeing the grant",
      0,
    );
    expect(names).toEqual(["data.query"]);
    const all = await registry().listTools({}, admin);
    expect(all.tools.length).toBeGreaterThan(1);
    const write = await failure(
      registry().registerTool({ tool: { name: "x.y", description: "x" } }, asAgent),
    );
    expect(write.code).toBe(Code.PermissionDenied);
  });

  it("stops a revoked key on the Registry within one second", async () => {
    const admin = stack.as(stack.adminToken);
    const key = await stack.client.createApiKey({ agentId: "short-lived" }, admin);
    secrets.push(key.secret);
    const asAgent = stack.as(key.secret);
    await registry().listTools({}, asAgent);
    await stack.client.revokeApiKey({ id: key.apiKey?.id ?? "" }, admin);
    const revokedAt = performance.now();
    const error = await eventually(
      () => failure(registry().listTools({}, asAgent)),
      1000,
      "the Registry refusing the revoked key",
      0,
    );
    expect(error.code).toBe(Code.Unauthenticated);
    expect(error.rawMessage).toContain("has been revoked");
    expect(performance.now() - revokedAt).toBeLessThan(1000);
  });

  it("logs no token in either service", async () => {
    const output = await stack.logText("registry", "permission");
    expect(output).toContain("API key created");
    for (const secret of secrets)
      expect(output).not.toContain(secret.split("_").slice(2).join("_"));
  });
});
