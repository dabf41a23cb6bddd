import type { ServiceImpl } from "@connectrpc/connect";
import type { RegistryService } from "@toolmesh/proto";
import { createExportHandlers } from "./export-handlers.js";
import { createGroupHandlers } from "./group-handlers.js";
import { type RegistryDeps, RegistryView } from "./registry-view.js";
import { createToolHandlers } from "./tool-handlers.js";
import { createWatchTools } from "./watch-tools.js";

export type { RegistryDeps } from "./registry-view.js";

/** The RegistryService over a store, an event sink and a visibility rule. */
export function createRegistryHandlers(deps: RegistryDeps): ServiceImpl<typeof RegistryService> {
  const view = new RegistryView(deps);
  return {
    ...createToolHandlers(view),
    ...createGroupHandlers(view),
    ...createExportHandlers(view),
    watchTools: createWatchTools(view),
  };
}
