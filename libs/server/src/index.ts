export { createHealthService, HealthState } from "./health.js";
export { onShutdown } from "./lifecycle.js";
export {
  createToolmeshServer,
  type ListeningServer,
  type RouteContext,
  type ServerOptions,
  type ToolmeshServer,
} from "./server.js";
