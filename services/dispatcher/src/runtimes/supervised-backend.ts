import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import * as grpc from "@grpc/grpc-js";
import type { Logger } from "@toolmesh/log";
import {
  Health,
  type HealthCheckRequest,
  HealthCheckRequestSchema,
  type HealthCheckResponse,
  HealthCheckResponse_ServingStatus,
  LocalProtocol,
  RuntimeState,
  type RuntimeStatus,
  RuntimeStatusSchema,
} from "@toolmesh/proto";
import { grpcServiceDefinition } from "@toolmesh/server";
import { localToolRestarts } from "./runtime-metrics.js";

/** Counts a backend process (local tool or container) restarting after it exited on its own. */
const restartsCounter = localToolRestarts();

/** How supervised backends are run, from the Dispatcher's configuration. */
export interface SupervisorSettings {
  idleTimeoutMs: number;
  maxConcurrency: number;
  startTimeoutMs: number;
}

/** What a supervised runtime's spec says about supervision (local and docker runtimes both have it). */
export interface SupervisedSpec {
  protocol: LocalProtocol;
  maxConcurrency: number;
  idleTimeoutMs: number;
}

/** Raised when a tool's backend cannot be started or does not become healthy. */
export class ToolStartError extends Error {
  override name = "ToolStartError";
}

/** A started backend (a process or a container) as its launcher hands it over. */
export interface LaunchedBackend {
  /** The port on 127.0.0.1 where the tool serves. */
  readonly port: number;
  /** The process id of a local tool; 0 for a container. */
  readonly pid: number;
  /** The container id of a docker tool; empty for a process. */
  readonly containerId: string;
  /** Settles once the backend has ended (and is cleaned up), saying how it ended. */
  readonly ended: Promise<string>;
  /** Ends the backend, politely and then by force; resolves once `ended` has settled. */
  stop(): Promise<void>;
}

/** Starts one backend from a spec; throws ToolStartError with a message for the operator. */
export type Launch<S> = (spec: S) => Promise<LaunchedBackend>;

const healthCheck = grpcServiceDefinition(Health).check as grpc.MethodDefinition<
  HealthCheckRequest,
  HealthCheckResponse
>;

/**
 * One tool's backend under supervision: started on demand, health-checked, restarted on crash
 * with exponential backoff, stopped when idle, with a bound on concurrent calls. What the backend
 * is (a process, a container) is the launcher's business.
 */
export class SupervisedBackend<S extends SupervisedSpec> {
  private state = RuntimeState.STOPPED;
  private backend: LaunchedBackend | undefined;
  private restarts = 0;
  private lastError = "";
  private inFlight = 0;
  private startedAt = 0;
  private lastUsedAt = 0;
  private starting: Promise<number> | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly waiters: (() => void)[] = [];
  private stopping = false;

  constructor(
    private readonly tool: string,
    public spec: S,
    private readonly launch: Launch<S>,
    private readonly settings: SupervisorSettings,
    /** Called when a backend on a port is gone, so cached channels to it are dropped. */
    private readonly onGone: (port: number) => void,
    private readonly log: Logger,
    /** Told when the backend stops for idleness. */
    private readonly onIdle: () => void = () => {},
  ) {}

  private get maxConcurrency(): number {
    return this.spec.maxConcurrency || this.settings.maxConcurrency;
  }

