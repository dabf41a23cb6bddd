import type { CallOptions, Client, ServiceImpl } from "@connectrpc/connect";
import { Code, ConnectError } from "@toolmesh/errors";
import type { AgentService } from "@toolmesh/proto";

/** The tool agent as the Dispatcher reaches it. */
export interface ToolAgentLink {
  client: Client<typeof AgentService>;
  /** Its URL, for messages. */
  url: string;
}

/** Node's codes for a peer that is not there (as a transport failure's cause carries them). */
const UNREACHABLE = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "EHOSTUNREACH",
  "ENOTFOUND",
  "EPIPE",
  "ETIMEDOUT",
]);

/**
 * Calls the tool agent with the caller's own token, so it sees the caller exactly as the
 * Dispatcher did; a tool agent that cannot be reached is UNAVAILABLE naming where it was looked
 * for. Its own errors (no model configured, a bad chat id …) pass through as they are.
 */
export async function callToolAgent<T>(
  link: ToolAgentLink,
  call: (options: CallOptions) => Promise<T>,
  request: { authorization: string; signal?: AbortSignal; timeoutMs?: number | undefined },
): Promise<T> {
  try {
    return await call({
      headers: { authorization: request.authorization },
      ...(request.signal ? { signal: request.signal } : {}),
      ...(request.timeoutMs !== undefined ? { timeoutMs: request.timeoutMs } : {}),
    });
  } catch (error) {
    const e = ConnectError.from(error);
    const cause = (e.cause ?? (error as { cause?: unknown }).cause) as
      | { code?: unknown }
      | undefined;
    if (
      e.code === Code.Unavailable &&
      typeof cause?.code === "string" &&
      UNREACHABLE.has(cause.code)
    )
      throw new ConnectError(
        `the tool agent at ${link.url} cannot be reached (${cause.code}); is it running? (TOOLMESH_TOOL_AGENT_URL)`,
        Code.Unavailable,
      );
    throw e;
  }
}

/**
 * AgentService on the Dispatcher's port: every RPC forwarded to the tool agent with the caller's
 * token (already verified here), so an agent needs one address for its calls and its chats.
 */
export function forwardAgentService(link: ToolAgentLink): ServiceImpl<typeof AgentService> {
  const as = (ctx: {
    requestHeader: Headers;
    signal: AbortSignal;
    timeoutMs(): number | undefined;
  }) => ({
    authorization: ctx.requestHeader.get("authorization") ?? "",
    signal: ctx.signal,
    timeoutMs: ctx.timeoutMs(),
  });
  const { client } = link;
  return {
    chat: (req, ctx) => callToolAgent(link, (o) => client.chat(req, o), as(ctx)),
    submitTask: (req, ctx) => callToolAgent(link, (o) => client.submitTask(req, o), as(ctx)),
    getTask: (req, ctx) => callToolAgent(link, (o) => client.getTask(req, o), as(ctx)),
    listTasks: (req, ctx) => callToolAgent(link, (o) => client.listTasks(req, o), as(ctx)),
    getSystemStatus: (req, ctx) =>
      callToolAgent(link, (o) => client.getSystemStatus(req, o), as(ctx)),
  };
}
