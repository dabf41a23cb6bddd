export { LineWatcher } from "./lines.js";
export { startNats, type TestNats } from "./nats-server.js";
export { freePort } from "./ports.js";
export { repoRoot, type ServiceProcess, startService } from "./service-process.js";
