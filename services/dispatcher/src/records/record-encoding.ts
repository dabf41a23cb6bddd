import { toBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import {
  type AuditAction,
  type AuditRecord,
  AuditRecordSchema,
  type BackendEvent,
  CacheUse,
  CallStatus,
  type Principal,
} from "@toolmesh/proto";

/** The service the Dispatcher's records name as their source. */
export const SOURCE = "dispatcher";

/** The ids and caller of one call, shared by all its records. */
export interface CallIdentity {
  traceId: string;
  callId: string;
  parentId: string;
  tool: string;
  principal: Principal;
}

/** The fields a record of a call sets; the call's ids and caller come from the call. */
export type CallRecordFields = Partial<
  Omit<
    AuditRecord,
    "$typeName" | "callId" | "traceId" | "parentId" | "tool" | "agentId" | "userId" | "roles"
  >
> & { action: AuditAction };

const NO_STRINGS: readonly string[] = Object.freeze([]);
const NO_EVENTS: readonly BackendEvent[] = Object.freeze([]);

/**
 * A record of a call, encoded: its fields, with the call's ids and caller. The message is one
 * literal of every field (a field given as undefined is unset, as create() leaves it): create()
 * builds it a property at a time, converting each value, and was half of what encoding a record
 * allocated, while the fields are messages already (CallRecordFields is typed so). A field added
 * to AuditRecord must be added here: the test "a record's bytes" compares with create() for
 * every field of the schema.
 */
export function encodeCallRecord(call: CallIdentity, f: CallRecordFields): Uint8Array {
  const record: AuditRecord = {
    $typeName: AuditRecordSchema.typeName,
    id: f.id ?? "",
    time: "time" in f ? f.time : timestampNow(),
    action: f.action,
    tool: call.tool,
    agentId: call.principal.agentId,
    userId: call.principal.userId,
    roles: call.principal.roles,
    callId: call.callId,
    traceId: call.traceId,
    arguments: f.arguments,
    status: f.status ?? CallStatus.UNSPECIFIED,
    errorCode: f.errorCode ?? "",
    errorMessage: f.errorMessage ?? "",
    reason: f.reason ?? "",
    durationMs: f.durationMs ?? 0,
    attempts: f.attempts ?? 0,
    source: "source" in f ? (f.source ?? "") : SOURCE,
    sequence: f.sequence ?? 0n,
    prevHash: f.prevHash ?? "",
    hash: f.hash ?? "",
    decidedBy: f.decidedBy ?? "",
    parentId: call.parentId,
    output: f.output,
    events: f.events ?? (NO_EVENTS as BackendEvent[]),
    instance: f.instance ?? "",
    deadline: f.deadline,
    timeoutMs: f.timeoutMs ?? 0,
    runtime: f.runtime ?? "",
    startedAt: f.startedAt,
    chainVersion: f.chainVersion ?? 0,
    errorDetails: f.errorDetails,
    cache: f.cache ?? CacheUse.UNSPECIFIED,
    cachedFrom: f.cachedFrom ?? "",
    cost: f.cost,
    budgets: f.budgets ?? (NO_STRINGS as string[]),
    failedCalls: f.failedCalls ?? (NO_STRINGS as string[]),
    toolInstance: f.toolInstance ?? "",
    countedBy: f.countedBy ?? "",
  };
  return toBinary(AuditRecordSchema, record);
}
