import { timingSafeEqual } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, invalidField } from "@toolmesh/errors";
import {
  ApprovalDecision,
  AWAITING_APPROVAL,
  type DispatchResponse,
  type HeldCall,
  type Principal,
} from "@toolmesh/proto";
import type { ApprovalDesk } from "../../approvals/approval-desk.js";
import { awaitsConfirmation } from "../../records/approval-records.js";
import type { HeldCallStore } from "../../records/held-calls.js";
import type { AskingCall, InputRequest } from "../../runtimes/runtime.js";

/** The key a confirmation is asked under in an input-required result. */
export const CONFIRM_KEY = "confirm";
/** How a confirmation's request state starts, telling it from a running call's. */
const STATE_PREFIX = "confirm.";

/**
 * The caller's confirmation of its own held call, asked over MCP: an elicitation naming the tool
 * and the call's redacted arguments. The answer decides the hold as the caller's DecideApproval
 * would; its request state carries the call and the hold's secret, so it confirms that call
 * alone, once (the hold is decided compare-and-set), on any Dispatcher.
 */
export class Confirmations {
  constructor(
    private readonly held: HeldCallStore,
    private readonly approvals: ApprovalDesk,
  ) {}

  /** The held call behind a PENDING response, when it waits for its caller to confirm it. */
  async waiting(response: DispatchResponse): Promise<HeldCall | undefined> {
    if (response.error?.code !== AWAITING_APPROVAL) return undefined;
    const held = (await this.held.get(response.callId))?.held;
    return held?.approval && awaitsConfirmation(held.approval) ? held : undefined;
  }

  /** The question that asks the caller. */
  question(held: HeldCall): InputRequest {
    const a = held.approval;
    return {
      method: "elicitation/create",
      params: {
        mode: "form",
        message: `Allow tool "${a?.tool}" to run with these arguments?\n${JSON.stringify(a?.arguments ?? {}, null, 2)}\n(call ${a?.callId}; it waits until ${a?.expiresAt ? new Date(timestampMs(a.expiresAt)).toISOString() : "its hold expires"})`,
        requestedSchema: {
          type: "object",
          properties: {
            confirm: { type: "boolean", title: "Allow this call", default: false },
          },
          required: ["confirm"],
        },
      },
    };
  }

  /** The call a question asks for, as a push to a 2025-11-25 client needs it. */
  asking(held: HeldCall): AskingCall {
    const a = held.approval;
    return {
      callId: a?.callId ?? "",
      traceId: a?.traceId ?? "",
      tool: a?.tool ?? "",
      deadlineMs: a?.expiresAt ? timestampMs(a.expiresAt) : Date.now(),
    };
  }

  /** The request state a 2026-07-28 client sends back with its answer. */
  stateOf(held: HeldCall): string {
    const callId = Buffer.from(held.approval?.callId ?? "").toString("base64url");
    return `${STATE_PREFIX}${callId}.${held.confirmationNonce}`;
  }

  /** True for a request state of a confirmation (not of a running call). */
  isState(state: string): boolean {
    return state.startsWith(STATE_PREFIX);
  }

  /** Decides the call a confirmation's state names with the caller's answer. */
  async answerState(
    state: string,
    answer: JsonObject | undefined,
    principal: Principal,
  ): Promise<DispatchResponse> {
    const [callPart = "", nonce = "", extra] = state.slice(STATE_PREFIX.length).split(".");
    const callId = Buffer.from(callPart, "base64url").toString("utf8");
    const held = callId && extra === undefined ? (await this.held.get(callId))?.held : undefined;
    const expected = Buffer.from(held?.confirmationNonce ?? "");
    const given = Buffer.from(nonce);
    if (
      !held ||
      expected.length === 0 ||
      expected.length !== given.length ||
      !timingSafeEqual(expected, given)
    )
      throw invalidField(
        "requestState",
        "is not the state of a confirmation that still waits: it was changed, answered already, or its call's hold has ended",
      );
    if (!answer)
      throw invalidField(
        "inputResponses",
        `answer the question "${CONFIRM_KEY}" of the input-required result`,
      );
    return this.decide(held, answer, principal);
  }

  /** Confirms or denies a held call with the caller's answer (an ElicitResult). */
  async decide(
    held: HeldCall,
    answer: JsonObject,
    principal: Principal,
  ): Promise<DispatchResponse> {
    const content = (answer.content ?? {}) as JsonObject;
    const confirmed = answer.action === "accept" && content.confirm === true;
    const decided = await this.approvals.decide(principal, {
      callId: held.approval?.callId ?? "",
      decision: confirmed ? ApprovalDecision.APPROVE : ApprovalDecision.DENY,
      reason: confirmed ? "" : `the caller answered ${String(answer.action ?? "nothing")}`,
    } as never);
    if (!decided.result)
      throw new ConnectError(`call ${held.approval?.callId} has no result yet`, Code.Internal);
    return decided.result;
  }
}
