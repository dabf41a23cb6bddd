import { followRegistryTools, JetStreamPublisher } from "@toolmesh/nats";
import { runService } from "@toolmesh/service";
import { JetStreamBroadcasts } from "./broadcast-publisher.js";
import { AuditCallRecords } from "./call-state.js";
import { callbackConfig } from "./config.js";
import { OutcomeFeed } from "./outcome-feed.js";
import { JetStreamReportWriter } from "./report.js";
import { createCallbackServer } from "./server.js";
import { UsageStore } from "./usage-store.js";
import { WatchLimits } from "./watch-hub.js";
import { exportWatchMetrics } from "./watch-metrics.js";
import { Watches } from "./watches.js";

await runService({
  name: "callback",
  config: callbackConfig,
  streams: ["records", "callback"],
  async start({ config, log, nc, js, jsm, authenticatedRpc }) {
    // Broadcasts and reports share one publisher: their acks come back under one subscription.
    // A lost connection fails what waits for an ack at once: a broadcast is sent again under its
    // message id once the log block comes back (a second later), a report is answered UNAVAILABLE
    // and may be sent again — rather than both waiting out the ack timeout after nats-server
    // restarted, when acks of what was sent before can no longer come.
    const publisher = new JetStreamPublisher(nc, {
      ackTimeoutMs: 10_000,
      whenDisconnected: "fail",
    });
    const usage = await UsageStore.open(js, jsm, {
      replicas: config.jetstreamReplicas,
      ttlMs: config.usageRetentionDays * 24 * 60 * 60 * 1000,
      maxBytes: config.usageMaxBytes,
    });
    const feed = new OutcomeFeed({
      nc,
      js,
      jsm,
      broadcasts: new JetStreamBroadcasts(publisher, log),
      usage,
      log,
      lingerMs: config.lingerMs,
    });
    await feed.start();
    const calls = new AuditCallRecords(nc);
    const limits = new WatchLimits(
      config.maxWatchesPerAgent,
      "TOOLMESH_CALLBACK_MAX_WATCHES_PER_AGENT",
    );
    const watches = new Watches(nc, calls, limits, log);
    exportWatchMetrics(watches);
    // Report checks the call's tool lists the reporting backend; until loaded, Report fails closed.
    const tools = followRegistryTools(nc, log, "backends' Reports are refused until it exists");
    const server = createCallbackServer({
      calls,
      reports: new JetStreamReportWriter(publisher),
      watches,
      tools,
      usage,
      ...(await authenticatedRpc()),
    });
    return {
      server,
      async stop() {
        await feed.stop();
        watches.stop();
        publisher.close();
        tools.stop();
      },
    };
  },
});
