import type { Code } from "@toolmesh/errors";

/** One call of the cluster test's load: when it started and how it ended. */
export interface CallResult {
  callId: string;
  agent: string;
  startedAt: number;
  ms: number;
  /** acked: the Dispatcher answered SUCCESS; failed: any error (classified after recovery). */
  kind: "acked" | "failed";
  code?: Code;
  /** The request never reached a Dispatcher (its connection was refused). */
  neverSent?: boolean;
  /** The Dispatcher's refusal said the tool did not run. */
  saidNotRun?: boolean;
  /** The start of the error's message, for the failure tally. */
  message?: string;
}

/** A fault's window: from its first blow to the end of its recovery. */
export interface FaultWindow {
  name: string;
  from: number;
  to: number;
}

/** What a window's calls show: how many there were, the share acked and the p99 latency. */
export interface WindowFigures {
  name: string;
  calls: number;
  acked: number;
  availability: number;
  p99Ms: number;
  maxMs: number;
  seconds: number;
  /** Calls acked (answered SUCCESS) per second while the window lasted, whenever they started. */
  ackedPerSecond: number;
}

/** The pth percentile (0–100) of a list of numbers; 0 for none. */
export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

/** The figures of the calls that started inside a window. */
export function figuresOf(results: CallResult[], window: FaultWindow): WindowFigures {
  const inside = results.filter((r) => r.startedAt >= window.from && r.startedAt < window.to);
  const acked = inside.filter((r) => r.kind === "acked");
  const seconds = (window.to - window.from) / 1000;
  const finished = results.filter(
    (r) =>
      r.kind === "acked" && r.startedAt + r.ms >= window.from && r.startedAt + r.ms < window.to,
  ).length;
  return {
    name: window.name,
    calls: inside.length,
    acked: acked.length,
    availability: inside.length === 0 ? 1 : acked.length / inside.length,
    // Over every call, refused ones included: a fault that makes calls hang shows here.
    p99Ms: Math.round(
      percentile(
        inside.map((r) => r.ms),
        99,
      ),
    ),
    maxMs: Math.round(Math.max(0, ...inside.map((r) => r.ms))),
    seconds: Math.round(seconds * 10) / 10,
    ackedPerSecond: Number.isFinite(seconds) ? Math.round(finished / seconds) : 0,
  };
}

/** A table line per window, for the test's output and the closing note. */
export function formatFigures(rows: WindowFigures[]): string {
  const lines = [
    "| fault | calls started | acked | availability | p99 ms | max ms | seconds | acked per second |",
    "|---|---|---|---|---|---|---|---|",
  ];
  for (const r of rows) {
    const rate = Number.isFinite(r.seconds) ? String(r.ackedPerSecond) : "";
    lines.push(
      `| ${r.name} | ${r.calls} | ${r.acked} | ${(r.availability * 100).toFixed(1)}% | ${r.p99Ms} | ${r.maxMs} | ${Number.isFinite(r.seconds) ? r.seconds : ""} | ${rate} |`,
    );
  }
  return lines.join("\n");
}
