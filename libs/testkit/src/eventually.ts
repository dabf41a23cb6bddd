import { type Code, ConnectError } from "@toolmesh/errors";

/**
 * Retries an assertion until it passes (state that another process applies asynchronously),
 * every `intervalMs`; it runs at least once.
 */
export function eventually<T>(
  check: () => Promise<T>,
  timeoutMs = 10_000,
  what = "condition",
  intervalMs = 50,
): Promise<T> {
  return retry(check, () => true, timeoutMs, what, intervalMs);
}

/**
 * Retries a call while it fails with one of `codes` (what a service answers before it is ready);
 * any other error fails at once.
 */
export function retryWhile<T>(
  call: () => Promise<T>,
  codes: Code[],
  timeoutMs = 10_000,
  what = "call",
): Promise<T> {
  return retry(
    call,
    (error) => codes.includes(ConnectError.from(error).code),
    timeoutMs,
    what,
    100,
  );
}

async function retry<T>(
  check: () => Promise<T>,
  retryable: (error: unknown) => boolean,
  timeoutMs: number,
  what: string,
  intervalMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (!retryable(error)) throw error;
      if (Date.now() >= deadline) {
        throw new Error(`${what} did not hold within ${timeoutMs} ms: ${String(error)}`, {
          cause: error,
        });
      }
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** Collects messages and lets a test await the ones it expects. */
export class Collector<T> {
  readonly items: T[] = [];
  private readonly waiters = new Set<() => void>();

  push(item: T): void {
    this.items.push(item);
    for (const waiter of this.waiters) waiter();
  }

  /** Resolves with the matching items once `count` of them arrived. */
  waitFor(test: (item: T) => boolean, count = 1, timeoutMs = 10_000): Promise<T[]> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const found = this.items.filter(test);
        if (found.length >= count) {
          this.waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
        }
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        reject(
          new Error(
            `expected ${count} matching messages within ${timeoutMs} ms; have ${this.items.filter(test).length}`,
          ),
        );
      }, timeoutMs);
      this.waiters.add(check);
      check();
    });
  }
}
