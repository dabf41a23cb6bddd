import type { JsonObject } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import {
  AuditService,
  CallbackEventSchema,
  CallbackService,
  CallStatus,
  DispatchBatchRequestSchema,
  DispatchBatchResponseSchema,
  DispatcherService,
  DispatchResponseSchema,
  finalStatuses,
  statusWord,
  TraceEventKind,
  TraceEventSchema,
} from "@toolmesh/proto";
import {
  callStatus,
  enumName,
  flag,
  jsonOf,
  type Leaf,
  messageFrom,
  readDocument,
  when,
} from "../command.js";
import { UsageError } from "../context.js";
import { statusColour } from "../output.js";
import { buildWaterfall } from "../waterfall.js";

/** `toolmesh call <tool> '<json>'`. */
export const call: Leaf = {
  summary: "call a tool through the whole chain and print its outcome",
  usage: "call <tool> ['<json arguments>'] [--timeout MS] [--trace-id ID] [--idempotency-key K]",
  details: [
    "Exit code 0 when the tool succeeded, 1 when it failed or was refused (a bad argument prints",
    "one line a path), 2 for a usage mistake.",
    `Example: toolmesh call data.query '{"limit": 3}'`,
  ],
  args: [1, 2],
  options: {
    timeout: { type: "string" },
    "trace-id": { type: "string" },
    "idempotency-key": { type: "string" },
  },
  async run(ctx, [tool, text], flags) {
    let args: JsonObject = {};
    if (text !== undefined) {
      try {
        args = JSON.parse(text);
      } catch (error) {
        throw new UsageError(
          `the arguments are not JSON: ${(error as Error).message}; quote them, e.g. '{"limit": 3}'`,
        );
      }
      if (args === null || typeof args !== "object" || Array.isArray(args))
        throw new UsageError("the arguments must be a JSON object, e.g. '{\"limit\": 3}'");
    }
    const timeout = flag(flags, "timeout");
    if (timeout !== undefined && !/^\d+$/.test(timeout))
      throw new UsageError(`--timeout is milliseconds, a whole number; got "${timeout}"`);
    const res = await ctx.client("dispatcher", DispatcherService).dispatch(
      {
        tool,
        arguments: args,
        timeoutMs: Number(timeout ?? 0),
        context: {
          traceId: flag(flags, "trace-id") ?? "",
          idempotencyKey: flag(flags, "idempotency-key") ?? "",
        },
      },
      ctx.auth(),
    );
    const status = enumName(CallStatus, res.status);
    ctx.out.result(jsonOf(DispatchResponseSchema, res), () => {
      ctx.out.note(
        `${ctx.out.paint(statusColour(status), status)} ${tool} in ${res.durationMs} ms (attempts ${res.attempts}) call ${res.callId} trace ${res.traceId}`,
      );
      if (res.error) ctx.out.error(`${res.error.code}: ${res.error.message}`);
      else ctx.out.line(JSON.stringify(res.output ?? {}, null, 2));
    });
    return res.status === CallStatus.SUCCESS ? 0 : 1;
  },
};

/** `toolmesh batch -f calls.json`. */
export const batch: Leaf = {
  summary: "run several calls in one batch (read-only in parallel, side effects in order)",
  usage: "batch -f calls.yaml",
  details: [
    "The file holds a DispatchBatchRequest, or just its list of calls:",
    "  - {tool: data.query, arguments: {limit: 3}}",
    "  - {tool: mail.send, arguments: {to: ops@example.com}}",
  ],
  options: { file: { type: "string", short: "f" } },
  async run(ctx, _args, flags) {
    const file = flag(flags, "file");
    const doc = readDocument(file, "calls");
    const request = messageFrom(
      DispatchBatchRequestSchema,
      Array.isArray(doc) ? { calls: doc } : doc,
      file ?? "",
    );
    const res = await ctx
      .client("dispatcher", DispatcherService)
      .dispatchBatch(request, ctx.auth());
    ctx.out.result(jsonOf(DispatchBatchResponseSchema, res), () => {
      ctx.out.note(`batch trace ${res.traceId}`);
      ctx.out.table(
        ["#", "TOOL", "STATUS", "MS", "CALL", "ERROR"],
        res.results.map((r, i) => {
          const status = enumName(CallStatus, r.status);
          return [
            String(i + 1),
            request.calls[i]?.tool ?? "",
            ctx.out.paint(statusColour(status), status),
            String(r.durationMs),
            r.callId,
            r.error ? `${r.error.code}: ${r.error.message.split("\n")[0]}` : "",
          ];
        }),
      );
    });
    return res.results.every((r) => r.status === CallStatus.SUCCESS) ? 0 : 1;
  },
};

