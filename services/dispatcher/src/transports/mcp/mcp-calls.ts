import { create, type JsonObject } from "@bufbuild/protobuf";
import {
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type Server,
  type ServerContext,
} from "@modelcontextprotocol/server";
import { Code, ConnectError } from "@toolmesh/errors";
import {
  type BackendEvent,
  type DispatchRequest,
  type DispatchResponse,
  DispatchResponseSchema,
  InputRequestSchema,
  InputRequiredSchema,
  type Principal,
} from "@toolmesh/proto";
import type { ToolCatalog } from "../../catalog/tool-catalog.js";
import type { DispatchChain } from "../../chain/dispatch-chain.js";
import { dispatchAnswerable } from "../inputs/answerable.js";
import { CONFIRM_KEY, type Confirmations } from "../inputs/confirmations.js";
import { DeferredCaller } from "../inputs/deferred-caller.js";
import type { InputDesk } from "../inputs/input-desk.js";
import { readState } from "../inputs/request-state.js";
import { PushCaller, type PushedRequests } from "./mcp-push.js";

/** What an MCP request needs to run a call with its caller on the line. */
export interface McpCallDeps {
  chain: DispatchChain;
  catalog: ToolCatalog;
  /** Calls whose 2026-07-28 caller answers later. */
  inputs: InputDesk;
  /** Questions sent to 2025-11-25 callers, waiting for their POSTed answers. */
  pushed: PushedRequests;
  /** Held calls that wait for their caller's confirmation. */
  confirmations: Confirmations;
}

/** The MCP request a call comes from. */
export interface McpRequestOf {
  principal: Principal;
  era: "legacy" | "modern";
  server: Server;
  ctx: ServerContext;
}

const CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities";
const LOG_LEVEL_META = "io.modelcontextprotocol/logLevel";

/**
 * Runs a call for an MCP request (tools/call, prompts/get, resources/read) with its caller on
 * the line: a 2025-11-25 client is asked on this request's stream; a 2026-07-28 client gets
 * PENDING with `input_required` at each stop and answers with a retry carrying the requestState.
 */
export async function dispatchForMcp(
  deps: McpCallDeps,
  from: McpRequestOf,
  req: DispatchRequest,
  onEvent?: (event: BackendEvent) => void,
): Promise<DispatchResponse> {
  return askConfirmation(deps, from, await dispatchWithCaller(deps, from, req, onEvent));
}

async function dispatchWithCaller(
  deps: McpCallDeps,
  from: McpRequestOf,
  req: DispatchRequest,
  onEvent?: (event: BackendEvent) => void,
): Promise<DispatchResponse> {
  const { principal, ctx } = from;
  const options = { signal: ctx.mcpReq.signal, ...(onEvent ? { onEvent } : {}) };
  if (from.era === "legacy") {
    const caller = new PushCaller(deps.pushed, from.server, ctx.mcpReq.id, principal);
    return deps.chain.dispatch(req, principal, { ...options, caller });
  }
  const state = ctx.mcpReq.requestState<unknown>();
  const responses = (ctx.mcpReq.inputResponses ?? {}) as Record<string, JsonObject>;
  if (typeof state === "string") {
    try {
      if (deps.confirmations.isState(state))
        return await deps.confirmations.answerState(state, responses[CONFIRM_KEY], principal);
      const named = readState("requestState", state);
      if (named.tool !== deps.catalog.resolve(req.tool))
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `requestState belongs to a call of "${named.tool}", not of "${req.tool}": retry the request it came with`,
        );
      return await deps.inputs.answer(state, responses, principal);
    } catch (error) {
      if (error instanceof ProtocolError) throw error;
      const refusal = ConnectError.from(error);
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, refusal.rawMessage);
    }
  }
  return dispatchAnswerable(
    deps.inputs,
    deps.chain,
    req,
    principal,
    options,
    deferredCallerOf(ctx),
  );
}

/**
 * A 2026-07-28 request's client as the caller of its call: what it declared it can answer, the
 * answers it sent with the call, and the log level it asked for.
 */
