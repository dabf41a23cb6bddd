export { grpcServiceDefinition } from "@toolmesh/server";
export {
  type BalancedTransportOptions,
  createBalancedTransport,
  neverSent,
} from "./balanced-transport.js";
export { chat } from "./chat.js";
export { Deferred, type ReportOptions } from "./deferred.js";
export {
  defineTool,
  isJsonObject,
  type ToolContext,
  type ToolDefinition,
} from "./define-tool.js";
export {
  registerTools,
  type ServedTools,
  type ServeToolsOptions,
  serveTools,
  toolSpec,
} from "./serve-tools.js";
export { runToolCalls } from "./tool-calls.js";
export { ToolError } from "./tool-error.js";
