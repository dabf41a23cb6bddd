import { Code, ConnectError, codeName } from "@toolmesh/errors";
import { callFields, type Logger } from "@toolmesh/log";
import { RecordWriteError } from "@toolmesh/nats";
import type { DispatchRequest } from "@toolmesh/proto";
import type { CallRecord, CallRecorder } from "../records/call-recorder.js";
import { argumentsTooLarge, recordBudget } from "./record-limits.js";
import { Refusal } from "./refusal.js";
import { structSize } from "./struct-size.js";
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
 * The error for a call whose records could not be written. At the start the tool did not run:
 * RESOURCE_EXHAUSTED when the record stream is full, UNAVAILABLE otherwise. Past it the tool ran
 * and its output is withheld. At the `end` its start record is (or may yet be) stored: when the
 * stream refused the end record, the call will be closed by the sweeper as INTERRUPTED; when the
 * answer never came the end may be stored after all, so the caller is told to read the call's
 * outcome rather than guess it. A read-only `call` whose start went with its end in one record
 * (or was refused) has no record but that one: refused, the call has none and no outcome; its
 * answer lost, GetOutcome finds it once it lands.
 */
export function unrecorded(
  error: unknown,
  stage: "start" | "end" | "call",
  tool: string,
): ConnectError {
  const why = error instanceof Error ? error.message : String(error);
  const failure = error instanceof RecordWriteError ? error.failure : "unknown";
  const full = failure === "full";
  const code = full ? Code.ResourceExhausted : Code.Unavailable;
  const retry = full
    ? "The record stream is full (its consumers are behind); an operator must see to them."
    : "Retry in a few seconds.";
  if (stage === "start")
    return new ConnectError(
      `toolmesh could not record the start of this call to tool "${tool}" (${why}), so the tool did not run. ${retry}`,
      code,
    );
  if (stage === "call")
    return new ConnectError(
      failure === "unknown"
        ? `tool "${tool}" ran, but whether its record was stored is not known yet (toolmesh goes on sending it): GetOutcome tells the recorded outcome once it is; its output is withheld. The tool is read-only: nothing changed. ${retry}`
        : `tool "${tool}" ran, but toolmesh could not record the call (${why}), so none of it is stored and it has no outcome; its output is withheld. The tool is read-only: nothing changed. ${retry}`,
      code,
    );
  const end =
    failure === "unknown"
      ? "whether its end record was stored is not known yet (toolmesh goes on sending it): GetOutcome tells the recorded outcome once it is, and if none is, the call is closed as INTERRUPTED (records_lost)"
      : "its end record was not stored: the call will be closed as INTERRUPTED (records_lost)";
  return new ConnectError(`tool "${tool}" ran, but ${end}; its output is withheld. ${retry}`, code);
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
  const size = req.arguments ? structSize(req.arguments) : 0;
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
