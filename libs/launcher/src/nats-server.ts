import { mkdirSync } from "node:fs";
import path from "node:path";
import { bytes } from "@toolmesh/config";
import { Child } from "./child.js";
import { atLeast, natsServerBinary, natsServerVersion } from "./nats-binary.js";
import { type NatsClusterConfig, type NatsServerUser, writeNatsConfig } from "./nats-config.js";
import { processCpuMs } from "./proc-stats.js";
import { StackError } from "./stack-error.js";
import { describeExit, type Supervisor } from "./supervisor.js";

/** How to run one nats-server with JetStream. */
export interface NatsServerOptions {
  /** The nats-server binary; when unset .toolmesh/bin/nats-server, NATS_SERVER_BIN, then PATH. */
  bin?: string;
  /** Client port; -1 lets nats-server pick a free one (kept across restarts). */
  port: number;
  /** The JetStream store directory, kept across restarts. */
  storeDir: string;
  /** Where the generated config is written (mode 0600); <storeDir>/nats-server.conf by default. */
  configFile?: string;
  /**
   * How often JetStream fsyncs: `always` (the default: every write is on disk before its ack) or
   * a duration such as `2m`, nats-server's own default, which can lose acked writes on power loss.
   */
  syncInterval?: string;
  /**
   * JetStream's file store limit (bytes), which the byte limits of all streams together may not
   * exceed when they are created: 1 TiB by default, so that the stream limits, not nats-server's
   * own default (75% of the disk's free space at start), decide. A full disk refuses writes.
   */
  maxFileStore?: number;
  /**
   * A soft limit on the Go runtime's memory (GOMEMLIMIT, bytes; 0: none): its garbage collector
   * works harder as the heap nears it and gives memory back to the OS, instead of letting the
   * heap grow to twice what is live. DEFAULT_NATS_MEMORY_LIMIT when unset. What is live stays
   * live: size it above 100 MB plus 0.24 KB for every live callback key (docs/operations.md).
   */
  memoryLimit?: number;
  /** The users and their permissions; none means no authorization. */
  users?: NatsServerUser[];
  /** The server's name (a cluster node's must be unique); nats-server makes one up when unset. */
  serverName?: string;
  /** The HTTP monitoring port on loopback (/healthz, /jsz); none when unset. */
  monitorPort?: number;
  /** Set for a node of a cluster: its route port and its peers. */
  cluster?: NatsClusterConfig;
  /** Where it runs: the address it listens on (127.0.0.1) and a command it runs under. */
  placement?: NatsPlacement;
  /** The user a client without credentials is taken for (test servers only). */
  noAuthUser?: string;
  /** Where its output is appended; undefined keeps it only in memory. */
  logPath?: string;
  /** The repository root: where the binary is looked for and the process runs. */
  cwd: string;
  /** How long start() waits for "Server is ready". */
  startTimeoutMs: number;
  /** Told about a setting the server cannot honour (an old nats-server without sync_interval). */
  warn?: (line: string) => void;
}

/**
 * Where a nats-server runs: the address it listens on, and a command prefix it runs under, such as
 * `ip netns exec <ns>` for a node in a network namespace of its own (a test's partition).
 */
export interface NatsPlacement {
  host: string;
  wrap?: string[];
}

/** The first version with jetstream.sync_interval. */
const SYNC_INTERVAL_SINCE: [number, number, number] = [2, 10, 0];

/**
 * One local nats-server with JetStream on loopback, run from a config file generated at each
 * start. The port chosen at the first start is kept, so a restart (after a crash or in a fault
 * test) brings the same server back with its store, config and credentials.
 */
export class NatsServer {
  private child: Child | undefined;
  private port: number;
  private supervisor: Supervisor | undefined;
  /** Set by stop() and kill(): an exit then is wanted, and a pending restart is dropped. */
  private stopped = false;
  private readonly bin: string;
  private syncInterval: string | undefined;
  private lastReadyMs = 0;
  private lastReadyCpuMs = 0;

  constructor(private readonly options: NatsServerOptions) {
    this.port = options.port;
    this.bin = options.bin ?? natsServerBinary(options.cwd);
    this.syncInterval = options.syncInterval ?? "always";
    const version = natsServerVersion(this.bin);
    if (version && !atLeast(version, SYNC_INTERVAL_SINCE)) {
      options.warn?.(
        `${this.bin} is nats-server ${version.join(".")}, which has no jetstream sync_interval: acked writes can be lost on power failure; run npm run setup to install the pinned version`,
      );
      this.syncInterval = undefined;
    }
  }

  /** The address it listens on. */
  get host(): string {
    return this.options.placement?.host ?? "127.0.0.1";
  }

  /** nats://<host>:<port>, known once the first start succeeded. */
  get url(): string {
    return `nats://${this.host}:${this.port}`;
  }

  get clientPort(): number {
    return this.port;
  }

  /** The server's name, as JetStream names its peers and leaders. */
  get serverName(): string | undefined {
    return this.options.serverName;
  }

