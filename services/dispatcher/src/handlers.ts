import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { hasRole, principalOf, Role, requireRole } from "@toolmesh/auth";
import { Code, ConnectError, invalidField, notFound } from "@toolmesh/errors";
import { checkLength } from "@toolmesh/names";
import {
  CancelResponseSchema,
  type DispatcherService,
  GetRuntimeStatusResponseSchema,
  type LocalRuntime as LocalRuntimeSpec,
  type Principal,
  StartToolResponseSchema,
  StopToolResponseSchema,
} from "@toolmesh/proto";
import { runBatch } from "./batch.js";
import { type CheckDeps, usableTools } from "./call-checks.js";
import type { DispatchChain } from "./dispatch-chain.js";
import { type ImportDeps, importMcpServer } from "./mcp/import-server.js";
import type { RunningCalls } from "./running-calls.js";
import { type LocalRuntime, LocalStartError } from "./runtimes/local-runtime.js";
import { dispatchToolCalls } from "./tool-calls/dispatch-tool-calls.js";
import type { ToolCatalog } from "./tool-catalog.js";

export interface HandlerDeps {
  chain: DispatchChain;
  catalog: ToolCatalog;
  running: RunningCalls;
  local: LocalRuntime;
  /** What ImportMcpServer and the agents' view of running state need. */
  checks: CheckDeps;
  imports: ImportDeps;
}

/** DispatcherService over Connect/gRPC/gRPC-Web; the chain itself lives in DispatchChain. */
export function createDispatcherHandlers(deps: HandlerDeps): ServiceImpl<typeof DispatcherService> {
  const { chain, catalog, running, local } = deps;

  const localSpec = (tool: string): LocalRuntimeSpec => {
    if (tool === "") throw invalidField("tool", "name the local tool");
    checkLength("tool", "toolName", tool);
    const found = catalog.get(tool);
    if (!found?.spec) throw notFound("tool", tool);
    const kind = found.spec.runtime?.kind;
    if (kind?.case !== "local") {
      throw new ConnectError(
        `tool "${tool}" has a ${kind?.case ?? "missing"} runtime; only local tools have a process to start or stop`,
        Code.FailedPrecondition,
      );
    }
    return kind.value;
  };

  return {
    dispatch(req, ctx) {
      return chain.dispatch(req, principalOf(ctx), {
        rpcTimeoutMs: ctx.timeoutMs(),
        signal: ctx.signal,
      });
    },
    dispatchBatch(req, ctx) {
      return runBatch(chain, catalog, req, principalOf(ctx), {
        rpcTimeoutMs: ctx.timeoutMs(),
        signal: ctx.signal,
      });
    },
    cancel(req, ctx) {
      return cancelCall(running, req.callId, principalOf(ctx));
    },
    getRuntimeStatus(req, ctx) {
      // Admins see every local tool; an agent sees those it may call.
      const caller = principalOf(ctx);
      const admin = hasRole(caller, Role.Admin);
      const callable = admin ? undefined : new Set(usableTools(deps.checks, caller));
      if (req.tool !== "") {
        if (callable && !callable.has(req.tool)) throw notFound("tool", req.tool);
        localSpec(req.tool);
      }
      const runtimes = local.statuses(req.tool === "" ? undefined : req.tool);
      return create(GetRuntimeStatusResponseSchema, {
        runtimes: callable ? runtimes.filter((r) => callable.has(r.tool)) : runtimes,
      });
    },
    dispatchToolCalls(req, ctx) {
      return dispatchToolCalls(chain, catalog, req, principalOf(ctx), {
        rpcTimeoutMs: ctx.timeoutMs(),
        signal: ctx.signal,
      });
    },
    importMcpServer(req, ctx) {
      requireRole(ctx, Role.Admin);
      return importMcpServer(deps.imports, req, ctx.requestHeader.get("authorization") ?? "");
    },
    async startTool(req, ctx) {
      requireRole(ctx, Role.Admin);
      const spec = localSpec(req.tool);
      try {
        return create(StartToolResponseSchema, { status: await local.start(req.tool, spec) });
      } catch (error) {
        if (error instanceof LocalStartError) {
          throw new ConnectError(
            `tool "${req.tool}" did not become healthy: ${error.message}`,
            Code.Unavailable,
          );
        }
        throw error;
      }
    },
    async stopTool(req, ctx) {
      requireRole(ctx, Role.Admin);
      localSpec(req.tool);
      return create(StopToolResponseSchema, { status: await local.stop(req.tool) });
    },
  };
}

/** Interrupts a running call of the caller (admins may cancel any). */
export function cancelCall(running: RunningCalls, callId: string, caller: Principal) {
  if (callId === "") throw invalidField("call_id", "name the call to cancel");
  checkLength("call_id", "callId", callId);
  const call = running.get(callId);
  if (!call) throw notFound("running call", callId, "it may have finished already");
  if (call.agentId !== caller.agentId && !hasRole(caller, Role.Admin)) {
    throw new ConnectError(
      `call "${callId}" belongs to another agent; only it or an admin may cancel it`,
      Code.PermissionDenied,
    );
  }
  call.interrupt("cancelled");
  return create(CancelResponseSchema, {});
}
