import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { Code, ConnectError } from "@toolmesh/errors";
import { createLogger } from "@toolmesh/log";
import {
  BadFieldSchema,
  GetToolRequestSchema,
  GetToolResponseSchema,
  RegistryService,
  ToolSchema,
  ToolSpecSchema,
} from "@toolmesh/proto";
import { renderMetrics } from "@toolmesh/telemetry";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  createToolmeshServer,
  grpcServiceDefinition,
  type ListeningServer,
  unaryRoutes,
} from "../src/index.js";

// The fast path for binary gRPC unary calls beside connect-node on one port: a grpc-js client and
// connect-node's gRPC client get the same answers, errors and details from it, a Connect request
// to the same method still goes through connect-node, and both paths count in the RPC metrics.
describe("gRPC unary fast path", () => {
  let listening: ListeningServer;
  const seen: { path: string; timeoutMs: number | undefined; aborted: boolean }[] = [];
  let release: (() => void) | undefined;
  beforeAll(async () => {
    const server = createToolmeshServer({
      services: [RegistryService],
      log: createLogger("test", "silent"),
      readMaxBytes: 4 * 1024,
      fastUnary: unaryRoutes(RegistryService, {
        async getTool(req, call) {
          if (call.header("authorization") !== "Bearer good")
            throw new ConnectError("bearer token rejected", Code.Unauthenticated);
          if (req.name === "bad")
            throw new ConnectError("no such name", Code.InvalidArgument, undefined, [
              { desc: BadFieldSchema, value: { field: "name", description: "is bad" } },
            ]);
          if (req.name === "slow") {
            await new Promise<void>((resolve) => {
              release = resolve;
              call.signal.addEventListener("abort", () => resolve(), { once: true });
            });
          }
          seen.push({ path: "fast", timeoutMs: call.timeoutMs, aborted: call.signal.aborted });
          return create(GetToolResponseSchema, {
            tool: create(ToolSchema, {
              spec: create(ToolSpecSchema, { name: req.name, description: "fast path" }),
            }),
          });
        },
      }),
      routes(router) {
        router.service(RegistryService, {
          getTool(req) {
            seen.push({ path: "connect", timeoutMs: undefined, aborted: false });
            return create(GetToolResponseSchema, {
              tool: create(ToolSchema, {
                spec: create(ToolSpecSchema, { name: req.name, description: "connect-node" }),
              }),
            });
          },
        });
      },
    });
    listening = await server.listen(0, "127.0.0.1");
  });
  afterAll(() => listening.close(100));

  const auth = { headers: { authorization: "Bearer good" } };

  it("answers connect-node's gRPC client and keeps Connect on connect-node", async () => {
    const viaGrpc = createClient(RegistryService, createGrpcTransport({ baseUrl: listening.url }));
    const viaConnect = createClient(
      RegistryService,
      createConnectTransport({ baseUrl: listening.url, httpVersion: "2" }),
    );
    expect((await viaGrpc.getTool({ name: "a" }, auth)).tool?.spec?.description).toBe("fast path");
    expect((await viaConnect.getTool({ name: "a" }, auth)).tool?.spec?.description).toBe(
      "connect-node",
    );
  });

  it("answers a grpc-js client, with the caller's deadline", async () => {
    const Client = grpc.makeGenericClientConstructor(grpcServiceDefinition(RegistryService), "r");
    const client = new Client(
      listening.url.replace("http://", ""),
      grpc.credentials.createInsecure(),
    ) as unknown as {
      getTool(
        req: unknown,
        md: grpc.Metadata,
        options: grpc.CallOptions,
        cb: (error: grpc.ServiceError | null, res?: { tool?: { spec?: { name: string } } }) => void,
      ): void;
      close(): void;
    };
    const md = new grpc.Metadata();
    md.set("authorization", "Bearer good");
    const res = await new Promise<{ tool?: { spec?: { name: string } } } | undefined>(
      (resolve, reject) =>
        client.getTool(
          create(GetToolRequestSchema, { name: "deadlined" }),
          md,
          { deadline: Date.now() + 30_000 },
          (error, value) => (error ? reject(error) : resolve(value)),
        ),
    );
    client.close();
    expect(res?.tool?.spec?.name).toBe("deadlined");
    const last = seen.at(-1);
    expect(last?.path).toBe("fast");
    expect(last?.timeoutMs).toBeGreaterThan(25_000);
    expect(last?.timeoutMs).toBeLessThanOrEqual(30_000);
  });

  it("sends errors with their code, message and details", async () => {
    const client = createClient(RegistryService, createGrpcTransport({ baseUrl: listening.url }));
    const refused = await client.getTool({ name: "x" }).catch((e: unknown) => e);
    expect(refused).toMatchObject({
      code: Code.Unauthenticated,
      rawMessage: "bearer token rejected",
    });
    const bad = ConnectError.from(await client.getTool({ name: "bad" }, auth).catch((e) => e));
    expect(bad.code).toBe(Code.InvalidArgument);
    expect(bad.rawMessage).toBe("no such name");
    expect(bad.findDetails(BadFieldSchema)[0]?.field).toBe("name");
  });

  it("refuses an oversized request with RESOURCE_EXHAUSTED and a malformed timeout", async () => {
    const client = createClient(RegistryService, createGrpcTransport({ baseUrl: listening.url }));
    await expect(client.getTool({ name: "x".repeat(5000) }, auth)).rejects.toMatchObject({
      code: Code.ResourceExhausted,
    });
    const malformed = await fetchGrpc(listening.url, { "grpc-timeout": "soon" });
    // Trailers-only: gRPC C-core (Python's grpcio) rejects a stream ended by an empty DATA frame.
    expect(malformed).toEqual({
      status: String(Code.InvalidArgument),
      trailersOnly: true,
      dataBytes: 0,
    });
  });

  it("aborts the handler's signal when the caller goes away", async () => {
    const client = createClient(RegistryService, createGrpcTransport({ baseUrl: listening.url }));
    const gone = new AbortController();
    const pending = client.getTool({ name: "slow" }, { ...auth, signal: gone.signal });
    await expect.poll(() => release !== undefined).toBe(true);
    gone.abort();
    await expect(pending).rejects.toMatchObject({ code: Code.Canceled });
    await expect.poll(() => seen.at(-1)?.aborted).toBe(true);
  });

  it("counts fast-path calls in the RPC metrics", async () => {
    const { body } = await renderMetrics();
    expect(body).toMatch(
      /toolmesh_rpc_server_handled_total\{service="toolmesh.registry.v1.RegistryService",method="GetTool",code="OK"\} \d+/,
    );
    expect(body).toMatch(
      /toolmesh_rpc_server_handled_total\{service="toolmesh.registry.v1.RegistryService",method="GetTool",code="INVALID_ARGUMENT"\} \d+/,
    );
  });
});