  /** http://<host>:<monitor port>, when it has one. */
  get monitorUrl(): string | undefined {
    return this.options.monitorPort ? `http://${this.host}:${this.options.monitorPort}` : undefined;
  }

  /** Milliseconds from spawning the last start's process until it was ready for clients. */
  get readyMs(): number {
    return this.lastReadyMs;
  }

  /** CPU time the last start's process had used when it was ready (Linux; 0 elsewhere). */
  get readyCpuMs(): number {
    return this.lastReadyCpuMs;
  }

  /** The running process, for a supervisor that wants its exit. */
  get current(): Child | undefined {
    return this.child;
  }

  /** The generated config file. */
  get configFile(): string {
    return this.options.configFile ?? path.join(this.options.storeDir, "nats-server.conf");
  }

  /** Starts nats-server and resolves once it accepts clients. */
  start(): Promise<void> {
    this.stopped = false;
    this.supervisor?.cancel();
    return this.launch();
  }

  private async launch(): Promise<void> {
    const { options } = this;
    mkdirSync(options.storeDir, { recursive: true });
    mkdirSync(path.dirname(this.configFile), { recursive: true });
    writeNatsConfig(this.configFile, {
      host: this.host,
      port: this.port,
      storeDir: options.storeDir,
      syncInterval: this.syncInterval,
      maxFileStore: options.maxFileStore ?? 1024 ** 4,
      users: options.users ?? [],
      noAuthUser: options.noAuthUser,
      serverName: options.serverName,
      monitorPort: options.monitorPort,
      cluster: options.cluster,
    });
    const [command, ...args] = [
      ...(options.placement?.wrap ?? []),
      this.bin,
      "-c",
      this.configFile,
    ];
    const spawnedAt = performance.now();
    const child = new Child("nats-server", command as string, args, {
      cwd: options.cwd,
      env: natsEnv(options.memoryLimit ?? DEFAULT_NATS_MEMORY_LIMIT),
      logPath: options.logPath,
    });
    this.child = child;
    const died = child.exited.then((exit) => {
      const how = `${describeExit(exit)} before it was ready`;
      throw new StackError(
        `nats-server exited (${how}); is nats-server installed? run npm run setup, or set NATS_URL`,
        { lastLines: child.lastLines(), died: how },
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
      this.lastReadyMs = performance.now() - spawnedAt;
      this.lastReadyCpuMs = processCpuMs(child.process.pid ?? 0);
    } catch (error) {
      await child.stop();
      if (this.child === child) this.child = undefined;
      if (error instanceof StackError) throw error;
      // A line waiter's message ends with the lines it saw; its first line is the reason.
      const reason = (error as Error).message.split("\n", 1)[0];
      throw new StackError(`nats-server did not become ready: ${reason}`, {
        lastLines: child.lastLines(),
        died: `stopped, not ready: ${reason}`,
      });
    }
    void child.exited.then((exit) => {
      if (this.child !== child || this.stopped || !this.supervisor) return;
      this.child = undefined;
      this.supervisor.exited({ died: describeExit(exit), lastLines: child.lastLines() }, () =>
        this.launch(),
      );
    });
  }

  /**
   * Restarts nats-server whenever it exits without stop() or kill() asking it to, with the same
   * port, store and config, as the supervisor's policy allows.
   */
  supervise(supervisor: Supervisor): void {
    this.supervisor = supervisor;
  }

  /** Stops restarting: a stack shutting down (Ctrl-C reaches nats-server too) must not revive it. */
  unsupervise(): void {
    this.supervisor?.cancel();
    this.supervisor = undefined;
  }

  /** SIGTERM and wait; the store stays, so start() brings the data back. No restart follows. */
  async stop(): Promise<void> {
    this.halt();
    const child = this.child;
    this.child = undefined;
    await child?.stop();
  }

  /** SIGKILL and wait, as a crash would, but deliberate: no restart follows. */
  async kill(): Promise<void> {
    this.halt();
    const child = this.child;
    this.child = undefined;
    await child?.kill();
  }

  private halt(): void {
    this.stopped = true;
    this.supervisor?.cancel();
  }
}

/** nats-server's memory limit when none is configured (TOOLMESH_NATS_MEMORY_LIMIT). */
export const DEFAULT_NATS_MEMORY_LIMIT = 256 * 1024 * 1024;

/** TOOLMESH_NATS_MEMORY_LIMIT: nats-server's GOMEMLIMIT (`256MiB`; 0: none). */
export const natsMemoryLimit = () =>
  bytes("TOOLMESH_NATS_MEMORY_LIMIT", DEFAULT_NATS_MEMORY_LIMIT, { max: 1024 ** 4 });

/** nats-server's environment: the launcher's, with GOMEMLIMIT set from the limit (0: none). */
function natsEnv(memoryLimit: number): NodeJS.ProcessEnv {
  const env = { ...process.env };
  if (memoryLimit > 0) env.GOMEMLIMIT = String(memoryLimit);
  else delete env.GOMEMLIMIT;
  return env;
}
