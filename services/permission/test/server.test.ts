import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { Code } from "@toolmesh/errors";
import { Health, HealthCheckResponse_ServingStatus, PermissionService } from "@toolmesh/proto";
import type { ListeningServer } from "@toolmesh/server";
import { allowSpec, as, failure } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createPermissionServer } from "../src/server.js";
import { type MemoryPermission, memoryPermission } from "./memory-deps.js";

// The real Permission server (health, auth interceptor, size limit, handlers) on port 0 with
// in-memory dependencies and no NATS, reached over gRPC (HTTP/2) and Connect JSON (HTTP/1.1).
describe("Permission server on port 0", () => {
  const readMaxBytes = 64 * 1024;
  let p: MemoryPermission;
  let listening: ListeningServer;
  const grpc = () =>
    createClient(PermissionService, createGrpcTransport({ baseUrl: listening.url }));
  const connectJson = () =>
    createClient(
      PermissionService,
      createConnectTransport({
        baseUrl: listening.url,
        httpVersion: "1.1",
        useBinaryFormat: false,
      }),
    );

  beforeAll(async () => {
    p = await memoryPermission();
    const server = createPermissionServer({
      ...p.deps,
      interceptors: p.interceptors,
      readMaxBytes,
    });
    listening = await server.listen(0, "127.0.0.1");
  });
  afterAll(async () => {
    await listening?.close(1000);
  });

  it("answers health without a credential and every other RPC only with one", async () => {
    const health = createClient(Health, createGrpcTransport({ baseUrl: listening.url }));
    const status = await health.check({ service: PermissionService.typeName });
    expect(status.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
    for (const client of [grpc(), connectJson()]) {
      const error = await failure(client.listGrants({}));
      expect(error).toMatchObject({
        code: Code.Unauthenticated,
        rawMessage: "missing credential: send the header authorization: Bearer <token>",
      });
    }
  });

  it("grants, checks, issues and revokes a key over both protocols", async () => {
    const admin = as(p.tokens.admin);
    const { grant } = await grpc().grant(
      { grant: allowSpec("agent:bot", "tool:data.query", ["read:data"]) },
      admin,
    );
    const key = await connectJson().createApiKey({ agentId: "bot", name: "over JSON" }, admin);
    expect(key.secret).toMatch(/^tmk_[0-9a-f]{16}_/);
    // The key authenticates over gRPC; the agent checks itself and is allowed by the grant.
    const self = await grpc().check({ agentId: "bot", tool: "data.query" }, as(key.secret));
    expect(self.decision).toMatchObject({ allowed: true, matchedGrantIds: [grant?.id] });
    const refused = await failure(connectJson().listApiKeys({}, as(key.secret)));
    expect(refused).toMatchObject({
      code: Code.PermissionDenied,
      rawMessage: "ListApiKeys needs the role admin; your token has the roles agent",
    });
    await grpc().revokeApiKey({ id: key.apiKey?.id ?? "" }, admin);
    const revoked = await failure(
      grpc().check({ agentId: "bot", tool: "data.query" }, as(key.secret)),
    );
    expect(revoked).toMatchObject({
      code: Code.Unauthenticated,
      rawMessage: `bearer token rejected: API key ${key.apiKey?.id} has been revoked`,
    });
    expect(p.events.changes.map((c) => c.change.kind)).toEqual(["grant", "api_key", "api_key"]);
  });

  it("refuses a request over the size limit with RESOURCE_EXHAUSTED and keeps serving", async () => {
    const admin = as(p.tokens.admin);
    const before = p.events.changes.length;
    const error = await failure(
      grpc().createApiKey({ agentId: "bot", name: "n".repeat(readMaxBytes) }, admin),
    );
    expect(error.code).toBe(Code.ResourceExhausted);
    expect(p.events.changes).toHaveLength(before);
    const check = await connectJson().check({ agentId: "bot", tool: "data.query" }, admin);
    expect(check.decision?.allowed).toBe(true);
  });
});
