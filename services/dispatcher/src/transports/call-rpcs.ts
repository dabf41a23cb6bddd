import type { RequestAuthenticator } from "@toolmesh/auth";
import {
  type CancelRequest,
  type CancelResponse,
  type DispatchBatchRequest,
  type DispatchBatchResponse,
  DispatcherService,
  type DispatchRequest,
  type DispatchResponse,
  type DispatchToolCallsRequest,
  type DispatchToolCallsResponse,
  type Principal,
} from "@toolmesh/proto";
import { type UnaryCall, type UnaryRoutes, unaryRoutes } from "@toolmesh/server";
import { isMcpBacked } from "../catalog/mcp-entries.js";
import type { ToolCatalog } from "../catalog/tool-catalog.js";
import type { DispatchChain } from "../chain/dispatch-chain.js";
import type { RunningCalls } from "../chain/running-calls.js";
import type { DispatchOptions } from "../chain/types.js";
import { runBatch } from "./batch.js";
import { cancelCall } from "./cancel.js";
import { dispatchAnswerable } from "./inputs/answerable.js";
import { DeferredCaller } from "./inputs/deferred-caller.js";
import { ANSWERS_EVERYTHING, type InputDesk } from "./inputs/input-desk.js";
import { dispatchToolCalls } from "./tool-calls/dispatch-tool-calls.js";

/** What the call RPCs need. */
export interface CallRpcDeps {
  chain: DispatchChain;
  catalog: ToolCatalog;
  running: RunningCalls;
  /** Calls of MCP tools that wait for their caller's answers. */
  inputs: InputDesk;
}

/** One call RPC, transport-free: the request, the authenticated caller, the per-call options. */
type CallRpc<Req, Res> = (req: Req, principal: Principal, options: DispatchOptions) => Promise<Res>;

/**
 * The RPCs agents make on every call — Dispatch, DispatchBatch, DispatchToolCalls and Cancel —
 * in one place, for each transport that serves them (the main port's gRPC fast path, the grpc-js
 * port, and the Connect handlers).
 */
export function callRpcs(deps: CallRpcDeps): {
  dispatch: CallRpc<DispatchRequest, DispatchResponse>;
  dispatchBatch: CallRpc<DispatchBatchRequest, DispatchBatchResponse>;
  dispatchToolCalls: CallRpc<DispatchToolCallsRequest, DispatchToolCallsResponse>;
  cancel: CallRpc<CancelRequest, CancelResponse>;
} {
  const { chain, catalog, running, inputs } = deps;
  return {
    // A call of an MCP tool may ask its caller for input: the caller answers with AnswerInput.
    dispatch: (req, principal, options) =>
      isMcpBacked(catalog.get(catalog.resolve(req.tool)))
        ? dispatchAnswerable(
            inputs,
            chain,
            req,
            principal,
            options,
            new DeferredCaller(ANSWERS_EVERYTHING),
          )
        : chain.dispatch(req, principal, options),
    dispatchBatch: (req, principal, options) => runBatch(chain, catalog, req, principal, options),
    dispatchToolCalls: (req, principal, options) =>
      dispatchToolCalls(chain, catalog, req, principal, options),
    cancel: async (req, principal) => cancelCall(running, req.callId, principal),
  };
}

/**
 * The call RPCs on the main port's fast path for binary gRPC (libs/server grpc-unary.ts): each
 * call is authenticated here with the same guarded authenticator the interceptors use.
 */
export function fastCallRoutes(
  deps: CallRpcDeps & { authenticateRequest: RequestAuthenticator },
): UnaryRoutes {
  const rpcs = callRpcs(deps);
  const serve =
    <Req, Res>(run: CallRpc<Req, Res>) =>
    async (req: Req, call: UnaryCall) => {
      const authStartedMs = Date.now();
      const principal = await deps.authenticateRequest(
        call.header("authorization") ?? null,
        call.peer,
      );
      return run(req, principal, {
        rpcTimeoutMs: call.timeoutMs,
        signal: call.signal,
        traceparent: call.header("traceparent"),
        authStartedMs,
      });
    };
  return unaryRoutes(DispatcherService, {
    dispatch: serve(rpcs.dispatch),
    dispatchBatch: serve(rpcs.dispatchBatch),
    dispatchToolCalls: serve(rpcs.dispatchToolCalls),
    cancel: serve(rpcs.cancel),
  });
}
