import type { Logger } from "@toolmesh/log";
import { decodeEvent } from "@toolmesh/nats";
import { type CallbackEvent, CallbackEventSchema } from "@toolmesh/proto";
import {
  AckPolicy,
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  nanos,
} from "nats";
import { entriesOf } from "./entries.js";
import type { MemoryStore } from "./memory-store.js";

/** The durable consumer on TOOLMESH_CALLBACK. */
export const MEMORY_CONSUMER = "memory-writer";
const CALLBACK_STREAM = "TOOLMESH_CALLBACK";

/** Writes every callback event into its agent's memory, acking only once it is on disk. */
export class MemoryWriter {
  private messages: ConsumerMessages | undefined;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      js: JetStreamClient;
      jsm: JetStreamManager;
      store: MemoryStore;
      redact: (value: unknown) => unknown;
      log: Logger;
    },
  ) {}

  async start(): Promise<void> {
    const { js, jsm } = this.deps;
    await jsm.consumers.add(CALLBACK_STREAM, {
      durable_name: MEMORY_CONSUMER,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(5_000),
      max_ack_pending: 256,
    });
    const consumer = await js.consumers.get(CALLBACK_STREAM, MEMORY_CONSUMER);
    this.messages = await consumer.consume({ max_messages: 128 });
    const messages = this.messages;
    this.loop = (async () => {
      for await (const msg of messages) await this.handle(msg);
    })();
  }

  private async handle(msg: JsMsg): Promise<void> {
    const { store, log, redact } = this.deps;
    let event: CallbackEvent;
    try {
      event = decodeEvent(CallbackEventSchema, msg);
    } catch (error) {
      log.error({ err: error, subject: msg.subject }, "undecodable callback event; dropped");
      msg.term();
      return;
    }
    try {
      if (!store.has(event.callId)) {
        await store.append(event.agentId, event.callId, entriesOf(event, redact));
      }
      msg.ack();
    } catch (error) {
      log.error(
        { err: error, call_id: event.callId, trace_id: event.traceId },
        "cannot write memory; will retry",
      );
      msg.nak(1000);
    }
  }

  async stop(): Promise<void> {
    await this.messages?.close();
    await this.loop;
  }
}
