import path from "node:path";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { LocalProtocol, type LocalRuntimeSchema } from "@toolmesh/proto";
import { repoRoot } from "./repo-root.js";

/** The local HTTP tool the tests and benchmarks run as a process. */
export const httpToolScript = path.join(repoRoot, "services/dispatcher/test/http-tool.mjs");

/**
 * A tool's runtime that runs the local HTTP tool (httpToolScript): it answers with its pid and
 * its arguments, fails on `{"fail": true}`, waits `sleep_ms` or burns `burn_ms` of CPU when asked.
 * `pool` adds the runtime's settings (min_instances, max_instances, health_interval_ms …).
 */
export function localHttpRuntime(pool: MessageInitShape<typeof LocalRuntimeSchema> = {}) {
  return {
    kind: {
      case: "local" as const,
      value: {
        command: process.execPath,
        args: [httpToolScript],
        protocol: LocalProtocol.HTTP,
        ...pool,
      },
    },
  };
}
