import { defineTool, type ServedTools } from "@toolmesh/sdk";
import { serveOnStack, type TestStack } from "@toolmesh/testkit";

/**
 * Serves and registers a tool with side effects that notes the id of every call reaching it, so
 * a fault test can tell which refused or lost calls ran after all.
 */
export function serveRecordingTool(
  stack: TestStack,
  name: string,
  ran: Set<string>,
): Promise<ServedTools> {
  return serveOnStack(stack, [
    defineTool({
      name,
      description: "Writes its number somewhere.",
      sideEffects: true,
      inputSchema: { type: "object", properties: { n: { type: "integer" } } },
      handler: (args: { n?: number }, ctx) => {
        ran.add(ctx.callId);
        return { n: args.n ?? 0 };
      },
    }),
  ]);
}
