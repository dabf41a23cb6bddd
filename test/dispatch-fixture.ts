import http from "node:http";
import type { AddressInfo } from "node:net";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import {
  type DispatcherService,
  InvokeRequestSchema,
  InvokeResponseSchema,
  LocalProtocol,
  ToolStatus,
} from "@toolmesh/proto";
import type { ServedTools } from "@toolmesh/sdk";
import {
  type CallRecords,
  chainTestTools,
  collectRecords,
  eventually,
  localHttpRuntime,
  repoRoot,
  serveOnStack,
  startStack,
  type TestStack,
  type ToolLog,
  toolLog,
} from "@toolmesh/testkit";
import { dataQueryInputSchema, dataQueryOutputSchema } from "../libs/sdk/src/examples/index.js";

/**
 * The whole chain with real processes: nats-server, registry, permission, dispatcher, an SDK
 * backend (the chain tests' tools), a raw gRPC backend that misbehaves, HTTP tools and local tool
 * processes; agent-1 may call everything, agent-2 nothing.
 */

export interface DispatchFixture {
  stack: TestStack;
  /** What the SDK backend's tools saw. */
  log: ToolLog;
  traces: CallRecords["traces"];
  audits: CallRecords["audits"];
  outcomes: CallRecords["outcomes"];
  /** Requests the HTTP tool server got, by path. */
  remoteHits: Map<string, number>;
  /** JWTs of agent-1 (granted everything) and agent-2 (no grants), and the admin token. */
  agent: string;
  stranger: string;
  admin: string;
  dispatcher(): Client<typeof DispatcherService>;
  /** Dispatches a call as agent-1. */
  call(
    tool: string,
    args?: Record<string, unknown>,
    extra?: Record<string, unknown>,
  ): ReturnType<Client<typeof DispatcherService>["dispatch"]>;
  stop(): Promise<void>;
}

