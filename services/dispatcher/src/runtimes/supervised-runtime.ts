import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import {
  LocalProtocol,
  RuntimeState,
  type RuntimeStatus,
  RuntimeStatusSchema,
  type Tool,
} from "@toolmesh/proto";
import type { CallSecretValues } from "./call-secrets.js";
import { failure, type GrpcRuntime } from "./grpc-runtime.js";
import type { RemoteRuntime } from "./remote-runtime.js";
import type { Attempt, AttemptResult, ToolRuntime } from "./runtime.js";
import {
  type Launch,
  SupervisedBackend,
  type SupervisedSpec,
  type SupervisorSettings,
  ToolStartError,
} from "./supervised-backend.js";

/** A spec of a runtime whose backend the Dispatcher runs itself. */
export interface RunnableSpec extends SupervisedSpec {
  httpPath: string;
}

/** What distinguishes one supervised runtime kind (local processes, docker containers). */
export interface SupervisedKind<S extends RunnableSpec> {
  /** How users call it in messages: "local tool", "docker tool". */
  noun: string;
  /** The tool's spec of this kind, or undefined when the tool has another runtime. */
  specOf(tool: Tool): S | undefined;
  /** Starts a backend for a tool, with the caller's secrets when the tool names some. */
  launcher(tool: string, log: Logger, secrets?: CallSecretValues): Launch<S>;
}

/**
 * Tools whose backend the Dispatcher starts on demand on 127.0.0.1, health-checks, restarts on
 * crash with backoff and stops when idle; calls reach it over gRPC or HTTP.
 */
export class SupervisedRuntime<S extends RunnableSpec> implements ToolRuntime {
  private readonly backends = new Map<string, SupervisedBackend<S>>();

  constructor(
    private readonly kind: SupervisedKind<S>,
    private readonly grpcRuntime: GrpcRuntime,
    private readonly remote: RemoteRuntime,
    private readonly settings: SupervisorSettings,
    private readonly log: Logger,
  ) {}

  async invoke(attempt: Attempt): Promise<AttemptResult> {
    const spec = this.kind.specOf(attempt.tool);
    if (!spec) {
      return failure("backend_misconfigured", `the tool is not a ${this.kind.noun}`, false);
    }
    const backend = this.backendOf(attempt.tool.spec?.name ?? "", spec, attempt.secrets);
    try {
      await backend.acquire(attempt.signal);
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
        port = await backend.ensureRunning(attempt.signal);
      } catch (error) {
        if (attempt.signal.aborted)
          return failure("interrupted", "the call was interrupted", false);
        return failure(
          "backend_unavailable",
          `the ${this.kind.noun} did not start: ${error instanceof Error ? error.message : String(error)}`,
          true,
        );
      }
      if (spec.protocol === LocalProtocol.HTTP) {
        const path = spec.httpPath || "/invoke";
        return await this.remote.post(`http://127.0.0.1:${port}${path}`, {}, attempt);
      }
      return await this.grpcRuntime.invokeAt(`127.0.0.1:${port}`, attempt);
    } finally {
      backend.release();
    }
  }

  /** Whether a tool's backend is of this runtime's kind. */
  runs(tool: Tool): boolean {
    return this.kind.specOf(tool) !== undefined;
  }

  /** Status of one tool's backends (one per set of secrets), or of every tool of this kind seen. */
  statuses(tool?: string): RuntimeStatus[] {
    if (tool !== undefined) {
      const backends = this.backendsOf(tool);
      return backends.length > 0
        ? backends.map(([, b]) => b.status())
        : [create(RuntimeStatusSchema, { tool, state: RuntimeState.STOPPED })];
    }
    return [...this.backends.values()].map((b) => b.status());
  }

  /**
   * Starts a tool's backend now and waits until it is healthy; FAILED_PRECONDITION for a tool with
   * secrets, whose backends carry their callers' values and start on each caller's first call.
   */
  async start(tool: Tool): Promise<RuntimeStatus> {
    const spec = this.kind.specOf(tool);
    const name = tool.spec?.name ?? "";
    if (!spec) throw new ToolStartError(`tool "${name}" is not a ${this.kind.noun}`);
    if ((tool.spec?.secrets.length ?? 0) > 0)
      throw new ConnectError(
        `tool "${name}" names secrets of the vault: it runs a backend per caller's values, started by that caller's first call, and cannot be started ahead`,
        Code.FailedPrecondition,
      );
    const backend = this.backendOf(name, spec);
    await backend.ensureRunning(new AbortController().signal);
    return backend.status();
  }

  /** Stops a tool's backends (every caller's, for a tool with secrets). */
  async stop(tool: string): Promise<RuntimeStatus> {
    const backends = this.backendsOf(tool);
    await Promise.all(backends.map(([, b]) => b.stop()));
    // A caller's backend, once stopped, is forgotten as an idle one is.
    for (const [key] of backends) if (key !== tool) this.backends.delete(key);
    return (
      backends[0]?.[1].status() ??
      create(RuntimeStatusSchema, { tool, state: RuntimeState.STOPPED })
    );
  }

  /** A tool's backends: its own, and one per set of secrets (keyed `<tool>#<fingerprint>`). */
  private backendsOf(tool: string): [string, SupervisedBackend<S>][] {
    return [...this.backends].filter(([key]) => key === tool || key.startsWith(`${tool}#`));
  }

  /**
   * The backend of a tool; a tool with secrets has one per distinct set of them (a user's
   * environment or files are that user's backend's), keyed on where they came from and their
   * versions, and forgotten once idle.
   */
  private backendOf(tool: string, spec: S, secrets?: CallSecretValues): SupervisedBackend<S> {
    const key = secrets ? `${tool}#${secrets.fingerprint}` : tool;
    let backend = this.backends.get(key);
    if (!backend) {
      const log = this.log.child({ tool });
      backend = new SupervisedBackend(
        tool,
        spec,
        this.kind.launcher(tool, log, secrets),
        this.settings,
        (port) => this.grpcRuntime.forget(`127.0.0.1:${port}`),
        log,
        secrets ? () => this.backends.delete(key) : undefined,
      );
      this.backends.set(key, backend);
    } else {
      backend.spec = spec;
    }
    return backend;
  }

  async close(): Promise<void> {
    await Promise.all([...this.backends.values()].map((b) => b.stop()));
  }
}
