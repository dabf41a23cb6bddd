import type { Interceptor } from "@connectrpc/connect";
import type { Logger } from "@toolmesh/log";
import { AgentService } from "@toolmesh/proto";
import { createToolmeshServer, type ToolmeshServer } from "@toolmesh/server";
import { type AgentHandlerDeps, createAgentHandlers } from "./handlers.js";

/** Everything the tool agent's server is built from. */
export interface ToolAgentServerDeps extends AgentHandlerDeps {
  log: Logger;
  interceptors: Interceptor[];
  readMaxBytes: number;
}

/** The tool agent's server: AgentService plus health on one port. */
export function createToolAgentServer(deps: ToolAgentServerDeps): ToolmeshServer {
  return createToolmeshServer({
    services: [AgentService],
    log: deps.log,
    readMaxBytes: deps.readMaxBytes,
    interceptors: deps.interceptors,
    routes(router) {
      router.service(AgentService, createAgentHandlers(deps));
    },
  });
}
