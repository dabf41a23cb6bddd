import { randomUUID } from "node:crypto";
import path from "node:path";
import { createSecretRedactor } from "@toolmesh/log";
import { holdLease } from "@toolmesh/nats";
import { runService } from "@toolmesh/service";
import { memoryWriterConfig } from "./config.js";
import { MEMORY_DIR } from "./layout.js";
import { MemoryStore } from "./memory-store.js";
import { MEMORY_RECOVERY_CALLS, MemoryWriter } from "./writer.js";

await runService({
  name: "memory-writer",
  config: memoryWriterConfig,
  async start({ config, log, nc, js, jsm }) {
    // One process writes the memory files at a time: two appending to one agent's file would
    // interleave and neither would know the other's calls. A standby takes over within seconds
    // and, opening each file afresh, reads back the calls its predecessor wrote.
    const memoryLease = await holdLease({
      nc,
      service: "memory-writer",
      instance: randomUUID(),
      replicas: config.jetstreamReplicas,
      log,
      async work(lease) {
        const store = await MemoryStore.open({
          dataDir: config.dataDir,
          maxOpenFiles: config.maxOpenFiles,
          maxFileBytes: config.maxFileBytes,
          recentCalls: config.recentCalls,
          recoveryCalls: MEMORY_RECOVERY_CALLS,
          log,
        });
        log.info({ dir: store.dir, ...store.startup }, "memory files opened");
        const writer = new MemoryWriter({
          nc,
          js,
          jsm,
          store,
          redact: createSecretRedactor(config.redactKeys),
          log,
          // A holder that could not renew its lease writes nothing more: a successor may be writing.
          active: () => lease.held,
        });
        await writer.start();
        return async () => {
          await writer.stop();
          await store.close();
        };
      },
    });
    return {
      ready: { dir: path.join(config.dataDir, MEMORY_DIR) },
      async stop() {
        await memoryLease.stop();
      },
    };
  },
});
