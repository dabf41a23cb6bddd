import { type ConfigOf, commonConfig, int, list } from "@toolmesh/config";
import { defaultSecretKeyPatterns } from "@toolmesh/log";

/** Every setting of memory-writer, read from the environment. */
export const memoryWriterConfig = {
  ...commonConfig,
  redactKeys: list("TOOLMESH_MEMORY_REDACT_KEYS", defaultSecretKeyPatterns),
  /** Agent files open at once; the least recently used is closed when another is needed. */
  maxOpenFiles: int("TOOLMESH_MEMORY_MAX_OPEN_FILES", 256, { min: 2, max: 65_536 }),
  /** A memory file rotates to its next part before it would grow past this. */
  maxFileBytes: int("TOOLMESH_MEMORY_MAX_FILE_BYTES", 64 * 1024 * 1024, {
    min: 64 * 1024,
    max: 1024 * 1024 * 1024 * 1024,
  }),
  /** Ids of the calls written last that a redelivered event is checked against. */
  recentCalls: int("TOOLMESH_MEMORY_RECENT_CALLS", 65_536, { min: 4096, max: 4_194_304 }),
};

export type MemoryWriterConfig = ConfigOf<typeof memoryWriterConfig>;
