import { mkdirSync } from "node:fs";
import { Child } from "./child.js";
import { StackError } from "./stack-error.js";

/** How to run one nats-server with JetStream. */
export interface NatsServerOptions {
  /** The nats-server binary; NATS_SERVER_BIN or `nats-server` from PATH when unset. */
  bin?: string;
  /** Client port; -1 lets nats-server pick a free one (kept across restarts). */
  port: number;
  /** The JetStream store directory, kept across restarts. */
  storeDir: string;
  /** Where its output is appended; undefined keeps it only in memory. */
  logPath?: string;
  cwd: string;
  /** How long start() waits for "Server is ready". */
  startTimeoutMs: number;
}

/**
 * One local nats-server with JetStream on loopback. The port chosen at the first start is kept,
 * so a restart (after a crash or in a fault test) brings the same server back with its store.
 */
export class NatsServer {
  private child: Child | undefined;
  private port: number;

  constructor(private readonly options: NatsServerOptions) {
    this.port = options.port;
  }

  /** nats://127.0.0.1:<port>, known once the first start succeeded. */
  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  get clientPort(): number {
    return this.port;
  }

  /** The running process, for a supervisor that wants its exit. */
  get current(): Child | undefined {
    return this.child;
  }

  /** Starts nats-server and resolves once it accepts clients. */
  async start(): Promise<void> {
    const { options } = this;
    mkdirSync(options.storeDir, { recursive: true });
    const bin = options.bin ?? process.env.NATS_SERVER_BIN ?? "nats-server";
    const child = new Child(
      "nats-server",
      bin,
      ["-a", "127.0.0.1", "-p", String(this.port), "-js", "-sd", options.storeDir],
      { cwd: options.cwd, env: process.env, logPath: options.logPath },
    );
    this.child = child;
    const died = child.exited.then(({ code, signal }) => {
      throw new StackError(
        `nats-server exited (code ${code}${signal ? `, signal ${signal}` : ""}) before it was ready; is nats-server installed? run npm run setup, or set NATS_URL\n${child.lastLines()}`,
      );
    });
    try {
      const line = await Promise.race([
        child.stderr.waitFor(
          (l) => l.includes("Listening for client connections on"),
          options.startTimeoutMs,
          "nats-server to listen",
        ),
        died,
      ]);
      this.port = Number(/:(\d+)\s*$/.exec(line)?.[1] ?? this.port);
      await Promise.race([
        child.stderr.waitFor(
          (l) => l.includes("Server is ready"),
          options.startTimeoutMs,
          "nats-server to be ready",
        ),
        died,
      ]);
    } catch (error) {
      await child.stop();
      if (error instanceof StackError) throw error;
      throw new StackError(`nats-server did not become ready: ${(error as Error).message}`);
    }
  }

  /** SIGTERM and wait; the store stays, so start() brings the data back. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    await child?.stop();
  }

  /** SIGKILL and wait, as a crash would. */
  async kill(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    await child?.kill();
  }
}
