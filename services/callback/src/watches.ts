import type { HandlerContext } from "@connectrpc/connect";
import type { Principal } from "@toolmesh/auth";
import type { Logger } from "@toolmesh/log";
import { decodeEvent, subjects } from "@toolmesh/nats";
import { type CallbackEvent, CallbackEventSchema, isFinal } from "@toolmesh/proto";
import type { Msg, NatsConnection } from "nats";
import { findCall } from "./call-lookup.js";
import { CALL_SUBJECTS, type CallStore, callSubject, eventOfValue } from "./call-store.js";
import type { OutcomeHistory } from "./outcome-history.js";
import { SharedSubscription, type WatchLimits, WatchQueue } from "./watch-hub.js";

/** Events a watch may fall behind by before it is closed. */
const WATCH_QUEUE_LIMIT = 1024;

/** What a filtered watch asks for; empty strings match everything. */
export interface WatchFilter {
  /** Subject token of the status (`success` …), or "*". */
  status: string;
  /** Subject token of the tool, or "*". */
  tool: string;
  agentId: string;
}

const isDelete = (msg: Msg) => {
  const op = msg.headers?.get("KV-Operation");
  return op === "DEL" || op === "PURGE";
};

/**
 * Every Watch of the service over two shared subscriptions: one on the call keys (Watch by
 * call_id) and one on the broadcasts (Watch by agent, tool, status), each opened while a watch
 * needs it. Each agent may hold a bounded number of watches at once.
 */
export class Watches {
  private readonly calls: SharedSubscription<CallbackEvent>;
  private readonly broadcasts: SharedSubscription<CallbackEvent>;

  constructor(
    nc: NatsConnection,
    private readonly store: CallStore,
    private readonly history: OutcomeHistory,
    private readonly limits: WatchLimits,
    log: Logger,
  ) {
    this.calls = new SharedSubscription(
      nc,
      CALL_SUBJECTS,
      (msg) => (isDelete(msg) ? undefined : eventOfValue(msg.data)),
      log,
    );
    this.broadcasts = new SharedSubscription(
      nc,
      subjects.callbacks,
      (msg) => decodeEvent(CallbackEventSchema, msg),
      log,
    );
  }

  /** Open watches and what they hold, for tests and metrics. */
  get stats() {
    return {
      callWatches: this.calls.watches,
      callSubjects: this.calls.subjects,
      broadcastWatches: this.broadcasts.watches,
      agents: this.limits.agents,
      subscriptions: Number(this.calls.open) + Number(this.broadcasts.open),
    };
  }

  /**
   * The call's final event, once: at once if it has finished, else when it does. `check` runs on
   * every value before it is shown (ownership).
   */
  async *call(
    principal: Principal,
    callId: string,
    ctx: HandlerContext,
    check: (event: CallbackEvent) => void,
  ): AsyncGenerator<CallbackEvent> {
    const release = this.limits.acquire(principal.agentId);
    const subject = callSubject(callId);
    const queue = new WatchQueue<CallbackEvent>(WATCH_QUEUE_LIMIT);
    queue.whenClosed(() => {
      this.calls.remove(queue, subject);
      release();
    });
    const abort = () => queue.close();
    ctx.signal.addEventListener("abort", abort);
    try {
      // Listen first, then read: a change between the two is seen by one or the other.
      await this.calls.add(queue, subject);
      const stored = await findCall(this.store, this.history, callId);
      if (stored) {
        check(stored.event);
        if (isFinal(stored.event.status)) {
          yield stored.event;
          return;
        }
      }
      for await (const { value } of queue) {
        check(value);
        if (isFinal(value.status)) {
          yield value;
          return;
        }
      }
    } finally {
      ctx.signal.removeEventListener("abort", abort);
      queue.close();
    }
  }

  /** Every broadcast matching the filter, until the caller goes away. */
  async *matching(principal: Principal, filter: WatchFilter, ctx: HandlerContext) {
    const release = this.limits.acquire(principal.agentId);
    const queue = new WatchQueue<CallbackEvent>(WATCH_QUEUE_LIMIT, ({ subject, value }) => {
      if (filter.agentId !== "" && value.agentId !== filter.agentId) return false;
      // toolmesh.callback.<status>.<tool>
      const [, , status, tool] = subject.split(".");
      return (
        (filter.status === "*" || status === filter.status) &&
        (filter.tool === "*" || tool === filter.tool)
      );
    });
    queue.whenClosed(() => {
      this.broadcasts.remove(queue);
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
