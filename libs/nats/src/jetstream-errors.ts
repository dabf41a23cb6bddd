/**
 * JetStream API error codes toolmesh acts on (the `err_code` of a JetStream API error, stable
 * across server versions, unlike the description text).
 */
export const JetStreamApiCodes = {
  /** A publish's expected last (subject) sequence did not match: a compare-and-set lost. */
  WrongLastSequence: 10071,
  /** A publish's expected last message id did not match: another writer appended last. */
  WrongLastMsgId: 10070,
  StreamNotFound: 10059,
  /** A stream with that name exists already (with another configuration). */
  StreamNameInUse: 10058,
  ConsumerNotFound: 10014,
  /** A stream has no message at that sequence (never stored, or dropped by its limits). */
  NoMessageFound: 10037,
  /** The store refused the message: the stream is full (discard new) or the message too large. */
  StoreFailed: 10077,
  /** The server has no room left for JetStream (disk or memory limit). */
  InsufficientResources: 10047,
  /** "JetStream system temporarily unavailable": a cluster between leaders (an election). */
  ClusterNotAvailable: 10008,
  /** An atomic batch repeats a Nats-Msg-Id the stream holds: none of it was stored. */
  AtomicBatchDuplicate: 10201,
} as const;

/** The JetStream `err_code` an error carries, or undefined for any other error. */
export function jetStreamErrorCode(error: unknown): number | undefined {
  const code = (error as { api_error?: { err_code?: unknown } } | undefined)?.api_error?.err_code;
  return typeof code === "number" ? code : undefined;
}

/** Raised when a compare-and-set write finds the key (or stream) changed since it was read. */
export class KvConflictError extends Error {
  override name = "KvConflictError";
}

/**
 * Runs a compare-and-set write (KV create/update/delete with an expected revision, or a publish
 * with an expected last sequence) and turns JetStream's "wrong last sequence" into
 * KvConflictError, so every store recognises a lost race the same way: by its code.
 */
export async function compareAndSet<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (error) {
    if (jetStreamErrorCode(error) === JetStreamApiCodes.WrongLastSequence) {
      throw new KvConflictError((error as Error).message, { cause: error });
    }
    throw error;
  }
}

/** True for a refusal that stored nothing because no stream leader answered (an election). */
export function betweenLeaders(error: unknown): boolean {
  const code = (error as { code?: unknown } | undefined)?.code;
  // nats.js's "no responders" (503): no server holds the stream's leadership this moment.
  return code === "503" || jetStreamErrorCode(error) === JetStreamApiCodes.ClusterNotAvailable;
}

/** How long a write refused between stream leaders is tried again, by default. */
export const BETWEEN_LEADERS_BUDGET_MS = 4000;

/**
 * How long a process's start-up tries again to create or open its streams, buckets and consumers
 * while no leader answers: a cluster whose nodes all report healthy may still be electing the
 * leaders of streams created a moment before (by this process's other replica, say), and a
 * refusal then made the process exit before it was ready.
 */
export const SETUP_BUDGET_MS = 15_000;

/**
 * How long to wait before sending again a write refused between stream leaders, backing off from
 * 100 ms to 1 s (`attempt` counts from 0), or undefined once that wait would end past `budgetMs`
 * from `startedAt`: a leader election on a cluster takes a few seconds, and a write that stored
 * nothing may be sent again. The one backoff of retryBetweenLeaders and JetStreamPublisher.
 */
export function betweenLeadersDelay(
  attempt: number,
  startedAt: number,
  budgetMs = BETWEEN_LEADERS_BUDGET_MS,
): number | undefined {
  const delayMs = Math.min(100 * 2 ** attempt, 1000);
  return Date.now() + delayMs - startedAt > budgetMs ? undefined : delayMs;
}

/**
 * Runs a JetStream write again while it is refused between stream leaders (see
 * betweenLeadersDelay), within `budgetMs`. Any other error, or the budget spent, is thrown.
 */
export function retryBetweenLeaders<T>(
  write: () => Promise<T>,
  budgetMs = BETWEEN_LEADERS_BUDGET_MS,
): Promise<T> {
  return retryWhile(write, betweenLeaders, budgetMs);
}

/**
 * Runs a set-up request again (creating or binding a stream, bucket or consumer, or reading its
 * info: each may be sent twice) while no leader answers or no answer comes in time — a server
 * restarting or a cluster electing its leaders as the process starts — within SETUP_BUDGET_MS.
 */
export function retrySetup<T>(setup: () => Promise<T>): Promise<T> {
  return retryWhile(
    setup,
    (error) => betweenLeaders(error) || (error as { code?: unknown })?.code === "TIMEOUT",
    SETUP_BUDGET_MS,
  );
}

async function retryWhile<T>(
  run: () => Promise<T>,
  retryable: (error: unknown) => boolean,
  budgetMs: number,
): Promise<T> {
  const startedAt = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      const delayMs = retryable(error)
        ? betweenLeadersDelay(attempt, startedAt, budgetMs)
        : undefined;
      if (delayMs === undefined) throw error;
      await new Promise((resolve) => setTimeout(resolve, delayMs));
    }
  }
}
