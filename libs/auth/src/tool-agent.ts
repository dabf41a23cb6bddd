/**
 * The tool agent's two identities and its own tools: the Permission service bootstraps them, the
 * Registry guards what the tool agent may write, and the tool agent uses them.
 */
export const toolAgentIdentity = {
  /** The tool agent process: registers its own tools and the tools it builds (role tool-agent). */
  agentId: "toolmesh-tool-agent",
  /** Under the data directory: its API key, written by Permission's bootstrap (mode 0600). */
  tokenFile: "tool-agent.token",
  /** The CodingAgent: calls the coding tools through the chain, and nothing else. */
  codingAgentId: "toolmesh-coding-agent",
  codingTokenFile: "coding-agent.token",
  /** Registry names of the CodingAgent's tools start with this; only the tool agent writes them. */
  toolPrefix: "coding.",
  /** The scope the coding tools require and the CodingAgent's grant gives. */
  scope: "build:tools",
} as const;
