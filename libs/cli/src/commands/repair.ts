import { create } from "@bufbuild/protobuf";
import {
  AgentService,
  AuditAction,
  type AuditRecord,
  AuditService,
  CallStatus,
  RegistryService,
  type TaskSpec,
  TaskSpecSchema,
  type ToolSpec,
} from "@toolmesh/proto";
import { flag, type Leaf } from "../command.js";
import { UsageError } from "../context.js";

/** A task spec's description holds at most this much (AgentService allows 8,000 characters). */
const MAX_DESCRIPTION = 7500;

/**
 * The task that asks the CodingAgent to replace a failing tool: what the tool is, and its latest
 * failures from the audit log (each call's id, time, error and, for a breaker's opening, why).
 */
export function repairSpec(spec: ToolSpec, failures: readonly AuditRecord[]): TaskSpec {
  const head = [
    `Repair the tool "${spec.name}": its calls keep failing. Build a tool that does what it does without these failures and register it under a new name; "${spec.name}" stays registered until an operator replaces it.`,
    `What it does: ${spec.description}`,
    `Its runtime: ${JSON.stringify(spec.runtime?.kind ?? {})}`,
    `Its latest failures, newest first (toolmesh audit, toolmesh trace <trace id>):`,
  ].join("\n");
  let description = head;
  for (const r of failures) {
    const what = r.action === AuditAction.CIRCUIT_OPENED ? `circuit opened: ${r.reason}` : "call";
    const line = `- ${r.time ? new Date(Number(r.time.seconds) * 1000).toISOString() : "?"} ${r.callId || r.id} (trace ${r.traceId || "-"}) ${what}: ${r.errorCode} ${r.errorMessage.slice(0, 300)}`;
    if (description.length + line.length + 1 > MAX_DESCRIPTION) break;
    description += `\n${line}`;
  }
  return create(TaskSpecSchema, {
    description,
    inputs: JSON.stringify(spec.inputSchema ?? {}),
    outputs: JSON.stringify(spec.outputSchema ?? {}),
    acceptanceChecks: [`the calls listed above, made again with the same arguments, succeed`],
  });
}

/** `toolmesh tasks repair <tool>`: a failing tool as a task for the CodingAgent. */
export const repair: Leaf = {
  summary: "turn a tool that keeps failing into a task for the CodingAgent, its failures attached",
  usage: "tasks repair <tool> [--failures N]",
  details: [
    "Attaches the tool's latest N failures from the audit log (calls that ended FAILURE and its circuit breaker's openings; default 10, at most 50).",
    "The CodingAgent builds a replacement under a new name, registered disabled until an operator enables it.",
  ],
  args: [1, 1],
  options: { failures: { type: "string" } },
  async run(ctx, [tool = ""], flags) {
    const wanted = flag(flags, "failures") ?? "10";
    const count = Number(wanted);
    if (!Number.isInteger(count) || count < 1 || count > 50)
      throw new UsageError(`--failures is "${wanted}"; give a whole number from 1 to 50`);
    const { tool: found } = await ctx
      .client("registry", RegistryService)
      .getTool({ name: tool }, ctx.auth());
    if (!found?.spec) return 1;
    const { records } = await ctx
      .client("audit", AuditService)
      .queryRecords({ tool, status: CallStatus.FAILURE, pageSize: count }, ctx.auth());
    if (records.length === 0) {
      ctx.out.line(`tool "${tool}" has no failure in the audit log; nothing to repair`);
      return 1;
    }
    const { task } = await ctx
      .client("dispatcher", AgentService)
      .submitTask({ spec: repairSpec(found.spec, records) }, ctx.auth());
    ctx.out.result({ taskId: task?.id ?? "", failures: records.length }, () =>
      ctx.out.line(
        `task ${task?.id ?? ""}: repair of ${tool}, ${records.length} failures attached (toolmesh tasks get ${task?.id ?? ""})`,
      ),
    );
    return 0;
  },
};
