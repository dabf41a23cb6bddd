import { fromBinary } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import { type CallbackEvent, CallbackEventSchema } from "@toolmesh/proto";
import { counter } from "@toolmesh/telemetry";
import { type ConsumerMessages, DeliverPolicy, type JetStreamClient, type JsMsg } from "nats";
import { CALLBACK_BUCKET, SENT_SUBJECTS } from "./call-store.js";
import { statusWord } from "./normalise.js";
import { callHour, type UsageStore, usageKey } from "./usage-store.js";

/** Sent marks handled per write of each hour's aggregate. */
const MAX_BATCH = 1000;

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
 * Counts usage from the sent marks: every finished call has exactly one (the broadcaster creates
 * it once), carrying the call's agent, user, tool, status and duration. The counter reads them
 * in stream order with an ordered consumer from the last checkpoint, and each hour's aggregate
 * remembers the last sequence it absorbed, so a redelivered outcome, a restart or a second
 * Callback replica never counts a call twice. Metrics count what this replica added.
 */
export class UsageCounter {
  private stopped = false;
  private messages: ConsumerMessages | undefined;
  private readonly metrics = usageMetrics();

  constructor(private readonly deps: { js: JetStreamClient; usage: UsageStore; log: Logger }) {}

  async start(): Promise<void> {
    const from = (await this.deps.usage.checkpoint()) + 1;
    const consumer = await this.deps.js.consumers.get(`KV_${CALLBACK_BUCKET}`, {
      filterSubjects: SENT_SUBJECTS,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: from,
    });
    const messages = await consumer.consume({ max_messages: MAX_BATCH });
    this.messages = messages;
    void (async () => {
      let batch: JsMsg[] = [];
      try {
        for await (const msg of messages) {
          batch.push(msg);
          // Write when caught up or the batch is full: one write per hour and key per batch.
          if (msg.info.pending === 0 || batch.length >= MAX_BATCH) {
            await this.absorb(batch);
            batch = [];
          }
        }
      } catch (error) {
        if (!this.stopped)
          this.deps.log.error({ err: error }, "stopped counting usage; restart to resume");
      }
    })();
  }

  private async absorb(batch: JsMsg[]): Promise<void> {
    const byKey = new Map<string, { event: CallbackEvent; sequence: number }[]>();
    for (const msg of batch) {
      const op = msg.headers?.get("KV-Operation");
      // Marks of calls finished before marks carried a sample are empty: nothing to count.
      if (op === "DEL" || op === "PURGE" || msg.data.length === 0) continue;
      let event: CallbackEvent;
      try {
        event = fromBinary(CallbackEventSchema, msg.data);
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

  async stop(): Promise<void> {
    this.stopped = true;
    await this.messages?.close();
  }
}
