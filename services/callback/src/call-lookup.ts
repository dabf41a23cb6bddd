import { Code, ConnectError } from "@toolmesh/errors";
import type { CallbackEvent } from "@toolmesh/proto";
import type { CallStore, StoredCall } from "./call-store.js";
import type { OutcomeHistory } from "./outcome-history.js";

/**
 * A call found by id: its event, and its key while it is live in the bucket (undefined when the
 * event came from the outcome history); undefined when it is in neither.
 */
export type FoundCall = { live: StoredCall | undefined; event: CallbackEvent } | undefined;

/**
 * A call by id: its key in the bucket while it is live, else its broadcast event in the outcome
 * history. UNAVAILABLE while the history is still reading the stream at start and has not met the
 * call: it may be there, and NOT_FOUND would be a wrong answer.
 */
export async function findCall(
  calls: CallStore,
  history: OutcomeHistory,
  callId: string,
): Promise<FoundCall> {
  const live = await calls.get(callId);
  if (live) return { live, event: live.event };
  const found = await history.find(callId);
  if (found.found) return { live: undefined, event: found.event };
  if (found.loading)
    throw new ConnectError(
      `this Callback replica is still reading its outcome history (stream sequence ${found.indexed} of ${found.target}); retry in a few seconds`,
      Code.Unavailable,
    );
  return undefined;
}
