import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Logger } from "@toolmesh/log";
import { RuntimeState, type RuntimeStatus, RuntimeStatusSchema } from "@toolmesh/proto";
import type { BreakerOpening, BreakerSettings } from "./circuit-breaker.js";
import { localToolRestarts } from "./runtime-metrics.js";
import type { Launch, SupervisedSpec, SupervisorSettings } from "./supervised-backend.js";
import { type StartedFor, ToolInstance } from "./tool-instance.js";
import { type WarmSpec, warmInstances } from "./warm-hours.js";

/** Counts an instance (process or container) replaced after it crashed or was taken out. */
const restartsCounter = localToolRestarts();

/** A supervised runtime's spec as its pool reads it (local and docker runtimes both have it). */
export interface PoolSpec extends SupervisedSpec, WarmSpec {
  maxInstances: number;
  healthIntervalMs: number;
}

/** What a pool tells its runtime, and asks it. */
export interface PoolHooks {
  /** `local` or `docker`. */
  kind: string;
  /** A backend on a port is gone: cached channels to it are dropped. */
  onGone(port: number): void;
  /** Every instance stopped for idleness. */
  onEmpty(): void;
  /** An instance's breaker opened (it is taken out and replaced). */
  onInstanceOpened(instance: number, opening: BreakerOpening): void;
}

/** How one call's attempt ended, for its instance's breaker. */
export interface LeaseEnd {
  ok: boolean;
  /** The failure's code and message, and the call's id. */
  code?: string;
  message?: string;
  callId?: string;
  /** The breaker settings of the tool, asked for only when an instance failed. */
  breaker?: () => BreakerSettings;
}

/** An instance lent to one call. */
export interface Lease {
  instance: ToolInstance;
  port: number;
  /** Milliseconds the call waited for an instance to start; -1 when it found one running. */
  startWaitMs: number;
  /** The instance had been started ahead of need: this call did not wait for a start. */
  saved: boolean;
}

interface Waiter {
  grant(instance: ToolInstance): void;
  fail(error: unknown): void;
  since: number;
}

/**
 * One tool's instances (one per set of secrets for a tool that names some): up to max_instances,
 * calls spread over the running ones (fewest in flight first), one started ahead when every one
 * is busy, min_instances kept warm (in warm hours), idle ones above that stopped, crashed or
 * unhealthy ones replaced. The call path is O(instances) and sets no timer.
 */
