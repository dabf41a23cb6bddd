import type { SnapshotChange } from "./snapshot.js";

/** How long a write waits for its own watch to show it, so a read right after sees the write. */
export const READ_YOUR_WRITE_MS = 2000;

/**
 * Resolves once a watched snapshot shows a write (`done` is true), or after READ_YOUR_WRITE_MS
 * with a warning: the owner of a bucket answers a write only when its next read sees it.
 */
export function untilSnapshotShows(
  snapshot: { onChange(listener: (change: SnapshotChange<unknown>) => void): () => void },
  done: () => boolean,
  log: { warn(obj: object, msg: string): void },
): Promise<void> {
  if (done()) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      unsubscribe();
      log.warn({ wait_ms: READ_YOUR_WRITE_MS }, "watch did not show a write in time");
      resolve();
    }, READ_YOUR_WRITE_MS);
    const unsubscribe = snapshot.onChange(() => {
      if (done()) {
        clearTimeout(timer);
        unsubscribe();
        resolve();
      }
    });
  });
}
