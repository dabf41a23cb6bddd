import type { JsonObject } from "@bufbuild/protobuf";
import type { CallError, CallStatus } from "@toolmesh/proto";

/** How a call that ran ended, as every record of it says. */
export interface CallEnd {
  status: CallStatus;
  output?: JsonObject;
  error?: CallError;
  /** Why an INTERRUPTED call stopped: timeout, cancelled, shutdown. */
  reason: string;
}
