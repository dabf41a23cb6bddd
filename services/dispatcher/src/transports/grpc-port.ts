import * as grpc from "@grpc/grpc-js";
import type { RequestAuthenticator } from "@toolmesh/auth";
import { ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import {
  type CancelRequest,
  type DispatchBatchRequest,
  DispatcherService,
  type DispatchRequest,
  type DispatchToolCallsRequest,
  type Principal,
} from "@toolmesh/proto";
import { grpcServiceDefinition, toGrpcServiceError } from "@toolmesh/server";
import type { ToolCatalog } from "../catalog/tool-catalog.js";
import type { DispatchChain } from "../chain/dispatch-chain.js";
import type { RunningCalls } from "../chain/running-calls.js";
import type { DispatchOptions } from "../chain/types.js";
import { callRpcs } from "./call-rpcs.js";
import type { InputDesk } from "./inputs/input-desk.js";

export interface GrpcPortDeps {
  chain: DispatchChain;
  catalog: ToolCatalog;
  running: RunningCalls;
  inputs: InputDesk;
  authenticateRequest: RequestAuthenticator;
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
      const traceparent = call.metadata.get("traceparent")[0];
      const authStartedMs = Date.now();
      Promise.resolve()
        .then(() =>
          deps.authenticateRequest(typeof header === "string" ? header : null, call.getPeer()),
        )
        .then((principal) =>
          run(call.request, principal, {
            rpcTimeoutMs,
            signal: abort.signal,
            traceparent: typeof traceparent === "string" ? traceparent : undefined,
            authStartedMs,
          }),
        )
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
  const rpcs = callRpcs(deps);
  server.addService(grpcServiceDefinition(DispatcherService), {
    dispatch: unary<DispatchRequest, unknown>(rpcs.dispatch),
    dispatchBatch: unary<DispatchBatchRequest, unknown>(rpcs.dispatchBatch),
    cancel: unary<CancelRequest, unknown>(rpcs.cancel),
    dispatchToolCalls: unary<DispatchToolCallsRequest, unknown>(rpcs.dispatchToolCalls),
    getRuntimeStatus: unimplemented,
    importMcpServer: unimplemented,
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
  if (!(error instanceof ConnectError)) log.error({ err: error }, "unexpected error in Dispatch");
  return toGrpcServiceError(ConnectError.from(error));
}
