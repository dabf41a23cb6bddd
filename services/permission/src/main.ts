import { followRegistryTools } from "@toolmesh/nats";
import { runService } from "@toolmesh/service";
import { bootstrapKeys } from "./bootstrap.js";
import { permissionConfig } from "./config.js";
import { NatsPermissionEvents } from "./events.js";
import { KvPermissionStore } from "./kv-store.js";
import { createPermissionServer } from "./server.js";

await runService({
  name: "permission",
  config: permissionConfig,
  streams: ["changes", "records"],
  async start({ config, log, nc, js, authenticatedRpc }) {
    const store = await KvPermissionStore.open(nc, config.jetstreamReplicas, log);
    const events = new NatsPermissionEvents(js, log);
    await bootstrapKeys({ store, events, dataDir: config.dataDir, log });
    // The Registry owns its bucket; until it exists, Check fails closed with UNAVAILABLE.
    const tools = followRegistryTools(
      nc,
      log,
      "Check answers UNAVAILABLE until the Registry creates it",
    );
    await tools.firstAttempt;
    const server = createPermissionServer({ store, events, tools, ...(await authenticatedRpc()) });
    return {
      server,
      stop() {
        tools.stop();
        store.stop();
      },
    };
  },
});
