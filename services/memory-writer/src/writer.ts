import type { Logger } from "@toolmesh/log";
import { consumeDurable, type DurableConsumer } from "@toolmesh/nats";
import { type CallbackEvent, CallbackEventSchema } from "@toolmesh/proto";
import type { JetStreamClient, JetStreamManager } from "nats";
import { entriesOf } from "./entries.js";
import type { MemoryStore } from "./memory-store.js";

/** The durable consumer on TOOLMESH_CALLBACK. */
export const MEMORY_CONSUMER = "memory-writer";
const CALLBACK_STREAM = "TOOLMESH_CALLBACK";

/** Writes every callback event into its agent's memory, acking only once it is on disk. */
export class MemoryWriter {
  private consumer: DurableConsumer | undefined;

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
    const { js, jsm, log } = this.deps;
    this.consumer = await consumeDurable({
      js,
      jsm,
      stream: CALLBACK_STREAM,
      durable: MEMORY_CONSUMER,
      schema: CallbackEventSchema,
      log,
      what: "callback event",
      handle: (event) => this.write(event),
      logFields: (event) => ({ call_id: event.callId, trace_id: event.traceId }),
    });
  }

  /** Appends the call to its agent's memory unless it is there already (a redelivery). */
  private async write(event: CallbackEvent): Promise<void> {
    const { store, redact } = this.deps;
    if (store.has(event.callId)) return;
    await store.append(event.agentId, event.callId, entriesOf(event, redact));
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
  }
}
