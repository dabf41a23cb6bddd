import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { serviceToken } from "@toolmesh/auth";
import { commonConfig, loadConfig, loadOrExit, optionalStr, url } from "@toolmesh/config";
import { createLogger } from "@toolmesh/log";
import { buckets, connectNats, KvSnapshot } from "@toolmesh/nats";
import { RegistryService, ToolSchema } from "@toolmesh/proto";
import { onShutdown } from "@toolmesh/server";
import type { KV } from "nats";
import { HubClient } from "./hub-client.js";
import { KnowhubSync } from "./sync.js";

const config = loadOrExit(() =>
  loadConfig({
    ...commonConfig,
    knowhubUrl: optionalStr("TOOLMESH_KNOWHUB_URL"),
    knowhubToken: optionalStr("TOOLMESH_KNOWHUB_TOKEN"),
    registryUrl: url("TOOLMESH_REGISTRY_URL", "http://127.0.0.1:7101", ["http:", "https:"]),
    serviceToken: optionalStr("TOOLMESH_SERVICE_TOKEN"),
  }),
);
const log = createLogger("knowhub-sync", config.logLevel);

if (!config.knowhubUrl) {
  log.warn("knowhub sync disabled: TOOLMESH_KNOWHUB_URL is not set");
  log.info({ disabled: true }, "ready");
  const idle = setInterval(() => {}, 1 << 30);
  onShutdown(log, async () => clearInterval(idle));
} else {
  const nc = await connectNats({ url: config.natsUrl, name: "toolmesh-knowhub-sync", log });
  // The registry owns and creates its bucket; until it exists, wait rather than create it.
  let kv: KV | undefined;
  while (!kv) {
    try {
      kv = await nc.jetstream().views.kv(buckets.registry.name, { bindOnly: true });
    } catch (error) {
      log.info({ err: error }, "waiting for the registry bucket");
      await new Promise((r) => setTimeout(r, 1000));
    }
  }
  const tools = new KvSnapshot(kv, buckets.registry.toolPrefix, ToolSchema, log);
  await tools.start();
  const sync = new KnowhubSync({
    tools,
    hub: new HubClient(config.knowhubUrl, config.knowhubToken),
    registry: createClient(RegistryService, createGrpcTransport({ baseUrl: config.registryUrl })),
    registryToken: () => serviceToken(config),
    log,
  });
  sync.start();
  log.info({ knowhub: config.knowhubUrl, tools: tools.size }, "ready");
  onShutdown(log, async () => {
    await sync.stop();
    tools.stop();
    await nc.drain();
  });
}
