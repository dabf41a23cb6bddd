import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { serviceToken } from "@toolmesh/auth";
import { followRegistryTools } from "@toolmesh/nats";
import { RegistryService } from "@toolmesh/proto";
import { runService } from "@toolmesh/service";
import { knowhubSyncConfig } from "./config.js";
import { HubClient } from "./hub-client.js";
import { KnowhubSync } from "./sync.js";

await runService({
  name: "knowhub-sync",
  config: knowhubSyncConfig,
  async start({ config, log, nc }) {
    if (!config.knowhubUrl) {
      log.warn("knowhub sync disabled: TOOLMESH_KNOWHUB_URL is not set");
      return { ready: { disabled: true }, stop() {} };
    }
    // The Registry owns and creates its bucket; until it exists, wait rather than create it.
    const tools = followRegistryTools(nc, log, "the sync starts once the Registry creates it");
    await tools.loaded;
    const sync = new KnowhubSync({
      tools,
      hub: new HubClient(config.knowhubUrl, config.knowhubToken),
      registry: createClient(RegistryService, createGrpcTransport({ baseUrl: config.registryUrl })),
      registryToken: () => serviceToken(config),
      log,
    });
    sync.start();
    return {
      ready: { knowhub: config.knowhubUrl, tools: tools.size },
      async stop() {
        await sync.stop();
        tools.stop();
      },
    };
  },
});
