import { readFileSync } from "node:fs";
import { create } from "@bufbuild/protobuf";
import { ConfigError } from "@toolmesh/config";
import { type ModelStatus, ModelStatusSchema } from "@toolmesh/proto";
import type { ToolAgentConfig } from "../config.js";
import { ChatModel } from "./chat-model.js";

/** The ServiceAgent's model, the CodingAgent's, and what the status shows of them. */
export interface Models {
  service: ChatModel | undefined;
  coding: ChatModel | undefined;
  status: ModelStatus;
}

/**
 * The models from the configuration: the ServiceAgent's (TOOLMESH_MODEL_URL) and the CodingAgent's
 * (TOOLMESH_CODING_MODEL_URL, else the same). API keys are read from their files once and live
 * only inside the clients; a file that cannot be read is a ConfigError naming its variable.
 */
export function modelsOf(config: ToolAgentConfig): Models {
  const common = {
    timeoutMs: config.modelTimeoutMs,
    maxResponseBytes: config.modelMaxResponseBytes,
    maxTokens: config.modelMaxTokens,
  };
  const service = config.modelUrl
    ? new ChatModel({
        ...common,
        url: config.modelUrl,
        model: config.model,
        apiKey: readKey("TOOLMESH_MODEL_API_KEY_FILE", config.modelApiKeyFile),
      })
    : undefined;
  const coding = config.codingModelUrl
    ? new ChatModel({
        ...common,
        url: config.codingModelUrl,
        model: config.codingModel ?? config.model,
        apiKey: readKey("TOOLMESH_CODING_MODEL_API_KEY_FILE", config.codingModelApiKeyFile),
      })
    : service;
  return {
    service,
    coding,
    status: create(ModelStatusSchema, {
      configured: service !== undefined,
      url: shownUrl(config.modelUrl),
      model: service ? config.model : "",
      codingUrl: shownUrl(config.codingModelUrl),
      codingModel: config.codingModelUrl ? (config.codingModel ?? config.model) : "",
    }),
  };
}

function readKey(variable: string, file: string | undefined): string | undefined {
  if (!file) return undefined;
  try {
    const key = readFileSync(file, "utf8").trim();
    return key === "" ? undefined : key;
  } catch (error) {
    throw new ConfigError([
      `${variable}=${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)})`,
    ]);
  }
}

/** A URL as the status shows it: without credentials or a query (where some put keys). */
function shownUrl(url: string | undefined): string {
  if (!url) return "";
  const shown = new URL(url);
  shown.username = "";
  shown.password = "";
  shown.search = "";
  return shown.toString();
}
