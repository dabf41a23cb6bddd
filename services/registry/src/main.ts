import { PolicySnapshot } from "@toolmesh/policy";
import { runService } from "@toolmesh/service";
import { registryConfig } from "./config.js";
import { NatsRegistryEvents } from "./events.js";
import { KvRegistryStore } from "./kv-store.js";
import { createRegistryServer } from "./server.js";
import { policyVisibility } from "./visibility.js";

await runService({
  name: "registry",
  config: registryConfig,
  streams: ["changes", "records"],
  async start({ config, log, nc, js, authenticatedRpc }) {
    const store = await KvRegistryStore.open({ nc, replicas: config.jetstreamReplicas, log });
    // Until the Permission service creates its bucket there are no grants: agents see no tools.
    const policy = PolicySnapshot.following(nc, log, "agents see no tools until it exists");
    await policy.grants.firstAttempt;
    const server = createRegistryServer({
      store,
      events: new NatsRegistryEvents(js, log),
      visibility: policyVisibility(policy),
      ...(await authenticatedRpc()),
    });
    return {
      server,
      stop() {
        policy.stop();
        store.stop();
      },
    };
  },
});
