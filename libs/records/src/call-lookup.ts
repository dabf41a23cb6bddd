import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import { subjects } from "@toolmesh/nats";
import {
  type AuditRecord,
  GetCallRequestSchema,
  type GetCallResponse,
  GetCallResponseSchema,
} from "@toolmesh/proto";
import { type Msg, type NatsConnection, headers as natsHeaders } from "nats";

/** The header a call lookup's answer carries its error in (`<code> <message>`). */
const ERROR_HEADER = "Toolmesh-Error";

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
  let reply: Msg;
  try {
    reply = await nc.request(
      subjects.callLookup,
      toBinary(GetCallRequestSchema, create(GetCallRequestSchema, { callId, wait: options.wait })),
      { timeout: options.timeoutMs },
    );
  } catch (error) {
    throw new ConnectError(
      `the audit log could not be asked for call "${callId}" (${String((error as Error)?.message ?? error)}); retry shortly`,
      Code.Unavailable,
      undefined,
      undefined,
      error,
    );
  }
  const failed = reply.headers?.get(ERROR_HEADER);
  if (failed) {
    const space = failed.indexOf(" ");
    const code = Number(failed.slice(0, space)) as Code;
    if (code === Code.NotFound) return [];
    throw new ConnectError(decodeURIComponent(failed.slice(space + 1)), code);
  }
  return fromBinary(GetCallResponseSchema, reply.data).records;
}

/** Answers one call lookup (Audit's side): its records, or an error the asker rethrows. */
export function answerCallLookup(msg: Msg, answer: GetCallResponse | ConnectError): void {
  if (answer instanceof ConnectError) {
    const h = natsHeaders();
    h.set(ERROR_HEADER, `${answer.code} ${encodeURIComponent(answer.rawMessage)}`);
    msg.respond(new Uint8Array(0), { headers: h });
    return;
  }
  msg.respond(toBinary(GetCallResponseSchema, answer));
}
