import type { Interceptor } from "@connectrpc/connect";
import type { Logger } from "@toolmesh/log";
import { RegistryService } from "@toolmesh/proto";
import { ValidatorCache } from "@toolmesh/schema";
import { createToolmeshServer, type ToolmeshServer } from "@toolmesh/server";
import type { RegistryEvents } from "./events.js";
import { createRegistryHandlers } from "./handlers.js";
import type { RegistryStore } from "./store.js";
import type { ToolVisibility } from "./visibility.js";

/** Everything the registry server is built from; a test passes in-memory parts. */
export interface RegistryServerDeps {
  store: RegistryStore;
  events: RegistryEvents;
  visibility: ToolVisibility;
  log: Logger;
  interceptors: Interceptor[];
  readMaxBytes: number;
  validators?: ValidatorCache;
}

/** The registry's server: RegistryService plus health on one port. */
export function createRegistryServer(deps: RegistryServerDeps): ToolmeshServer {
  const validators = deps.validators ?? new ValidatorCache();
  return createToolmeshServer({
    services: [RegistryService],
    log: deps.log,
    readMaxBytes: deps.readMaxBytes,
    interceptors: deps.interceptors,
    routes(router, context) {
      router.service(
        RegistryService,
        createRegistryHandlers({
          store: deps.store,
          events: deps.events,
          visibility: deps.visibility,
          validators,
          log: deps.log,
          shutdownSignal: context.shutdownSignal,
        }),
      );
    },
  });
}
