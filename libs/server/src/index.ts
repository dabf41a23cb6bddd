export type { HttpHandler } from "./fallback.js";
export { grpcServiceDefinition, toGrpcServiceError } from "./grpc-js.js";
export {
  grpcFrame,
  type UnaryCall,
  type UnaryHandlers,
  type UnaryRoute,
  type UnaryRoutes,
  unaryRoutes,
} from "./grpc-unary.js";
export { createHealthService, HealthState } from "./health.js";
export { onShutdown } from "./lifecycle.js";
export { type PageTokens, pageTokens } from "./page-token.js";
export { readBody } from "./read-body.js";
export { REFLECTION_SERVICES } from "./reflection.js";
export {
  createToolmeshServer,
  type ListeningServer,
  peerAddressKey,
  type RouteContext,
  type ServerOptions,
  type ToolmeshServer,
} from "./server.js";