  /** Waits for a free call slot (max concurrency per tool). */
  acquire(signal: AbortSignal): Promise<void> {
    if (this.inFlight < this.maxConcurrency) {
      this.inFlight++;
      this.touch();
      return Promise.resolve();
    }
    return new Promise((resolve, reject) => {
      const grant = () => {
        signal.removeEventListener("abort", onAbort);
        this.inFlight++;
        this.touch();
        resolve();
      };
      const onAbort = () => {
        const index = this.waiters.indexOf(grant);
        if (index >= 0) this.waiters.splice(index, 1);
        reject(signal.reason);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      this.waiters.push(grant);
    });
  }

  release(): void {
    this.inFlight--;
    this.touch();
    const next = this.waiters.shift();
    if (next) next();
  }

  private touch(): void {
    this.lastUsedAt = Date.now();
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const idleMs = this.spec.idleTimeoutMs || this.settings.idleTimeoutMs;
    this.idleTimer = setTimeout(() => {
      if (this.inFlight === 0 && this.state === RuntimeState.RUNNING) {
        this.log.info({ idle_ms: idleMs }, "stopping idle tool backend");
        this.onIdle();
        void this.stop();
      }
    }, idleMs);
    this.idleTimer.unref();
  }

  /** The port of a healthy backend, starting one (or waiting for a restart) if needed. */
  ensureRunning(signal: AbortSignal): Promise<number> {
    if (this.state === RuntimeState.RUNNING && this.backend)
      return Promise.resolve(this.backend.port);
    if (!this.starting) {
      this.starting = this.start(0).finally(() => {
        this.starting = undefined;
      });
    }
    const starting = this.starting;
    return new Promise<number>((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener("abort", onAbort, { once: true });
      starting.then(
        (port) => {
          signal.removeEventListener("abort", onAbort);
          resolve(port);
        },
        (error: unknown) => {
          signal.removeEventListener("abort", onAbort);
          reject(error);
        },
      );
    });
  }

  private async start(delayMs: number): Promise<number> {
    this.stopping = false;
    if (delayMs > 0) {
      this.state = RuntimeState.BACKOFF;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      if (this.stopping) throw new ToolStartError("the tool was stopped");
    }
    this.state = RuntimeState.STARTING;
    const spec = this.spec;
    let backend: LaunchedBackend;
    try {
      backend = await this.launch(spec);
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
      await Promise.race([
        waitHealthy(backend.port, spec.protocol, this.settings.startTimeoutMs),
        endedEarly,
      ]);
    } catch (error) {
      await backend.stop();
      this.backend = undefined;
      this.state = this.stopping ? RuntimeState.STOPPED : RuntimeState.FAILED;
      this.lastError = error instanceof Error ? error.message : String(error);
      throw error;
    }
    this.state = RuntimeState.RUNNING;
    this.startedAt = Date.now();
    this.log.info(
      {
        pid: backend.pid || undefined,
        container_id: backend.containerId || undefined,
        port: backend.port,
      },
      "tool backend started",
    );
    void backend.ended.then((how) => this.onEnded(backend, how));
    this.touch();
    return backend.port;
  }

  private onEnded(backend: LaunchedBackend, how: string): void {
    if (this.backend !== backend) return;
    this.backend = undefined;
    this.onGone(backend.port);
    if (this.stopping) {
      this.state = RuntimeState.STOPPED;
      return;
    }
    this.restarts++;
    restartsCounter.inc({ tool: this.tool });
    this.lastError = how;
    const delay = Math.min(100 * 2 ** Math.min(this.restarts - 1, 7), 10_000);
    this.log.warn({ ended: how, restart_in_ms: delay }, "tool backend crashed; restarting");
    this.state = RuntimeState.BACKOFF;
    this.starting = this.start(delay).finally(() => {
      this.starting = undefined;
    });
    this.starting.catch((error: unknown) => {
      this.log.error({ err: error }, "tool backend restart failed");
    });
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const backend = this.backend;
    if (backend) await backend.stop();
    this.state = RuntimeState.STOPPED;
  }

  status(): RuntimeStatus {
    const backend = this.backend;
    return create(RuntimeStatusSchema, {
      tool: this.tool,
      state: this.state,
      pid: backend?.pid ?? 0,
      containerId: backend?.containerId ?? "",
      port: backend?.port ?? 0,
      restarts: this.restarts,
      lastError: this.lastError,
      inFlight: this.inFlight,
      ...(this.startedAt ? { startedAt: timestampFromMs(this.startedAt) } : {}),
      ...(this.lastUsedAt ? { lastUsedAt: timestampFromMs(this.lastUsedAt) } : {}),
    });
  }
}

/** Polls GET /healthz (HTTP tools) or grpc.health.v1 (gRPC tools) until healthy or timed out. */
async function waitHealthy(
  port: number,
  protocol: LocalProtocol,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = "";
  while (Date.now() < deadline) {
    try {
      if (protocol === LocalProtocol.HTTP) {
        const res = await fetch(`http://127.0.0.1:${port}/healthz`, {
          signal: AbortSignal.timeout(1000),
        });
        await res.body?.cancel();
        if (res.ok) return;
        last = `GET /healthz answered ${res.status}`;
      } else if (await grpcHealthy(port)) {
        return;
      }
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new ToolStartError(`not healthy within ${timeoutMs} ms${last ? ` (${last})` : ""}`);
}

function grpcHealthy(port: number): Promise<boolean> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise<boolean>((resolve, reject) => {
    client.makeUnaryRequest(
      healthCheck.path,
      healthCheck.requestSerialize,
      healthCheck.responseDeserialize,
      create(HealthCheckRequestSchema, { service: "" }),
      new grpc.Metadata(),
      { deadline: Date.now() + 1000 },
      (error, response) => {
        client.close();
        if (error) reject(new Error(error.details));
        else resolve(response?.status === HealthCheckResponse_ServingStatus.SERVING);
      },
    );
  });
}
