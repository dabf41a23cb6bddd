export { freePort, LineWatcher, processCpuMs, processRssMb } from "@toolmesh/launcher";
export { type CallRecords, collectRecords } from "./call-records.js";
export {
  type DecisionCase,
  decisionTable,
  type TableGrant,
  type TableTool,
  tableTools,
} from "./decision-table.js";
export { type Engine, reachEngine } from "./docker-engine.js";
export { Collector, eventually, retryWhile } from "./eventually.js";
export { failure } from "./failure.js";
export {
  callParts,
  chainedEnd,
  type FeedBroadcast,
  feedBroadcasts,
  keepFeed,
  type RecordFilter,
  recordsByCall,
} from "./history-reads.js";
export {
  type ImContact,
  type ImFrame,
  type ImServer,
  startImServer,
} from "./im-server.js";
export { consumerDrained, TEST_JS_OPTIONS } from "./jetstream.js";
export { mintJwt, refusedJwts, type TestClaims } from "./jwt.js";
export { httpToolScript, localHttpRuntime } from "./local-tools.js";
export { type LogWatch, watchLog } from "./log-watch.js";
export {
  type EverythingStack,
  everythingScript,
  startEverythingStack,
  startImportingStack,
} from "./mcp-server.js";
export { metricSum } from "./metrics.js";
export { natsAt, startNats, type TestNats } from "./nats-server.js";
export { type IsolatedHost, isolatedHost } from "./netns.js";
export {
  connectAs,
  type ProtectedTool,
  startOAuthServer,
  startProtectedTool,
  type TestOAuthServer,
} from "./oauth-server.js";
export {
  type OneService,
  type OneServiceOptions,
  startOneService,
} from "./one-service.js";
export { type OperatorStack, startOperatorStack } from "./operator-stack.js";
export { type ProtectedMcp, startProtectedMcp } from "./protected-mcp.js";
export {
  endRecord,
  lastRecordWritten,
  logConsumed,
  startAudit,
  writeRecords,
} from "./records.js";
export {
  type ModelRequest,
  type ModelScript,
  type ModelTurn,
  type ScriptedCall,
  type ScriptedModel,
  startScriptedModel,
} from "./scripted-model.js";
export { filesUnder, type StreamSearch, secretsFound, secretsInStreams } from "./secret-search.js";
export { portEnvOf, repoRoot, type ServiceProcess, startService } from "./service-process.js";
export { chainServices, startStack, type TestStack, type TestStackOptions } from "./stack.js";
export { allowAllSpec, allowSpec, tableGrant, tableGrantSpec } from "./table-grants.js";
export {
  type StreamKey,
  startTestBus,
  type TestBus,
  type TestBusOptions,
} from "./test-bus.js";
export { as, type BearerOptions, type TestSigner, testSigner } from "./test-signer.js";
export {
  badOutputTool,
  chainTestTools,
  counterTool,
  echoTool,
  failingTool,
  meetTool,
  numberTool,
  payTool,
  serveOnStack,
  slowTool,
  strictTextSchema,
  type ToolLog,
  type ToolOverrides,
  toolLog,
  tracedEchoTool,
} from "./test-tools.js";
export { putTestProvider, putUsersSecret } from "./vault-secrets.js";
