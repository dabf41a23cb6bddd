import { fromBinary } from "@bufbuild/protobuf";
import { jetStreamErrorCode, streamNames, subjects } from "@toolmesh/nats";
import { CallStatus, OutcomeSchema } from "@toolmesh/proto";
import type { JetStreamManager } from "nats";
import { AWAITING_APPROVAL } from "./approvals/approval-records.js";

/** JetStream's "no message found" for a direct get of a subject with no message. */
const NO_MESSAGE_FOUND = 10037;

/** Whether the Dispatcher has recorded a call's outcome (the sweepers' question). */
export interface OutcomeLookup {
  /**
   * True once the Dispatcher published the call's outcome: its result, or PENDING from an
   * asynchronous tool. The PENDING outcome of a call held for approval does not count: the
   * call has not run yet.
   */
  hasOutcome(callId: string): Promise<boolean>;
}

/** Reads the last outcome the Dispatcher published for a call from TOOLMESH_OUTCOME. */
export class StreamOutcomeLookup implements OutcomeLookup {
  constructor(private readonly jsm: JetStreamManager) {}

  async hasOutcome(callId: string): Promise<boolean> {
    try {
      const stored = await this.jsm.streams.getMessage(streamNames.outcome, {
        last_by_subj: subjects.outcome("dispatcher", callId),
      });
      const outcome = fromBinary(OutcomeSchema, stored.data);
      return !(outcome.status === CallStatus.PENDING && outcome.reason === AWAITING_APPROVAL);
    } catch (error) {
      if (jetStreamErrorCode(error) === NO_MESSAGE_FOUND) return false;
      throw error;
    }
  }
}

/** No outcomes at all, for in-process tests. */
export class NoOutcomes implements OutcomeLookup {
  async hasOutcome(): Promise<boolean> {
    return false;
  }
}
