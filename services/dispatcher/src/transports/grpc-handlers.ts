import { create } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { hasRole, principalOf, Role, requireRole } from "@toolmesh/auth";
import { Code, ConnectError, invalidField, notFound } from "@toolmesh/errors";
import { checkLength } from "@toolmesh/names";
import {
  AnswerInputResponseSchema,
  type DispatcherService,
  GetRuntimeStatusResponseSchema,
  StartToolResponseSchema,
  StopToolResponseSchema,
} from "@toolmesh/proto";
import type { ApprovalDesk } from "../approvals/approval-desk.js";
import type { ToolCatalog } from "../catalog/tool-catalog.js";
import { usableTools } from "../catalog/visible-tools.js";
import type { DispatchChain } from "../chain/dispatch-chain.js";
import type { RunningCalls } from "../chain/running-calls.js";
import type { CheckDeps, DispatchOptions } from "../chain/types.js";
import type { DockerRuntime } from "../runtimes/docker-runtime.js";
import type { LocalRuntime } from "../runtimes/local-runtime.js";
import { ToolStartError } from "../runtimes/supervised-backend.js";
import { AUTH_STARTED } from "./auth-timing.js";
import { callRpcs } from "./call-rpcs.js";
import type { InputDesk } from "./inputs/input-desk.js";
import { type ImportDeps, importMcpServer } from "./mcp/import-server.js";
import { type SearchDeps, searchTools } from "./search-tools.js";

export interface HandlerDeps {
  chain: DispatchChain;
  catalog: ToolCatalog;
  running: RunningCalls;
  /** Calls waiting for their caller's answers (AnswerInput). */
  inputs: InputDesk;
  local: LocalRuntime;
  docker: DockerRuntime;
  /** What ImportMcpServer and the agents' view of running state need. */
  checks: CheckDeps;
  /** ListApprovals and DecideApproval. */
  approvals: ApprovalDesk;
  /** SearchTools. */
  search: SearchDeps;
  imports: ImportDeps;
}

/** DispatcherService over Connect/gRPC/gRPC-Web; the chain itself lives in DispatchChain. */
export function createDispatcherHandlers(deps: HandlerDeps): ServiceImpl<typeof DispatcherService> {
  const { catalog, local, docker } = deps;
  const rpcs = callRpcs(deps);

  /** A tool whose backend the Dispatcher runs itself (a process or a container), and its runtime. */
  const supervised = (name: string) => {
    if (name === "") throw invalidField("tool", "name the local or docker tool");
    checkLength("tool", "toolName", name);
    const tool = catalog.get(name);
    if (!tool?.spec) throw notFound("tool", name);
    const runtime = [local, docker].find((r) => r.runs(tool));
    if (!runtime) {
      throw new ConnectError(
        `tool "${name}" has a ${tool.spec.runtime?.kind.case ?? "missing"} runtime; only local and docker tools have a process or container to start or stop`,
        Code.FailedPrecondition,
      );
    }
    return { tool, runtime };
  };

  return {
    dispatch: (req, ctx) => rpcs.dispatch(req, principalOf(ctx), callOptions(ctx)),
    dispatchBatch: (req, ctx) => rpcs.dispatchBatch(req, principalOf(ctx), callOptions(ctx)),
    cancel: (req, ctx) => rpcs.cancel(req, principalOf(ctx), callOptions(ctx)),
    getRuntimeStatus(req, ctx) {
      // Admins see every local and docker tool; an agent sees those it may call.
      const caller = principalOf(ctx);
      const admin = hasRole(caller, Role.Admin);
      const callable = admin ? undefined : new Set(usableTools(deps.checks, caller));
      if (req.tool !== "" && callable && !callable.has(req.tool)) throw notFound("tool", req.tool);
      const runtimes =
        req.tool === ""
          ? [...local.statuses(), ...docker.statuses()]
          : supervised(req.tool).runtime.statuses(req.tool);
      // The breakers of tools of any runtime that failed (all of them when no tool is named).
      const breakers = deps.checks.breakers?.statuses(req.tool || undefined) ?? [];
      return create(GetRuntimeStatusResponseSchema, {
        runtimes: callable ? runtimes.filter((r) => callable.has(r.tool)) : runtimes,
        breakers: callable ? breakers.filter((b) => callable.has(b.tool)) : breakers,
      });
    },
    dispatchToolCalls: (req, ctx) =>
      rpcs.dispatchToolCalls(req, principalOf(ctx), callOptions(ctx)),
    importMcpServer(req, ctx) {
      requireRole(ctx, Role.Admin);
      return importMcpServer(
        deps.imports,
        req,
        ctx.requestHeader.get("authorization") ?? "",
        principalOf(ctx),
      );
    },
    async startTool(req, ctx) {
      requireRole(ctx, Role.Admin);
      const { tool, runtime } = supervised(req.tool);
      try {
        const status = await runtime.start(tool);
        // Started by an operator, the tool gets its calls again at once.
        deps.checks.breakers?.reset(req.tool);
        return create(StartToolResponseSchema, { status });
      } catch (error) {
        if (error instanceof ToolStartError) {
          throw new ConnectError(
            `tool "${req.tool}" did not become healthy: ${error.message}`,
            Code.Unavailable,
          );
        }
        throw error;
      }
    },
    listApprovals(req, ctx) {
      return deps.approvals.list(principalOf(ctx), req);
    },
    decideApproval(req, ctx) {
      return deps.approvals.decide(principalOf(ctx), req);
    },
    searchTools(req, ctx) {
      return searchTools(deps.search, req, principalOf(ctx));
    },
    async answerInput(req, ctx) {
      if (req.requestState === "")
        throw invalidField(
          "request_state",
          "send the request_state of the input_required you answer",
        );
      return create(AnswerInputResponseSchema, {
        result: await deps.inputs.answer(req.requestState, req.responses, principalOf(ctx)),
      });
    },
    async stopTool(req, ctx) {
      requireRole(ctx, Role.Admin);
      const { runtime } = supervised(req.tool);
      return create(StopToolResponseSchema, { status: await runtime.stop(req.tool) });
    },
  };
}

/** The per-call options a Connect handler context gives the chain. */
function callOptions(ctx: HandlerContext): DispatchOptions {
  return {
    rpcTimeoutMs: ctx.timeoutMs(),
    signal: ctx.signal,
    traceparent: ctx.requestHeader.get("traceparent") ?? undefined,
    authStartedMs: ctx.values.get(AUTH_STARTED),
  };
}
