import { fromBinary } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import { type CallbackEvent, CallbackEventSchema, statusWord } from "@toolmesh/proto";
import { counter } from "@toolmesh/telemetry";
import {
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from "nats";
import {
  CALL_SUBJECTS,
  CALLBACK_BUCKET,
  callOfValue,
  isBroadcastMark,
  LEGACY_SENT_SUBJECTS,
} from "./call-store.js";
import { callHour, type UsageStore, usageKey } from "./usage-store.js";

const CALL_PREFIX = CALL_SUBJECTS.slice(0, -1);

/** Sent marks handled per write of each hour's aggregate. */
const MAX_BATCH = 1000;
/**
 * How long marks gather before they are counted. Usage is hourly, so a second's delay costs
 * nothing, while counting each mark as it came cost two KV writes (the aggregate and the
 * checkpoint, each an fsync) per call.
 */
const FLUSH_MS = 1000;
/** How long a stopping counter waits for the marks written before it stopped. */
const DRAIN_MS = 2000;

const usageMetrics = () => ({
  calls: counter(
    "toolmesh_usage_calls_total",
    "Finished calls counted into usage by this replica, by agent, tool and status (each call once across replicas)",
    ["agent", "tool", "status"],
  ),
  duration: counter(
    "toolmesh_usage_duration_seconds_total",
    "Execution time of the finished calls counted by this replica, by agent and tool",
    ["agent", "tool"],
  ),
});

/**
 * Counts usage from the broadcast marks: every finished call's key is written marked exactly once
 * (call-store.ts), carrying the call's agent, user, tool, status and duration; the separate sent
 * keys of earlier versions count the same way, so an upgrade loses no call. The counter reads them
 * in stream order with an ordered consumer from the last checkpoint, and each hour's aggregate
 * remembers the last sequence it absorbed, so a redelivered outcome, a restart or a second
 * Callback replica never counts a call twice. Metrics count what this replica added.
 * A marked key lives TOOLMESH_CALLBACK_LIVE_SECONDS: every running replica counts it within a
 * second, and a stopping one first reads what was written before it stopped. Only marks written
 * in the last moment before every replica crashed, and not restarted within the live window, can
 * expire uncounted (docs/services.md).
 */
export class UsageCounter {
  private stopped = false;
  private messages: ConsumerMessages | undefined;
  private readonly metrics = usageMetrics();
  private batch: JsMsg[] = [];
  /** The absorb in progress, if any: batches are counted one after the other, in stream order. */
  private absorbing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  /** The last sequence the consumer delivered, and who waits for one. */
  private seen = 0;
  private seenWaiter: { seq: number; resolve: () => void } | undefined;

  constructor(
    private readonly deps: {
      js: JetStreamClient;
      jsm: JetStreamManager;
      usage: UsageStore;
      log: Logger;
    },
  ) {}

  async start(): Promise<void> {
    const from = (await this.deps.usage.checkpoint()) + 1;
    const consumer = await this.deps.js.consumers.get(`KV_${CALLBACK_BUCKET}`, {
      filterSubjects: [CALL_SUBJECTS, LEGACY_SENT_SUBJECTS],
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: from,
    });
    const messages = await consumer.consume({ max_messages: MAX_BATCH });
    this.messages = messages;
    this.timer = setInterval(() => void this.flush(), FLUSH_MS);
    this.timer.unref();
    void (async () => {
      try {
        for await (const msg of messages) {
          this.batch.push(msg);
          this.seen = msg.seq;
          if (this.seenWaiter && msg.seq >= this.seenWaiter.seq) this.seenWaiter.resolve();
          // A full batch waits for its write: the consumer slows down instead of piling up.
          if (this.batch.length >= MAX_BATCH) await this.flush();
        }
      } catch (error) {
        if (!this.stopped)
          this.deps.log.error({ err: error }, "stopped counting usage; restart to resume");
      }
    })();
  }

  /** Counts the marks gathered so far, after any batch before them. */
  private flush(): Promise<void> {
    if (this.batch.length === 0) return this.absorbing;
    const batch = this.batch;
    this.batch = [];
    this.absorbing = this.absorbing
      .then(() => this.absorb(batch))
      .catch((error: unknown) => {
        if (!this.stopped) this.deps.log.error({ err: error }, "could not count usage");
      });
    return this.absorbing;
  }

  private async absorb(batch: JsMsg[]): Promise<void> {
    const byKey = new Map<string, { event: CallbackEvent; sequence: number }[]>();
    for (const msg of batch) {
      const op = msg.headers?.get("KV-Operation");
      // Marks of calls finished before marks carried a sample are empty: nothing to count.
      if (op === "DEL" || op === "PURGE" || msg.data.length === 0) continue;
      const legacy = !msg.subject.startsWith(CALL_PREFIX);
      // A call's unmarked writes (PENDING, the final event before its broadcast) are not counted.
      if (!legacy && !isBroadcastMark(msg.data)) continue;
      let event: CallbackEvent;
      try {
        event = legacy
          ? fromBinary(CallbackEventSchema, msg.data)
          : (callOfValue(msg.data)?.event as CallbackEvent);
      } catch (error) {
        this.deps.log.error({ err: error, seq: msg.seq }, "undecodable sent mark; not counted");
        continue;
      }
      const key = usageKey(callHour(event), event.agentId, event.userId, event.tool);
      const list = byKey.get(key) ?? [];
      list.push({ event, sequence: msg.seq });
      byKey.set(key, list);
    }
    for (;;) {
      try {
        const added = await Promise.all(
          [...byKey].map(([key, calls]) => this.deps.usage.add(key, calls)),
        );
        for (const event of added.flat()) {
          this.metrics.calls.inc({
            agent: event.agentId,
            tool: event.tool,
            status: statusWord(event.status),
          });
          this.metrics.duration.inc(
            { agent: event.agentId, tool: event.tool },
            event.durationMs / 1000,
          );
        }
        break;
      } catch (error) {
        if (this.stopped) throw error;
        // Keys written already skip these calls when tried again (their sequence is absorbed).
        this.deps.log.warn({ err: error }, "could not write usage; retrying in a second");
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
    }
    const last = batch.at(-1)?.seq ?? 0;
    await this.deps.usage.saveCheckpoint(last).catch((error: unknown) => {
      this.deps.log.warn(
        { err: error },
        "could not save the usage checkpoint; a restart re-reads more",
      );
    });
  }

  /**
   * Waits (a bounded time) until the consumer has delivered what the bucket held when the service
   * began to stop: a finished call's marked key lives only the live window, so a mark left for the
   * next start could expire before it is counted if that start came later than the window.
   */
  private async drain(): Promise<void> {
    const last = await this.deps.jsm.streams
      .info(`KV_${CALLBACK_BUCKET}`)
      .then((info) => info.state.last_seq)
      .catch(() => 0);
    if (this.seen >= last || !this.messages) return;
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.seenWaiter = { seq: last, resolve };
      timer = setTimeout(resolve, DRAIN_MS);
    });
    clearTimeout(timer);
    this.seenWaiter = undefined;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.drain();
    this.stopped = true;
    await this.messages?.close();
    // What was read is counted before the process goes, if NATS takes it at once; otherwise the
    // checkpoint stays behind it and the next start counts it.
    await this.flush();
  }
}
