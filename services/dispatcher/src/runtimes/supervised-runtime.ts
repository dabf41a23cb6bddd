import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import {
  BackendEventSchema,
  LocalProtocol,
  RuntimeState,
  type RuntimeStatus,
  RuntimeStatusSchema,
  type Tool,
  type ToolSpec,
  TraceEventKind,
} from "@toolmesh/proto";
import type { CallSecretValues } from "./call-secrets.js";
import type { BreakerOpening, BreakerSettings } from "./circuit-breaker.js";
import { failure, type GrpcRuntime } from "./grpc-runtime.js";
import { InstancePool, type Lease, type LeaseEnd, type PoolSpec } from "./instance-pool.js";
import type { RemoteRuntime } from "./remote-runtime.js";
import type { Attempt, AttemptResult, ToolRuntime } from "./runtime.js";
import { type Launch, type SupervisorSettings, ToolStartError } from "./supervised-backend.js";

/** A spec of a runtime whose backend the Dispatcher runs itself. */
export interface RunnableSpec extends PoolSpec {
  httpPath: string;
}

/** What distinguishes one supervised runtime kind (local processes, docker containers). */
export interface SupervisedKind<S extends RunnableSpec> {
  /** How users call it in messages: "local tool", "docker tool". */
  noun: string;
  /** How runtime status names it: `local`, `docker`. */
  name: string;
  /** The tool's spec of this kind, or undefined when the tool has another runtime. */
  specOf(tool: Tool): S | undefined;
  /** Starts a backend for a tool, with the caller's secrets when the tool names some. */
  launcher(tool: string, log: Logger, secrets?: CallSecretValues): Launch<S>;
}

/** The instances' breakers: their settings are the tool's, their openings are recorded. */
export interface InstanceBreakers {
  settingsOf(spec: ToolSpec): BreakerSettings;
  opened(tool: string, instance: number, opening: BreakerOpening): void;
}

/** How an attempt ended, for its instance: the common ends allocate nothing. */
const SUCCEEDED: LeaseEnd = { ok: true };
/** Interrupted (timeout, cancel, shutdown): not the instance's failure. */
const INTERRUPTED: LeaseEnd = { ok: false };

const noInstanceBreakers: InstanceBreakers = {
  settingsOf: () => ({ failures: 0, openMs: 0 }),
  opened: () => {},
};

/**
 * Tools whose backends the Dispatcher runs itself on 127.0.0.1, a pool of instances per tool
 * (InstancePool): started on demand or kept warm, health-checked, replaced on crash, stopped when
 * idle; calls reach them over gRPC or HTTP.
 */
export class SupervisedRuntime<S extends RunnableSpec> implements ToolRuntime {
  private readonly pools = new Map<string, InstancePool<S>>();

  constructor(
    private readonly kind: SupervisedKind<S>,
    private readonly grpcRuntime: GrpcRuntime,
    private readonly remote: RemoteRuntime,
    private readonly settings: SupervisorSettings,
    private readonly log: Logger,
    private readonly breakers: InstanceBreakers = noInstanceBreakers,
  ) {}

  async invoke(attempt: Attempt): Promise<AttemptResult> {
    const spec = this.kind.specOf(attempt.tool);
    if (!spec) {
      return failure("backend_misconfigured", `the tool is not a ${this.kind.noun}`, false);
    }
    const pool = this.poolOf(attempt.tool.spec?.name ?? "", spec, attempt.secrets);
    let lease: Lease;
    try {
      lease = await pool.lease(attempt.signal);
    } catch (error) {
      if (attempt.signal.aborted)
        return failure(
          "interrupted",
          "the call was interrupted while waiting for an instance of the tool",
          false,
        );
      return failure(
        "backend_unavailable",
        `the ${this.kind.noun} did not start: ${error instanceof Error ? error.message : String(error)}`,
        true,
      );
    }
    if (lease.startWaitMs >= 0 || lease.saved) traceInstance(attempt, lease);
    let result: AttemptResult | undefined;
    try {
      if (spec.protocol === LocalProtocol.HTTP) {
        const path = spec.httpPath || "/invoke";
        result = await this.remote.post(`http://127.0.0.1:${lease.port}${path}`, {}, attempt);
      } else {
        result = await this.grpcRuntime.invokeAt(`127.0.0.1:${lease.port}`, attempt);
      }
      return result;
    } finally {
      pool.release(
        lease,
        result?.ok
          ? SUCCEEDED
          : attempt.signal.aborted
            ? INTERRUPTED
            : {
                ok: false,
                code: result?.error.code,
                message: result?.error.message,
                callId: attempt.request.context?.callId,
                breaker: () =>
                  attempt.tool.spec
                    ? this.breakers.settingsOf(attempt.tool.spec)
                    : { failures: 0, openMs: 0 },
              },
      );
    }
  }

