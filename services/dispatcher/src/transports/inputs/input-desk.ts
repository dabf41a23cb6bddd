import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, invalidField } from "@toolmesh/errors";
import {
  CallStatus,
  type DispatchResponse,
  DispatchResponseSchema,
  InputRequestSchema,
  type Principal,
} from "@toolmesh/proto";
import type { InputRequest } from "../../runtimes/runtime.js";
import type { ReplicaLink } from "../replica-link.js";
import type { DeferredCaller } from "./deferred-caller.js";
import { RequestStates, readState } from "./request-state.js";

/** The field a request state arrives in, named in refusals. */
const STATE_FIELD = "request_state";
/** Questions and answers kept per call, and the size of one answer. */
const MAX_KEYS = 32;
const MAX_ANSWER_BYTES = 1024 * 1024;

interface OpenCall {
  caller: DeferredCaller;
  done: Promise<DispatchResponse>;
  principal: Principal;
  /** Bumped at every stop: a state answers the stop it came with, once. */
  round: number;
  startedMs: number;
}

/**
 * The calls of this Dispatcher that wait for their caller (an MCP tool's elicitation, sampling or
 * roots request, for an MCP 2026-07-28 client or a gRPC caller). A call runs on here; its caller
 * gets it PENDING with `input_required` at each stop and answers with the request state, which
 * names this instance and is signed by it.
 */
export class InputDesk {
  private readonly calls = new Map<string, OpenCall>();

  constructor(
    readonly instance: string,
    private readonly states = new RequestStates(),
    private readonly link?: ReplicaLink,
  ) {}

  /**
   * Runs a call whose caller answers later; resolves at its first stop: its end, or PENDING with
   * the questions the tool asked.
   */
  async dispatch(
    caller: DeferredCaller,
    principal: Principal,
    run: (caller: DeferredCaller) => Promise<DispatchResponse>,
  ): Promise<DispatchResponse> {
    const startedMs = Date.now();
    let open: OpenCall | undefined;
    let done: Promise<DispatchResponse> = Promise.resolve(undefined as never);
    // Filed at its first question: a call that asks nothing never waits here.
    caller.onFirstQuestion = (call) => {
      open = { caller, done, principal, round: 0, startedMs };
      this.calls.set(call.callId, open);
      done
        .finally(() => {
          this.calls.delete(call.callId);
          caller.abandon(`call ${call.callId} has ended`);
        })
        .catch(() => {});
    };
    done = run(caller);
    return this.nextStop(caller, done, () => open);
  }

  /** Delivers answers (AnswerInput, an MCP retry); resolves at the call's next stop. */
  async answer(
    state: string,
    responses: Record<string, JsonObject>,
    principal: Principal,
  ): Promise<DispatchResponse> {
    const named = readState(STATE_FIELD, state);
    if (named.instance !== this.instance) {
      if (!this.link)
        throw new ConnectError(
          `call ${named.callId} runs on another Dispatcher, which cannot be reached from here; call the tool again`,
          Code.NotFound,
        );
      return this.link.answer(named.instance, state, responses, principal);
    }
    const claims = this.states.verify(STATE_FIELD, state);
    if (claims.agentId !== principal.agentId || claims.userId !== principal.userId)
      throw invalidField(
        STATE_FIELD,
        "belongs to another caller's call: answer only your own calls",
      );
    if (claims.expiresMs <= Date.now())
      throw invalidField(STATE_FIELD, `has expired: call ${claims.callId} no longer waits`);
    checkResponses(responses);
    const open = this.calls.get(claims.callId);
    if (!open)
      throw new ConnectError(
        `call ${claims.callId} no longer waits for input: it has ended (see its outcome with GetOutcome)`,
        Code.NotFound,
      );
    if (claims.round !== open.round)
      throw new ConnectError(
        `this request state was answered already; answer the latest input_required of call ${claims.callId}`,
        Code.FailedPrecondition,
      );
    open.caller.answer(responses);
    return this.nextStop(open.caller, open.done, () => open);
  }

