import type { ChildProcess } from "node:child_process";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code, ConnectError } from "@toolmesh/errors";
import { Health, HealthCheckResponse_ServingStatus } from "@toolmesh/proto";
import { SERVICE_ENV, serviceArgs } from "./bundles.js";
import { Child } from "./child.js";
import type { LineWatcher } from "./lines.js";
import { processCpuMs } from "./proc-stats.js";
import { StackError } from "./stack-error.js";
import { describeExit, type Supervisor } from "./supervisor.js";

/** How to run one toolmesh process. */
export interface ServiceProcessOptions {
  /** The process's name: its service's, or a replica's (dispatcher-2). */
  name: string;
  /** Folder under services/; the name when unset. */
  service?: string;
  /** The repository root. */
  root: string;
  /** Its whole environment. */
  env: NodeJS.ProcessEnv;
  /** The variable holding its port; undefined for a subscriber without one. */
  portEnv?: string | undefined;
  /** Where its output is appended; undefined keeps it only in memory. */
  logPath?: string | undefined;
  startTimeoutMs: number;
  /** A substring of the log line that says it is ready; a "listening" or "ready" msg by default. */
  readyPattern?: string | undefined;
  /** Wait for grpc.health.v1 SERVING after the listening line (default true). */
  waitServing?: boolean;
}

/**
 * One toolmesh service as its own Node process. start() resolves once its JSON log says
 * "listening" (or "ready", for a subscriber) and its health reports SERVING; the port it got is
 * kept, so restart() — and a supervisor's restart after a crash — brings it back at the same
 * address.
 */
export class ServiceProcess {
  private current: Child | undefined;
  private boundPort = 0;
  private readonly expected = new WeakSet<Child>();
  private lastReadyMs = 0;
  private lastReadyCpuMs = 0;
  private supervisor: Supervisor | undefined;

  constructor(private readonly options: ServiceProcessOptions) {}

  get name(): string {
    return this.options.name;
  }

  /** The service it runs (the folder under services/). */
  get service(): string {
    return this.options.service ?? this.options.name;
  }

  /** The port it listens on; 0 for a process without one. */
  get port(): number {
    return this.boundPort;
  }

  /** http://127.0.0.1:<port>; empty for a process without a port. */
  get url(): string {
    return this.boundPort ? `http://127.0.0.1:${this.boundPort}` : "";
  }

  get child(): ChildProcess {
    return this.running().process;
  }

  get pid(): number {
    return this.current?.process.pid ?? 0;
  }

  /** Milliseconds from spawning the last start's process until it was ready (and SERVING). */
  get readyMs(): number {
    return this.lastReadyMs;
  }

  /** CPU time the last start's process had used when it was ready (Linux; 0 elsewhere). */
  get readyCpuMs(): number {
    return this.lastReadyCpuMs;
  }

  get stdout(): LineWatcher {
    return this.running().stdout;
  }

  get stderr(): LineWatcher {
    return this.running().stderr;
  }

  /**
   * Restarts the process whenever it exits without stop() or kill() asking it to (a crash, a kill
   * from outside), as the supervisor's policy allows.
   */
  supervise(supervisor: Supervisor): void {
    this.supervisor = supervisor;
  }

  /** Stops restarting it; a restart pending or under way is dropped. */
  unsupervise(): void {
    this.supervisor?.cancel();
    this.supervisor = undefined;
  }

  /** Starts the process and waits until it is ready (and SERVING, when it has a port). */
  start(): Promise<void> {
    this.supervisor?.cancel();
    return this.launch();
  }

  private async launch(): Promise<void> {
    const { options } = this;
    const env: NodeJS.ProcessEnv = { ...SERVICE_ENV, ...options.env };
    if (options.portEnv && this.boundPort) env[options.portEnv] = String(this.boundPort);
    const entry = path.join(options.root, "services", this.service, "src", "main.ts");
    const spawnedAt = performance.now();
    const child = new Child(
      options.name,
      process.execPath,
      serviceArgs(options.root, this.service, entry),
      {
        cwd: options.root,
        env,
        logPath: options.logPath,
      },
    );
    this.current = child;
    const died = child.exited.then((exit) => {
      const how = `${describeExit(exit)} before it was ready`;
      throw new StackError(`${options.name} exited (${how})`, {
        lastLines: child.lastLines(),
        died: how,
      });
    });
    try {
      const line = await Promise.race([
        child.stdout.waitFor(
          (l) =>
            options.readyPattern
              ? l.includes(options.readyPattern)
              : /"msg":"(listening|ready)/.test(l),
          options.startTimeoutMs,
          options.name,
        ),
        died,
      ]);
      this.boundPort = Number((JSON.parse(line) as { port?: number }).port ?? 0);
      if (this.boundPort && options.waitServing !== false) {
        await Promise.race([waitServing(this.url, options.startTimeoutMs), died]);
      }
      this.lastReadyMs = performance.now() - spawnedAt;
      this.lastReadyCpuMs = processCpuMs(child.process.pid ?? 0);
    } catch (error) {
      this.expected.add(child);
      await child.stop();
      if (error instanceof StackError && error.lastLines) throw error;
      // A line waiter's message ends with the lines it saw; its first line is the reason.
      const reason =
        error instanceof StackError ? error.reason : (error as Error).message.split("\n", 1)[0];
      throw new StackError(`${options.name} did not become ready: ${reason}`, {
        lastLines: child.lastLines(),
        died: `stopped, not ready: ${reason}`,
      });
    }
    void child.exited.then((exit) => {
      if (this.expected.has(child) || this.current !== child) return;
      this.supervisor?.exited({ died: describeExit(exit), lastLines: child.lastLines() }, () =>
        this.launch(),
      );
    });
  }

  /** SIGTERM (SIGKILL after a grace period) and wait; resolves with the exit code. */
  async stop(): Promise<number | null> {
    this.supervisor?.cancel();
    const child = this.current;
    if (!child) return null;
    this.expected.add(child);
    return child.stop();
  }

  /** SIGKILL and wait, as a crash would. */
  async kill(): Promise<void> {
    this.supervisor?.cancel();
    const child = this.current;
    if (!child) return;
    this.expected.add(child);
    await child.kill();
  }

  /** Stops it and starts it again on the same port. */
  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  /** The last lines of its output, for a report on why it died. */
  lastLines(count = 40): string {
    return this.current?.lastLines(count) ?? "";
  }

  /** Resolves when the current process exits, however it ends. */
  exited(): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    return this.running().exited;
  }

  private running(): Child {
    if (!this.current) throw new StackError(`${this.options.name} was never started`);
    return this.current;
  }
}

/**
 * Waits for grpc.health.v1 to report SERVING, watching rather than polling. A stream that ends
 * with a transport error (a reset while a loaded machine accepts the first connections) is
 * watched again until the deadline; any other error is final.
 */
async function waitServing(url: string, timeoutMs: number): Promise<void> {
  const health = createClient(Health, createGrpcTransport({ baseUrl: url }));
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      for await (const res of health.watch({ service: "" }, { timeoutMs: deadline - Date.now() })) {
        if (res.status === HealthCheckResponse_ServingStatus.SERVING) return;
      }
    } catch (error) {
      const code = ConnectError.from(error).code;
      if (code !== Code.Unavailable && code !== Code.Aborted && code !== Code.Internal) throw error;
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new StackError(
    `${url} never reported SERVING within ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ""}`,
  );
}
