/** A signal that aborts after `ms`, or when `parent` does; clear() releases it at once. */
export interface Deadline {
  readonly signal: AbortSignal;
  /** True when it aborted because its time ran out (not because the parent did). */
  readonly expired: boolean;
  clear(): void;
}

/**
 * A deadline that holds nothing once cleared. AbortSignal.timeout() would keep its signal — and
 * whatever listens to it, a fetch's whole request and response among them — alive until the
 * timer fires, minutes after the work is done; under load that is hundreds of megabytes.
 */
export function deadline(ms: number, parent?: AbortSignal): Deadline {
  const controller = new AbortController();
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    controller.abort(new DOMException(`no answer within ${ms} ms`, "TimeoutError"));
  }, ms);
  const onParent = () => controller.abort(parent?.reason);
  if (parent?.aborted) onParent();
  else parent?.addEventListener("abort", onParent, { once: true });
  return {
    signal: controller.signal,
    get expired() {
      return expired;
    },
    clear() {
      clearTimeout(timer);
      parent?.removeEventListener("abort", onParent);
    },
  };
}
