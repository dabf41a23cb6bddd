import { Code, ConnectError, codeName } from "@toolmesh/errors";
import { callFields, type Logger } from "@toolmesh/log";
import { PublishError } from "@toolmesh/nats";
import type { DispatchRequest } from "@toolmesh/proto";
import type { CallRecord, CallRecorder } from "../records/call-recorder.js";
import { argumentsTooLarge, recordBudget, structBytes } from "./record-limits.js";
import { Refusal } from "./refusal.js";
import type { CheckedCall } from "./types.js";

/**
 * Nothing runs unrecorded: with NATS unreachable, a record stream full, or arguments too large
 * for the records that carry them, the call is refused before anything runs.
 */
export function checkRecordable(recorder: CallRecorder, checked: CheckedCall): void {
  if (!recorder.writable) {
    throw new Refusal(
      new ConnectError(
        "toolmesh cannot record calls right now (NATS is unreachable), so none may run; the tool did not run. Retry in a few seconds.",
        Code.Unavailable,
      ),
      "bus_unreachable",
    );
  }
  const full = recorder.full;
  if (full) {
    throw new Refusal(
      new ConnectError(
        `toolmesh cannot record calls right now: the record store is full (${full}), so none may run; the tool did not run. An operator must make room (raise the stream's byte limit or shorten its retention).`,
        Code.ResourceExhausted,
      ),
      "store_full",
    );
  }
  const tooLarge = argumentsTooLarge(checked.tool.spec.name, checked.args, recorder.maxPayload);
  if (tooLarge) throw new Refusal(tooLarge, "arguments_too_large");
}

/**
 * The error for a call whose records could not be written: RESOURCE_EXHAUSTED when the store is
 * full, UNAVAILABLE otherwise. At the start the tool did not run; at the end its output is
 * withheld (the sweeper closes the call from its lease).
 */
export function unrecorded(error: unknown, stage: "start" | "outcome", tool: string): ConnectError {
  const why = error instanceof PublishError ? error.message : String(error);
  const full = error instanceof PublishError && error.failure === "full";
  const message =
    stage === "start"
      ? `toolmesh could not record the start of this call to tool "${tool}" (${why}), so the tool did not run. ${full ? "The record store is full; an operator must make room." : "Retry in a few seconds."}`
      : `tool "${tool}" ran, but its records could not be written (${why}); its output is withheld and the call will be closed as INTERRUPTED. ${full ? "The record store is full; an operator must make room." : "Retry in a few seconds."}`;
  return new ConnectError(message, full ? Code.ResourceExhausted : Code.Unavailable);
}

/** Records a refusal and waits for its acks; a failed record is logged, the refusal stands. */
export async function recordRefusal(
  deps: { recorder: CallRecorder; log: Logger },
  record: CallRecord,
  refusal: Refusal,
  req: DispatchRequest,
  durationMs: number,
): Promise<void> {
  const { error, reason } = refusal;
  // Arguments too large for any record are kept as their size, so the refusal is recorded.
  const size = req.arguments ? structBytes(req.arguments) : 0;
  const args =
    size > recordBudget(deps.recorder.maxPayload) ? { omitted_bytes: size } : req.arguments;
  record.refused(
    { code: codeName(error.code), message: error.rawMessage, reason },
    args,
    durationMs,
  );
  try {
    await record.flush();
  } catch (flushError) {
    deps.log.error(
      { err: flushError, ...callFields(record.call) },
      "could not record a refused call",
    );
  }
}
