import { gauge } from "@toolmesh/telemetry";

/** A snapshot of a KV bucket: whether it is loaded, and its changes. */
interface WatchedSnapshot {
  readonly isReady: boolean;
  onChange(listener: () => void): () => void;
}

/**
 * Gauges of the Dispatcher's snapshots, read at each scrape: loaded or not, and seconds since
 * the last change arrived (a quiet bucket ages too; a stuck watch shows as ready with no change
 * after a known write). Returns a function that stops watching.
 */
export function watchSnapshotMetrics(snapshots: Record<string, WatchedSnapshot>): () => void {
  const lastChange = new Map<string, number>();
  const stops = Object.entries(snapshots).map(([name, snapshot]) => {
    lastChange.set(name, Date.now());
    return snapshot.onChange(() => lastChange.set(name, Date.now()));
  });
  const live = snapshots;
  current = { live, lastChange };
  snapshotGauges();
  return () => {
    for (const stop of stops) stop();
    if (current?.live === live) current = undefined;
  };
}

let current: { live: Record<string, WatchedSnapshot>; lastChange: Map<string, number> } | undefined;

/** Defines the snapshot gauges once; they read whichever snapshots the process follows now. */
function snapshotGauges(): void {
  gauge(
    "toolmesh_dispatcher_snapshot_ready",
    "1 when the snapshot of a bucket has loaded",
    ["snapshot"],
    function collect() {
      this.reset();
      for (const [name, s] of Object.entries(current?.live ?? {}))
        this.set({ snapshot: name }, s.isReady ? 1 : 0);
    },
  );
  gauge(
    "toolmesh_dispatcher_snapshot_age_seconds",
    "Seconds since the snapshot of a bucket last received a change",
    ["snapshot"],
    function collect() {
      this.reset();
      for (const [name, at] of current?.lastChange ?? [])
        this.set({ snapshot: name }, (Date.now() - at) / 1000);
    },
  );
}
