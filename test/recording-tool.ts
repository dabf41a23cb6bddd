import { defineTool, type ServedTools } from "@toolmesh/sdk";
import { serveOnStack, type TestStack } from "@toolmesh/testkit";

/**
 * Serves and registers a tool that notes the id of every call reaching it, so a fault test can
 * tell which refused or lost calls ran after all. It has side effects unless told otherwise;
 * `timeoutMs` bounds its calls (and so when the sweeper closes one left open).
 */
export function serveRecordingTool(
  stack: TestStack,
  name: string,
  ran: Set<string>,
  options: { sideEffects?: boolean; timeoutMs?: number } = {},
): Promise<ServedTools> {
  return serveOnStack(stack, [
    defineTool({
      name,
      description: "Writes its number somewhere.",
      sideEffects: options.sideEffects ?? true,
      ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
      inputSchema: { type: "object", properties: { n: { type: "integer" } } },
      handler: (args: { n?: number }, ctx) => {
        ran.add(ctx.callId);
        return { n: args.n ?? 0 };
      },
    }),
  ]);
}
