import { followRegistryTools } from "@toolmesh/nats";
import { runService } from "@toolmesh/service";
import { OutcomeBroadcaster } from "./broadcaster.js";
import { CallStore } from "./call-store.js";
import { callbackConfig } from "./config.js";
import { createCallbackServer } from "./server.js";

const DAY_MS = 24 * 60 * 60 * 1000;

await runService({
  name: "callback",
  config: callbackConfig,
  streams: ["outcome", "trace", "callback"],
  async start({ config, log, nc, js, jsm, authenticatedRpc }) {
    const calls = await CallStore.open(js, {
      replicas: config.jetstreamReplicas,
      ttlMs: config.callTtlDays * DAY_MS,
    });
    const broadcaster = new OutcomeBroadcaster({ js, jsm, calls, log });
    await broadcaster.start();
    // Report checks the call's tool lists the reporting backend; until loaded, Report fails closed.
    const tools = followRegistryTools(nc, log, "backends' Reports are refused until it exists");
    const server = createCallbackServer({ calls, tools, nc, js, ...(await authenticatedRpc()) });
    return {
      server,
      async stop() {
        await broadcaster.stop();
        tools.stop();
      },
    };
  },
});