  /** Whether a tool's backend is of this runtime's kind. */
  runs(tool: Tool): boolean {
    return this.kind.specOf(tool) !== undefined;
  }

  /** Status of one tool's pools (one per set of secrets), or of every tool of this kind seen. */
  statuses(tool?: string): RuntimeStatus[] {
    if (tool !== undefined) {
      const pools = this.poolsOf(tool);
      return pools.length > 0
        ? pools.map(([, p]) => p.status())
        : [
            create(RuntimeStatusSchema, {
              tool,
              kind: this.kind.name,
              state: RuntimeState.STOPPED,
            }),
          ];
    }
    return [...this.pools.values()].map((p) => p.status());
  }

  /**
   * Keeps a tool's warm instances (min_instances, in its warm hours) running; the Dispatcher calls
   * it when the registry changes and each minute. A tool with secrets has none: its instances
   * carry their callers' values.
   */
  keepWarm(tool: Tool): void {
    const spec = this.kind.specOf(tool);
    const name = tool.spec?.name ?? "";
    if (!spec || (tool.spec?.secrets.length ?? 0) > 0) return;
    if (spec.minInstances === 0 && !this.pools.has(name)) return;
    this.poolOf(name, spec).keepWarm();
  }

  /**
   * Starts an instance of a tool now (started for `operator`) and waits until it is healthy;
   * FAILED_PRECONDITION for a tool with secrets, whose instances carry their callers' values and
   * start on each caller's first call.
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
    const pool = this.poolOf(name, spec);
    await pool.start();
    return pool.status();
  }

  /** Stops a tool's instances (every caller's, for a tool with secrets). */
  async stop(tool: string): Promise<RuntimeStatus> {
    const pools = this.poolsOf(tool);
    await Promise.all(pools.map(([, p]) => p.stop()));
    // A caller's pool, once stopped, is forgotten as an idle one is.
    for (const [key] of pools) if (key !== tool) this.pools.delete(key);
    return (
      pools[0]?.[1].status() ??
      create(RuntimeStatusSchema, { tool, kind: this.kind.name, state: RuntimeState.STOPPED })
    );
  }

  /** A tool's pools: its own, and one per set of secrets (keyed `<tool>#<fingerprint>`). */
  private poolsOf(tool: string): [string, InstancePool<S>][] {
    return [...this.pools].filter(([key]) => key === tool || key.startsWith(`${tool}#`));
  }

  /**
   * The pool of a tool; a tool with secrets has one per distinct set of them (a user's
   * environment or files are that user's instances'), keyed on where they came from and their
   * versions, and forgotten once idle.
   */
  private poolOf(tool: string, spec: S, secrets?: CallSecretValues): InstancePool<S> {
    const key = secrets ? `${tool}#${secrets.fingerprint}` : tool;
    let pool = this.pools.get(key);
    if (!pool) {
      const log = this.log.child({ tool });
      pool = new InstancePool(
        tool,
        spec,
        this.kind.launcher(tool, log, secrets),
        this.settings,
        {
          kind: this.kind.name,
          onGone: (port) => this.grpcRuntime.forget(`127.0.0.1:${port}`),
          onEmpty: secrets ? () => this.pools.delete(key) : () => {},
          onInstanceOpened: (instance, opening) => this.breakers.opened(tool, instance, opening),
        },
        log,
      );
      this.pools.set(key, pool);
    } else {
      pool.spec = spec;
    }
    return pool;
  }

  async close(): Promise<void> {
    await Promise.all([...this.pools.values()].map((p) => p.stop()));
  }
}

/**
 * Files under the call how it got its instance: after waiting for one to start
 * (INSTANCE_START_WAIT), or from one started ahead of need (START_SAVED).
 */
function traceInstance(attempt: Attempt, lease: Lease): void {
  const instance = lease.instance;
  attempt.onEvent(
    create(BackendEventSchema, {
      kind: TraceEventKind.CUSTOM,
      customKind: lease.saved ? "START_SAVED" : "INSTANCE_START_WAIT",
      payload: {
        instance: instance.id,
        started_for: instance.startedFor,
        ...(lease.startWaitMs >= 0 ? { waited_ms: lease.startWaitMs } : {}),
      },
    }),
  );
}
