import { create, equals, toBinary } from "@bufbuild/protobuf";
import { timestampMs, timestampNow } from "@bufbuild/protobuf/wkt";
import { hasRole, type Principal, Role } from "@toolmesh/auth";
import { Code, ConnectError, invalidField, notFound } from "@toolmesh/errors";
import { callFields, type Logger } from "@toolmesh/log";
import { checkLength } from "@toolmesh/names";
import {
  buckets,
  type JetStreamPublisher,
  PublishError,
  type SnapshotView,
  streamNames,
  subjects,
  TYPE_HEADER,
} from "@toolmesh/nats";
import {
  AuditAction,
  type AuditRecord,
  AuditRecordSchema,
  type CallbackEvent,
  CallErrorSchema,
  CallStatus,
  isFinal,
  RecordBatchSchema,
  type ReportRequest,
  type ReportResponse,
  ReportResponseSchema,
  statusName,
  statusWord,
  type ToolSchema,
} from "@toolmesh/proto";
import { encodeRecords, outcomeOf } from "@toolmesh/records";
import { canonicalJson } from "@toolmesh/schema";
import { headers as natsHeaders } from "nats";
import { type CallRecords, type CallState, callState, hasEnded } from "./call-state.js";

/** Where a report's record is written: the record stream, like every record of a call. */
export interface ReportWriter {
  /**
   * Writes a TOOL_REPORTED record, stored once per call: `duplicate` when the stream held a
   * report of the call already (another one won, or this one was sent before).
   */
  write(record: AuditRecord): Promise<{ duplicate: boolean }>;
}

/**
 * A report as a RecordBatch of one record on `toolmesh.records.callback`, with the Nats-Msg-Id
 * `<call_id>:report`: two reports racing for one call store one record, and the other learns it
 * from its ack. Audit chains it into the log like any record; the broadcast, usage and memory
 * follow from the log.
 */
export class JetStreamReportWriter implements ReportWriter {
  constructor(private readonly publisher: JetStreamPublisher) {}

  async write(record: AuditRecord): Promise<{ duplicate: boolean }> {
    const h = natsHeaders();
    h.set(TYPE_HEADER, RecordBatchSchema.typeName);
    h.set("Nats-Msg-Id", `${record.callId}:report`);
    const data = encodeRecords([toBinary(AuditRecordSchema, record)]);
    try {
      const ack = await this.publisher.publish(subjects.records("callback"), data, h);
      return { duplicate: ack.duplicate };
    } catch (error) {
      if (error instanceof PublishError && error.failure === "full")
        throw new ConnectError(
          `the record stream ${streamNames.records} is full (Audit is behind): the report was not stored; send it again later`,
          Code.ResourceExhausted,
          undefined,
          undefined,
          error,
        );
      throw new ConnectError(
        `the report of call "${record.callId}" could not be stored (${String((error as Error)?.message ?? error)}); send it again: a repeated report is recognised`,
        Code.Unavailable,
        undefined,
        undefined,
        error,
      );
    }
  }
}

/** True when two final outcomes say the same thing (ignoring timing): a repeated report. */
export function sameResult(a: CallbackEvent, b: CallbackEvent): boolean {
  return (
    a.status === b.status &&
    a.reason === b.reason &&
    canonicalJson(a.output ?? null) === canonicalJson(b.output ?? null) &&
    ((a.error === undefined && b.error === undefined) ||
      (a.error !== undefined && b.error !== undefined && equals(CallErrorSchema, a.error, b.error)))
  );
}

/**
 * The TOOL_REPORTED record of a report: the call's ids from its PENDING end record, the reported
 * status with only what it means (SUCCESS the output, FAILURE the error, INTERRUPTED the reason),
 * and its duration grown by the time the call waited for the report.
 */
export function reportRecord(req: ReportRequest, accepted: AuditRecord): AuditRecord {
  const waited = accepted.time ? Math.max(0, Date.now() - timestampMs(accepted.time)) : 0;
  const failed = req.status === CallStatus.FAILURE ? req.error : undefined;
  return create(AuditRecordSchema, {
    time: timestampNow(),
    action: AuditAction.TOOL_REPORTED,
    source: "callback",
    callId: accepted.callId,
    traceId: accepted.traceId,
    parentId: accepted.parentId,
    tool: accepted.tool,
    agentId: accepted.agentId,
    userId: accepted.userId,
    roles: accepted.roles,
    status: req.status,
    ...(req.status === CallStatus.SUCCESS ? { output: req.output ?? {} } : {}),
    errorCode: failed?.code ?? "",
    errorMessage: failed?.message ?? "",
    ...(failed?.details ? { errorDetails: failed.details } : {}),
    reason: req.status === CallStatus.INTERRUPTED ? req.reason || "unknown" : "",
    durationMs: accepted.durationMs + waited,
    attempts: accepted.attempts,
    ...(accepted.startedAt ? { startedAt: accepted.startedAt } : {}),
  });
}

