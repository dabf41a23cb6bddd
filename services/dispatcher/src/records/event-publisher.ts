import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { StoredAck } from "@toolmesh/nats";

/**
 * Publishes the Dispatcher's Protobuf records to JetStream; resolves once the stream acked one,
 * rejects with a PublishError. @toolmesh/nats's JetStreamPublisher in a running Dispatcher.
 */
export interface EventPublisher {
  /** False while the connection to NATS is down: a publish now would only wait and fail. */
  readonly writable: boolean;
  /** The largest message NATS carries (the server's max_payload). */
  readonly maxPayload: number;
  /** Why the record store has no room now (a stream at its limit), or undefined. */
  readonly full: string | undefined;
  /** Resolves with where JetStream stored the message. */
  publishMessage<Desc extends DescMessage>(
    subject: string,
    schema: Desc,
    value: MessageShape<Desc>,
    options?: { msgId?: string },
  ): Promise<StoredAck>;
}
