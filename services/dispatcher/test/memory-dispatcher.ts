import { create } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { authInterceptor, bearerToken } from "@toolmesh/auth";
import { loadConfig } from "@toolmesh/config";
import { createLogger } from "@toolmesh/log";
import { buckets, MemorySnapshot } from "@toolmesh/nats";
import { PolicySnapshot } from "@toolmesh/policy";
import {
  AuditAction,
  type AuditRecord,
  CallStatus,
  DispatcherService,
  GrantSchema,
  ToolSchema,
  ToolStatus,
} from "@toolmesh/proto";
import { type ServedTools, serveTools, toolSpec } from "@toolmesh/sdk";
import type { ListeningServer } from "@toolmesh/server";
import {
  allowAllSpec,
  as,
  Collector,
  chainTestTools,
  type ToolLog,
  testSigner,
  toolLog,
} from "@toolmesh/testkit";
import { MemoryToolSource } from "../src/catalog/tool-catalog.js";
import { type DispatcherConfig, dispatcherConfig } from "../src/config.js";
import { MemoryCallIdOwners, MemoryIdempotencyStore } from "../src/records/idempotency.js";
import { MemoryRecords } from "../src/records/record-sink.js";
import { createDispatcher, type Dispatcher } from "../src/server.js";
import type { GrpcPort } from "../src/transports/grpc-port.js";

/** A Dispatcher listening on port 0 in this process, over in-memory snapshots and records. */
export interface MemoryDispatcher {
  dispatcher: Dispatcher;
  /** The main port (gRPC, gRPC-Web, Connect). */
  listening: ListeningServer;
  /** The grpc-js fast path. */
  fastPort: GrpcPort;
  /** A gRPC client of the main port. */
  client: Client<typeof DispatcherService>;
  /** The registry snapshot: the backend's tools and a disabled test.disabled. */
  tools: MemoryToolSource;
  /** The grant snapshot the Dispatcher's PolicySnapshot reads. */
  grants: MemorySnapshot<typeof GrantSchema>;
  /** Every record the Dispatcher wrote, in write order. */
  records: MemoryRecords;
  /** Every record as it is stored, to await one. */
  stored: Collector<AuditRecord>;
  backend: ToolLog;
  /** JWTs of agent-1 (granted everything), agent-2 (no grants), an admin, and one signed by another key. */
  tokens: { agent: string; stranger: string; admin: string; forged: string };
  /** A JWT for any agent and roles, signed with the Dispatcher's key. */
  token(agentId: string, roles?: string[]): Promise<string>;
  /** Lets agent-1 call every tool with every scope, as grant g-all. */
  grantAll(): void;
  /** Dispatches a call as agent-1. */
  call(
    tool: string,
    args?: Record<string, unknown>,
    extra?: Record<string, unknown>,
  ): ReturnType<Client<typeof DispatcherService>["dispatch"]>;
  /** What every test starts from: both snapshots loaded, records writable, agent-1 granted all. */
  reset(): void;
  /** Every record of one call, in write order, as "ACTION STATUS". */
  recordsOf(callId: string): string[];
  stop(): Promise<void>;
}

/**
 * Builds the Dispatcher with createDispatcher as main.ts does, but over in-memory registry and
 * grant snapshots, an in-memory record sink and idempotency store and JWT-only auth, with a real
 * tool backend (the SDK's serveTools on port 0); no NATS.
 */
export async function startMemoryDispatcher(): Promise<MemoryDispatcher> {
  const signer = testSigner();
  const tools = new MemoryToolSource();
  const grants = new MemorySnapshot(GrantSchema);
  const records = new MemoryRecords();
  const stored = new Collector<AuditRecord>();
  records.onStored = (record) => stored.push(record);
  const backend = toolLog();
  const served: ServedTools = await serveTools(chainTestTools(backend), { port: 0 });
  for (const def of chainTestTools(backend))
    tools.put(create(ToolSchema, { spec: toolSpec(def, served.address), schemaHash: def.name }));
  tools.put(
    create(ToolSchema, {
      spec: {
        name: "test.disabled",
        inputSchema: { type: "object" },
        status: ToolStatus.DISABLED,
        runtime: { kind: { case: "grpc", value: { address: served.address } } },
      },
    }),
  );
  const verify = signer.verifier();
  const dispatcher = createDispatcher({
    tools,
    policy: new PolicySnapshot(grants),
    records,
    instance: "memory-dispatcher",
    idempotency: new MemoryIdempotencyStore(),
    callIds: new MemoryCallIdOwners(),
    auth: {
      interceptors: [authInterceptor(verify)],
      authenticateRequest: (header) => verify(bearerToken(header)),
    },
    // The documented defaults, as main.ts reads them, with shorter timeouts; only
    // ImportMcpServer calls the Registry and only chat the tool agent, and no test here does, so
    // nothing listens there.
    settings: loadConfig<DispatcherConfig>(dispatcherConfig, {
      TOOLMESH_DEFAULT_TIMEOUT_MS: "5000",
      TOOLMESH_MAX_TIMEOUT_MS: "10000",
      TOOLMESH_MAX_BACKEND_RESPONSE_BYTES: String(1024 * 1024),
      TOOLMESH_REGISTRY_URL: "http://127.0.0.1:9",
      TOOLMESH_TOOL_AGENT_URL: "http://127.0.0.1:9",
    }),
    log: createLogger("dispatcher-test", "silent"),
  });
  const listening = await dispatcher.server.listen(0, "127.0.0.1");
  const fastPort = await dispatcher.listenGrpc(0, "127.0.0.1");

  const client = createClient(DispatcherService, createGrpcTransport({ baseUrl: listening.url }));
  const tokens = {
    agent: await signer.token("agent-1"),
    stranger: await signer.token("agent-2"),
    admin: await signer.token("ops", ["admin"]),
    forged: await testSigner("x".repeat(32)).token("agent-1", ["admin"]),
  };
  const grantAll = () =>
    grants.put(
      buckets.permission.grantKey("g-all"),
      create(GrantSchema, { id: "g-all", spec: allowAllSpec("agent-1") }),
    );
  return {
    dispatcher,
    listening,
    fastPort,
    client,
    tools,
    grants,
    records,
    stored,
    backend,
    tokens,
    token: (agentId, roles) => signer.token(agentId, roles),
    grantAll,
    call: (tool, args = {}, extra = {}) =>
      client.dispatch({ tool, arguments: args as never, ...extra }, as(tokens.agent)),
    reset() {
      tools.isReady = true;
      grants.isReady = true;
      records.writable = true;
      records.full = undefined;
      records.failure = undefined;
      grantAll();
    },
    recordsOf(callId) {
      return records.records
        .filter((r) => r.callId === callId)
        .map((r) => `${AuditAction[r.action]} ${CallStatus[r.status]}`);
    },
    async stop() {
      await dispatcher.close();
      await fastPort.close(1000);
      await listening.close(1000);
      await served.close();
    },
  };
}
