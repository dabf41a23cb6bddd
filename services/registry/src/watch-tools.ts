import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { Role, requireRole } from "@toolmesh/auth";
import { Code, ConnectError } from "@toolmesh/errors";
import {
  type RegistryService,
  type Tool,
  WatchEventType,
  type WatchToolsResponse,
  WatchToolsResponseSchema,
} from "@toolmesh/proto";
import type { RegistryView } from "./registry-view.js";
import type { ToolChange } from "./store.js";

/** Changes a WatchTools stream may have queued for a slow reader before it is ended. */
const WATCH_BACKLOG = 10_000;

/** WatchTools: a snapshot of every tool, SNAPSHOT_END, then each change as it is applied. */
export function createWatchTools(
  view: RegistryView,
): ServiceImpl<typeof RegistryService>["watchTools"] {
  const { store, shutdownSignal } = view.deps;
  return async function* watchTools(_req, ctx) {
    requireRole(ctx, Role.Admin, Role.Service, Role.Knowhub);
    view.ensureReady();
    const queue: ToolChange[] = [];
    let wake: (() => void) | undefined;
    let overflowed = false;
    const unsubscribe = store.onToolChange((change) => {
      if (queue.length >= WATCH_BACKLOG) overflowed = true;
      else queue.push(change);
      wake?.();
    });
    const signals = [ctx.signal, shutdownSignal].filter((s): s is AbortSignal => s !== undefined);
    const stopped = () => signals.some((s) => s.aborted);
    const onAbort = () => wake?.();
    for (const signal of signals) signal.addEventListener("abort", onAbort);
    // Taken in the same tick as the subscription, so no change falls between snapshot and stream.
    const snapshot = view.sortedTools();
    try {
      for (const tool of snapshot) {
        yield watchEvent(WatchEventType.SNAPSHOT, tool.spec?.name ?? "", tool);
      }
      yield watchEvent(WatchEventType.SNAPSHOT_END, "", undefined);
      while (!stopped()) {
        if (overflowed)
          throw new ConnectError(
            `this watch fell ${WATCH_BACKLOG} changes behind; start a new WatchTools to get a fresh snapshot`,
            Code.ResourceExhausted,
          );
        const change = queue.shift();
        if (change) {
          yield change.tool
            ? watchEvent(WatchEventType.PUT, change.name, change.tool)
            : watchEvent(WatchEventType.DELETE, change.name, undefined);
          continue;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
        wake = undefined;
      }
    } finally {
      unsubscribe();
      for (const signal of signals) signal.removeEventListener("abort", onAbort);
    }
  };
}

function watchEvent(
  type: WatchEventType,
  name: string,
  tool: Tool | undefined,
): WatchToolsResponse {
  if (!tool) return create(WatchToolsResponseSchema, { type, name });
  // A PUT that wrote a new definition says what changed; any other PUT (groups, slugs) does not.
  const last = tool.history.at(-1);
  const changed =
    type === WatchEventType.PUT && last?.revision === tool.revision ? last.changed : [];
  return create(WatchToolsResponseSchema, { type, name, tool, changed });
}
