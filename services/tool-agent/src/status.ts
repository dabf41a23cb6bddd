import { clone, create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { hasRole, Role } from "@toolmesh/auth";
import type { Logger } from "@toolmesh/log";
import {
  type ChatWindow,
  type GetSystemStatusResponse,
  GetSystemStatusResponseSchema,
  type ImStatus,
  type ModelStatus,
  type Principal,
  type RegistryService,
  TaskSchema,
  TaskStatus,
  type ToolCounts,
  ToolCountsSchema,
} from "@toolmesh/proto";
import type { SessionStore } from "./chat/session-store.js";
import type { TaskDesk } from "./tasks/task-desk.js";
import type { TaskStore } from "./tasks/task-store.js";

export interface StatusDeps {
  registry: Client<typeof RegistryService>;
  store: TaskStore;
  desk: TaskDesk;
  sessions: SessionStore;
  im: () => ImStatus;
  model: ModelStatus;
  concurrency: number;
  log: Logger;
}

const RECENT_TASKS = 20;
const WINDOWS = 200;

/**
 * GetSystemStatus: the tools the caller may see (counted by the Registry, asked as the caller),
 * the Router's queue and the CodingAgent's running tasks, the ServiceAgent's windows and the IM
 * connection. Counts are the stack's; task ids, specs and windows are the caller's own unless it
 * is an admin or a service.
 */
export async function systemStatus(
  deps: StatusDeps,
  caller: Principal,
  authorization: string,
): Promise<GetSystemStatusResponse> {
  const everything = hasRole(caller, Role.Admin, Role.Service);
  const tasks = deps.store.all();
  const visible = deps.desk.visible(caller);
  const running = tasks.filter((t) => t.status === TaskStatus.RUNNING);
  const windows = deps.sessions
    .windows()
    .filter(
      (w) =>
        everything || (w.owner?.agentId === caller.agentId && w.owner?.userId === caller.userId),
    )
    .sort((a, b) => usedAt(b) - usedAt(a))
    .slice(0, WINDOWS);
  return create(GetSystemStatusResponseSchema, {
    ...(await toolCounts(deps, authorization)),
    codingAgent: {
      runningCount: running.length,
      runningTaskIds: visible.filter((t) => t.status === TaskStatus.RUNNING).map((t) => t.id),
      queuedCount: tasks.filter((t) => t.status === TaskStatus.PENDING).length,
      recentTasks: visible.slice(0, RECENT_TASKS).map((t) => {
        const shown = clone(TaskSchema, t);
        shown.log = [];
        return shown;
      }),
      concurrency: deps.concurrency,
    },
    windows,
    im: deps.im(),
    model: deps.model,
  });
}

/** The tools the caller may see, by status; none (unset) when the Registry does not answer. */
async function toolCounts(
  deps: StatusDeps,
  authorization: string,
): Promise<{ tools?: ToolCounts }> {
  try {
    const { runtimes } = await deps.registry.listRuntimes(
      {},
      { headers: { authorization }, timeoutMs: 5000 },
    );
    const tools = create(ToolCountsSchema);
    for (const r of runtimes) {
      tools.total += r.toolCount;
      tools.active += r.activeCount;
      tools.deprecated += r.deprecatedCount;
      tools.disabled += r.disabledCount;
    }
    return { tools };
  } catch (error) {
    deps.log.warn({ err: error }, "GetSystemStatus: the Registry's tool counts are unavailable");
    return {};
  }
}

function usedAt(window: ChatWindow): number {
  return window.updatedAt ? timestampMs(window.updatedAt) : 0;
}
