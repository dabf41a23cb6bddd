import { type DescMessage, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf";
import {
  type JetStreamClient,
  type JsMsg,
  type Msg,
  headers as natsHeaders,
  type PubAck,
} from "nats";

/** The header that names the Protobuf message type of a payload. */
export const TYPE_HEADER = "Toolmesh-Type";

/** Raised when a NATS message does not hold the expected Protobuf type. */
export class EventTypeError extends Error {
  override name = "EventTypeError";
}

/** Publishes a Protobuf event to JetStream and waits for its ack. msgId deduplicates. */
export function publishEvent<Desc extends DescMessage>(
  js: JetStreamClient,
  subject: string,
  schema: Desc,
  value: MessageShape<Desc>,
  options: { msgId?: string; timeoutMs?: number } = {},
): Promise<PubAck> {
  return publishEncoded(js, subject, schema, toBinary(schema, value), options);
}

/**
 * Publishes an event already encoded as `schema`, so a payload published to several places (a
 * stream and a KV bucket) is encoded once.
 */
export function publishEncoded(
  js: JetStreamClient,
  subject: string,
  schema: DescMessage,
  data: Uint8Array,
  options: { msgId?: string; timeoutMs?: number } = {},
): Promise<PubAck> {
  const h = natsHeaders();
  h.set(TYPE_HEADER, schema.typeName);
  return js.publish(subject, data, {
    headers: h,
    ...(options.msgId ? { msgID: options.msgId } : {}),
    ...(options.timeoutMs ? { timeout: options.timeoutMs } : {}),
  });
}

/** Decodes a NATS or JetStream message, checking its type header. */
export function decodeEvent<Desc extends DescMessage>(
  schema: Desc,
  msg: Msg | JsMsg,
): MessageShape<Desc> {
  const type = msg.headers?.get(TYPE_HEADER);
  if (type && type !== schema.typeName) {
    throw new EventTypeError(`expected ${schema.typeName} on ${msg.subject}, got ${type}`);
  }
  return fromBinary(schema, msg.data);
}