/** Starts the stack and every backend, registers the tools, and waits until the Dispatcher sees them. */
export async function startDispatchFixture(): Promise<DispatchFixture> {
  const log = toolLog();
  const remoteHits = new Map<string, number>();
  const stack = await startStack({
    serviceEnv: { dispatcher: { TOOLMESH_LOCAL_IDLE_TIMEOUT_MS: "60000" } },
  });
  let served: ServedTools | undefined;
  let rawBackend: grpc.Server | undefined;
  let remote: http.Server | undefined;
  const stop = async () => {
    await served?.close();
    rawBackend?.forceShutdown();
    remote?.close();
    await stack.stop();
  };
  try {
    const { traces, audits, outcomes } = collectRecords(stack.nc);
    const admin = stack.adminToken;
    const agent = await stack.agentToken("agent-1", { onBehalfOf: "" });
    const stranger = await stack.agentToken("agent-2");
    await stack.grantAll("agent-1");
    const dispatcher = () => stack.dispatcherClient();
    const call: DispatchFixture["call"] = (tool, args = {}, extra = {}) =>
      dispatcher().dispatch({ tool, arguments: args as never, ...extra }, stack.as(agent));
    served = await serveOnStack(stack, chainTestTools(log));

    rawBackend = await startRawBackend();
    remote = await startRemote(remoteHits);
    const remoteUrl = `http://127.0.0.1:${(remote.address() as AddressInfo).port}`;
    const rawAddress = `127.0.0.1:${(rawBackend as unknown as { port: number }).port}`;
    const register = (spec: Record<string, unknown>) =>
      stack.registryClient.registerTool(
        {
          tool: {
            description: "a test tool",
            inputSchema: { type: "object" },
            status: ToolStatus.ACTIVE,
            ...spec,
          } as never,
        },
        stack.as(admin),
      );
    await register({
      name: "test.garbage",
      runtime: { kind: { case: "grpc", value: { address: rawAddress } } },
    });
    await register({
      name: "test.huge",
      runtime: { kind: { case: "grpc", value: { address: rawAddress } } },
    });
    await register({
      name: "test.flaky",
      idempotent: true,
      retryPolicy: { maxAttempts: 3, initialBackoffMs: 10, maxBackoffMs: 50 },
      runtime: { kind: { case: "remote", value: { url: `${remoteUrl}/flaky` } } },
    });
    await register({
      name: "test.flaky-once",
      idempotent: false,
      retryPolicy: { maxAttempts: 3, initialBackoffMs: 10, maxBackoffMs: 50 },
      runtime: { kind: { case: "remote", value: { url: `${remoteUrl}/always503` } } },
    });
    await register({
      name: "test.remote",
      runtime: { kind: { case: "remote", value: { url: `${remoteUrl}/ok` } } },
    });
    await register({
      name: "test.notjson",
      runtime: { kind: { case: "remote", value: { url: `${remoteUrl}/notjson` } } },
    });
    await register({
      name: "test.disabled",
      status: ToolStatus.DISABLED,
      runtime: { kind: { case: "remote", value: { url: `${remoteUrl}/ok` } } },
    });
    await register({
      name: "data.query",
      description: "Query the orders table.",
      inputSchema: dataQueryInputSchema,
      outputSchema: dataQueryOutputSchema,
      requiredScopes: ["read:data"],
      idempotent: true,
      runtime: {
        kind: {
          case: "local",
          value: {
            command: process.execPath,
            args: ["--import", "tsx", "libs/sdk/src/examples/data-tool-main.ts"],
            workingDir: repoRoot,
            protocol: LocalProtocol.GRPC,
          },
        },
      },
    });
    await register({ name: "test.local-http", runtime: localHttpRuntime() });
    // The dispatcher sees registry and grant changes through its watches.
    await eventually(
      () => call("test.flaky-once"),
      10_000,
      "dispatcher sees the tools and the grant",
    );
    return {
      stack,
      log,
      traces,
      audits,
      outcomes,
      remoteHits,
      agent,
      stranger,
      admin,
      dispatcher,
      call,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** A gRPC backend that answers test.garbage with bytes that are no InvokeResponse and test.huge with 50 MB. */
async function startRawBackend(): Promise<grpc.Server> {
  const server = new grpc.Server({ "grpc.max_send_message_length": -1 });
  const definition = {
    invoke: {
      path: "/toolmesh.backend.v1.ToolBackendService/Invoke",
      requestStream: false,
      responseStream: true,
      requestSerialize: (v: Buffer) => v,
      requestDeserialize: (b: Buffer) => fromBinary(InvokeRequestSchema, b),
      responseSerialize: (v: Buffer) => v,
      responseDeserialize: (b: Buffer) => b,
    },
  };
  server.addService(definition as unknown as grpc.ServiceDefinition, {
    invoke: (call: grpc.ServerWritableStream<{ tool: string }, Buffer>) => {
      if (call.request.tool === "test.huge") {
        const output = { blob: "x".repeat(50 * 1024 * 1024) };
        call.write(
          Buffer.from(
            toBinary(
              InvokeResponseSchema,
              create(InvokeResponseSchema, { message: { case: "result", value: { output } } }),
            ),
          ),
        );
      } else {
        call.write(Buffer.from([0x0f, 0xff, 0xff, 0xff]));
      }
      call.end();
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) =>
      e ? reject(e) : resolve(p),
    ),
  );
  (server as unknown as { port: number }).port = port;
  return server;
}

/** An HTTP tool server: /flaky fails twice with 503, /always503 always does, /ok echoes, /notjson is text. */
async function startRemote(hits: Map<string, number>): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const path = req.url ?? "/";
    const n = (hits.get(path) ?? 0) + 1;
    hits.set(path, n);
    let body = "";
    req.on("data", (chunk) => {
      body += chunk;
    });
    req.on("end", () => {
      if ((path === "/flaky" && n <= 2) || path === "/always503") res.writeHead(503).end("busy");
      else if (path === "/notjson")
        res.writeHead(200, { "content-type": "text/plain" }).end("hello");
      else if (path === "/flaky")
        res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
      else
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ echoed: JSON.parse(body || "{}") }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return server;
}
