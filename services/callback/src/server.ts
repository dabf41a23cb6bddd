import type { Interceptor } from "@connectrpc/connect";
import type { Logger } from "@toolmesh/log";
import type { SnapshotView } from "@toolmesh/nats";
import { CallbackService, type ToolSchema } from "@toolmesh/proto";
import { createToolmeshServer, type ToolmeshServer } from "@toolmesh/server";
import type { CallRecords } from "./call-state.js";
import { createCallbackHandlers } from "./handlers.js";
import type { ReportWriter } from "./report.js";
import type { UsageStore } from "./usage-store.js";
import type { Watches } from "./watches.js";

/** The Callback server over its dependencies; a test can listen on port 0. */
export function createCallbackServer(deps: {
  calls: CallRecords;
  reports: ReportWriter;
  watches: Watches;
  tools: SnapshotView<typeof ToolSchema>;
  usage: UsageStore;
  log: Logger;
  interceptors: Interceptor[];
  readMaxBytes: number;
}): ToolmeshServer {
  return createToolmeshServer({
    services: [CallbackService],
    log: deps.log,
    readMaxBytes: deps.readMaxBytes,
    interceptors: deps.interceptors,
    routes(router) {
      router.service(CallbackService, createCallbackHandlers(deps));
    },
  });
}
