import type { JsonObject } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import type { BackendEvent, Principal, Tool } from "@toolmesh/proto";
import type { Tracing } from "@toolmesh/telemetry";
import type { BudgetedCallOf, BudgetLedger } from "../catalog/budget-ledger.js";
import type { PermissionGate } from "../catalog/permission-gate.js";
import type { CallLimiter } from "../catalog/rate-limits.js";
import type { ToolCatalog, ToolValidators } from "../catalog/tool-catalog.js";
import type { CallRecord, CallRecorder } from "../records/call-recorder.js";
import type { HeldCallStore } from "../records/held-calls.js";
import type { CallIdOwners, IdempotencyStore } from "../records/idempotency.js";
import type { CallSecrets } from "../runtimes/call-secrets.js";
import type { CallerSide, ToolRuntime } from "../runtimes/runtime.js";
import type { Refusal } from "./refusal.js";
import type { ResultCache } from "./result-cache.js";
import type { RunningCalls } from "./running-calls.js";
import type { CallSpans, CallTraceContext } from "./telemetry.js";
import type { ToolBreakers } from "./tool-breakers.js";

// The shapes the chain's stages share, in one file, so no two stages import each other.

export interface ChainSettings {
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
}

/** How calls are held: how long they wait, and which roles may decide every one. */
export interface HoldSettings {
  holdMs: number;
  approverRoles: string[];
}

export interface ChainDeps extends CheckDeps {
  recorder: CallRecorder;
  runtimes: {
    grpc: ToolRuntime;
    local: ToolRuntime;
    remote: ToolRuntime;
    docker: ToolRuntime;
    mcp?: ToolRuntime;
  };
  idempotency: IdempotencyStore;
  callIds: CallIdOwners;
  /** Results of tools with a cache (cache_ttl_ms); nothing is cached when absent. */
  cache?: ResultCache | undefined;
  /**
   * Where calls that need approval wait, and how long (docs/services.md, approvals); in memory
   * with a 1 h hold when omitted (in-process tests).
   */
  approvals?: { store: HeldCallStore; settings: HoldSettings };
  settings: ChainSettings;
  log: Logger;
  /** Spans for each chain step (startTracing); off when omitted. */
  tracing?: Tracing;
}

/** Per-call options that come from the transport. */
export interface DispatchOptions extends CallTraceContext {
  /** Milliseconds left before the RPC's own deadline, if it has one. */
  rpcTimeoutMs?: number | undefined;
  /** Aborted when the caller goes away. */
  signal?: AbortSignal | undefined;
  /** Trace id shared by a batch, used when the call has none. */
  batchTraceId?: string;
  /** A refusal the transport already decided (a model's arguments that are not JSON). */
  refusal?: Refusal;
  /** Hears the backend's own events after they are traced (MCP progress notifications). */
  onEvent?: (event: BackendEvent) => void;
  /** The caller, when it can answer what an MCP tool asks mid-call. */
  caller?: CallerSide | undefined;
  /** A call id the transport made (newCallId) to know the call by before it answers (MCP tasks). */
  callId?: string | undefined;
}

/** What the checks read: the registry snapshot, the grants and the calls running here. */
export interface CheckDeps {
  catalog: ToolCatalog;
  policy: PermissionGate;
  running: RunningCalls;
  /** The rate limits; none are enforced when absent (in-process tests). */
  limits?: CallLimiter | undefined;
  /** The budgets; none are enforced when absent (in-process tests). */
  budgets?: BudgetLedger | undefined;
  /** The tools' circuit breakers; none open when absent (in-process tests). */
  breakers?: ToolBreakers | undefined;
  /**
   * The vault's secrets of the tools: a call missing one is refused before it runs, and a held
   * call again once approved.
   */
  secrets?: CallSecrets | undefined;
}

/** A call that passed every check: the tool to run and its validated arguments. */
export interface CheckedCall {
  tool: Tool & { spec: NonNullable<Tool["spec"]> };
  args: JsonObject;
  validators: ToolValidators;
  /** Why the call must be approved before it runs (`tool`, `grant:<id>`); empty when it need not. */
  approvalBy: string[];
  /** Why the caller must confirm it before it runs, in the same words; empty when it need not. */
  confirmationBy: string[];
  /** Who its cost counts against, when a budget applies to it. */
  budgeted?: BudgetedCallOf | undefined;
  /** It is the probe call of its tool's half-open circuit breaker. */
  probe?: boolean;
  /** The allow grants that authorised it: with its user, what it may see (the cache's key). */
  grantIds: readonly string[];
}

/** One call that passed its checks, ready to run. */
export interface Execution {
  checked: CheckedCall;
  principal: Principal;
  record: CallRecord;
  /** Epoch ms the call arrived. */
  started: number;
  options: DispatchOptions;
  /** The timeout the request asked for (0: the tool's own). */
  requestTimeoutMs: number;
  /** Stores the response for replays when set. */
  idempotencyKey: string;
  spans: CallSpans;
  /** Set for a held call an approver approved: it runs now, and this hears its start acked. */
  approved?: { onStarted: () => void };
}
