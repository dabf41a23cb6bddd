import { create, type JsonObject } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import { CallErrorSchema, CallStatus } from "@toolmesh/proto";
import type { CallEnd } from "../records/call-end.js";
import { structSize } from "./struct-size.js";

/**
 * Room a record needs beyond the arguments or output it carries: ids, principal, roles, times
 * and NATS headers. Generous, because a record that does not fit is a call that cannot be kept.
 */
export const RECORD_OVERHEAD_BYTES = 16 * 1024;

/** The most argument or output bytes a record may carry on a bus with this max_payload. */
export function recordBudget(maxPayload: number): number {
  return Math.max(0, maxPayload - RECORD_OVERHEAD_BYTES);
}

/**
 * RESOURCE_EXHAUSTED for arguments whose records could not be written (their lease and audit
 * record carry them): checked before anything runs, so such a call never runs unrecorded.
 */
export function argumentsTooLarge(
  tool: string,
  args: JsonObject,
  maxPayload: number,
): ConnectError | undefined {
  const budget = recordBudget(maxPayload);
  const size = structSize(args);
  if (size <= budget) return undefined;
  return new ConnectError(
    `the arguments of tool "${tool}" are ${size} bytes encoded; a call's records can carry at most ${budget} bytes (the bus's max_payload of ${maxPayload} bytes minus ${RECORD_OVERHEAD_BYTES} for the record itself). Send less, or pass large data by reference (a URL or an object id).`,
    Code.ResourceExhausted,
  );
}

/**
 * An output too large for its outcome record becomes a FAILURE `output_too_large`: the tool ran
 * and that is recorded, but its output cannot be kept, so it is not returned either.
 */
export function limitOutput(tool: string, end: CallEnd, maxPayload: number): CallEnd {
  if (!end.output) return end;
  const budget = recordBudget(maxPayload);
  const size = structSize(end.output);
  if (size <= budget) return end;
  return {
    status: CallStatus.FAILURE,
    reason: "",
    error: create(CallErrorSchema, {
      code: "output_too_large",
      message: `tool "${tool}" returned ${size} bytes of output; a call's outcome can carry at most ${budget} bytes (the bus's max_payload of ${maxPayload} bytes minus ${RECORD_OVERHEAD_BYTES}). The call ran; its output was not kept. Ask the tool for less (a page, a summary, or a reference to where the data lives).`,
    }),
  };
}
