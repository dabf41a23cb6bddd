import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { CircuitState, type CircuitStatus, CircuitStatusSchema } from "@toolmesh/proto";

/** When a breaker opens and for how long. */
export interface BreakerSettings {
  /** Failures in a row that open it; 0 never opens. */
  failures: number;
  openMs: number;
}

/** Failed calls remembered for the record of an opening. */
const FAILED_CALLS_KEPT = 20;

/** What a breaker tells when it opens: enough for its audit record. */
export interface BreakerOpening {
  failures: number;
  retryAtMs: number;
  lastError: string;
  lastErrorCode: string;
  failedCalls: string[];
}

/** Whether a call may go through: yes, yes as the half-open probe, or no until `retryAtMs`. */
export type Admission =
  | { admitted: true; probe: boolean }
  | { admitted: false; retryAtMs: number; failures: number; lastError: string };

/**
 * One circuit breaker (a tool's, or one instance's): closed, it counts failures in a row; at
 * `failures` it opens and refuses calls until `openMs` have passed; then one probe call goes
 * through (half-open), whose success closes it and whose failure opens it again. Calls that
 * were running when it opened settle without changing it.
 */
export class CircuitBreaker {
  private state = CircuitState.CLOSED;
  private consecutive = 0;
  private opens = 0;
  private openedAtMs = 0;
  private retryAtMs = 0;
  private probing = false;
  private lastError = "";
  private lastErrorCode = "";
  private failedCalls: string[] = [];

  constructor(
    public settings: BreakerSettings,
    private readonly now: () => number = Date.now,
  ) {}

  /** Whether the breaker is closed with no failure counted: nothing to show. */
  get quiet(): boolean {
    return this.state === CircuitState.CLOSED && this.opens === 0 && this.consecutive === 0;
  }

  /** Asks to send one call; a half-open breaker admits one probe at a time. */
  admit(): Admission {
    if (this.state === CircuitState.CLOSED) return { admitted: true, probe: false };
    if (this.state === CircuitState.OPEN && this.now() >= this.retryAtMs)
      this.state = CircuitState.HALF_OPEN;
    if (this.state === CircuitState.HALF_OPEN && !this.probing) {
      this.probing = true;
      return { admitted: true, probe: true };
    }
    return {
      admitted: false,
      retryAtMs: Math.max(this.retryAtMs, this.now()),
      failures: this.consecutive,
      lastError: this.lastError,
    };
  }

  /** A probe that was admitted but never sent (the call was refused later): the next may go. */
  unprobe(): void {
    this.probing = false;
  }

  /** A call succeeded: the run of failures ends, and a probe's success closes the breaker. */
  succeeded(probe: boolean): void {
    if (probe) this.probing = false;
    if (this.state === CircuitState.OPEN) return;
    this.state = CircuitState.CLOSED;
    this.consecutive = 0;
    this.failedCalls = [];
  }

  /**
   * A call failed (`code`: its error code or `timeout`); returns the opening when this failure
   * opened the breaker (a failed probe always does).
   */
  failed(
    probe: boolean,
    code: string,
    message: string,
    callId: string,
  ): BreakerOpening | undefined {
    if (probe) this.probing = false;
    if (this.state === CircuitState.OPEN) return undefined;
    this.consecutive++;
    this.lastErrorCode = code;
    this.lastError = `${code}: ${message}`.slice(0, 500);
    if (callId) this.failedCalls = [...this.failedCalls, callId].slice(-FAILED_CALLS_KEPT);
    const limit = this.settings.failures;
    if (!probe && (limit <= 0 || this.consecutive < limit)) return undefined;
    this.state = CircuitState.OPEN;
    this.opens++;
    this.openedAtMs = this.now();
    this.retryAtMs = this.openedAtMs + this.settings.openMs;
    return {
      failures: this.consecutive,
      retryAtMs: this.retryAtMs,
      lastError: this.lastError,
      lastErrorCode: this.lastErrorCode,
      failedCalls: [...this.failedCalls],
    };
  }

  /** Closes it at once (its instance was replaced, or an operator restarted the tool). */
  reset(): void {
    this.state = CircuitState.CLOSED;
    this.consecutive = 0;
    this.probing = false;
    this.failedCalls = [];
  }

  status(): CircuitStatus {
    // An open breaker past its time is half-open to the next call; show it so.
    const state =
      this.state === CircuitState.OPEN && this.now() >= this.retryAtMs
        ? CircuitState.HALF_OPEN
        : this.state;
    return create(CircuitStatusSchema, {
      state,
      consecutiveFailures: this.consecutive,
      opens: this.opens,
      lastError: this.lastError,
      failedCalls: this.failedCalls,
      ...(this.openedAtMs ? { openedAt: timestampFromMs(this.openedAtMs) } : {}),
      ...(state !== CircuitState.CLOSED ? { retryAt: timestampFromMs(this.retryAtMs) } : {}),
    });
  }
}
