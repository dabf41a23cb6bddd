import { AuditAction, type AuditRecord } from "@toolmesh/proto";

/**
 * The key a record is stored under once. A call's own records (start, end, report, approval,
 * refusal) have no id of their own: each is the one record of its kind for its call, so the call
 * id and the kind name it, and a record written twice (a batch sent again after a lost ack, a
 * sweeper and a late Dispatcher closing the same call) is kept once — the first one.
 */
export function recordKey(record: Pick<AuditRecord, "id" | "callId" | "action">): string {
  return record.id || `${record.callId}/${record.action}`;
}

/** True for the record that ends a call: its TOOL_CALL (PENDING for an asynchronous tool). */
export function endsCall(record: Pick<AuditRecord, "action">): boolean {
  return record.action === AuditAction.TOOL_CALL;
}

/**
 * True for a record the Dispatcher writes for a call (as opposed to an admin change or a circuit
 * breaker opening, which have ids of their own).
 */
export function ofCall(record: Pick<AuditRecord, "action">): boolean {
  return (
    record.action !== AuditAction.ADMIN &&
    record.action !== AuditAction.CIRCUIT_OPENED &&
    record.action !== AuditAction.UNSPECIFIED
  );
}

/**
 * True for a record that holds a call's start — its arguments, deadline and Dispatcher instance:
 * the start record, or the one record Audit chains of a call that ended soon after it started
 * (its end with the start's fields, which only a start has an instance in).
 */
export function startsCall(record: Pick<AuditRecord, "action" | "instance">): boolean {
  return (
    record.action === AuditAction.TOOL_START ||
    (record.action === AuditAction.TOOL_CALL && record.instance !== "")
  );
}
