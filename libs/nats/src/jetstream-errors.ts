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
