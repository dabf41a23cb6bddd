import type { Logger } from "@toolmesh/log";
import { busAccess, streamNames } from "@toolmesh/nats";
import { type CallbackEvent, isFinal } from "@toolmesh/proto";
import {
  followLog,
  type LogBlock,
  type LogFollower,
  outcomeOf,
  recordKey,
} from "@toolmesh/records";
import { counter } from "@toolmesh/telemetry";
import type { JetStreamClient, JetStreamManager, NatsConnection } from "nats";
import type { Broadcast, BroadcastSink } from "./broadcast-publisher.js";
import { type HeldBlock, UsageCounter } from "./usage-counter.js";
import { countedCall, type UsageStore } from "./usage-store.js";

/** Callback's durable consumer on the audit log, shared by its replicas. */
export const CALLBACK_DURABLE = busAccess.callback.durables.auditLog;
/**
 * A block stays unacked while its broadcasts are stored and until the usage write after it (at
 * most about a second, usage-counter.ts FLUSH_MS); ten times that keeps a slow write from having
 * it delivered again, while the blocks a killed replica held reach another within seconds.
 */
const ACK_WAIT_MS = 10_000;
/**
 * Blocks delivered and not yet acked: what a second of the log holds and more (Audit appends a
 * few hundred blocks a second at most, one per flight of its pipelined writes). A held block
 * keeps only its usage figures, so this bounds memory too; past it the log waits.
 */
const MAX_ACK_PENDING = 1024;
/** Bytes of log blocks one pull asks for. */
const PULL_BYTES = 4 * 1024 * 1024;
/** Queued broadcasts from which a group lingers for more: a lone outcome goes at once. */
const LINGER_FROM = 2;
/**
 * Queued broadcasts from which a group goes at once instead of lingering: an atomic batch's fixed
 * cost (four fsyncs and a staging store, about 2.4 ms of nats-server CPU) is then spread over
 * enough broadcasts that waiting for more saves little.
 */
const LINGER_UNTIL = 512;

/** A block in hand: its outcomes until they are broadcast. */
interface Taken {
  held: HeldBlock;
  outcomes: { event: CallbackEvent; msgId: string }[];
}

/**
 * Callback's view of the audit log: every record that states an outcome (libs/records outcomeOf)
 * is broadcast on the callback feed — PENDING for a held or accepted call, then its end — and
 * every final one is counted in the hourly usage; a block is acked after both. Broadcasts of the
 * blocks that arrive while the ones before are being stored go together (group commit), in log
 * order, so under load a group is large enough to be one atomic batch (broadcast-publisher.ts).
 * Redelivery is harmless: a broadcast repeats no message id and usage remembers counted blocks.
 */
export class OutcomeFeed {
  private follower: LogFollower | undefined;
  /** Blocks delivered and not yet acked, by log sequence, to recognise a redelivery while held. */
  private readonly inHand = new Map<number, HeldBlock>();
  private queue: Taken[] = [];
  /** Broadcasts in the queue. */
  private queued = 0;
  private broadcasting: Promise<void> | undefined;
  /** Set while a group waits for more (lingerMs). */
  private lingering: NodeJS.Timeout | undefined;
  private stopping = false;
  private readonly counter: UsageCounter;
  private readonly groups = counter(
    "toolmesh_callback_broadcast_groups_total",
    "Groups of broadcasts this replica stored together: the blocks that queued while the group before was stored or while it lingered",
    [],
  );

  constructor(
    private readonly deps: {
      nc: NatsConnection;
      js: JetStreamClient;
      jsm: JetStreamManager;
      broadcasts: BroadcastSink;
      usage: UsageStore;
      log: Logger;
      /**
       * How long a group of more than one broadcast waits for more before it is stored
       * (TOOLMESH_CALLBACK_LINGER_MS); a lone outcome goes at once. 0: never waits.
       */
      lingerMs?: number;
    },
  ) {
    this.counter = new UsageCounter({
      usage: deps.usage,
      ackFloor: async () =>
        (await deps.jsm.consumers.info(streamNames.auditLog, CALLBACK_DURABLE)).ack_floor
          .stream_seq,
      settled: (seq) => this.inHand.delete(seq),
      log: deps.log,
    });
  }

