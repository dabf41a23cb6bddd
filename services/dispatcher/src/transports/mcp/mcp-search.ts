import type { JsonObject } from "@bufbuild/protobuf";
import { ConnectError } from "@toolmesh/errors";
import type { Principal } from "@toolmesh/proto";
import {
  MAX_QUERY_LENGTH,
  MAX_SEARCH_LIMIT,
  type SearchDeps,
  searchTools,
} from "../search-tools.js";

/** The name of /mcp's own search tool; a registry tool of that name is not listed on /mcp. */
export const SEARCH_TOOL_NAME = "search_tools";

/** `search_tools` as tools/list shows it. */
export const SEARCH_TOOL: JsonObject = {
  name: SEARCH_TOOL_NAME,
  title: "Search tools",
  description:
    "Finds the tools you may call by what they do: a ranked keyword search over tool names, descriptions, categories and input schemas, best match first. tools/list may show only some of your tools; call any tool this finds by its name.",
  inputSchema: {
    type: "object",
    properties: {
      query: {
        type: "string",
        description: "What the tool should do, in a few keywords: `send email`, `weather forecast`",
        minLength: 1,
        maxLength: MAX_QUERY_LENGTH,
      },
      limit: {
        type: "integer",
        description: "How many tools to return, at most (default 10)",
        minimum: 1,
        maximum: MAX_SEARCH_LIMIT,
      },
    },
    required: ["query"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: {
      tools: {
        type: "array",
        items: {
          type: "object",
          properties: {
            name: { type: "string" },
            title: { type: "string" },
            description: { type: "string" },
            inputSchema: { type: "object" },
            score: { type: "number" },
          },
          required: ["name", "description", "inputSchema", "score"],
        },
      },
    },
    required: ["tools"],
  },
  annotations: {
    title: "Search tools",
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  },
};

/** A `search_tools` call: its CallToolResult, or an isError result saying what to fix. */
export function callSearchTool(
  deps: SearchDeps,
  principal: Principal,
  args: JsonObject,
): JsonObject {
  const { query, limit } = args;
  if (typeof query !== "string")
    return searchError("query is required: say what the tool should do, such as `send email`");
  if (limit !== undefined && (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1))
    return searchError(`limit must be a whole number from 1 to ${MAX_SEARCH_LIMIT}`);
  try {
    const found = searchTools(
      deps,
      { query, limit: typeof limit === "number" ? limit : 0 },
      principal,
    );
    const tools = found.tools.map((hit) => {
      const spec = hit.tool?.spec;
      return {
        name: spec?.name ?? "",
        ...(spec?.annotations?.title ? { title: spec.annotations.title } : {}),
        description: spec?.description ?? "",
        inputSchema: spec?.inputSchema ?? { type: "object" },
        score: Math.round(hit.score * 1000) / 1000,
      };
    });
    const structured = { tools } as JsonObject;
    return {
      content: [{ type: "text", text: JSON.stringify(structured) }],
      structuredContent: structured,
    };
  } catch (error) {
    return searchError(ConnectError.from(error).rawMessage);
  }
}

function searchError(text: string): JsonObject {
  return { content: [{ type: "text", text }], isError: true };
}
