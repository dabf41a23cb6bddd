/** Where the protected-resource metadata of the MCP endpoint lives. */
export const RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource/mcp";
