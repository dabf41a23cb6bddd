import type { Logger } from "@toolmesh/log";
import { HealthCheckResponse_ServingStatus as Status } from "@toolmesh/proto";
import type { HealthState } from "@toolmesh/server";
import type { NatsConnection } from "nats";

/**
 * Makes a service's health follow its NATS connection: NOT_SERVING while it is disconnected (a
 * load balancer or client then sends calls to a replica that can record them), SERVING again
 * once it reconnected. A draining server stays NOT_SERVING.
 */
export function followBusHealth(
  nc: NatsConnection,
  health: HealthState,
  log: Logger,
  draining: () => boolean,
): void {
  void (async () => {
    for await (const status of nc.status()) {
      if (draining()) return;
      if (status.type === "disconnect") {
        health.setAll(Status.NOT_SERVING);
        log.warn("NATS unreachable; health is NOT_SERVING until it reconnects");
      } else if (status.type === "reconnect") {
        health.setAll(Status.SERVING);
        log.info({ nats: nc.getServer() }, "NATS reconnected; health is SERVING");
      }
    }
  })();
}