/**
 * A raw HTTP/2 gRPC request with extra headers; resolves with the grpc-status it got, whether
 * the response was trailers-only (one HEADERS frame ending the stream) and the DATA bytes.
 */
async function fetchGrpc(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: string; trailersOnly: boolean; dataBytes: number }> {
  const http2 = await import("node:http2");
  const session = http2.connect(url);
  try {
    return await new Promise((resolve, reject) => {
      const stream = session.request({
        ":method": "POST",
        ":path": "/toolmesh.registry.v1.RegistryService/GetTool",
        "content-type": "application/grpc",
        authorization: "Bearer good",
        ...headers,
      });
      let status = "";
      let trailersOnly = false;
      let dataBytes = 0;
      stream.on("response", (h, flags) => {
        if (h["grpc-status"]) status = String(h["grpc-status"]);
        trailersOnly = (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0;
      });
      stream.on("data", (chunk: Buffer) => {
        dataBytes += chunk.length;
      });
      stream.on("trailers", (t) => {
        status = String(t["grpc-status"]);
      });
      stream.on("error", reject);
      stream.on("close", () => resolve({ status, trailersOnly, dataBytes }));
      stream.end(Buffer.from([0, 0, 0, 0, 0]));
    });
  } finally {
    session.close();
  }
}
