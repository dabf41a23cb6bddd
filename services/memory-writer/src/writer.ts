import { callFields, type Logger } from "@toolmesh/log";
import { busAccess } from "@toolmesh/nats";
import { type CallbackEvent, isFinal } from "@toolmesh/proto";
import { followLog, type LogBlock, type LogFollower, outcomeOf } from "@toolmesh/records";
import type { JetStreamClient, JetStreamManager, NatsConnection } from "nats";
import { entriesOf } from "./entries.js";
import type { MemoryStore } from "./memory-store.js";

/** memory-writer's durable consumer on the audit log. */
export const MEMORY_DURABLE = busAccess["memory-writer"].durables.auditLog;
/** Blocks delivered and not yet acked. */
const MEMORY_MAX_ACK_PENDING = 16;
/**
 * Calls read back from the tail of an agent's file at open, to recognise a block a previous
 * process wrote and did not ack: the calls of the blocks it may have held. Audit chains at most
 * about 512 records into a block, so this is MEMORY_MAX_ACK_PENDING such blocks.
 */
export const MEMORY_RECOVERY_CALLS = MEMORY_MAX_ACK_PENDING * 512;
/** Short, so the blocks a lapsed holder held reach its successor within seconds. */
const ACK_WAIT_MS = 5_000;
/** Bytes of log blocks one pull asks for. */
const PULL_BYTES = 4 * 1024 * 1024;

/** What memory-writer does with one outcome: append these lines to this agent's memory. */
export interface MemoryAction {
  agentId: string;
  callId: string;
  /** The call's entries, one JSON line each. */
  text: string;
}

/** The one place that maps an outcome to memory: a finished call becomes its two entries. */
export function memoryActionOf(
  event: CallbackEvent,
  redact: (value: unknown) => unknown,
): MemoryAction {
  const text = entriesOf(event, redact)
    .map((e) => `${JSON.stringify(e)}\n`)
    .join("");
  return { agentId: event.agentId, callId: event.callId, text };
}

/** The final outcomes the records of a block state: what memory holds of them. */
export function finishedCalls(block: Pick<LogBlock, "records">): CallbackEvent[] {
  const out: CallbackEvent[] = [];
  for (const record of block.records) {
    const event = outcomeOf(record);
    if (event && isFinal(event.status)) out.push(event);
  }
  return out;
}

/**
 * Writes every finished call of the audit log into its agent's memory, acking a block only once
 * its calls are on disk. A block delivered for the first time holds calls never written (the
 * log keeps each record once, and a new consumer starts at the log's end); a redelivered one may
 * have been written by this or an earlier process, which the store recognises.
 */
export class MemoryWriter {
  private follower: LogFollower | undefined;

  constructor(
    private readonly deps: {
      nc: NatsConnection;
      js: JetStreamClient;
      jsm: JetStreamManager;
      store: MemoryStore;
      redact: (value: unknown) => unknown;
      log: Logger;
      /** False when this process may no longer write (its lease lapsed); blocks are handed back. */
      active?: () => boolean;
    },
  ) {}

  async start(): Promise<void> {
    const { nc, js, jsm, log } = this.deps;
    this.follower = await followLog({
      nc,
      js,
      jsm,
      durable: MEMORY_DURABLE,
      log,
      ackWaitMs: ACK_WAIT_MS,
      maxAckPending: MEMORY_MAX_ACK_PENDING,
      pullBytes: PULL_BYTES,
      // Calls of different agents are independent and one agent's are written in rounds, so
      // the blocks that came together are handed to the store at once.
      onBlocks: (blocks) => this.write(blocks),
    });
  }

  private async write(blocks: LogBlock[]): Promise<void> {
    if (this.deps.active && !this.deps.active()) {
      for (const block of blocks) block.nak(1000);
      this.deps.log.warn("this memory-writer's lease lapsed; blocks left for the holder");
      return;
    }
    await Promise.all(blocks.map((block) => this.writeBlock(block)));
  }

  private async writeBlock(block: LogBlock): Promise<void> {
    const calls = finishedCalls(block);
    const results = await Promise.allSettled(
      calls.map((event) => {
        const action = memoryActionOf(event, this.deps.redact);
        return this.deps.store.write(action.agentId, action.callId, action.text, {
          mayBeWritten: block.redelivered,
        });
      }),
    );
    const failed = results.findIndex((r) => r.status === "rejected");
    if (failed < 0) {
      block.ack();
      return;
    }
    const reason = (results[failed] as PromiseRejectedResult).reason;
    this.deps.log.warn(
      { err: reason, ...callFields(calls[failed] as CallbackEvent), seq: block.seq },
      "cannot write a call to memory; its block comes again",
    );
    block.nak(1000);
  }

  async stop(): Promise<void> {
    await this.follower?.stop();
  }
}
