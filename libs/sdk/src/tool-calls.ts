import type { JsonObject } from "@bufbuild/protobuf";
import type { CallOptions, Client } from "@connectrpc/connect";
import type { DispatcherService } from "@toolmesh/proto";

/**
 * Runs the tool calls of a model's reply (OpenAI Chat `tool_calls`, OpenAI Responses
 * `function_call` items or Anthropic `tool_use` blocks, as the API returned it) through the
 * Dispatcher and returns the messages to append to the conversation, in the same dialect.
 */
export async function runToolCalls(
  dispatcher: Client<typeof DispatcherService>,
  message: object,
  options?: CallOptions,
): Promise<JsonObject[]> {
  const response = await dispatcher.dispatchToolCalls({ message: message as JsonObject }, options);
  return response.messages;
}
