import { Code, ConnectError } from "@toolmesh/errors";
import { KvConflictError } from "./jetstream-errors.js";
import { escapeToken } from "./token-escape.js";

/**
 * Escapes user data for one KV key token. KV keys allow [-/_=.a-zA-Z0-9]; a dot separates
 * levels, so anything else, and the escape character `=` itself, becomes =XX (UTF-8).
 */
export function kvKeyToken(value: string): string {
  return value === "" ? "=00" : escapeToken(value, "=");
}

/** How long and how often a read-modify-write is tried while concurrent writes win. */
export interface UpdateRetry {
  /** Attempts in all; 10 unless given. */
  attempts?: number;
  /** No attempt starts later than this many milliseconds after the first; 2000 unless given. */
  budgetMs?: number;
}

/**
 * ABORTED: a read-modify-write lost to a concurrent writer on every attempt. It is the error the
 * caller gets (a ConnectError, so every RPC answers it the same way); `what` names what kept
 * changing.
 */
export class UpdateConflictError extends ConnectError {
  constructor(
    readonly what: string,
    readonly attempts: number,
    readonly elapsedMs: number,
    cause: KvConflictError,
  ) {
    super(
      `${what} kept changing: each of ${attempts} writes in ${elapsedMs} ms lost to a concurrent writer; retry`,
      Code.Aborted,
      undefined,
      undefined,
      cause,
    );
  }

  // ConnectError counts every error named ConnectError as one of its own; this class only itself.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return Function.prototype[Symbol.hasInstance].call(UpdateConflictError, value);
  }
}

/**
 * Runs a read-modify-write until its compare-and-set write lands: `attempt` (called with its
 * number, from 1) reads the current value, decides, and writes expecting the revision it read
 * (through compareAndSet), or returns without writing (nothing to change, the key gone). While
 * another writer wins (KvConflictError) it runs again after a jittered backoff (5 ms doubling to
 * 250 ms, so racing writers spread out), within `retry`'s attempts and time; then
 * UpdateConflictError names `what`.
 */
export async function updateWithRetry<T>(
  what: string,
  attempt: (n: number) => Promise<T>,
  retry: UpdateRetry = {},
): Promise<T> {
  const attempts = retry.attempts ?? 10;
  const started = Date.now();
  const deadline = started + (retry.budgetMs ?? 2000);
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (error) {
      if (!(error instanceof KvConflictError)) throw error;
      const ceilingMs = Math.min(5 * 2 ** (n - 1), 250);
      const delayMs = ceilingMs / 2 + Math.random() * (ceilingMs / 2);
      if (n >= attempts || Date.now() + delayMs > deadline)
        throw new UpdateConflictError(what, n, Date.now() - started, error);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}