  async start(): Promise<void> {
    const { nc, js, jsm, log } = this.deps;
    this.counter.start();
    this.follower = await followLog({
      nc,
      js,
      jsm,
      durable: CALLBACK_DURABLE,
      log,
      ackWaitMs: ACK_WAIT_MS,
      maxAckPending: MAX_ACK_PENDING,
      pullBytes: PULL_BYTES,
      onBlocks: (blocks) => this.take(blocks),
    });
  }

  private take(blocks: LogBlock[]): void {
    for (const block of blocks) {
      const held = this.inHand.get(block.seq);
      if (held) {
        // Delivered again while still in hand (its ack wait passed): the newest delivery acks it.
        held.block = block;
        continue;
      }
      const outcomes: Taken["outcomes"] = [];
      const calls = [];
      for (const record of block.records) {
        const event = outcomeOf(record);
        if (!event) continue;
        outcomes.push({ event, msgId: recordKey(record) });
        if (isFinal(event.status)) calls.push(countedCall(event, record));
      }
      const taken = { held: { block, calls }, outcomes };
      this.inHand.set(block.seq, taken.held);
      this.queue.push(taken);
      this.queued += outcomes.length;
    }
    this.pump();
  }

  /**
   * Broadcasts what is queued, one group at a time; what queues meanwhile is the next group.
   * A group of more than one lingers: it waits up to lingerMs for the blocks after it (or until
   * LINGER_UNTIL), for fewer, larger groups cost nats-server less — a group of 16 or more is one
   * atomic batch, four fsyncs and a staging store whatever its size, where a plain publish is an
   * fsync each. In the bench a 100 ms wait took nats-server from 2.25 to 1.35 fsyncs a call at c1
   * and its CPU a call at c64 from about 0.06 to 0.045 ms. A lone outcome (a trickle) never waits.
   */
  private pump(): void {
    if (this.broadcasting || this.queue.length === 0) return;
    const lingerMs = this.deps.lingerMs ?? 0;
    const wait =
      lingerMs > 0 && !this.stopping && this.queued >= LINGER_FROM && this.queued < LINGER_UNTIL;
    if (wait) {
      this.lingering ??= setTimeout(() => {
        this.lingering = undefined;
        this.send();
      }, lingerMs);
      return;
    }
    this.send();
  }

  private send(): void {
    clearTimeout(this.lingering);
    this.lingering = undefined;
    if (this.broadcasting || this.queue.length === 0) return;
    const group = this.queue;
    this.queue = [];
    this.queued = 0;
    this.broadcasting = this.broadcast(group).finally(() => {
      this.broadcasting = undefined;
      this.pump();
    });
  }

  private async broadcast(group: Taken[]): Promise<void> {
    const broadcasts: Broadcast[] = group.flatMap((t) => t.outcomes);
    try {
      if (broadcasts.length > 0) {
        await this.deps.broadcasts.send(broadcasts);
        this.groups.inc();
      }
    } catch (error) {
      this.deps.log.warn(
        { err: error, broadcasts: broadcasts.length },
        "cannot broadcast outcomes now; their blocks come again in a second",
      );
      for (const { held } of group) {
        this.inHand.delete(held.block.seq);
        held.block.nak(1000);
      }
      return;
    }
    for (const { held } of group) {
      if (held.calls.length > 0) {
        this.counter.hold(held);
        continue;
      }
      held.block.ack();
      this.inHand.delete(held.block.seq);
    }
  }

  /** Stops following the log; what was broadcast is counted (one try) and acked. */
  async stop(): Promise<void> {
    await this.follower?.stop();
    this.stopping = true;
    this.send();
    while (this.broadcasting) await this.broadcasting;
    await this.counter.stop();
  }
}
