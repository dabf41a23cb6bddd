/**
 * Retries an assertion until it passes (state that another process applies asynchronously),
 * every `intervalMs`.
 */
export async function eventually<T>(
  check: () => Promise<T>,
  timeoutMs = 10_000,
  what = "condition",
  intervalMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      return await check();
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  throw new Error(`${what} did not hold within ${timeoutMs} ms: ${String(last)}`);
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
