/**
 * At most `max` files open at once: cached handles (least recently used first out when a slot
 * is needed) and short-lived reads share the same slots, so many agents never exhaust the
 * process's file descriptors.
 */
export class OpenFiles<K, V extends { close(): Promise<void> }> {
  private readonly cached = new Map<K, { value: V; users: number }>();
  private used = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(readonly max: number) {}

  get openCount(): number {
    return this.used;
  }

  /**
   * Runs fn with the cached value for key, opening it (in a free slot) when absent; the value is
   * not closed while fn runs.
   */
  async use<T>(key: K, open: () => Promise<V>, fn: (value: V) => Promise<T>): Promise<T> {
    let entry = this.cached.get(key);
    if (!entry) {
      await this.slot();
      entry = this.cached.get(key);
      if (entry) {
        // Opened by someone else while we waited; give our slot back.
        this.release();
      } else {
        let value: V;
        try {
          value = await open();
        } catch (error) {
          this.release();
          throw error;
        }
        entry = this.cached.get(key);
        if (entry) {
          await value.close();
          this.release();
        } else {
          entry = { value, users: 0 };
          this.cached.set(key, entry);
        }
      }
    }
    // Most recently used last.
    this.cached.delete(key);
    this.cached.set(key, entry);
    entry.users++;
    try {
      return await fn(entry.value);
    } finally {
      entry.users--;
      if (this.waiting.length > 0) await this.evictIdle();
    }
  }

  /** Runs fn in a slot of its own (a short read of another file). */
  async temporary<T>(fn: () => Promise<T>): Promise<T> {
    await this.slot();
    try {
      return await fn();
    } finally {
      this.release();
    }
  }

  /** Closes and forgets a cached value (after an error), once nobody uses it. */
  async discard(key: K): Promise<void> {
    const entry = this.cached.get(key);
    if (!entry || entry.users > 0) return;
    this.cached.delete(key);
    await entry.value.close().catch(() => {});
    this.release();
  }

  async closeAll(): Promise<void> {
    const entries = [...this.cached.values()];
    this.cached.clear();
    for (const entry of entries) {
      await entry.value.close().catch(() => {});
      this.release();
    }
  }

  private async slot(): Promise<void> {
    for (;;) {
      if (this.used < this.max) {
        this.used++;
        return;
      }
      if (await this.evictIdle()) continue;
      // A slot may have come free while evictIdle ran; wait only if none did.
      if (this.used >= this.max) await new Promise<void>((r) => this.waiting.push(r));
    }
  }

  /** Closes the least recently used idle value; false when every cached value is in use. */
  private async evictIdle(): Promise<boolean> {
    for (const [key, entry] of this.cached) {
      if (entry.users > 0) continue;
      this.cached.delete(key);
      await entry.value.close().catch(() => {});
      this.release();
      return true;
    }
    return false;
  }

  private release(): void {
    this.used--;
    this.waiting.shift()?.();
  }
}
