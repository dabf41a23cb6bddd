import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import type { ServiceName } from "@toolmesh/config";
import { readStackFile } from "@toolmesh/launcher/stack-file";
import {
  AuditAction,
  type AuditRecord,
  AuditRecordSchema,
  AuditService,
  CallStatus,
  DispatcherService,
  Health,
  HealthCheckResponse_ServingStatus,
  RuntimeState,
  type RuntimeStatus,
  RuntimeStatusSchema,
  VerifyChainResponseSchema,
} from "@toolmesh/proto";
import {
  callStatus,
  enumName,
  flag,
  type Group,
  isoTime,
  jsonOf,
  type Leaf,
  when,
} from "../command.js";
import { type CliContext, UsageError } from "../context.js";
import { statusColour } from "../output.js";
import { printSystemStatus, systemStatus, systemStatusJson } from "./agent.js";
import { verifyArchiveDir } from "./audit-archive.js";

/** `toolmesh audit …`: the access log. */
export const audit: Group = {
  summary: "search the access log and verify its hash chain",
  sub: {
    query: {
      summary: "search audit records, newest filters first",
      usage:
        "audit query [--agent ID] [--user ID] [--tool NAME] [--status S] [--trace ID] [--call ID] [--since ISO] [--until ISO] [--limit N]",
      options: {
        agent: { type: "string" },
        user: { type: "string" },
        tool: { type: "string" },
        status: { type: "string" },
        trace: { type: "string" },
        call: { type: "string" },
        since: { type: "string" },
        until: { type: "string" },
        limit: { type: "string" },
      },
      async run(ctx, _args, flags) {
        const limitText = flag(flags, "limit") ?? "50";
        if (!/^[1-9]\d*$/.test(limitText))
          throw new UsageError(`--limit must be a positive whole number; got "${limitText}"`);
        const limit = Number(limitText);
        const status = callStatus(flag(flags, "status"));
        const records: AuditRecord[] = [];
        let pageToken = "";
        do {
          const res = await ctx.client("audit", AuditService).queryRecords(
            {
              agentId: flag(flags, "agent") ?? "",
              userId: flag(flags, "user") ?? "",
              tool: flag(flags, "tool") ?? "",
              status,
              traceId: flag(flags, "trace") ?? "",
              callId: flag(flags, "call") ?? "",
              startTime: isoTime(flag(flags, "since"), "since"),
              endTime: isoTime(flag(flags, "until"), "until"),
              pageSize: Math.min(limit - records.length, 500),
              pageToken,
            },
            ctx.auth(),
          );
          records.push(...res.records);
          pageToken = res.nextPageToken;
        } while (pageToken !== "" && records.length < limit);
        ctx.out.result(
          records.map((r) => jsonOf(AuditRecordSchema, r)),
          () =>
            ctx.out.table(
              ["SEQ", "TIME", "ACTION", "TOOL", "AGENT", "STATUS", "MS", "TRACE", "ERROR"],
              records.map((r) => {
                const s = enumName(CallStatus, r.status);
                return [
                  String(r.sequence),
                  when(r.time),
                  enumName(AuditAction, r.action),
                  r.tool,
                  r.agentId,
                  ctx.out.paint(statusColour(s), s),
                  String(r.durationMs),
                  r.traceId,
                  r.errorCode,
                ];
              }),
            ),
        );
        return 0;
      },
    },
    verify: {
      summary: "verify the audit log's hash chain; exit code 1 names the first break",
      usage: "audit verify [--from SEQUENCE] [--archive DIR]",
      details: [
        "Without --archive, asks the Audit service to verify the log and its archive.",
        "--archive DIR verifies an archive directory offline, with no stack running: each segment's",
        "checksum and footer, every record's hash and the chain across segments. Exit code 1 names",
        "a damaged or missing segment and the first broken record.",
        "Example: toolmesh audit verify --archive .toolmesh/audit/archive",
      ],
      options: { from: { type: "string" }, archive: { type: "string" } },
      async run(ctx, _args, flags) {
        const archive = flag(flags, "archive");
        if (archive !== undefined) {
          if (flag(flags, "from") !== undefined)
            throw new UsageError(
              "--from and --archive do not go together; --archive checks every segment",
            );
          return verifyArchiveDir(ctx, archive);
        }
        const from = flag(flags, "from") ?? "0";
        if (!/^\d+$/.test(from))
          throw new UsageError(`--from must be a sequence number; got "${from}"`);
        const res = await ctx
          .client("audit", AuditService)
          .verifyChain({ fromSequence: BigInt(from) }, ctx.auth());
        ctx.out.result(jsonOf(VerifyChainResponseSchema, res), () => {
          if (res.ok)
            ctx.out.line(
              `${ctx.out.paint("green", "intact")}: ${res.recordsChecked} records checked`,
            );
          else
            ctx.out.line(
              `${ctx.out.paint("red", "broken")} at sequence ${res.firstBreakSequence}: ${res.reason} (expected ${res.expectedHash}, found ${res.actualHash}; ${res.recordsChecked} records checked)`,
            );
        });
        return res.ok ? 0 : 1;
      },
    },
  },
};

/** One service's health as `status` reports it. */
async function health(ctx: CliContext, name: ServiceName) {
  const started = performance.now();
  try {
    const client = createClient(Health, createGrpcTransport({ baseUrl: ctx.urls[name] }));
    const res = await client.check({ service: "" }, { timeoutMs: 3000 });
    return {
      service: name,
      url: ctx.urls[name],
      status: enumName(HealthCheckResponse_ServingStatus, res.status),
      ms: Math.round(performance.now() - started),
    };
  } catch (error) {
    return {
      service: name,
      url: ctx.urls[name],
      status: "UNREACHABLE",
      ms: -1,
      error: (error as Error).message,
    };
  }
}

