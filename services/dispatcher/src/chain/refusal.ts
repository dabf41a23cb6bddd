import type { ConnectError } from "@toolmesh/errors";

/** A call refused before its tool ran: what the caller sees, and the reason the records give. */
export class Refusal extends Error {
  override name = "Refusal";
  constructor(
    readonly error: ConnectError,
    readonly reason: string,
    /** The call id is another call's: the refusal is filed under a fresh one, leaving that call alone. */
    readonly foreignCallId = false,
  ) {
    super(error.message, { cause: error });
  }
}

/** A refused call: the error the caller sees, plus the ids it was recorded under. */
export class CallRefused extends Error {
  override name = "CallRefused";
  constructor(
    readonly error: ConnectError,
    readonly callId: string,
    readonly traceId: string,
  ) {
    super(error.message, { cause: error });
  }
}