export class InstancePool<S extends PoolSpec> {
  private readonly instances: ToolInstance[] = [];
  /**
   * Instances taken out for idleness whose process or container is still being stopped: no call
   * goes to them, but the runtime's status shows them until they are gone, so STOPPED means gone.
   */
  private readonly retiring = new Map<ToolInstance, Promise<void>>();
  private readonly waiters: Waiter[] = [];
  private nextId = 1;
  private restarts = 0;
  private startsSaved = 0;
  private lastError = "";
  private failed = false;
  /** Stopped by an operator or a breaker: nothing is kept warm until the next call or start. */
  private held = false;
  private healthTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly tool: string,
    public spec: S,
    private readonly launch: Launch<S>,
    private readonly settings: SupervisorSettings,
    private readonly hooks: PoolHooks,
    private readonly log: Logger,
  ) {}

  private get maxInstances(): number {
    return Math.max(1, this.spec.maxInstances);
  }

  private get maxConcurrency(): number {
    return this.spec.maxConcurrency || this.settings.maxConcurrency;
  }

  private get idleMs(): number {
    return this.spec.idleTimeoutMs || this.settings.idleTimeoutMs;
  }

  private get healthMs(): number {
    return this.spec.healthIntervalMs || this.settings.healthIntervalMs;
  }

  private minNow(): number {
    return this.held ? 0 : warmInstances(this.spec, Date.now());
  }

  /** An instance for one call: a running one with a free slot, or the next that starts or frees one. */
  lease(signal: AbortSignal): Promise<Lease> {
    this.held = false;
    const instance = this.pick();
    if (instance) return Promise.resolve(this.take(instance, -1));
    return new Promise<Lease>((resolve, reject) => {
      const waitsForStart = !this.instances.some((i) => i.state === RuntimeState.RUNNING);
      const waiter: Waiter = {
        since: Date.now(),
        grant: (granted) => {
          signal.removeEventListener("abort", onAbort);
          resolve(this.take(granted, waitsForStart ? Date.now() - waiter.since : -1));
        },
        fail: (error) => {
          signal.removeEventListener("abort", onAbort);
          reject(error);
        },
      };
      const onAbort = () => {
        const index = this.waiters.indexOf(waiter);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(waiter);
      // Nothing on its way (every instance runs, at its max_concurrency): start one if allowed.
      const coming = this.instances.some((i) => i.state !== RuntimeState.RUNNING);
      if (!coming && this.instances.length < this.maxInstances) this.startInstance("call");
    });
  }

  /** Gives a lent instance back, counting the attempt in the instance's breaker. */
  release(lease: Lease, end: LeaseEnd): void {
    const instance = lease.instance;
    instance.inFlight--;
    instance.lastUsedAt = Date.now();
    if (end.ok) instance.breaker?.succeeded(false);
    else if (end.breaker && this.maxInstances > 1 && this.instances.includes(instance)) {
      // With one instance the tool's own breaker stops and probes it; in a pool the others serve.
      const opening = instance.failedCall(end.breaker(), end);
      if (opening) {
        this.hooks.onInstanceOpened(instance.id, opening);
        this.takeOut(instance, `its circuit breaker opened: ${opening.lastError}`);
      }
    }
    this.wake();
  }

  /** The running instance with the fewest calls in flight and a free slot. */
  private pick(): ToolInstance | undefined {
    let best: ToolInstance | undefined;
    for (const instance of this.instances) {
      if (instance.state !== RuntimeState.RUNNING || instance.inFlight >= this.maxConcurrency)
        continue;
      if (!best || instance.inFlight < best.inFlight) best = instance;
    }
    return best;
  }

  private take(instance: ToolInstance, startWaitMs: number): Lease {
    // Every instance was already busy and there is room for one more: calls are rising, so one
    // starts now, before a call has to wait for it.
    const rising =
      this.instances.length < this.maxInstances && this.instances.every((i) => i.inFlight > 0);
    instance.inFlight++;
    instance.calls++;
    instance.lastUsedAt = Date.now();
    // A call that waited for the instance to come up did not save its start.
    const saved = instance.saves && startWaitMs < 0;
    instance.saves = false;
    if (saved) this.startsSaved++;
    if (rising) this.startInstance("ahead");
    return { instance, port: instance.backend?.port ?? 0, startWaitMs, saved };
  }

  /** Hands free slots to waiting calls, in their order. */
  private wake(): void {
    while (this.waiters.length > 0) {
      const instance = this.pick();
      if (!instance) return;
      this.waiters.shift()?.grant(instance);
    }
  }

  private startInstance(startedFor: StartedFor, delayMs = 0, restarts = 0): Promise<void> {
    const instance = new ToolInstance(this.nextId++, startedFor, restarts);
    this.instances.push(instance);
    instance.ready = this.run(instance, delayMs);
    instance.ready.catch(() => {});
    return instance.ready;
  }

  private async run(instance: ToolInstance, delayMs: number): Promise<void> {
    let backend: Awaited<ReturnType<ToolInstance["start"]>>;
    try {
      backend = await instance.start(this.launch, this.spec, this.settings.startTimeoutMs, delayMs);
    } catch (error) {
      const gone = this.remove(instance);
      if (gone) {
        this.lastError = instance.lastError;
        this.log.warn(
          { tool_instance: instance.id, started_for: instance.startedFor, err: error },
          "tool instance did not start",
        );
      }
      // Calls waiting with no other instance on its way get the start's error.
      if (!this.instances.some((i) => i.state !== RuntimeState.FAILED)) {
        this.failed = gone;
        for (const waiter of this.waiters.splice(0)) waiter.fail(error);
      }
      throw error;
    }
    if (!this.instances.includes(instance)) {
      await instance.stop();
      return;
    }
    this.failed = false;
    this.log.info(
      {
        tool_instance: instance.id,
        started_for: instance.startedFor,
        pid: backend.pid || undefined,
        container_id: backend.containerId || undefined,
        port: backend.port,
      },
      "tool instance started",
    );
    void backend.ended.then((how) => this.onEnded(instance, how));
    this.armIdle(instance, this.idleMs);
    this.armHealth();
    this.wake();
  }

  /** A crashed instance is replaced, after a backoff that grows along its line. */
  private onEnded(instance: ToolInstance, how: string): void {
    if (!this.remove(instance)) return;
    if (instance.backend) this.hooks.onGone(instance.backend.port);
    instance.state = RuntimeState.STOPPED;
    const delay = Math.min(100 * 2 ** Math.min(instance.restarts, 7), 10_000);
    this.log.warn(
      { tool_instance: instance.id, ended: how, restart_in_ms: delay },
      "tool instance crashed; replacing it",
    );
    this.replace(instance, how, delay);
  }

  /** Takes a running instance out of service (unhealthy, or its breaker opened) and replaces it. */
  private takeOut(instance: ToolInstance, why: string): void {
    if (!this.remove(instance)) return;
    this.log.warn({ tool_instance: instance.id, reason: why }, "tool instance taken out");
    void this.stopInstance(instance);
    this.replace(instance, why, 0);
  }

  /** Stops an instance taken out of the pool; cached channels to its port go with it. */
  private async stopInstance(instance: ToolInstance): Promise<void> {
    const port = instance.backend?.port;
    await instance.stop();
    if (port) this.hooks.onGone(port);
  }

  private replace(old: ToolInstance, why: string, delayMs: number): void {
    this.restarts++;
    this.lastError = why;
    restartsCounter.inc({ tool: this.tool });
    this.startInstance("replace", delayMs, old.restarts + 1).catch((error: unknown) =>
      this.log.error({ err: error }, "tool instance replacement failed"),
    );
    const replacement = this.instances[this.instances.length - 1];
    if (replacement) replacement.lastError = why;
  }

  private remove(instance: ToolInstance): boolean {
    const index = this.instances.indexOf(instance);
    if (index < 0) return false;
    this.instances.splice(index, 1);
    if (this.instances.length === 0 && this.healthTimer) {
      clearTimeout(this.healthTimer);
      this.healthTimer = undefined;
    }
    return true;
  }

  /**
   * Checks an instance once it may have idled for `afterMs`: idle past idle_timeout_ms and above
   * the warm minimum it stops; kept warm, its next call counts as a saved start. Calls only stamp
   * last_used_at, so the call path sets no timer.
   */
  private armIdle(instance: ToolInstance, afterMs: number): void {
    instance.idleTimer = setTimeout(() => {
      if (!this.instances.includes(instance) || instance.state !== RuntimeState.RUNNING) return;
      const idleMs = this.idleMs;
      const idleFor = Date.now() - instance.lastUsedAt;
      if (instance.inFlight > 0) return this.armIdle(instance, idleMs);
      if (idleFor < idleMs) return this.armIdle(instance, idleMs - idleFor);
      if (this.instances.length > this.minNow()) {
        this.log.info(
          { tool_instance: instance.id, idle_ms: idleMs },
          "stopping idle tool instance",
        );
        this.remove(instance);
        this.retiring.set(
          instance,
          this.stopInstance(instance).finally(() => this.retiring.delete(instance)),
        );
        if (this.instances.length === 0) this.hooks.onEmpty();
        return;
      }
      instance.saves = true;
      this.armIdle(instance, idleMs);
    }, afterMs);
    instance.idleTimer.unref();
  }

  /** Health-checks every running instance each health interval, off the call path. */
  private armHealth(): void {
    if (this.healthTimer || this.instances.length === 0) return;
    const intervalMs = this.healthMs;
    this.healthTimer = setTimeout(() => {
      this.healthTimer = undefined;
      const timeoutMs = Math.min(Math.max(intervalMs, 500), 2000);
      for (const instance of this.instances)
        void instance.checkHealth(this.spec.protocol, timeoutMs).then((out) => {
          if (out !== undefined && this.instances.includes(instance)) this.takeOut(instance, out);
        });
      this.armHealth();
    }, intervalMs);
    this.healthTimer.unref();
  }

  /** Starts instances up to the warm minimum of now (min_instances, in warm hours). */
  keepWarm(): void {
    const missing = this.minNow() - this.instances.length;
    for (let i = 0; i < missing; i++)
      this.startInstance("warm").catch((error: unknown) =>
        this.log.warn({ err: error }, "warm tool instance did not start"),
      );
  }

  /**
   * An operator's start: one more instance (up to max_instances), awaited until healthy; at
   * max_instances with one running, nothing to do.
   */
  async start(): Promise<void> {
    this.held = false;
    if (this.instances.length < this.maxInstances) await this.startInstance("operator");
    else if (!this.instances.some((i) => i.state === RuntimeState.RUNNING))
      await Promise.any(this.instances.map((i) => i.ready));
    this.keepWarm();
  }

  /**
   * Stops every instance; nothing is kept warm until the next call or start. Calls that were
   * waiting for a slot get a fresh instance, as a call arriving now would.
   */
  async stop(): Promise<void> {
    this.held = true;
    const instances = this.instances.splice(0);
    const retiring = [...this.retiring.values()];
    if (this.healthTimer) clearTimeout(this.healthTimer);
    this.healthTimer = undefined;
    await Promise.all(instances.map((instance) => this.stopInstance(instance)));
    await Promise.all(retiring);
    if (this.waiters.length > 0 && this.instances.length === 0) {
      this.held = false;
      this.startInstance("call");
    }
  }

  status(): RuntimeStatus {
    const shown =
      this.retiring.size > 0 ? [...this.instances, ...this.retiring.keys()] : this.instances;
    const first = shown[0];
    const backend = first?.backend;
    let inFlight = 0;
    let lastUsedAt = 0;
    for (const instance of shown) {
      inFlight += instance.inFlight;
      lastUsedAt = Math.max(lastUsedAt, instance.lastUsedAt);
    }
    return create(RuntimeStatusSchema, {
      tool: this.tool,
      kind: this.hooks.kind,
      state: first?.state ?? (this.failed ? RuntimeState.FAILED : RuntimeState.STOPPED),
      pid: backend?.pid ?? 0,
      containerId: backend?.containerId ?? "",
      port: backend?.port ?? 0,
      restarts: this.restarts,
      lastError: first?.lastError || this.lastError,
      inFlight,
      ...(first?.startedAt ? { startedAt: timestampFromMs(first.startedAt) } : {}),
      ...(lastUsedAt ? { lastUsedAt: timestampFromMs(lastUsedAt) } : {}),
      instances: shown.map((i) => i.status()),
      minInstances: this.minNow(),
      maxInstances: this.maxInstances,
      startsSaved: BigInt(this.startsSaved),
    });
  }
}
