import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import type { PublishError, StoredAck } from "@toolmesh/nats";
import type { EventPublisher } from "./event-publisher.js";

/** One record as it was handed to the publisher. */
export interface PublishedRecord {
  subject: string;
  /** The record's message type name, such as toolmesh.trace.v1.TraceEvent. */
  type: string;
  value: unknown;
  msgId: string | undefined;
}

/**
 * Keeps every record in memory, in publish order, and acks at once: the Dispatcher's trace
 * events, audit records and outcomes without JetStream, for in-process tests. A test sets
 * `writable`, `full`, `maxPayload` or `failure` to play a bus that is down, full or refusing.
 */
export class MemoryEventPublisher implements EventPublisher {
  readonly published: PublishedRecord[] = [];
  writable = true;
  maxPayload = 1024 * 1024;
  full: string | undefined;
  /** When set, every publish fails with it (the bus is down or full). */
  failure: PublishError | undefined;

  async publishMessage<Desc extends DescMessage>(
    subject: string,
    schema: Desc,
    value: MessageShape<Desc>,
    options: { msgId?: string } = {},
  ): Promise<StoredAck> {
    if (this.failure) throw this.failure;
    this.published.push({ subject, type: schema.typeName, value, msgId: options.msgId });
    return { seq: this.published.length, duplicate: false };
  }

  /** The records of one message type, in publish order. */
  of<Desc extends DescMessage>(schema: Desc): MessageShape<Desc>[] {
    return this.published
      .filter((p) => p.type === schema.typeName)
      .map((p) => p.value as MessageShape<Desc>);
  }
}
