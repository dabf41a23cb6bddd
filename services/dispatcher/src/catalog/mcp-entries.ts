import { McpOperation, type Tool } from "@toolmesh/proto";

/** What a registry entry stands for: a tool, or a prompt or resource of an imported MCP server. */
export type EntryKind = "tool" | "prompt" | "resource" | "template";

/** The kind of a registry entry; every entry but an imported prompt or resource is a tool. */
export function entryKind(entry: Tool): EntryKind {
  const runtime = entry.spec?.runtime?.kind;
  if (runtime?.case !== "mcp") return "tool";
  switch (runtime.value.operation) {
    case McpOperation.PROMPT:
      return "prompt";
    case McpOperation.RESOURCE:
      return "resource";
    case McpOperation.RESOURCE_TEMPLATE:
      return "template";
    default:
      return "tool";
  }
}

/** True for an entry agents call as a tool (not an imported prompt or resource). */
export function isTool(entry: Tool): boolean {
  return entryKind(entry) === "tool";
}

/** True for an entry an MCP server runs: its calls may ask their caller for input. */
export function isMcpBacked(entry: Tool | undefined): boolean {
  return entry?.spec?.runtime?.kind.case === "mcp";
}
