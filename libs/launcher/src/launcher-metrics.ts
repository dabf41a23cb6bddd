import http from "node:http";
import type { AddressInfo } from "node:net";
import { Counter, Gauge, Registry } from "prom-client";
import { StackError } from "./stack-error.js";

/**
 * The launcher's own metrics: how often it restarted each process of its stack. They live in the
 * launcher because it is the one process that outlives every restart it counts; a registry of its
 * own per stack, so two stacks in one process (tests) never add up.
 */
export class LauncherMetrics {
  readonly registry = new Registry();
  private readonly restarts = new Counter({
    name: "toolmesh_launcher_restarts_total",
    help: "Times the launcher restarted a process of the stack after it exited on its own",
    labelNames: ["process"],
    registers: [this.registry],
  });
  private readonly lastRestart = new Gauge({
    name: "toolmesh_launcher_last_restart_timestamp_seconds",
    help: "When the launcher last restarted the process (Unix time, seconds)",
    labelNames: ["process"],
    registers: [this.registry],
  });

  /** A process the stack runs: its counter exists from the start, at 0, so increase() sees the first restart. */
  known(process: string): void {
    this.restarts.inc({ process }, 0);
  }

  /** Counts one restart of the process. */
  restarted(process: string, at: Date): void {
    this.restarts.inc({ process });
    this.lastRestart.set({ process }, at.getTime() / 1000);
  }
}

/** A listener serving GET /metrics (Prometheus text) on host:port (0: a free port). */
export interface MetricsListener {
  /** http://host:port/metrics */
  url: string;
  close(): Promise<void>;
}

/** Serves the launcher's metrics; a port in use is a StackError naming the variable to change. */
export async function serveLauncherMetrics(
  metrics: LauncherMetrics,
  host: string,
  port: number,
): Promise<MetricsListener> {
  const server = http.createServer((req, res) => {
    req.resume();
    const path = (req.url ?? "").split("?", 1)[0];
    if (path !== "/metrics" || (req.method !== "GET" && req.method !== "HEAD")) {
      res
        .writeHead(404, { "content-type": "text/plain" })
        .end("the launcher serves GET /metrics\n");
      return;
    }
    metrics.registry.metrics().then(
      (body) => {
        res.writeHead(200, { "content-type": metrics.registry.contentType });
        res.end(req.method === "HEAD" ? undefined : body);
      },
      (error: unknown) => {
        res.writeHead(500, { "content-type": "text/plain" }).end(`${(error as Error).message}\n`);
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error: NodeJS.ErrnoException) =>
      reject(
        new StackError(
          `the launcher cannot serve its metrics on ${host}:${port} (${error.code ?? error.message}); set TOOLMESH_LAUNCHER_METRICS_PORT to a free port, or -1 for none`,
        ),
      ),
    );
    server.listen(port, host, resolve);
  });
  const bound = (server.address() as AddressInfo).port;
  // A wildcard listens on every address; this machine reaches it on loopback.
  const local = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host;
  const shown = local.includes(":") ? `[${local}]` : local;
  return {
    url: `http://${shown}:${bound}/metrics`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
