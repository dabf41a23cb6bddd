import { type ChildProcess, spawn } from "node:child_process";
import net from "node:net";
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
  type LocalRuntime as LocalRuntimeSpec,
  RuntimeState,
  type RuntimeStatus,
  RuntimeStatusSchema,
} from "@toolmesh/proto";
import { grpcServiceDefinition } from "@toolmesh/server";
import type { GrpcRuntime } from "./grpc-runtime.js";

/** How local tool processes are run, from the Dispatcher's configuration. */
export interface LocalSettings {
  idleTimeoutMs: number;
  maxConcurrency: number;
  startTimeoutMs: number;
}

/** Raised when a local tool's process cannot be started or does not become healthy. */
export class LocalStartError extends Error {
  override name = "LocalStartError";
}

const healthCheck = grpcServiceDefinition(Health).check as grpc.MethodDefinition<
  HealthCheckRequest,
  HealthCheckResponse
>;

/**
 * One local tool's process: started on demand on a free port, health-checked, restarted on
 * crash with backoff, stopped when idle, with a bound on concurrent calls.
 */
export class LocalProcess {
  private state = RuntimeState.STOPPED;
  private child: ChildProcess | undefined;
  private port = 0;
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
    public spec: LocalRuntimeSpec,
    private readonly settings: LocalSettings,
    private readonly grpcRuntime: GrpcRuntime,
    private readonly log: Logger,
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
        this.log.info({ idle_ms: idleMs }, "stopping idle local tool");
        void this.stop();
      }
    }, idleMs);
    this.idleTimer.unref();
  }

  /** The port of a healthy process, starting one (or waiting for a restart) if needed. */
  ensureRunning(signal: AbortSignal): Promise<number> {
    if (this.state === RuntimeState.RUNNING && this.child) return Promise.resolve(this.port);
    if (!this.starting) {
      this.starting = this.startProcess(0).finally(() => {
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

  private async startProcess(delayMs: number): Promise<number> {
    this.stopping = false;
    if (delayMs > 0) {
      this.state = RuntimeState.BACKOFF;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      if (this.stopping) throw new LocalStartError("the tool was stopped");
    }
    this.state = RuntimeState.STARTING;
    const port = await freePort();
    const spec = this.spec;
    let child: ChildProcess;
    try {
      child = spawn(spec.command, spec.args, {
        cwd: spec.workingDir || process.cwd(),
        env: { ...process.env, ...spec.env, TOOLMESH_TOOL_PORT: String(port) },
        stdio: ["ignore", "ignore", "pipe"],
      });
    } catch (error) {
      this.state = RuntimeState.FAILED;
      this.lastError = `cannot start ${spec.command}: ${String(error)}`;
      throw new LocalStartError(this.lastError);
    }
    let stderrTail = "";
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      stderrTail = (stderrTail + chunk).slice(-500);
    });
    const exited = new Promise<never>((_, reject) => {
      child.once("error", (error) =>
        reject(new LocalStartError(`cannot start ${spec.command}: ${error.message}`)),
      );
      child.once("exit", (code, sig) =>
        reject(
          new LocalStartError(
            `exited with ${sig ?? code} before it was healthy: ${stderrTail.trim()}`,
          ),
        ),
      );
    });
    exited.catch(() => {});
    this.child = child;
    this.port = port;
    try {
      await Promise.race([this.waitHealthy(port, spec), exited]);
    } catch (error) {
      child.kill("SIGKILL");
      this.child = undefined;
      this.state = RuntimeState.FAILED;
      this.lastError = error instanceof Error ? error.message : String(error);
      throw error;
    }
    this.state = RuntimeState.RUNNING;
    this.startedAt = Date.now();
    this.log.info({ pid: child.pid, port }, "local tool started");
    child.once("exit", (code, sig) => this.onExit(child, port, code, sig));
    this.touch();
    return port;
  }

  private onExit(
    child: ChildProcess,
    port: number,
    code: number | null,
    sig: NodeJS.Signals | null,
  ): void {
    if (this.child !== child) return;
    this.child = undefined;
    this.grpcRuntime.forget(`127.0.0.1:${port}`);
    if (this.stopping) {
      this.state = RuntimeState.STOPPED;
      return;
    }
    this.restarts++;
    this.lastError = `exited with ${sig ?? `code ${code}`}`;
    const delay = Math.min(100 * 2 ** Math.min(this.restarts - 1, 7), 10_000);
    this.log.warn(
      { pid: child.pid, exit: sig ?? code, restart_in_ms: delay },
      "local tool crashed; restarting",
    );
    this.state = RuntimeState.BACKOFF;
    this.starting = this.startProcess(delay).finally(() => {
      this.starting = undefined;
    });
    this.starting.catch((error: unknown) => {
      this.log.error({ err: error }, "local tool restart failed");
    });
  }

  private async waitHealthy(port: number, spec: LocalRuntimeSpec): Promise<void> {
    const deadline = Date.now() + this.settings.startTimeoutMs;
    let last = "";
    while (Date.now() < deadline) {
      try {
        if (spec.protocol === LocalProtocol.HTTP) {
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
    throw new LocalStartError(
      `not healthy within ${this.settings.startTimeoutMs} ms${last ? ` (${last})` : ""}`,
    );
  }

  async stop(): Promise<void> {
    this.stopping = true;
    if (this.idleTimer) clearTimeout(this.idleTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) {
      this.state = RuntimeState.STOPPED;
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => child.kill("SIGKILL"), 2000);
      child.once("exit", () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill("SIGTERM");
    });
    this.state = RuntimeState.STOPPED;
  }

  status(): RuntimeStatus {
    return create(RuntimeStatusSchema, {
      tool: this.tool,
      state: this.state,
      pid: this.child?.pid ?? 0,
      port: this.child ? this.port : 0,
      restarts: this.restarts,
      lastError: this.lastError,
      inFlight: this.inFlight,
      ...(this.startedAt ? { startedAt: timestampFromMs(this.startedAt) } : {}),
      ...(this.lastUsedAt ? { lastUsedAt: timestampFromMs(this.lastUsedAt) } : {}),
    });
  }
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

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}
