import type { Tool } from "@toolmesh/proto";

/** What the warm keeper reads: the registry's tools, once loaded, and when they change. */
export interface WarmSource {
  readonly isReady: boolean;
  all(): IterableIterator<Tool>;
}

/** How often warm hours are looked at again: a window opens at most this late. */
const SWEEP_MS = 60_000;

/**
 * Keeps the warm instances of local and docker tools running: at start, after every registry
 * change (coalesced) and each minute, for warm hours that open or close. Returns a stop.
 */
export function keepToolsWarm(
  changes: { onChange?(listener: () => void): () => void },
  tools: WarmSource,
  runtimes: { keepWarm(tool: Tool): void }[],
): () => void {
  let pending: NodeJS.Timeout | undefined;
  const sweep = () => {
    pending = undefined;
    if (!tools.isReady) return soon(500);
    for (const tool of tools.all()) for (const runtime of runtimes) runtime.keepWarm(tool);
  };
  const soon = (delayMs = 0) => {
    if (pending) return;
    pending = setTimeout(sweep, delayMs);
    pending.unref();
  };
  const unsubscribe = changes.onChange?.(() => soon()) ?? (() => {});
  const timer = setInterval(sweep, SWEEP_MS);
  timer.unref();
  soon();
  return () => {
    unsubscribe();
    clearInterval(timer);
    if (pending) clearTimeout(pending);
  };
}
