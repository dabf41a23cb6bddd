import { create, type DescMessage, type MessageInitShape, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter } from "@bufbuild/protobuf/wire";
import { ConnectError } from "@connectrpc/connect";
import * as grpc from "@grpc/grpc-js";
import { type Authenticator, bearerToken } from "@toolmesh/auth";
import type { Logger } from "@toolmesh/log";
import {
  type CancelRequest,
  type DispatchBatchRequest,
  DispatcherService,
  type DispatchRequest,
  type Principal,
} from "@toolmesh/proto";
import { grpcServiceDefinition } from "@toolmesh/sdk";
import { runBatch } from "./batch.js";
import type { DispatchChain, DispatchOptions } from "./chain.js";
import { cancelCall } from "./handlers.js";
import type { RunningCalls } from "./running-calls.js";
import type { ToolCatalog } from "./tool-catalog.js";

export interface GrpcPortDeps {
  chain: DispatchChain;
  catalog: ToolCatalog;
  running: RunningCalls;
  authenticate: Authenticator;
  log: Logger;
  readMaxBytes: number;
}

export interface GrpcPort {
  readonly port: number;
  close(graceMs?: number): Promise<void>;
}

/**
 * DispatcherService's call RPCs (Dispatch, DispatchBatch, Cancel) on a second port served by
 * @grpc/grpc-js: the same chain, for agents that want the lowest latency. Admin RPCs stay on
 * the main port. Error details travel in grpc-status-details-bin, as on the main port.
 */
export async function listenGrpcPort(
  deps: GrpcPortDeps,
  port: number,
  host: string,
): Promise<GrpcPort> {
  const server = new grpc.Server({
    "grpc.max_receive_message_length": deps.readMaxBytes,
    "grpc.max_concurrent_streams": 1000,
  });
  const unary =
    <Req, Res>(
      run: (req: Req, principal: Principal, options: DispatchOptions) => Promise<Res> | Res,
    ) =>
    (call: grpc.ServerUnaryCall<Req, Res>, callback: grpc.sendUnaryData<Res>) => {
      // grpc-js emits "cancelled" after every call; only one still running is really abandoned.
      const abort = new AbortController();
      let answered = false;
      call.once("cancelled", () => {
        if (!answered) abort.abort("cancelled");
      });
      const deadline = call.getDeadline();
      const deadlineMs = deadline instanceof Date ? deadline.getTime() : deadline;
      const rpcTimeoutMs = Number.isFinite(deadlineMs)
        ? Math.max(1, deadlineMs - Date.now())
        : undefined;
      const header = call.metadata.get("authorization")[0];
      Promise.resolve()
        .then(() => deps.authenticate(bearerToken(typeof header === "string" ? header : null)))
        .then((principal) => run(call.request, principal, { rpcTimeoutMs, signal: abort.signal }))
        .then(
          (response) => {
            answered = true;
            callback(null, response);
          },
          (error: unknown) => {
            answered = true;
            callback(toServiceError(error, deps.log));
          },
        );
    };
  const unimplemented = (_call: unknown, callback: grpc.sendUnaryData<unknown>) =>
    callback({
      code: grpc.status.UNIMPLEMENTED,
      details: "use the Dispatcher's main port for this RPC",
    });
  server.addService(grpcServiceDefinition(DispatcherService), {
    dispatch: unary<DispatchRequest, unknown>((req, principal, options) =>
      deps.chain.dispatch(req, principal, options),
    ),
    dispatchBatch: unary<DispatchBatchRequest, unknown>((req, principal, options) =>
      runBatch(deps.chain, deps.catalog, req, principal, options),
    ),
    cancel: unary<CancelRequest, unknown>((req, principal) =>
      cancelCall(deps.running, req.callId, principal),
    ),
    getRuntimeStatus: unimplemented,
    startTool: unimplemented,
    stopTool: unimplemented,
  });
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (error, p) =>
      error ? reject(error) : resolve(p),
    ),
  );
  deps.log.info({ grpc_port: bound, host }, "listening (gRPC fast path for Dispatch)");
  return {
    port: bound,
    close: (graceMs = 5000) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => server.forceShutdown(), graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}

function toServiceError(error: unknown, log: Logger): Partial<grpc.ServiceError> {
  const ce = ConnectError.from(error);
  if (!(error instanceof ConnectError)) log.error({ err: error }, "unexpected error in Dispatch");
  const metadata = new grpc.Metadata();
  metadata.set("grpc-status-details-bin", Buffer.from(statusDetails(ce)));
  return { code: ce.code as number as grpc.status, details: ce.rawMessage, metadata };
}

/** google.rpc.Status {code, message, details: Any[]}, encoded by hand (no runtime dependency). */
function statusDetails(error: ConnectError): Uint8Array {
  const writer = new BinaryWriter();
  writer.tag(1, 0).int32(error.code);
  writer.tag(2, 2).string(error.rawMessage);
  for (const detail of error.details) {
    let typeName: string;
    let bytes: Uint8Array;
    if ("desc" in detail) {
      const d = detail as { desc: DescMessage; value: MessageInitShape<DescMessage> };
      typeName = d.desc.typeName;
      bytes = toBinary(d.desc, create(d.desc, d.value));
    } else {
      typeName = detail.type;
      bytes = detail.value;
    }
    writer.tag(3, 2).fork();
    writer.tag(1, 2).string(`type.googleapis.com/${typeName}`);
    writer.tag(2, 2).bytes(bytes);
    writer.join();
  }
  return writer.finish();
}