  /**
   * Answers some of the questions a call of this Dispatcher waits on, without a request state
   * (MCP tasks/update, by the caller that owns the task); keys it does not wait on are ignored.
   */
  answerCall(callId: string, responses: Record<string, JsonObject>, principal: Principal): void {
    const open = this.owned(callId, principal);
    if (!open) throw new ConnectError(`call ${callId} waits for no input here`, Code.NotFound);
    checkResponses(responses);
    open.caller.answer(responses);
  }

  /** The questions a call of this Dispatcher waits on, or undefined when it waits on none. */
  waiting(callId: string, principal?: Principal): Record<string, InputRequest> | undefined {
    const open = principal ? this.owned(callId, principal) : this.calls.get(callId);
    if (!open) return undefined;
    const waiting = open.caller.waiting();
    return Object.keys(waiting).length > 0 ? waiting : undefined;
  }

  /** The end of a call that asked its caller something here, while it runs. */
  doneOf(callId: string): Promise<DispatchResponse> | undefined {
    return this.calls.get(callId)?.done;
  }

  private owned(callId: string, principal: Principal): OpenCall | undefined {
    const open = this.calls.get(callId);
    return open &&
      open.principal.agentId === principal.agentId &&
      open.principal.userId === principal.userId
      ? open
      : undefined;
  }

  private async nextStop(
    caller: DeferredCaller,
    done: Promise<DispatchResponse>,
    open: () => OpenCall | undefined,
  ): Promise<DispatchResponse> {
    const stop = await Promise.race([
      done.then((response) => ({ response })),
      caller.nextStop().then(() => undefined),
    ]);
    if (stop) return stop.response;
    const call = caller.asking;
    const filed = open();
    if (!call || !filed) return done;
    filed.round++;
    const requests = caller.waiting();
    const requestState = this.states.sign({
      instance: this.instance,
      callId: call.callId,
      tool: call.tool,
      agentId: filed.principal.agentId,
      userId: filed.principal.userId,
      round: filed.round,
      expiresMs: call.deadlineMs,
    });
    return create(DispatchResponseSchema, {
      callId: call.callId,
      traceId: call.traceId,
      status: CallStatus.PENDING,
      error: {
        code: "input_required",
        message: `the tool asks its caller: ${Object.values(requests)
          .map((r) => r.method)
          .join(
            ", ",
          )}; answer with AnswerInput and the request_state before ${new Date(call.deadlineMs).toISOString()}`,
      },
      durationMs: Date.now() - filed.startedMs,
      inputRequired: {
        requests: Object.fromEntries(
          Object.entries(requests).map(([key, request]) => [
            key,
            create(InputRequestSchema, { method: request.method, params: request.params }),
          ]),
        ),
        requestState,
        expiresAt: timestampFromMs(call.deadlineMs),
      },
    });
  }
}

/** Answers must be JSON objects (an MCP result each), few and bounded in size. */
function checkResponses(responses: Record<string, JsonObject>): void {
  const keys = Object.keys(responses);
  if (keys.length > MAX_KEYS)
    throw invalidField("responses", `has ${keys.length} answers; at most ${MAX_KEYS} allowed`);
  for (const key of keys) {
    const answer = responses[key] as unknown;
    if (answer === null || typeof answer !== "object" || Array.isArray(answer))
      throw invalidField(
        `responses.${key}`,
        "must be a JSON object: the result of the request asked under this key",
      );
    if (JSON.stringify(answer).length > MAX_ANSWER_BYTES)
      throw invalidField(`responses.${key}`, `is over ${MAX_ANSWER_BYTES} bytes`);
  }
}

/** The capabilities a gRPC caller has: it may be asked anything an MCP tool asks. */
export const ANSWERS_EVERYTHING: JsonObject = { elicitation: {}, sampling: {}, roots: {} };
