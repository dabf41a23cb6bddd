import type { Logger } from "@toolmesh/log";
import { connect, type NatsConnection } from "nats";

/** Connects to NATS, waiting for the server on first connect and reconnecting forever after. */
export async function connectNats(options: {
  url: string;
  name: string;
  log: Logger;
}): Promise<NatsConnection> {
  const { url, name, log } = options;
  const nc = await connect({
    servers: url.split(",").map((s) => s.trim()),
    name,
    waitOnFirstConnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    pingInterval: 10_000,
    noAsyncTraces: true,
  });
  log.info({ nats: nc.getServer() }, "connected to NATS");
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect" || status.type === "error") {
        log.warn(
          { nats_status: status.type, data: String(status.data) },
          "NATS connection trouble",
        );
      } else if (status.type === "reconnect") {
        log.info({ nats_status: status.type }, "reconnected to NATS");
      }
    }
  })();
  return nc;
}
