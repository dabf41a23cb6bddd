import type { HandlerContext } from "@connectrpc/connect";
import type { Principal } from "@toolmesh/auth";
import type { Logger } from "@toolmesh/log";
import { decodeEvent, subjects } from "@toolmesh/nats";
import { type CallbackEvent, CallbackEventSchema, isFinal } from "@toolmesh/proto";
import { MemoryRelease } from "@toolmesh/service";
import type { NatsConnection } from "nats";
import { type CallRecords, callState } from "./call-state.js";
import { SharedSubscription, type WatchLimits, WatchQueue } from "./watch-hub.js";

/** Events a watch may fall behind by before it is closed. */
const WATCH_QUEUE_LIMIT = 1024;
/**
 * Watches open at once that count as a burst whose memory is given back when it ends: an open
 * watch holds about 40 KB of connect-node's streaming state, so a hundred are 4 MB.
 */
const BURST_WATCHES = 100;

/** What a filtered watch asks for; empty strings match everything. */
export interface WatchFilter {
  /** Subject token of the status (`success` …), or "*". */
  status: string;
  /** Subject token of the tool, or "*". */
  tool: string;
  agentId: string;
}

/** Whose call a value is: checked before it is shown (ownership). */
export type CallCheck = (call: { callId: string; agentId: string }) => void;

/**
 * Every Watch of the service over one shared subscription to the broadcasts, open while a watch
 * needs it: a watch by call_id gets its call's broadcasts (by call id), a filtered one every
 * final broadcast its filter matches. Each agent may hold a bounded number of watches at once.
 */
export class Watches {
  private readonly broadcasts: SharedSubscription<CallbackEvent>;
  private callWatches = 0;
  private broadcastWatches = 0;
  private readonly memory: MemoryRelease;

  constructor(
    nc: NatsConnection,
    private readonly calls: CallRecords,
    private readonly limits: WatchLimits,
    log: Logger,
  ) {
    this.broadcasts = new SharedSubscription(
      nc,
      subjects.callbacks,
      (msg) => decodeEvent(CallbackEventSchema, msg),
      (event) => event.callId,
      log,
    );
    this.memory = new MemoryRelease({
      what: "watches",
      minPeak: BURST_WATCHES,
      minIntervalMs: 30_000,
      log,
    });
  }

  /** Counts a watch opened or closed. */
  private count(kind: "call" | "broadcast", by: 1 | -1): void {
    if (kind === "call") this.callWatches += by;
    else this.broadcastWatches += by;
    this.memory.track(this.callWatches + this.broadcastWatches);
  }

  /** Stops what runs on its own (a collection not yet run). */
  stop(): void {
    this.memory.stop();
  }

  /** Open watches and what they hold, for tests and metrics. */
  get stats() {
    return {
      callWatches: this.callWatches,
      broadcastWatches: this.broadcastWatches,
      calls: this.broadcasts.keys,
      agents: this.limits.agents,
      subscriptions: Number(this.broadcasts.open),
    };
  }

  /**
   * The call's outcomes: PENDING while it waits (held for approval, or accepted by an asynchronous
   * tool), then its final one, after which the watch ends; at once what it is now. `check` runs
   * on the call before anything of it is shown (ownership).
   */
  async *call(
    principal: Principal,
    callId: string,
    ctx: HandlerContext,
    check: CallCheck,
  ): AsyncGenerator<CallbackEvent> {
    const release = this.limits.acquire(principal.agentId);
    const queue = new WatchQueue<CallbackEvent>(WATCH_QUEUE_LIMIT);
    this.count("call", 1);
    queue.whenClosed(() => {
      this.broadcasts.remove(queue, callId);
      this.count("call", -1);
      release();
    });
    const abort = () => queue.close();
    ctx.signal.addEventListener("abort", abort);
    try {
      // Listen first, then read: an outcome broadcast between the two is seen by one or the other
      // (the read waits for what the log holds when asked).
      await this.broadcasts.add(queue, callId);
      const now = callState(callId, await this.calls.read(callId));
      if (now.first) check(now.first);
      let pendingShown = false;
      if (now.outcome) {
        yield now.outcome;
        if (isFinal(now.outcome.status)) return;
        pendingShown = true;
      }
      for await (const { value } of queue) {
        check(value);
        if (isFinal(value.status)) {
          yield value;
          return;
        }
        if (!pendingShown) {
          pendingShown = true;
          yield value;
        }
      }
    } finally {
      ctx.signal.removeEventListener("abort", abort);
      queue.close();
    }
  }

  /** Every final broadcast matching the filter, until the caller goes away. */
  async *matching(principal: Principal, filter: WatchFilter, ctx: HandlerContext) {
    const release = this.limits.acquire(principal.agentId);
    const queue = new WatchQueue<CallbackEvent>(WATCH_QUEUE_LIMIT, ({ subject, value }) => {
      if (!isFinal(value.status)) return false;
      if (filter.agentId !== "" && value.agentId !== filter.agentId) return false;
      // toolmesh.callback.<status>.<tool>
      const [, , status, tool] = subject.split(".");
      return (
        (filter.status === "*" || status === filter.status) &&
        (filter.tool === "*" || tool === filter.tool)
      );
    });
    this.count("broadcast", 1);
    queue.whenClosed(() => {
      this.broadcasts.remove(queue);
      this.count("broadcast", -1);
      release();
    });
    const abort = () => queue.close();
    ctx.signal.addEventListener("abort", abort);
    try {
      await this.broadcasts.add(queue);
      for await (const { value } of queue) yield value;
    } finally {
      ctx.signal.removeEventListener("abort", abort);
      queue.close();
    }
  }
}
