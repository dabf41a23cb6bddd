import type { Logger } from "@toolmesh/log";

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits. A second signal, or a stop that takes
 * longer than graceMs, exits at once with code 1.
 */
export function onShutdown(log: Logger, stop: () => Promise<void>, graceMs = 10_000): void {
  let stopping = false;
  const handle = (signal: NodeJS.Signals) => {
    if (stopping) {
      log.warn({ signal }, "second signal; exiting now");
      process.exit(1);
    }
    stopping = true;
    log.info({ signal }, "draining");
    const timer = setTimeout(() => {
      log.error({ grace_ms: graceMs }, "drain took too long; exiting");
      process.exit(1);
    }, graceMs);
    timer.unref();
    stop().then(
      () => {
        log.info("stopped");
        process.exit(0);
      },
      (error: unknown) => {
        log.error({ err: error }, "error while draining");
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", handle);
  process.on("SIGINT", handle);
}
