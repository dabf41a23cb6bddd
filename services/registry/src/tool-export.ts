import type { JsonObject } from "@bufbuild/protobuf";
import { providerToolName } from "@toolmesh/names";
import { SchemaFormat, type Tool } from "@toolmesh/proto";

export { withDigest } from "@toolmesh/names";

/**
 * The name a provider sees: MCP keeps the registry name; OpenAI and Anthropic get dots as `__`
 * (and, past 64 characters, a prefix plus 8 hex digits of the name's hash, still unique).
 */
export function exportedName(name: string, format: SchemaFormat): string {
  return format === SchemaFormat.MCP ? name : providerToolName(name);
}

/** One tool as a function-calling definition for a model provider. */
export function renderTool(
  tool: Tool,
  format: SchemaFormat,
  name = exportedName(tool.spec?.name ?? "", format),
): { name: string; definition: JsonObject } {
  const spec = tool.spec;
  const description = spec?.description ?? "";
  const input: JsonObject = spec?.inputSchema ?? { type: "object" };
  switch (format) {
    case SchemaFormat.OPENAI:
      return {
        name,
        definition: { type: "function", function: { name, description, parameters: input } },
      };
    case SchemaFormat.ANTHROPIC:
      return { name, definition: { name, description, input_schema: input } };
    case SchemaFormat.MCP:
      return {
        name,
        definition: {
          name,
          description,
          inputSchema: input,
          ...(spec?.outputSchema ? { outputSchema: spec.outputSchema } : {}),
        },
      };
    default:
      throw new Error(`unsupported schema format ${format}`);
  }
}
