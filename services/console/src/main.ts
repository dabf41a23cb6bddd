import { existsSync } from "node:fs";
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
const here = path.dirname(fileURLToPath(import.meta.url));
// From source, here is services/console/src. Bundled (dist/console.mjs) in a checkout, the app's
// sources are at services/console beside dist/; in the image, its built app is at dist/web.
const checkoutConsole = path.resolve(here, "..", "services", "console");
const consoleRoot = existsSync(path.join(checkoutConsole, "web"))
  ? checkoutConsole
  : path.resolve(here, "..");
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
