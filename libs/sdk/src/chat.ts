import type { CallOptions, Client } from "@connectrpc/connect";
import type { AgentService, ChatResponse } from "@toolmesh/proto";

/** How long a chat waits unless told: the tool agent answers within TOOLMESH_CHAT_TIMEOUT_MS. */
const CHAT_TIMEOUT_MS = 130_000;

/**
 * Says `message` to the ServiceAgent in the caller's window `chatId` (a new one when empty or
 * left out) and resolves with its answer: `response`, the `chatId`, and the `taskIds` it filed.
 * `agent` is an AgentService client at the Dispatcher's address (which forwards it) or the tool
 * agent's own; `options` carry the caller's bearer token. The window is the caller's alone.
 */
export function chat(
  agent: Client<typeof AgentService>,
  message: string,
  options: CallOptions & { chatId?: string } = {},
): Promise<ChatResponse> {
  const { chatId = "", ...call } = options;
  return agent.chat({ message, chatId }, { timeoutMs: CHAT_TIMEOUT_MS, ...call });
}
