import { type ConfigOf, commonConfig, list } from "@toolmesh/config";
import { defaultSecretKeyPatterns } from "@toolmesh/log";

/** Every setting of memory-writer, read from the environment. */
export const memoryWriterConfig = {
  ...commonConfig,
  redactKeys: list("TOOLMESH_MEMORY_REDACT_KEYS", defaultSecretKeyPatterns),
};

export type MemoryWriterConfig = ConfigOf<typeof memoryWriterConfig>;
