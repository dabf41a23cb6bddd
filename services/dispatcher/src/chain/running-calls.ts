/** Why a running call was stopped. */
export type InterruptReason = "timeout" | "cancelled" | "shutdown";

interface RunningCall {
  agentId: string;
  tool: string;
  interrupt(reason: InterruptReason): void;
}

/** Calls running in this process, so Cancel and shutdown can interrupt them. */
export class RunningCalls {
  private readonly calls = new Map<string, RunningCall>();

  add(callId: string, call: RunningCall): void {
    this.calls.set(callId, call);
  }

  delete(callId: string): void {
    this.calls.delete(callId);
  }

  get(callId: string): RunningCall | undefined {
    return this.calls.get(callId);
  }

  get size(): number {
    return this.calls.size;
  }

  /** Interrupts every running call (shutdown). */
  interruptAll(reason: InterruptReason): void {
    for (const call of this.calls.values()) call.interrupt(reason);
  }
}
