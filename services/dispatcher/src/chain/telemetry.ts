import { CallStatus, statusName } from "@toolmesh/proto";
import {
  counter,
  endWithError,
  histogram,
  type Span,
  SpanStatusCode,
  type Tracing,
  traceparentOf,
} from "@toolmesh/telemetry";
import type { AttemptResult } from "../runtimes/runtime.js";

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
