import type { Interceptor } from "@connectrpc/connect";
import type { Logger } from "@toolmesh/log";
import { AuditService } from "@toolmesh/proto";
import { createToolmeshServer, type ToolmeshServer } from "@toolmesh/server";
import { type AuditReaders, createAuditHandlers } from "./handlers.js";

/** The Audit server over its dependencies; a test can listen on port 0. */
export function createAuditServer(
  deps: AuditReaders & {
    log: Logger;
    interceptors: Interceptor[];
    readMaxBytes: number;
  },
): ToolmeshServer {
  return createToolmeshServer({
    services: [AuditService],
    log: deps.log,
    readMaxBytes: deps.readMaxBytes,
    interceptors: deps.interceptors,
    routes(router) {
      router.service(AuditService, createAuditHandlers(deps));
    },
  });
}