export function deferredCallerOf(ctx: ServerContext): DeferredCaller {
  const envelope = ctx.mcpReq.envelope as JsonObject | undefined;
  const capabilities = (envelope?.[CAPABILITIES_META] ?? {}) as JsonObject;
  const logLevel = envelope?.[LOG_LEVEL_META];
  const responses = (ctx.mcpReq.inputResponses ?? {}) as Record<string, JsonObject>;
  return new DeferredCaller(
    capabilities,
    Object.keys(responses).length > 0 ? responses : undefined,
    typeof logLevel === "string" ? logLevel : undefined,
  );
}

/**
 * A held call that waits for its caller's own confirmation asks for it: a 2025-11-25 client on
 * the request's stream (its answer decides the call, which then runs), a 2026-07-28 client that
 * can elicit with an input-required result. Either may leave the call held, to be decided with
 * DecideApproval.
 */
async function askConfirmation(
  deps: McpCallDeps,
  from: McpRequestOf,
  response: DispatchResponse,
): Promise<DispatchResponse> {
  const held = await deps.confirmations.waiting(response);
  if (!held) return response;
  const question = deps.confirmations.question(held);
  if (from.era === "legacy") {
    const caller = new PushCaller(deps.pushed, from.server, from.ctx.mcpReq.id, from.principal);
    let answer: JsonObject;
    try {
      answer = await caller.ask(CONFIRM_KEY, question, deps.confirmations.asking(held));
    } catch {
      // The client cannot elicit, or did not answer in time: the call stays held.
      return response;
    }
    return deps.confirmations.decide(held, answer, from.principal);
  }
  const envelope = from.ctx.mcpReq.envelope as JsonObject | undefined;
  const capabilities = (envelope?.[CAPABILITIES_META] ?? {}) as JsonObject;
  if (capabilities.elicitation === undefined) return response;
  return create(DispatchResponseSchema, {
    ...response,
    inputRequired: create(InputRequiredSchema, {
      requests: {
        [CONFIRM_KEY]: create(InputRequestSchema, {
          method: question.method,
          params: question.params,
        }),
      },
      requestState: deps.confirmations.stateOf(held),
      ...(held.approval?.expiresAt ? { expiresAt: held.approval.expiresAt } : {}),
    }),
  });
}

/** A PENDING call that waits for its caller, as the 2026-07-28 InputRequiredResult. */
export function inputRequiredResult(response: DispatchResponse): JsonObject | undefined {
  const asked = response.inputRequired;
  if (!asked) return undefined;
  return {
    resultType: "input_required",
    inputRequests: Object.fromEntries(
      Object.entries(asked.requests).map(([key, request]) => [
        key,
        { method: request.method, params: request.params ?? {} },
      ]),
    ),
    requestState: asked.requestState,
  };
}

/**
 * The protocol error a failed call of a prompt, resource or completion is (they have no
 * error result): the server's own JSON-RPC error when it gave one, else -32603 with the reason.
 */
export function protocolErrorOf(response: DispatchResponse): ProtocolError {
  const error = response.error;
  const details = (error?.details ?? {}) as JsonObject;
  const code = details.jsonrpc_code;
  if (error?.code === "missing_client_capability") return missingCapability(details, error.message);
  return new ProtocolError(
    typeof code === "number" ? code : ProtocolErrorCode.InternalError,
    `${error?.code ?? "error"}: ${error?.message ?? "the call failed"}`,
    details.data,
  );
}

/** A call that needed a capability its caller did not declare: the spec's -32021 (HTTP 400). */
export function missingCapability(details: JsonObject, message: string): ProtocolError {
  const data = (details.data ?? {}) as JsonObject;
  return new MissingRequiredClientCapabilityError(
    { requiredCapabilities: (data.requiredCapabilities ?? {}) as never },
    message,
  );
}

/** A refusal before the call ran, as the protocol error of a prompt or resource request. */
export function refusalOf(error: unknown, notFound: () => ProtocolError): ProtocolError {
  if (error instanceof ProtocolError) return error;
  const refusal = ConnectError.from(error);
  // What the caller may not use it may not see either: it is not found, as an unknown one.
  if (refusal.code === Code.NotFound || refusal.code === Code.PermissionDenied) return notFound();
  if (refusal.code === Code.InvalidArgument || refusal.code === Code.FailedPrecondition)
    return new ProtocolError(ProtocolErrorCode.InvalidParams, refusal.rawMessage);
  return new ProtocolError(ProtocolErrorCode.InternalError, refusal.rawMessage);
}
