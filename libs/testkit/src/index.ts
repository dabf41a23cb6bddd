export { freePort, LineWatcher, processCpuMs, processRssMb } from "@toolmesh/launcher";
export {
  type DecisionCase,
  decisionTable,
  type TableGrant,
  type TableTool,
  tableTools,
} from "./decision-table.js";
export { Collector, eventually } from "./eventually.js";
export { failure } from "./failure.js";
export { TEST_JS_OPTIONS } from "./jetstream.js";
export { mintJwt, type TestClaims } from "./jwt.js";
export { type LogWatch, watchLog } from "./log-watch.js";
export { metricSum } from "./metrics.js";
export { natsAt, startNats, type TestNats } from "./nats-server.js";
export { type IsolatedHost, isolatedHost } from "./netns.js";
export { type OperatorStack, startOperatorStack } from "./operator-stack.js";
export { endRecord, logConsumed, startAudit, writeRecords } from "./records.js";
export { repoRoot, type ServiceProcess, startService } from "./service-process.js";
export { chainServices, startStack, type TestStack, type TestStackOptions } from "./stack.js";
export { tableGrant, tableGrantSpec } from "./table-grants.js";