/** `toolmesh trace <trace_id>`: the waterfall in the terminal. */
export const trace: Leaf = {
  summary: "show a trace's events as a waterfall",
  usage: "trace <trace-id>",
  args: [1, 1],
  async run(ctx, [traceId]) {
    const res = await ctx.client("audit", AuditService).getTrace({ traceId }, ctx.auth());
    const events = res.events.map((e) => ({
      kind: enumName(TraceEventKind, e.kind),
      timeMs: e.time ? timestampMs(e.time) : 0,
      callId: e.callId,
      tool: e.tool,
      customKind: e.customKind,
    }));
    const waterfall = buildWaterfall(events);
    ctx.out.result(
      { traceId, events: res.events.map((e) => jsonOf(TraceEventSchema, e)), waterfall },
      () => {
        ctx.out.note(`trace ${traceId}: ${events.length} events over ${waterfall.totalMs} ms`);
        const width = 40;
        const scale = width / Math.max(waterfall.totalMs, 1);
        const label = Math.max(...waterfall.rows.map((r) => r.label.length), 4);
        const tool = Math.max(...waterfall.rows.map((r) => r.tool.length), 4);
        for (const row of waterfall.rows) {
          const start = Math.min(Math.round(row.offsetMs * scale), width - 1);
          const length = Math.max(1, Math.min(Math.round(row.durationMs * scale), width - start));
          const bar =
            `${" ".repeat(start)}${(row.durationMs > 0 ? "█" : "▏").repeat(length)}`.padEnd(width);
          const colour = row.kind.startsWith("CALLBACK_")
            ? statusColour(row.kind)
            : row.kind === "TOOL_REFUSED"
              ? "red"
              : "blue";
          ctx.out.line(
            `${`+${row.offsetMs}ms`.padStart(8)}  ${row.label.padEnd(label)}  ${row.tool.padEnd(tool)}  |${ctx.out.paint(colour, bar)}|  ${row.durationMs ? `${row.durationMs} ms` : ""}`.trimEnd(),
          );
        }
      },
    );
    return 0;
  },
};

/** `toolmesh tail`: call outcomes as they happen. */
export const tail: Leaf = {
  summary: "follow call outcomes live (Ctrl-C stops)",
  usage: `tail [--agent ID] [--tool NAME] [--status ${finalStatuses.map(statusWord).join("|")}] [--count N]`,
  details: ["--count N exits after N outcomes; --json prints one JSON object a line."],
  options: {
    agent: { type: "string" },
    tool: { type: "string" },
    status: { type: "string" },
    count: { type: "string" },
  },
  async run(ctx, _args, flags) {
    const count = flag(flags, "count");
    if (count !== undefined && !/^[1-9]\d*$/.test(count))
      throw new UsageError(`--count must be a positive whole number; got "${count}"`);
    const abort = new AbortController();
    process.once("SIGINT", () => abort.abort());
    let seen = 0;
    const filter = {
      agentId: flag(flags, "agent") ?? "",
      tool: flag(flags, "tool") ?? "",
      status: callStatus(flag(flags, "status")),
    };
    // Watch needs a filter; with none, follow each final status and merge the streams.
    const unfiltered = filter.agentId === "" && filter.tool === "" && filter.status === 0;
    const statuses = unfiltered ? finalStatuses : [filter.status];
    const stream = merge(
      statuses.map((status) =>
        ctx
          .client("callback", CallbackService)
          .watch({ ...filter, status }, ctx.auth({ signal: abort.signal })),
      ),
    );
    ctx.out.note("watching outcomes; Ctrl-C stops");
    try {
      for await (const res of stream) {
        const e = res.event;
        if (!e) continue;
        if (ctx.out.json) ctx.out.line(JSON.stringify(jsonOf(CallbackEventSchema, e)));
        else {
          const status = enumName(CallStatus, e.status);
          ctx.out.line(
            `${when(e.time)}  ${ctx.out.paint(statusColour(status), status.padEnd(11))}  ${e.tool}  agent ${e.agentId}  ${e.durationMs} ms  call ${e.callId}  trace ${e.traceId}${e.error ? `  ${e.error.code}` : ""}`,
          );
        }
        if (count !== undefined && ++seen >= Number(count)) break;
      }
    } catch (error) {
      if (!abort.signal.aborted) throw error;
    }
    return 0;
  },
};

/** Items of several streams as each arrives; ends when all have ended, throws the first error. */
async function* merge<T>(streams: AsyncIterable<T>[]): AsyncGenerator<T> {
  const iterators = streams.map((s) => s[Symbol.asyncIterator]());
  const next = (i: number) =>
    (iterators[i] as AsyncIterator<T>).next().then((result) => ({ i, result }));
  const pending = new Map(iterators.map((_, i) => [i, next(i)]));
  try {
    while (pending.size > 0) {
      const { i, result } = await Promise.race(pending.values());
      if (result.done) pending.delete(i);
      else {
        pending.set(i, next(i));
        yield result.value;
      }
    }
  } finally {
    for (const iterator of iterators) void iterator.return?.();
  }
}
