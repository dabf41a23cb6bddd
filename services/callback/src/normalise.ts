import { create, equals } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import {
  type CallbackEvent,
  CallbackEventSchema,
  CallErrorSchema,
  CallStatus,
  type Outcome,
  TraceEventKind,
} from "@toolmesh/proto";
import { canonicalJson } from "@toolmesh/schema";

/** The trace event kind announcing a normalised outcome. */
export function callbackKind(status: CallStatus): TraceEventKind {
  if (status === CallStatus.SUCCESS) return TraceEventKind.CALLBACK_SUCCESS;
  if (status === CallStatus.FAILURE) return TraceEventKind.CALLBACK_FAILURE;
  if (status === CallStatus.REFUSED) return TraceEventKind.CALLBACK_REFUSED;
  return TraceEventKind.CALLBACK_INTERRUPTED;
}

/**
 * One callback event per outcome, carrying only what its status means: SUCCESS the output,
 * FAILURE the error and its code, INTERRUPTED the reason, REFUSED (a held call that did not run)
 * the error and the reason, PENDING the reason (`awaiting_approval` while held) and the error
 * that tells the caller what it waits for.
 */
export function normalise(outcome: Outcome): CallbackEvent {
  const status = outcome.status;
  return create(CallbackEventSchema, {
    callId: outcome.callId,
    traceId: outcome.traceId,
    parentId: outcome.parentId,
    tool: outcome.tool,
    agentId: outcome.agentId,
    userId: outcome.userId,
    status,
    ...(status === CallStatus.SUCCESS ? { output: outcome.output ?? {} } : {}),
    ...(status === CallStatus.FAILURE
      ? {
          error:
            outcome.error ??
            create(CallErrorSchema, {
              code: "unknown",
              message: "the tool failed without saying why",
            }),
        }
      : {}),
    ...(status === CallStatus.INTERRUPTED ? { reason: outcome.reason || "unknown" } : {}),
    ...(status === CallStatus.REFUSED || status === CallStatus.PENDING
      ? { reason: outcome.reason, ...(outcome.error ? { error: outcome.error } : {}) }
      : {}),
    durationMs: outcome.durationMs,
    attempts: outcome.attempts,
    time: outcome.finishedAt ?? outcome.startedAt ?? timestampNow(),
  });
}

/** True when two final events say the same thing (ignoring timing), so a repeated report is a duplicate. */
export function sameResult(a: CallbackEvent, b: CallbackEvent): boolean {
  return (
    a.status === b.status &&
    a.reason === b.reason &&
    canonicalJson(a.output ?? null) === canonicalJson(b.output ?? null) &&
    ((a.error === undefined && b.error === undefined) ||
      (a.error !== undefined && b.error !== undefined && equals(CallErrorSchema, a.error, b.error)))
  );
}
