import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { Code, retryLater } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { newCallId } from "@toolmesh/names";
import {
  CallStatus,
  CircuitOpenSchema,
  CircuitState,
  type ToolCircuit,
  ToolCircuitSchema,
  type ToolSpec,
} from "@toolmesh/proto";
import { counter, gauge } from "@toolmesh/telemetry";
import type { CallEnd } from "../records/call-end.js";
import type { CallRecorder } from "../records/call-recorder.js";
import {
  type BreakerOpening,
  type BreakerSettings,
  CircuitBreaker,
} from "../runtimes/circuit-breaker.js";
import { Refusal } from "./refusal.js";

/** Breakers kept at most; past it the quiet ones (closed, never opened) are dropped. */
const MAX_BREAKERS = 10_000;

const circuitMetrics = () => ({
  opens: counter(
    "toolmesh_dispatcher_circuit_opens_total",
    "Circuit breakers opened, by tool and scope (`tool`, or `instance` of a local or docker tool)",
    ["tool", "scope"],
  ),
});

/** A breaker's opening as the Dispatcher records and announces it. */
export interface CircuitOpened {
  tool: string;
  /** The instance of a local or docker tool whose own breaker opened; empty for the tool's. */
  toolInstance: string;
  opening: BreakerOpening;
}

/**
 * Records a breaker's opening (an audit record of its own, CIRCUIT_OPENED), counts and logs it:
 * one place for the tool's breakers and the instances' alike.
 */
export function circuitOpenedRecorder(recorder: CallRecorder, log: Logger) {
  const metrics = circuitMetrics();
  return (opened: CircuitOpened): void => {
    const { tool, toolInstance, opening } = opened;
    const seconds = Math.max(0, Math.round((opening.retryAtMs - Date.now()) / 1000));
    const what = toolInstance ? `instance ${toolInstance} of tool "${tool}"` : `tool "${tool}"`;
    const reason = `circuit breaker of ${what} opened after ${opening.failures} failures in a row; ${toolInstance ? "the instance is replaced" : `calls fail fast until ${new Date(opening.retryAtMs).toISOString()} (${seconds} s), then one probe call goes through`}`;
    metrics.opens.inc({ tool, scope: toolInstance ? "instance" : "tool" });
    log.warn(
      {
        tool,
        tool_instance: toolInstance || undefined,
        failures: opening.failures,
        last_error: opening.lastError,
      },
      "circuit breaker opened",
    );
    void recorder
      .circuitOpened({
        id: `circuit-${newCallId()}`,
        tool,
        toolInstance,
        reason,
        errorCode: opening.lastErrorCode,
        errorMessage: opening.lastError,
        failedCalls: opening.failedCalls,
      })
      .catch((error: unknown) =>
        log.error({ err: error, tool }, "could not record a circuit breaker opening"),
      );
  };
}

/**
 * The circuit breakers of tools on this Dispatcher, made at a tool's first failure: a tool whose
 * calls keep failing (FAILURE, or a timeout) is refused fast with UNAVAILABLE until its breaker
 * lets a probe through. `onOpened` hears each opening (it is recorded and, for a local or docker
 * tool, restarts its instances).
 */
export class ToolBreakers {
  private readonly breakers = new Map<string, CircuitBreaker>();

  constructor(
    private readonly defaults: BreakerSettings,
    private readonly onOpened: (opened: CircuitOpened) => void,
    private readonly now: () => number = Date.now,
  ) {
    const breakers = this.breakers;
    gauge(
      "toolmesh_dispatcher_circuit_state",
      "State of each tool's circuit breaker that has failed: 0 closed, 1 open, 2 half-open",
      ["tool"],
      function collect() {
        this.reset();
        for (const [tool, breaker] of breakers) {
          const state = breaker.status().state;
          this.set(
            { tool },
            state === CircuitState.OPEN ? 1 : state === CircuitState.HALF_OPEN ? 2 : 0,
          );
        }
      },
    );
  }

