import type { Interceptor } from "@connectrpc/connect";
import type { Logger } from "@toolmesh/log";
import { AuditService } from "@toolmesh/proto";
import { createToolmeshServer, type ToolmeshServer } from "@toolmesh/server";
import type { AuditLog } from "./audit-log.js";
import { createAuditHandlers } from "./handlers.js";
import type { TraceReader } from "./trace-reader.js";

/** The Audit server over its dependencies; a test can listen on port 0. */
export function createAuditServer(deps: {
  auditLog: AuditLog;
  traces: TraceReader;
  log: Logger;
  interceptors: Interceptor[];
  readMaxBytes: number;
}): ToolmeshServer {
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
