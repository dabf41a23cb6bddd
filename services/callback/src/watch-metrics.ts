import { gauge } from "@toolmesh/telemetry";
import type { Watches } from "./watches.js";

/**
 * Open watches on /metrics: what an operator sizes TOOLMESH_CALLBACK_MAX_WATCHES_PER_AGENT by,
 * and how a client can tell its watches are in place before it counts on them.
 */
export function exportWatchMetrics(watches: Watches): void {
  gauge(
    "toolmesh_callback_watches",
    "Watch streams open on this Callback replica, by kind (call: by call id; broadcast: by agent, tool or status)",
    ["kind"],
    function collect() {
      const { callWatches, broadcastWatches } = watches.stats;
      this.set({ kind: "call" }, callWatches);
      this.set({ kind: "broadcast" }, broadcastWatches);
    },
  );
  gauge(
    "toolmesh_callback_watch_agents",
    "Agents holding at least one open watch on this Callback replica",
    [],
    function collect() {
      this.set(watches.stats.agents);
    },
  );
}