/**
 * The processes `npm start` supervises, from its stack.json: pid and restarts of each, or a note
 * saying why there is no such list here.
 */
function supervisedProcesses(ctx: CliContext) {
  const file = path.join(ctx.dataDir, "stack.json");
  let stack: ReturnType<typeof readStackFile>;
  try {
    stack = readStackFile(ctx.dataDir);
  } catch (error) {
    return { file, processes: [], note: `cannot read ${file}: ${(error as Error).message}` };
  }
  if (!stack?.processes) {
    return {
      file,
      processes: [],
      note: `no restarts to show: ${file} was not written by npm start (set TOOLMESH_DATA_DIR to its data directory)`,
    };
  }
  const processes = Object.entries(stack.processes).map(([name, p]) => ({ process: name, ...p }));
  return { file, processes, note: "" };
}

/**
 * A local or docker tool's rows in `toolmesh status`: the tool (instances running of its maximum,
 * and its warm minimum now; the starts warm or ahead instances saved), then one row per instance
 * (`#<id> <started for>`).
 */
function runtimeRowsOf(r: RuntimeStatus): string[][] {
  const running = r.instances.filter((i) => i.state === RuntimeState.RUNNING).length;
  const calls = r.instances.reduce((sum, i) => sum + i.calls, 0n);
  const pidOf = (pid: number, containerId: string) =>
    pid ? String(pid) : containerId ? containerId.slice(0, 12) : "-";
  return [
    [
      r.kind === "docker" ? `${r.tool} (docker)` : r.tool,
      enumName(RuntimeState, r.state),
      `${running}/${r.maxInstances || 1}${r.minInstances ? ` min ${r.minInstances}` : ""}`,
      pidOf(r.pid, r.containerId),
      r.port ? String(r.port) : "-",
      String(r.restarts),
      String(r.inFlight),
      String(calls),
      String(r.startsSaved),
      r.lastError || "-",
    ],
    ...r.instances.map((i) => [
      `  #${i.id} ${i.startedFor}`,
      enumName(RuntimeState, i.state),
      "",
      pidOf(i.pid, i.containerId),
      i.port ? String(i.port) : "-",
      String(i.restarts),
      String(i.inFlight),
      String(i.calls),
      "",
      i.lastError || "-",
    ]),
  ];
}

/** `toolmesh status`. */
export const status: Leaf = {
  summary:
    "every service's health, the restarts of each process, local and docker tools' instances, and the tool agent's tools, tasks, windows and IM",
  usage: "status",
  details: [
    "Exit code 1 when a service is not SERVING.",
    "Restarts are read from stack.json in TOOLMESH_DATA_DIR (.toolmesh), which npm start keeps current.",
  ],
  async run(ctx) {
    const [services, system] = await Promise.all([
      Promise.all((Object.keys(ctx.urls) as ServiceName[]).map((name) => health(ctx, name))),
      systemStatus(ctx),
    ]);
    let runtimes: ReturnType<typeof jsonOf>[] = [];
    let runtimeRows: string[][] = [];
    let runtimeNote = "";
    try {
      const res = await ctx
        .client("dispatcher", DispatcherService)
        .getRuntimeStatus({ tool: "" }, ctx.auth({ timeoutMs: 3000 }));
      runtimes = res.runtimes.map((r) => jsonOf(RuntimeStatusSchema, r));
      runtimeRows = res.runtimes.flatMap(runtimeRowsOf);
    } catch (error) {
      runtimeNote = `local tools unknown: ${(error as Error).message}`;
    }
    const healthy = services.every((s) => s.status === "SERVING");
    const supervised = supervisedProcesses(ctx);
    ctx.out.result(
      {
        services,
        processes: supervised.processes,
        ...(supervised.note ? { processesError: supervised.note } : {}),
        localTools: runtimes,
        ...(runtimeNote ? { localToolsError: runtimeNote } : {}),
        ...(system.status ? { system: systemStatusJson(system.status) } : {}),
        ...(system.error ? { systemError: system.error } : {}),
      },
      () => {
        ctx.out.table(
          ["SERVICE", "URL", "STATUS", "MS"],
          services.map((s) => [
            s.service,
            s.url,
            ctx.out.paint(s.status === "SERVING" ? "green" : "red", s.status),
            s.ms >= 0 ? String(s.ms) : "-",
          ]),
        );
        ctx.out.line();
        if (supervised.note) ctx.out.note(supervised.note);
        else
          ctx.out.table(
            ["PROCESS", "PID", "RESTARTS", "LAST RESTART", "LAST EXIT"],
            supervised.processes.map((p) => [
              p.process,
              p.pid ? String(p.pid) : ctx.out.paint("red", "down"),
              ctx.out.paint(p.restarts > 0 ? "yellow" : "green", String(p.restarts)),
              p.lastRestartAt?.replace(/\.\d{3}Z$/, "Z") ?? "-",
              p.lastExit ?? "-",
            ]),
          );
        ctx.out.line();
        if (runtimeNote) ctx.out.note(runtimeNote);
        else
          ctx.out.table(
            [
              "LOCAL TOOL",
              "STATE",
              "INSTANCES",
              "PID",
              "PORT",
              "RESTARTS",
              "IN FLIGHT",
              "CALLS",
              "STARTS SAVED",
              "LAST ERROR",
            ],
            runtimeRows,
          );
        ctx.out.line();
        if (system.status) printSystemStatus(ctx, system.status);
        else ctx.out.note(system.error ?? "");
      },
    );
    return healthy ? 0 : 1;
  },
};
