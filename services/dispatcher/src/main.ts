import { runService } from "@toolmesh/service";
import { dispatcherConfig } from "./config.js";
import { JetStreamPublisher } from "./event-publisher.js";
import type { GrpcPort } from "./grpc-port.js";
import { KvCallIdOwners, KvIdempotencyStore } from "./idempotency.js";
import { createDispatcher } from "./server.js";
import { followSnapshots } from "./snapshots.js";

await runService({
  name: "dispatcher",
  config: dispatcherConfig,
  streams: ["trace", "audit", "outcome"],
  async start({ config, log, nc, authenticatedRpc }) {
    const idempotency = await KvIdempotencyStore.open(nc, {
      windowMs: config.idempotencyWindowMs,
      replicas: config.jetstreamReplicas,
    });
    // Call ids stay owned as long as the Callback service keeps their outcomes.
    const callIds = await KvCallIdOwners.open(nc, {
      ttlMs: config.callTtlDays * 24 * 60 * 60 * 1000,
      replicas: config.jetstreamReplicas,
    });
    const snapshots = followSnapshots(nc, log);
    const publisher = new JetStreamPublisher(nc);
    const dispatcher = createDispatcher({
      tools: snapshots.tools,
      policy: snapshots.policy,
      publisher,
      idempotency,
      callIds,
      auth: await authenticatedRpc(),
      settings: config,
      log,
    });
    let grpcPort: GrpcPort | undefined;
    return {
      server: dispatcher.server,
      async listening() {
        if (config.grpcPort >= 0)
          grpcPort = await dispatcher.listenGrpc(config.grpcPort, config.host);
      },
      async draining() {
        // Calls get a few seconds to finish; whatever still runs then ends INTERRUPTED "shutdown".
        setTimeout(() => dispatcher.running.interruptAll("shutdown"), 3000).unref();
        await grpcPort?.close();
      },
      async stop() {
        await dispatcher.close();
        publisher.close();
        snapshots.stop();
      },
    };
  },
});
