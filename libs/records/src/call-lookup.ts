import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import { answerOverBus, requestOverBus, subjects } from "@toolmesh/nats";
import {
  type AuditRecord,
  GetCallRequestSchema,
  type GetCallResponse,
  GetCallResponseSchema,
} from "@toolmesh/proto";
import type { Msg, NatsConnection } from "nats";

/**
 * A call's records from the audit log, asked of Audit over the bus (request and reply on
 * `toolmesh.lookup.calls`, Audit's replicas in one queue group): how the Dispatcher and Callback
 * read what a call's records say — its outcome, whether it ended — without an address to
 * configure, authenticated by the bus (only they may send it). External clients use
 * AuditService.GetCall. With `wait`, records still on their way to the log are waited for.
 */
export async function lookupCall(
  nc: NatsConnection,
  callId: string,
  options: { wait: boolean; timeoutMs: number },
): Promise<AuditRecord[]> {
  let data: Uint8Array;
  try {
    data = await requestOverBus(
      nc,
      subjects.callLookup,
      toBinary(GetCallRequestSchema, create(GetCallRequestSchema, { callId, wait: options.wait })),
      { timeoutMs: options.timeoutMs, what: `the audit log (for call "${callId}")` },
    );
  } catch (error) {
    if (error instanceof ConnectError && error.code === Code.NotFound) return [];
    throw error;
  }
  return fromBinary(GetCallResponseSchema, data).records;
}

/** Answers one call lookup (Audit's side): its records, or an error the asker rethrows. */
export function answerCallLookup(msg: Msg, answer: GetCallResponse | ConnectError): void {
  answerOverBus(
    msg,
    answer instanceof ConnectError ? answer : toBinary(GetCallResponseSchema, answer),
  );
}