/**
 * Report is for admins and for the backend of the call's tool: a `tool-backend` principal whose
 * agent id the tool lists in `reporters`. PERMISSION_DENIED otherwise, naming what is missing.
 */
function checkReporter(p: Principal, tool: string, tools: SnapshotView<typeof ToolSchema>): void {
  if (hasRole(p, Role.Admin)) return;
  if (!hasRole(p, Role.ToolBackend))
    throw new ConnectError(
      `Report needs the role admin or tool-backend; your token has ${p.roles.length ? `the roles ${p.roles.join(", ")}` : "no roles"}`,
      Code.PermissionDenied,
    );
  if (!tools.isReady)
    throw new ConnectError(
      "the tool registry is not loaded yet on this server; retry shortly",
      Code.Unavailable,
    );
  const reporters = tools.get(buckets.registry.toolKey(tool))?.spec?.reporters ?? [];
  if (!reporters.includes(p.agentId))
    throw new ConnectError(
      `agent "${p.agentId}" does not serve tool "${tool}": an admin lists the backend's agent id in the tool's reporters`,
      Code.PermissionDenied,
    );
}

/** FAILED_PRECONDITION for a report that would change a finished call. */
function finishedAlready(callId: string, event: CallbackEvent): ConnectError {
  return new ConnectError(
    `call "${callId}" already finished with ${statusName(event.status)}; a report cannot change a finished call`,
    Code.FailedPrecondition,
  );
}

/** The answer to a report of a call that has ended: the same result again, or a refusal. */
function answerEnded(state: CallState, req: ReportRequest): ReportResponse {
  const ended = state.outcome as CallbackEvent;
  const base = state.accepted ?? state.first;
  const again = base ? outcomeOf(reportRecord(req, base)) : undefined;
  if (!again || !sameResult(ended, again)) throw finishedAlready(state.callId, ended);
  return create(ReportResponseSchema, { event: ended, duplicate: true });
}

/** The Report RPC over a call's records and the record stream. */
export function createReport(deps: {
  calls: CallRecords;
  writer: ReportWriter;
  /** The Registry's tools, for the reporters of a tool (a followed snapshot). */
  tools: SnapshotView<typeof ToolSchema>;
  log: Logger;
}) {
  const { calls, writer, tools, log } = deps;
  return async (caller: Principal, req: ReportRequest): Promise<ReportResponse> => {
    if (req.callId === "") throw invalidField("call_id", "is required");
    checkLength("call_id", "callId", req.callId);
    if (!isFinal(req.status) || req.status === CallStatus.REFUSED) {
      throw invalidField("status", "must be SUCCESS, FAILURE or INTERRUPTED");
    }
    if (req.status === CallStatus.FAILURE && !req.error?.code) {
      throw invalidField("error.code", "is required for a FAILURE report, such as backend_error");
    }
    const state = callState(req.callId, await calls.read(req.callId));
    if (!state.first) {
      throw notFound(
        "call",
        req.callId,
        "no record of it is kept; only calls accepted as PENDING by an asynchronous tool can be reported",
      );
    }
    checkReporter(caller, state.first.tool, tools);
    if (hasEnded(state)) return answerEnded(state, req);
    const accepted = state.accepted;
    if (!accepted) {
      const held = state.outcome?.status === CallStatus.PENDING;
      throw new ConnectError(
        held
          ? `call "${req.callId}" is held for approval and has not run; only its approval decides it (DispatcherService.DecideApproval)`
          : `call "${req.callId}" was not accepted as PENDING by an asynchronous tool (${state.refusal ? "it was refused before it ran" : "it is running"}); only such a call can be reported`,
        Code.FailedPrecondition,
      );
    }
    const record = reportRecord(req, accepted);
    const { duplicate } = await writer.write(record);
    if (duplicate) {
      // Another report of the call was stored first (or this one, sent before): its record says
      // how the call ended once it is in the log.
      const now = callState(req.callId, await calls.read(req.callId));
      if (!hasEnded(now))
        throw new ConnectError(
          `a report of call "${req.callId}" was stored a moment ago and is not in the audit log yet; send this one again shortly`,
          Code.Unavailable,
        );
      return answerEnded(now, req);
    }
    const event = outcomeOf(record) as CallbackEvent;
    log.info(
      { ...callFields(event), status: statusWord(event.status) },
      "asynchronous call reported",
    );
    return create(ReportResponseSchema, { event, duplicate: false });
  };
}
