import { createContextKey, type Interceptor } from "@connectrpc/connect";
import { CallStatus, statusName } from "@toolmesh/proto";
import {
  counter,
  endWithError,
  gauge,
  histogram,
  type Span,
  SpanStatusCode,
  type Tracing,
  traceparentOf,
} from "@toolmesh/telemetry";
import type { AttemptResult } from "./runtimes/runtime.js";

/** The Dispatcher's metrics; names follow Prometheus conventions. */
export function dispatcherMetrics() {
  return {
    calls: counter("toolmesh_dispatcher_calls_total", "Calls that ran a tool, by tool and status", [
      "tool",
      "status",
    ]),
    duration: histogram(
      "toolmesh_dispatcher_call_duration_seconds",
      "Time from a call's arrival to its reply, records included, by tool and status",
      ["tool", "status"],
    ),
    refusals: counter(
      "toolmesh_dispatcher_refusals_total",
      "Calls refused before their tool ran, by gRPC code",
      ["code"],
    ),
    retries: counter(
      "toolmesh_dispatcher_retries_total",
      "Attempts after the first, by tool (idempotent tools with transient failures)",
      ["tool"],
    ),
  };
}

/** Counts a local tool's process restarting after it crashed. */
export const localToolRestarts = () =>
  counter(
    "toolmesh_dispatcher_local_tool_restarts_total",
    "Local tool processes and docker tool containers restarted after they exited on their own, by tool",
    ["tool"],
  );

/** A snapshot of a KV bucket: whether it is loaded, and its changes. */
interface WatchedSnapshot {
  readonly isReady: boolean;
  onChange(listener: () => void): () => void;
}

/**
 * Gauges of the Dispatcher's snapshots, read at each scrape: loaded or not, and seconds since
 * the last change arrived (a quiet bucket ages too; a stuck watch shows as ready with no change
 * after a known write). Returns a function that stops watching.
 */
export function watchSnapshotMetrics(snapshots: Record<string, WatchedSnapshot>): () => void {
  const lastChange = new Map<string, number>();
  const stops = Object.entries(snapshots).map(([name, snapshot]) => {
    lastChange.set(name, Date.now());
    return snapshot.onChange(() => lastChange.set(name, Date.now()));
  });
  const live = snapshots;
  current = { live, lastChange };
  snapshotGauges();
  return () => {
    for (const stop of stops) stop();
    if (current?.live === live) current = undefined;
  };
}

let current: { live: Record<string, WatchedSnapshot>; lastChange: Map<string, number> } | undefined;

/** Defines the snapshot gauges once; they read whichever snapshots the process follows now. */
function snapshotGauges(): void {
  gauge(
    "toolmesh_dispatcher_snapshot_ready",
    "1 when the snapshot of a bucket has loaded",
    ["snapshot"],
    function collect() {
      this.reset();
      for (const [name, s] of Object.entries(current?.live ?? {}))
        this.set({ snapshot: name }, s.isReady ? 1 : 0);
    },
  );
  gauge(
    "toolmesh_dispatcher_snapshot_age_seconds",
    "Seconds since the snapshot of a bucket last received a change",
    ["snapshot"],
    function collect() {
      this.reset();
      for (const [name, at] of current?.lastChange ?? [])
        this.set({ snapshot: name }, (Date.now() - at) / 1000);
    },
  );
}

/** When authentication of an RPC began (epoch ms), set before the auth interceptor runs. */
export const AUTH_STARTED = createContextKey<number | undefined>(undefined, {
  description: "toolmesh auth started (epoch ms)",
});

/** Notes when authentication begins, so a call's root span and its auth step start there. */
export const authTimingInterceptor: Interceptor = (next) => (req) => {
  req.contextValues.set(AUTH_STARTED, Date.now());
  return next(req);
};

/** Where a call's spans start: the caller's traceparent and when authentication began. */
export interface CallTraceContext {
  /** The caller's W3C traceparent header. */
  traceparent?: string | undefined;
  /** Epoch ms authentication of the RPC began (the root span starts there). */
  authStartedMs?: number | undefined;
}

/**
 * The spans of one call: a root `toolmesh.dispatch` span with one child per chain step (auth,
 * resolve, validate, authorise, execute with an `attempt` child per attempt, record). Steps
 * follow each other, so starting one ends the one before.
 */
export class CallSpans {
  private readonly root: Span;
  private current: Span | undefined;
  private execute: Span | undefined;

  constructor(
    private readonly tracing: Tracing,
    call: { traceId: string; callId: string; tool: string; agentId: string },
    context: CallTraceContext,
  ) {
    const now = Date.now();
    const started = Math.min(context.authStartedMs ?? now, now);
    this.root = tracing.startRoot("toolmesh.dispatch", {
      traceId: call.traceId,
      traceparent: context.traceparent,
      startTime: started,
      attributes: {
        "toolmesh.call_id": call.callId,
        "toolmesh.tool": call.tool,
        "toolmesh.agent_id": call.agentId,
      },
    });
    if (context.authStartedMs !== undefined)
      tracing.startChild(this.root, "auth", undefined, started).end(now);
  }

  /** Ends the running step and starts `name`. */
  step(name: string): void {
    this.current?.end();
    this.current = this.tracing.startChild(this.root, name);
    if (name === "execute") this.execute = this.current;
  }

  /** A child of the execute step for one attempt, and the traceparent its backend receives. */
  attempt(n: number): { traceparent: string; end(result: AttemptResult): void } {
    const span = this.tracing.startChild(this.execute ?? this.root, "attempt", {
      "toolmesh.attempt": n,
    });
    return {
      traceparent: traceparentOf(span),
      end(result) {
        if (result.ok) span.end();
        else
          endWithError(span, result.error.message, {
            "toolmesh.error_code": result.error.code,
            "toolmesh.transient": result.transient,
          });
      },
    };
  }

  /** The call was refused: the running step and the root end in error. */
  refused(code: string, message: string): void {
    if (this.current) endWithError(this.current, message);
    this.current = undefined;
    this.root.setAttribute("toolmesh.refusal_code", code);
    this.root.setStatus({ code: SpanStatusCode.ERROR, message });
  }

  /** Ends the last step and the root with the call's status. */
  end(status: CallStatus): void {
    this.current?.end();
    this.current = undefined;
    this.root.setAttribute("toolmesh.status", statusName(status));
    if (status !== CallStatus.SUCCESS && status !== CallStatus.REFUSED)
      this.root.setStatus({ code: SpanStatusCode.ERROR, message: statusName(status) });
    this.root.end();
  }
}
