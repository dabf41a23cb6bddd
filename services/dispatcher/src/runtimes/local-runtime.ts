import { create } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import {
  LocalProtocol,
  type LocalRuntime as LocalRuntimeSpec,
  RuntimeState,
  type RuntimeStatus,
  RuntimeStatusSchema,
} from "@toolmesh/proto";
import { failure, type GrpcRuntime } from "./grpc-runtime.js";
import { LocalProcess, type LocalSettings } from "./local-process.js";
import type { RemoteRuntime } from "./remote-runtime.js";
import type { Attempt, AttemptResult, ToolRuntime } from "./runtime.js";

export { type LocalSettings, LocalStartError } from "./local-process.js";

/**
 * Tools whose backend is a command the Dispatcher starts on demand on a free port
 * (TOOLMESH_TOOL_PORT), health-checks, restarts on crash with backoff and stops when idle.
 */
export class LocalRuntime implements ToolRuntime {
  private readonly processes = new Map<string, LocalProcess>();

  constructor(
    private readonly grpcRuntime: GrpcRuntime,
    private readonly remote: RemoteRuntime,
    private readonly settings: LocalSettings,
    private readonly log: Logger,
  ) {}

  async invoke(attempt: Attempt): Promise<AttemptResult> {
    const kind = attempt.tool.spec?.runtime?.kind;
    if (kind?.case !== "local") {
      return failure("backend_misconfigured", "the tool has no local command", false);
    }
    const proc = this.processOf(attempt.tool.spec?.name ?? "", kind.value);
    try {
      await proc.acquire(attempt.signal);
    } catch {
      return failure(
        "interrupted",
        "the call was interrupted while waiting for a free slot",
        false,
      );
    }
    try {
      let port: number;
      try {
        port = await proc.ensureRunning(attempt.signal);
      } catch (error) {
        if (attempt.signal.aborted)
          return failure("interrupted", "the call was interrupted", false);
        return failure(
          "backend_unavailable",
          `the local tool did not start: ${error instanceof Error ? error.message : String(error)}`,
          true,
        );
      }
      if (kind.value.protocol === LocalProtocol.HTTP) {
        const path = kind.value.httpPath || "/invoke";
        return await this.remote.post(`http://127.0.0.1:${port}${path}`, {}, attempt);
      }
      return await this.grpcRuntime.invokeAt(`127.0.0.1:${port}`, attempt);
    } finally {
      proc.release();
    }
  }

  /** Status of one tool's process, or of every local tool seen. */
  statuses(tool?: string): RuntimeStatus[] {
    if (tool !== undefined) {
      const proc = this.processes.get(tool);
      return [
        proc ? proc.status() : create(RuntimeStatusSchema, { tool, state: RuntimeState.STOPPED }),
      ];
    }
    return [...this.processes.values()].map((p) => p.status());
  }

  /** Starts a tool's process now and waits until it is healthy. */
  async start(tool: string, spec: LocalRuntimeSpec): Promise<RuntimeStatus> {
    const proc = this.processOf(tool, spec);
    await proc.ensureRunning(new AbortController().signal);
    return proc.status();
  }

  /** Stops a tool's process. */
  async stop(tool: string): Promise<RuntimeStatus> {
    const proc = this.processes.get(tool);
    if (!proc) return create(RuntimeStatusSchema, { tool, state: RuntimeState.STOPPED });
    await proc.stop();
    return proc.status();
  }

  private processOf(tool: string, spec: LocalRuntimeSpec): LocalProcess {
    let proc = this.processes.get(tool);
    if (!proc) {
      proc = new LocalProcess(
        tool,
        spec,
        this.settings,
        this.grpcRuntime,
        this.log.child({ tool }),
      );
      this.processes.set(tool, proc);
    } else {
      proc.spec = spec;
    }
    return proc;
  }

  async close(): Promise<void> {
    await Promise.all([...this.processes.values()].map((p) => p.stop()));
  }
}
