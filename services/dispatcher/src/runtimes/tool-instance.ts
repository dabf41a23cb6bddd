import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { LocalProtocol } from "@toolmesh/proto";
import { type RuntimeInstance, RuntimeInstanceSchema, RuntimeState } from "@toolmesh/proto";
import { type BreakerOpening, type BreakerSettings, CircuitBreaker } from "./circuit-breaker.js";
import { checkHealth, waitHealthy } from "./health-check.js";
import {
  type Launch,
  type LaunchedBackend,
  type SupervisedSpec,
  ToolStartError,
} from "./supervised-backend.js";

/** Health checks failed in a row that take an instance out. */
const HEALTH_FAILURES_OUT = 2;

/** Why an instance was started, as runtime status shows it. */
export type StartedFor = "call" | "warm" | "ahead" | "replace" | "operator";

/**
 * One process or container of a tool: started (after a backoff delay when it replaces a crashed
 * one), health-waited, stopped. The pool decides when; this holds its state and counters.
 */
export class ToolInstance {
  state = RuntimeState.STOPPED;
  backend: LaunchedBackend | undefined;
  lastError = "";
  inFlight = 0;
  calls = 0;
  startedAt = 0;
  lastUsedAt = 0;
  healthFailures = 0;
  /** A health check of it is under way: the next tick skips it. */
  private checking = false;
  /** Its next call finds it started ahead of need: that call saved a start. */
  saves: boolean;
  /** Its own breaker, made at its first failed call in a pool of more than one. */
  breaker: CircuitBreaker | undefined;
  idleTimer: NodeJS.Timeout | undefined;
  /** Settles once it runs, or rejects with why it did not start. */
  ready: Promise<void> = Promise.resolve();
  private stopping = false;

  constructor(
    readonly id: number,
    readonly startedFor: StartedFor,
    /** Instances before it in its line that crashed or were taken out. */
    readonly restarts: number,
  ) {
    this.saves = startedFor === "warm" || startedFor === "ahead";
  }

  /** Launches it and waits until it is healthy; throws ToolStartError with why not. */
  async start<S extends SupervisedSpec>(
    launch: Launch<S>,
    spec: S,
    startTimeoutMs: number,
    delayMs: number,
  ): Promise<LaunchedBackend> {
    if (delayMs > 0) {
      this.state = RuntimeState.BACKOFF;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      if (this.stopping) throw new ToolStartError("the tool was stopped");
    }
    this.state = RuntimeState.STARTING;
    let backend: LaunchedBackend;
    try {
      backend = await launch(spec);
    } catch (error) {
      this.state = RuntimeState.FAILED;
      this.lastError = error instanceof Error ? error.message : String(error);
      throw error instanceof ToolStartError ? error : new ToolStartError(this.lastError);
    }
    this.backend = backend;
    const endedEarly = backend.ended.then((how) => {
      throw new ToolStartError(`${how} before it was healthy`);
    });
    endedEarly.catch(() => {});
    try {
      if (this.stopping) throw new ToolStartError("the tool was stopped while it started");
      await Promise.race([waitHealthy(backend.port, spec.protocol, startTimeoutMs), endedEarly]);
      if (this.stopping) throw new ToolStartError("the tool was stopped while it started");
    } catch (error) {
      await backend.stop();
      this.backend = undefined;
      this.state = this.stopping ? RuntimeState.STOPPED : RuntimeState.FAILED;
      this.lastError = error instanceof Error ? error.message : String(error);
      throw error;
    }
    this.state = RuntimeState.RUNNING;
    this.startedAt = Date.now();
    this.lastUsedAt = this.startedAt;
    return backend;
  }

  /** Counts a call it failed in its own breaker; the opening when this failure opened it. */
  failedCall(
    settings: BreakerSettings,
    failure: {
      code?: string | undefined;
      message?: string | undefined;
      callId?: string | undefined;
    },
  ): BreakerOpening | undefined {
    this.breaker ??= new CircuitBreaker(settings);
    this.breaker.settings = settings;
    return this.breaker.failed(
      false,
      failure.code ?? "failure",
      failure.message ?? "",
      failure.callId ?? "",
    );
  }

  /**
   * Checks its health once (unless it is not running or a check is under way); resolves with why
   * it must be taken out once it failed HEALTH_FAILURES_OUT checks in a row.
   */
  async checkHealth(protocol: LocalProtocol, timeoutMs: number): Promise<string | undefined> {
    const port = this.backend?.port;
    if (this.state !== RuntimeState.RUNNING || this.checking || !port) return undefined;
    this.checking = true;
    const failure = await checkHealth(port, protocol, timeoutMs);
    this.checking = false;
    if (failure === undefined) {
      this.healthFailures = 0;
      return undefined;
    }
    this.healthFailures++;
    this.lastError = `health check failed: ${failure}`;
    return this.healthFailures >= HEALTH_FAILURES_OUT
      ? `failed ${this.healthFailures} health checks in a row: ${failure}`
      : undefined;
  }

  /** Stops it (a start under way gives up); resolves once its backend has ended. */
  async stop(): Promise<void> {
    this.stopping = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const backend = this.backend;
    if (backend) await backend.stop();
    this.state = RuntimeState.STOPPED;
  }

  status(): RuntimeInstance {
    const backend = this.backend;
    return create(RuntimeInstanceSchema, {
      id: this.id,
      state: this.state,
      pid: backend?.pid ?? 0,
      port: backend?.port ?? 0,
      containerId: backend?.containerId ?? "",
      restarts: this.restarts,
      lastError: this.lastError,
      inFlight: this.inFlight,
      calls: BigInt(this.calls),
      startedFor: this.startedFor,
      healthFailures: this.healthFailures,
      ...(this.startedAt ? { startedAt: timestampFromMs(this.startedAt) } : {}),
      ...(this.lastUsedAt ? { lastUsedAt: timestampFromMs(this.lastUsedAt) } : {}),
      ...(this.breaker && !this.breaker.quiet ? { breaker: this.breaker.status() } : {}),
    });
  }
}
