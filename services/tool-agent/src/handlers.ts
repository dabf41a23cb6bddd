import { clone, create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { principalOf } from "@toolmesh/auth";
import {
  type AgentService,
  ChatResponseSchema,
  GetTaskResponseSchema,
  ListTasksResponseSchema,
  SubmitTaskResponseSchema,
  TaskSchema,
} from "@toolmesh/proto";
import { checkChatId, type ServiceAgent } from "./chat/service-agent.js";
import { type StatusDeps, systemStatus } from "./status.js";
import type { TaskDesk } from "./tasks/task-desk.js";

export interface AgentHandlerDeps {
  agent: ServiceAgent;
  desk: TaskDesk;
  status: StatusDeps;
}

/** AgentService: the ServiceAgent's chat, the task desk and the system status, per caller. */
export function createAgentHandlers(deps: AgentHandlerDeps): ServiceImpl<typeof AgentService> {
  const authorization = (header: Headers) => header.get("authorization") ?? "";
  return {
    async chat(req, ctx) {
      const answer = await deps.agent.chat(
        {
          principal: principalOf(ctx),
          authorization: authorization(ctx.requestHeader),
          message: req.message,
          chatId: req.chatId,
        },
        ctx.signal,
      );
      return create(ChatResponseSchema, answer);
    },
    async submitTask(req, ctx) {
      if (req.chatId !== "") checkChatId("chat_id", req.chatId);
      const { task, queuePosition } = await deps.desk.submit(
        principalOf(ctx),
        req.spec,
        req.chatId,
      );
      const shown = clone(TaskSchema, task);
      return create(SubmitTaskResponseSchema, { task: shown, queuePosition });
    },
    async getTask(req, ctx) {
      return create(GetTaskResponseSchema, { task: await deps.desk.get(principalOf(ctx), req.id) });
    },
    listTasks(req, ctx) {
      return create(ListTasksResponseSchema, deps.desk.list(principalOf(ctx), req));
    },
    getSystemStatus(_req, ctx) {
      return systemStatus(deps.status, principalOf(ctx), authorization(ctx.requestHeader));
    },
  };
}
