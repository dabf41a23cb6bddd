import { Code, ConnectError } from "@toolmesh/errors";
import { type Msg, type NatsConnection, headers as natsHeaders } from "nats";

/** The header a request's answer carries its error in (`<code> <message>`). */
const ERROR_HEADER = "Toolmesh-Error";

/**
 * Asks the one service that answers a subject (request and reply; only the bus users allowed to
 * may send it, and only the asker reads its inbox) and gives the answer's bytes; an answered
 * error comes back as the ConnectError the answerer threw, no answer as UNAVAILABLE naming `what`.
 */
export async function requestOverBus(
  nc: NatsConnection,
  subject: string,
  data: Uint8Array,
  options: { timeoutMs: number; what: string },
): Promise<Uint8Array> {
  let reply: Msg;
  try {
    reply = await nc.request(subject, data, { timeout: options.timeoutMs });
  } catch (error) {
    throw new ConnectError(
      `${options.what} could not be asked (${String((error as Error)?.message ?? error)}); retry shortly`,
      Code.Unavailable,
      undefined,
      undefined,
      error,
    );
  }
  const failed = reply.headers?.get(ERROR_HEADER);
  if (failed) {
    const space = failed.indexOf(" ");
    throw new ConnectError(
      decodeURIComponent(failed.slice(space + 1)),
      Number(failed.slice(0, space)) as Code,
    );
  }
  return reply.data;
}

/** Answers a bus request with bytes, or with an error the asker rethrows (requestOverBus). */
export function answerOverBus(msg: Msg, answer: Uint8Array | ConnectError): void {
  if (answer instanceof ConnectError) {
    const h = natsHeaders();
    h.set(ERROR_HEADER, `${answer.code} ${encodeURIComponent(answer.rawMessage)}`);
    msg.respond(new Uint8Array(0), { headers: h });
    return;
  }
  msg.respond(answer);
}
