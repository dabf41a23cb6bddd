import path from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig, loadOrExit, serviceUrls } from "@toolmesh/config";
import { createLogger } from "@toolmesh/log";
import { onShutdown } from "@toolmesh/server";
import { collectProcessMetrics } from "@toolmesh/telemetry";
import { ensureBuilt } from "./assets.js";
import { consoleConfig } from "./config.js";
import { createConsoleServer } from "./server.js";

const config = loadOrExit(() => loadConfig(consoleConfig));
const log = createLogger("console", config.logLevel);
const consoleRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
let assetsDir = config.assetsDir;
if (!assetsDir) {
  assetsDir = path.join(consoleRoot, "dist", "web");
  await ensureBuilt(consoleRoot, assetsDir, log);
}
collectProcessMetrics();
const urls = serviceUrls(process.env);
const server = createConsoleServer({
  urls,
  assetsDir,
  log,
  readMaxBytes: config.maxMessageBytes,
});
const listening = await server.listen(config.port, config.host);
log.info({ url: listening.url, services: urls }, "console ready; open it in a browser");
onShutdown(log, () => listening.close());
