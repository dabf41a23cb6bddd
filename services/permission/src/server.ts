import type { Interceptor } from "@connectrpc/connect";
import { PermissionService } from "@toolmesh/proto";
import { createToolmeshServer, type ToolmeshServer } from "@toolmesh/server";
import { connectRoutes } from "./connect-routes.js";
import { createPermissionHandlers, type PermissionDeps } from "./handlers.js";

/** The Permission server over its dependencies; a test can listen on port 0. */
export function createPermissionServer(
  deps: PermissionDeps & { interceptors: Interceptor[]; readMaxBytes: number },
): ToolmeshServer {
  return createToolmeshServer({
    services: [PermissionService],
    log: deps.log,
    readMaxBytes: deps.readMaxBytes,
    interceptors: deps.interceptors,
    // The connect links, the upstreams' redirects back, and toolmesh's public signing keys.
    fallback: connectRoutes({
      connections: deps.vault.connections,
      signing: deps.vault.signing,
      log: deps.log,
    }),
    routes(router) {
      router.service(PermissionService, createPermissionHandlers(deps));
    },
  });
}
