import { followRegistryTools } from "@toolmesh/nats";
import { runService } from "@toolmesh/service";
import { OutcomeBroadcaster } from "./broadcaster.js";
import { CallStore } from "./call-store.js";
import { callbackConfig, callTtlMs, historyFile } from "./config.js";
import { OutcomeHistory } from "./outcome-history.js";
import { createCallbackServer } from "./server.js";
import { UsageCounter } from "./usage-counter.js";
import { UsageStore } from "./usage-store.js";
import { WatchLimits } from "./watch-hub.js";
import { exportWatchMetrics } from "./watch-metrics.js";
import { Watches } from "./watches.js";

await runService({
  name: "callback",
  config: callbackConfig,
  streams: ["outcome", "trace", "callback"],
  async start({ config, log, nc, js, jsm, authenticatedRpc }) {
    const calls = await CallStore.open(js, jsm, {
      replicas: config.jetstreamReplicas,
      ttlMs: callTtlMs(config),
      // A key never outlives the bucket's age.
      liveMs: Math.min(config.callLiveSeconds * 1000, callTtlMs(config)),
      maxBytes: config.callMaxBytes,
    });
    const history = await OutcomeHistory.open({
      js,
      jsm,
      log,
      file: historyFile(config),
      ttlMs: callTtlMs(config),
    });
    const broadcaster = new OutcomeBroadcaster({ js, jsm, calls, history, log });
    await broadcaster.start();
    const usage = await UsageStore.open(js, jsm, {
      replicas: config.jetstreamReplicas,
      ttlMs: config.usageRetentionDays * 24 * 60 * 60 * 1000,
      maxBytes: config.usageMaxBytes,
    });
    const usageCounter = new UsageCounter({ js, jsm, usage, log });
    await usageCounter.start();
    const limits = new WatchLimits(
      config.maxWatchesPerAgent,
      "TOOLMESH_CALLBACK_MAX_WATCHES_PER_AGENT",
    );
    const watches = new Watches(nc, calls, history, limits, log);
    exportWatchMetrics(watches);
    // Report checks the call's tool lists the reporting backend; until loaded, Report fails closed.
    const tools = followRegistryTools(nc, log, "backends' Reports are refused until it exists");
    const server = createCallbackServer({
      calls,
      history,
      watches,
      tools,
      usage,
      js,
      ...(await authenticatedRpc()),
    });
    return {
      server,
      async stop() {
        await broadcaster.stop();
        await usageCounter.stop();
        await history.stop();
        tools.stop();
      },
    };
  },
});
