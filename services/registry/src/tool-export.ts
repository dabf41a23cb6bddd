import { createHash } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { SchemaFormat, type Tool } from "@toolmesh/proto";

/** OpenAI and Anthropic accept function names of this shape only. */
const PROVIDER_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

/**
 * The name a provider sees: MCP keeps the registry name; OpenAI and Anthropic get dots as `__`
 * (and, past 64 characters, a prefix plus 8 hex digits of the name's hash, still unique).
 */
export function exportedName(name: string, format: SchemaFormat): string {
  if (format === SchemaFormat.MCP) return name;
  const replaced = name.replaceAll(".", "__");
  return PROVIDER_NAME.test(replaced) ? replaced : withDigest(replaced, name);
}

/** A provider name made unique with 8 hex digits of the registry name's hash (`a.b` vs `a__b`). */
export function withDigest(exported: string, name: string): string {
  const digest = createHash("sha256").update(name).digest("hex").slice(0, 8);
  return `${exported.slice(0, 55)}_${digest}`;
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
