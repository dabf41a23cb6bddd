import { timestampMs } from "@bufbuild/protobuf/wkt";
import { callFields, type Logger } from "@toolmesh/log";
import { type BatchConsumer, consumeBatches, type Delivered } from "@toolmesh/nats";
import { type CallbackEvent, CallbackEventSchema } from "@toolmesh/proto";
import { type JetStreamClient, type JetStreamManager, millis } from "nats";
import { entriesOf } from "./entries.js";
import type { MemoryStore, WriteResult } from "./memory-store.js";

/** The durable consumer on TOOLMESH_CALLBACK. */
export const MEMORY_CONSUMER = "memory-writer";
const CALLBACK_STREAM = "TOOLMESH_CALLBACK";
/**
 * Events delivered and not yet acked. A previous process's unacked writes are therefore among
 * the last this many calls of their agent's file, which is how deep a file's tail is read back.
 */
export const MEMORY_MAX_ACK_PENDING = 512;

/** What memory-writer does with one event: append these lines to this agent's memory. */
export interface MemoryAction {
  agentId: string;
  callId: string;
  /** The call's entries, one JSON line each. */
  text: string;
}

/** The one place that maps a bus message to memory: a callback event becomes its two entries. */
export function memoryActionOf(
  event: CallbackEvent,
  redact: (value: unknown) => unknown,
): MemoryAction {
  const text = entriesOf(event, redact)
    .map((e) => `${JSON.stringify(e)}\n`)
    .join("");
  return { agentId: event.agentId, callId: event.callId, text };
}

/** Used when the callback stream's duplicate window cannot be read. */
const DEFAULT_DUPLICATE_WINDOW_MS = 2 * 60 * 1000;

/** Raised for a batch that arrives after the lease lapsed: it is left for the holder. */
export class LeaseLapsedError extends Error {
  override name = "LeaseLapsedError";
}

/** Writes every callback event into its agent's memory, acking only once it is on disk. */
export class MemoryWriter {
  private consumer: BatchConsumer | undefined;
  /** Events newer than this cannot have been published before (see mayBeWritten). */
  private freshMs = DEFAULT_DUPLICATE_WINDOW_MS / 2;

  constructor(
    private readonly deps: {
      js: JetStreamClient;
      jsm: JetStreamManager;
      store: MemoryStore;
      redact: (value: unknown) => unknown;
      log: Logger;
      /** False when this process may no longer write (its lease lapsed); the batch is redelivered. */
      active?: () => boolean;
    },
  ) {}

  async start(): Promise<void> {
    const { js, jsm, log } = this.deps;
    const window = (await jsm.streams.info(CALLBACK_STREAM)).config.duplicate_window;
    if (window) this.freshMs = millis(window) / 2;
    this.consumer = await consumeBatches({
      js,
      jsm,
      stream: CALLBACK_STREAM,
      durable: MEMORY_CONSUMER,
      schema: CallbackEventSchema,
      log,
      what: "callback event",
      maxAckPending: MEMORY_MAX_ACK_PENDING,
      // Calls of different agents are independent and one agent's are written in rounds, so
      // the whole batch is handed to the store at once.
      handleBatch: async (batch) => {
        if (this.deps.active && !this.deps.active()) {
          throw new LeaseLapsedError("this memory-writer's lease lapsed; another may be writing");
        }
        return Promise.allSettled(batch.map((d) => this.write(d)));
      },
      logFields: callFields,
    });
  }

  private write({ value, msg }: Delivered<typeof CallbackEventSchema>): Promise<WriteResult> {
    const action = memoryActionOf(value, this.deps.redact);
    return this.deps.store.write(action.agentId, action.callId, action.text, {
      mayBeWritten: this.mayBeWritten(value, msg.redelivered),
    });
  }

  /**
   * Whether an event may be in its agent's file already, written by an earlier process: only
   * then is the file's tail read back. A redelivery may be (written, then not acked). A second
   * publication of a call's event is dropped by the stream within its duplicate window, so one
   * delivered for the first time is new unless its call ended longer ago than that; half the
   * window is allowed for clocks that disagree.
   */
  private mayBeWritten(event: CallbackEvent, redelivered: boolean): boolean {
    if (redelivered || !event.time) return true;
    return Date.now() - timestampMs(event.time) > this.freshMs;
  }

  async stop(): Promise<void> {
    await this.consumer?.stop();
  }
}
