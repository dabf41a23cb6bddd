import http2 from "node:http2";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { principalOf } from "@toolmesh/auth";
import { Code } from "@toolmesh/errors";
import {
  GetToolResponseSchema,
  Health,
  HealthCheckResponse_ServingStatus,
  RegistryService,
  ToolSchema,
  ToolSpecSchema,
} from "@toolmesh/proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ListeningServer } from "../src/index.js";
import { listenRegistryServer } from "./registry-server.js";

// A real server on port 0 with one RPC implemented, reached over gRPC and Connect.
describe("toolmesh server", () => {
  let listening: ListeningServer;
  beforeAll(async () => {
    listening = await listenRegistryServer(["agent"], (router) => {
      router.service(RegistryService, {
        getTool(req, ctx) {
          const caller = principalOf(ctx);
          return create(GetToolResponseSchema, {
            tool: create(ToolSchema, {
              spec: create(ToolSpecSchema, {
                name: req.name,
                description: `seen by ${caller.agentId}`,
              }),
            }),
          });
        },
      });
    });
  });
  afterAll(() => listening.close(100));

  const transports = {
    grpc: () => createGrpcTransport({ baseUrl: listening.url }),
    connect: () => createConnectTransport({ baseUrl: listening.url, httpVersion: "1.1" }),
  };

  for (const [name, transport] of Object.entries(transports)) {
    it(`answers health without a credential over ${name}`, async () => {
      const health = createClient(Health, transport());
      const res = await health.check({ service: "toolmesh.registry.v1.RegistryService" });
      expect(res.status).toBe(HealthCheckResponse_ServingStatus.SERVING);
      await expect(health.check({ service: "nope" })).rejects.toMatchObject({
        code: Code.NotFound,
      });
    });

    it(`passes the principal to handlers over ${name}`, async () => {
      const registry = createClient(RegistryService, transport());
      const res = await registry.getTool(
        { name: "data.query" },
        { headers: { authorization: "Bearer good" } },
      );
      expect(res.tool?.spec?.description).toBe("seen by agent-1");
    });

    it(`refuses missing and malformed credentials over ${name}`, async () => {
      const registry = createClient(RegistryService, transport());
      await expect(registry.getTool({ name: "x" })).rejects.toMatchObject({
        code: Code.Unauthenticated,
        rawMessage: expect.stringContaining("authorization: Bearer"),
      });
      await expect(
        registry.getTool({ name: "x" }, { headers: { authorization: "Basic abc" } }),
      ).rejects.toMatchObject({
        code: Code.Unauthenticated,
        rawMessage: expect.stringContaining("malformed"),
      });
      await expect(
        registry.getTool({ name: "x" }, { headers: { authorization: "Bearer bad" } }),
      ).rejects.toMatchObject({
        code: Code.Unauthenticated,
      });
    });
  }

  it("refuses a request over readMaxBytes with RESOURCE_EXHAUSTED", async () => {
    const registry = createClient(RegistryService, transports.grpc());
    await expect(
      registry.getTool(
        { name: "x".repeat(100 * 1024) },
        { headers: { authorization: "Bearer good" } },
      ),
    ).rejects.toMatchObject({ code: Code.ResourceExhausted });
  });

  it("unimplemented RPCs say so", async () => {
    const registry = createClient(RegistryService, transports.grpc());
    await expect(
      registry.listTools({}, { headers: { authorization: "Bearer good" } }),
    ).rejects.toMatchObject({
      code: Code.Unimplemented,
    });
  });
  // HTTP/2 streams off the fast path get Node's compatibility objects from the server itself,
  // with Node's own answers to what toolmesh does not serve.
  it("answers an HTTP/2 CONNECT 405 and an unknown Expect 417, as Node's request event does", async () => {
    const session = http2.connect(listening.url);
    const statusOf = (headers: http2.OutgoingHttpHeaders) =>
      new Promise<number>((resolve, reject) => {
        const stream = session.request(headers);
        stream.once("response", (h) => resolve(Number(h[":status"])));
        stream.once("error", reject);
        stream.resume();
        stream.end();
      });
    try {
      expect(await statusOf({ ":method": "CONNECT", ":authority": "example.com:443" })).toBe(405);
      expect(await statusOf({ ":method": "POST", ":path": "/x", expect: "nonsense" })).toBe(417);
      // The rest still reaches connect-node: an unknown path is its 404.
      expect(await statusOf({ ":method": "POST", ":path": "/nope/Nope" })).toBe(404);
    } finally {
      session.close();
    }
  });
});