  /** The settings a tool's spec gives its breaker, over the Dispatcher's defaults. */
  settingsOf(spec: ToolSpec): BreakerSettings {
    const own = spec.circuitBreaker;
    if (own?.disabled) return { failures: 0, openMs: 0 };
    return {
      failures: own?.failures || this.defaults.failures,
      openMs: own?.openMs || this.defaults.openMs,
    };
  }

  /**
   * Lets a call through, or refuses it with UNAVAILABLE, a CircuitOpen detail and RetryInfo;
   * true when it is the half-open breaker's probe.
   */
  admit(spec: ToolSpec): boolean {
    const breaker = this.breakers.get(spec.name);
    if (!breaker) return false; // never failed: the common case costs one map lookup
    breaker.settings = this.settingsOf(spec);
    const admission = breaker.admit();
    if (admission.admitted) return admission.probe;
    const waitMs = admission.retryAtMs - this.now();
    const seconds = Math.max(1, Math.ceil(waitMs / 1000));
    throw new Refusal(
      retryLater(
        `tool "${spec.name}" is failing (${admission.failures} calls in a row; last ${admission.lastError}); its circuit breaker is open and calls are not sent to it: retry in ${seconds} s`,
        waitMs,
        {
          code: Code.Unavailable,
          details: [
            {
              desc: CircuitOpenSchema,
              value: create(CircuitOpenSchema, {
                tool: spec.name,
                retryAt: timestampFromMs(admission.retryAtMs),
                failures: admission.failures,
                lastError: admission.lastError,
              }),
            },
          ],
        },
      ),
      `circuit open until ${new Date(admission.retryAtMs).toISOString()}`,
    );
  }

  /** An admitted probe that did not run after all. */
  unprobe(tool: string): void {
    this.breakers.get(tool)?.unprobe();
  }

  /**
   * Counts how a call that ran ended: SUCCESS ends a run of failures (and closes a half-open
   * breaker), FAILURE or a timeout adds to it; anything else (cancelled, still pending) neither.
   */
  settle(spec: ToolSpec, end: CallEnd, callId: string, probe: boolean): void {
    const failed =
      end.status === CallStatus.FAILURE ||
      (end.status === CallStatus.INTERRUPTED && end.reason === "timeout");
    let breaker = this.breakers.get(spec.name);
    if (end.status === CallStatus.SUCCESS) {
      breaker?.succeeded(probe);
      return;
    }
    if (!failed) {
      if (probe) breaker?.unprobe();
      return;
    }
    if (!breaker) {
      if (this.breakers.size >= MAX_BREAKERS) this.dropQuiet();
      breaker = new CircuitBreaker(this.settingsOf(spec), this.now);
      this.breakers.set(spec.name, breaker);
    }
    breaker.settings = this.settingsOf(spec);
    const code = end.error?.code || (end.status === CallStatus.INTERRUPTED ? "timeout" : "failure");
    const opening = breaker.failed(probe, code, end.error?.message ?? "", callId);
    if (opening) this.onOpened({ tool: spec.name, toolInstance: "", opening });
  }

  /** Closes a tool's breaker: an operator started the tool afresh (StartTool). */
  reset(tool: string): void {
    this.breakers.get(tool)?.reset();
  }

  /** The breakers of every tool that failed, or of one. */
  statuses(tool?: string): ToolCircuit[] {
    const entries =
      tool === undefined ? [...this.breakers] : [[tool, this.breakers.get(tool)] as const];
    return entries
      .filter((e): e is [string, CircuitBreaker] => e[1] !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([name, breaker]) =>
        create(ToolCircuitSchema, { tool: name, breaker: breaker.status() }),
      );
  }

  private dropQuiet(): void {
    for (const [tool, breaker] of this.breakers) if (breaker.quiet) this.breakers.delete(tool);
  }
}
