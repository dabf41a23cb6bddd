import { readFileSync } from "node:fs";
import path from "node:path";
import { toolAgentIdentity } from "@toolmesh/auth";
import { ConfigError } from "@toolmesh/config";

/**
 * The tool agent's own credential and the CodingAgent's: TOOLMESH_TOOL_AGENT_TOKEN and
 * TOOLMESH_CODING_AGENT_TOKEN when set, else the files the Permission service's bootstrap writes
 * in the data directory. Read when needed (a file may appear after this process started); empty
 * while there is none.
 */
export function identityTokens(config: {
  dataDir: string;
  toolAgentToken?: string | undefined;
  codingAgentToken?: string | undefined;
}): { toolAgent: () => string; codingAgent: () => string } {
  const fromFile = (file: string) => {
    let cached = "";
    return () => {
      if (cached !== "") return cached;
      try {
        cached = readFileSync(path.join(config.dataDir, file), "utf8").trim();
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      }
      return cached;
    };
  };
  return {
    toolAgent: config.toolAgentToken
      ? () => config.toolAgentToken ?? ""
      : fromFile(toolAgentIdentity.tokenFile),
    codingAgent: config.codingAgentToken
      ? () => config.codingAgentToken ?? ""
      : fromFile(toolAgentIdentity.codingTokenFile),
  };
}

/** The IM windows' toolmesh credential (TOOLMESH_IM_TOKEN_FILE), required with TOOLMESH_IM_URL. */
export function imCredential(file: string | undefined): string {
  if (!file)
    throw new ConfigError([
      "TOOLMESH_IM_URL is set without TOOLMESH_IM_TOKEN_FILE: IM windows need a toolmesh credential to act with",
    ]);
  try {
    return readFileSync(file, "utf8").trim();
  } catch (error) {
    throw new ConfigError([
      `TOOLMESH_IM_TOKEN_FILE=${file} cannot be read (${(error as NodeJS.ErrnoException).code})`,
    ]);
  }
}
