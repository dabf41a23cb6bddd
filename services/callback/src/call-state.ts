import { Code, ConnectError } from "@toolmesh/errors";
import {
  AuditAction,
  type AuditRecord,
  type CallbackEvent,
  CallStatus,
  isFinal,
} from "@toolmesh/proto";
import { callOutcome, lookupCall } from "@toolmesh/records";
import type { NatsConnection } from "nats";

/** Where Callback reads a call's records: the audit log, through Audit (in tests, memory). */
export interface CallRecords {
  /**
   * A call's records in chain order, empty when none is kept. Records on their way to the log
   * are waited for, a bounded time, unless they already state a final outcome.
   */
  read(callId: string): Promise<AuditRecord[]>;
}

/** A call's records asked of Audit over the bus (libs/records lookupCall). */
export class AuditCallRecords implements CallRecords {
  constructor(
    private readonly nc: NatsConnection,
    private readonly timeoutMs = 5000,
  ) {}

  read(callId: string): Promise<AuditRecord[]> {
    return lookupCall(this.nc, callId, { wait: true, timeoutMs: this.timeoutMs });
  }
}

/** What a call's records say, for GetOutcome, Watch and Report. */
export interface CallState {
  readonly callId: string;
  /** Its first record (whose agent owns the call), or undefined when none is kept. */
  readonly first: AuditRecord | undefined;
  /** Its outcome now: the first final one, else the latest PENDING; undefined when none. */
  readonly outcome: CallbackEvent | undefined;
  /** Its end record if an asynchronous tool accepted it: a PENDING TOOL_CALL. */
  readonly accepted: AuditRecord | undefined;
  /** Its refusal, if it was refused before it ran. */
  readonly refusal: AuditRecord | undefined;
}

/** The state of a call from its records in chain order. */
export function callState(callId: string, records: readonly AuditRecord[]): CallState {
  let accepted: AuditRecord | undefined;
  let refusal: AuditRecord | undefined;
  for (const record of records) {
    if (record.action === AuditAction.TOOL_CALL && record.status === CallStatus.PENDING)
      accepted = record;
    if (record.action === AuditAction.TOOL_REFUSED) refusal = record;
  }
  return { callId, first: records[0], outcome: callOutcome(records), accepted, refusal };
}

/** True when the call has a final outcome. */
export function hasEnded(state: CallState): boolean {
  return state.outcome !== undefined && isFinal(state.outcome.status);
}

/**
 * NOT_FOUND for a call whose records state no outcome, saying which case it is: no record of it
 * is kept, it was refused before it ran, or it is still running.
 */
export function noOutcome(state: CallState): ConnectError {
  const { callId, refusal } = state;
  if (!state.first)
    return new ConnectError(
      `call "${callId}" not found: no record of it is kept — it was never made, or its records have left the audit log (TOOLMESH_AUDIT_MAX_AGE_DAYS, TOOLMESH_AUDIT_MAX_BYTES) and its archive`,
      Code.NotFound,
    );
  if (refusal)
    return new ConnectError(
      `call "${callId}" has no outcome: it was refused before it ran (${refusal.errorCode}: ${refusal.errorMessage || refusal.reason}); AuditService.QueryRecords shows its record`,
      Code.NotFound,
    );
  return new ConnectError(
    `call "${callId}" has no outcome yet: it is running; Watch it (call_id) to be told when it ends`,
    Code.NotFound,
  );
}
