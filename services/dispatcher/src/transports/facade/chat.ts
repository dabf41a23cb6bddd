import type { JsonValue } from "@bufbuild/protobuf";
import { Code, ConnectError, invalidField } from "@toolmesh/errors";
import { readBody } from "@toolmesh/server";
import { callToolAgent, type ToolAgentLink } from "../agent/agent-forward.js";
import { json } from "./http-errors.js";

/**
 * `POST /chat {"message", "chat_id"}`: one message to the ServiceAgent, answered as
 * `{"response", "chat_id", "task_ids"}`; the caller's token goes on to the tool agent, which
 * keeps the window as the caller's own.
 */
export async function chat(
  link: ToolAgentLink,
  request: Request,
  maxBodyBytes: number,
): Promise<Response> {
  const text = await readBody(request.body, maxBodyBytes);
  if (text === undefined)
    throw new ConnectError(
      `request body larger than ${maxBodyBytes} bytes`,
      Code.ResourceExhausted,
    );
  let body: JsonValue;
  try {
    body = JSON.parse(text) as JsonValue;
  } catch {
    throw invalidField(
      "body",
      'is not JSON: send {"message": "which tools read data?", "chat_id": "w1"}',
    );
  }
  if (body === null || typeof body !== "object" || Array.isArray(body))
    throw invalidField("body", 'must be a JSON object: {"message": "…", "chat_id": "…"}');
  const { message, chat_id: chatId = "" } = body as Record<string, JsonValue>;
  if (typeof message !== "string") throw invalidField("message", "is required: a string to say");
  if (typeof chatId !== "string")
    throw invalidField("chat_id", "must be a string; leave it out to open a new window");
  const answer = await callToolAgent(link, (o) => link.client.chat({ message, chatId }, o), {
    authorization: request.headers.get("authorization") ?? "",
    signal: request.signal,
  });
  return json(200, { response: answer.response, chat_id: answer.chatId, task_ids: answer.taskIds });
}
