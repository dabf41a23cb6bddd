import { Code, ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import type { Msg, NatsConnection, Subscription } from "nats";

/** A watch's view of one message: its subject and payload, decoded once for every watch. */
export interface Delivery<T> {
  subject: string;
  value: T;
}

/**
 * One open Watch: an async iterator of what the shared subscription fanned out to it, with a
 * bounded queue. A watcher that falls `queueLimit` messages behind is ended with
 * RESOURCE_EXHAUSTED instead of holding memory for it.
 */
export class WatchQueue<T> implements AsyncIterable<Delivery<T>> {
  private readonly items: Delivery<T>[] = [];
  private wake: (() => void) | undefined;
  private ended = false;
  private failure: unknown;

  private onClose: () => void = () => {};

  constructor(
    private readonly queueLimit: number,
    /** Which deliveries this watch wants; all when undefined. */
    private readonly accept?: (item: Delivery<T>) => boolean,
  ) {}

  /** Runs once when the watch ends, however it ends. */
  whenClosed(fn: () => void): void {
    this.onClose = fn;
    if (this.ended) fn();
  }

  push(item: Delivery<T>): void {
    if (this.ended || (this.accept && !this.accept(item))) return;
    if (this.items.length >= this.queueLimit) {
      this.fail(
        new ConnectError(
          `this watch fell ${this.queueLimit} events behind and was closed; read faster or narrow the watch (tool, status), then watch again`,
          Code.ResourceExhausted,
        ),
      );
      return;
    }
    this.items.push(item);
    this.wake?.();
  }

  fail(error: unknown): void {
    this.failure = error;
    this.close();
  }

  /** Ends the iteration and leaves the shared subscription; safe to call twice. */
  close(): void {
    if (this.ended) return;
    this.ended = true;
    this.onClose();
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Delivery<T>> {
    try {
      for (;;) {
        const item = this.items.shift();
        if (item) {
          yield item;
          continue;
        }
        if (this.ended) break;
        await new Promise<void>((r) => {
          this.wake = r;
        });
        this.wake = undefined;
      }
      if (this.failure) throw this.failure;
    } finally {
      this.close();
    }
  }
}

/**
 * One NATS subscription on a wildcard subject, shared by every watch that needs part of it:
 * opened when the first watch joins, closed when the last leaves. Each message is decoded once
 * and handed to the watches registered under its key (`keyOf`: the call id of a broadcast) and
 * to those that take every message. No JetStream consumer is involved, so watches cost the
 * server nothing per watch.
 */
export class SharedSubscription<T> {
  private subscription: Subscription | undefined;
  private ready: Promise<void> | undefined;
  private readonly byKey = new Map<string, Set<WatchQueue<T>>>();
  private readonly everything = new Set<WatchQueue<T>>();
  private count = 0;

  constructor(
    private readonly nc: NatsConnection,
    private readonly subject: string,
    private readonly decode: (msg: Msg) => T | undefined,
    private readonly keyOf: (value: T) => string,
    private readonly log: Logger,
  ) {}

  /** Watches open on this subscription. */
  get watches(): number {
    return this.count;
  }

  /** Keys with at least one watch of their own (memory returns as watches close). */
  get keys(): number {
    return this.byKey.size;
  }

  get open(): boolean {
    return this.subscription !== undefined;
  }

  /**
   * Registers a queue for one key (or every message when undefined) and resolves once the
   * server has the subscription, so nothing published after this resolves is missed.
   */
  async add(queue: WatchQueue<T>, key?: string): Promise<void> {
    this.count++;
    if (key === undefined) {
      this.everything.add(queue);
    } else {
      let set = this.byKey.get(key);
      if (!set) {
        set = new Set();
        this.byKey.set(key, set);
      }
      set.add(queue);
    }
    if (!this.subscription) this.start();
    await this.ready;
  }

  remove(queue: WatchQueue<T>, key?: string): void {
    if (key === undefined) {
      if (!this.everything.delete(queue)) return;
    } else {
      const set = this.byKey.get(key);
      if (!set?.delete(queue)) return;
      if (set.size === 0) this.byKey.delete(key);
    }
    this.count--;
    if (this.count === 0) {
      this.subscription?.unsubscribe();
      this.subscription = undefined;
      this.ready = undefined;
    }
  }

  private start(): void {
    const sub = this.nc.subscribe(this.subject, {
      callback: (error, msg) => {
        if (error) {
          this.log.warn({ err: error, subject: this.subject }, "watch subscription error");
          return;
        }
        this.deliver(msg);
      },
    });
    this.subscription = sub;
    this.ready = this.nc.flush();
  }

  private deliver(msg: Msg): void {
    if (this.count === 0) return;
    let value: T | undefined;
    try {
      value = this.decode(msg);
    } catch {
      return;
    }
    if (value === undefined) return;
    const delivery = { subject: msg.subject, value };
    const own = this.byKey.get(this.keyOf(value));
    if (own) for (const queue of own) queue.push(delivery);
    for (const queue of this.everything) queue.push(delivery);
  }
}

/** Counts each agent's open watches and refuses one past the limit. */
export class WatchLimits {
  private readonly open = new Map<string, number>();

  constructor(
    readonly perAgent: number,
    private readonly setting: string,
  ) {}

  /** Takes a slot for the agent; RESOURCE_EXHAUSTED naming the limit when none is left. */
  acquire(agentId: string): () => void {
    const n = this.open.get(agentId) ?? 0;
    if (n >= this.perAgent) {
      throw new ConnectError(
        `agent "${agentId}" has ${n} watches open, the most allowed (${this.setting}=${this.perAgent}); close one before opening another`,
        Code.ResourceExhausted,
      );
    }
    this.open.set(agentId, n + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(agentId) ?? 1) - 1;
      if (left === 0) this.open.delete(agentId);
      else this.open.set(agentId, left);
    };
  }

  /** Agents with a watch open. */
  get agents(): number {
    return this.open.size;
  }
}
