import type { ConnectRouter } from "@connectrpc/connect";
import { authInterceptor, principal } from "@toolmesh/auth";
import { Code, ConnectError } from "@toolmesh/errors";
import { createLogger } from "@toolmesh/log";
import { RegistryService } from "@toolmesh/proto";
import { createToolmeshServer, type ListeningServer } from "../src/index.js";

/**
 * A toolmesh server of RegistryService on port 0 whose only good bearer token is "good" (agent-1
 * with `roles`), with the routes the test gives.
 */
export function listenRegistryServer(
  roles: string[],
  routes: (router: ConnectRouter) => void,
): Promise<ListeningServer> {
  const server = createToolmeshServer({
    services: [RegistryService],
    log: createLogger("test", "silent"),
    readMaxBytes: 64 * 1024,
    interceptors: [
      authInterceptor(async (token) => {
        if (token !== "good") throw new ConnectError("bearer token rejected", Code.Unauthenticated);
        return principal("agent-1", roles);
      }),
    ],
    routes,
  });
  return server.listen(0, "127.0.0.1");
}
