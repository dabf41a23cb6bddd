import { createSecretRedactor } from "@toolmesh/log";
import { runService } from "@toolmesh/service";
import { memoryWriterConfig } from "./config.js";
import { MemoryStore } from "./memory-store.js";
import { MEMORY_MAX_ACK_PENDING, MemoryWriter } from "./writer.js";

await runService({
  name: "memory-writer",
  config: memoryWriterConfig,
  streams: ["callback"],
  async start({ config, log, js, jsm }) {
    const store = await MemoryStore.open({
      dataDir: config.dataDir,
      maxOpenFiles: config.maxOpenFiles,
      maxFileBytes: config.maxFileBytes,
      recentCalls: config.recentCalls,
      recoveryCalls: MEMORY_MAX_ACK_PENDING,
      log,
    });
    const writer = new MemoryWriter({
      js,
      jsm,
      store,
      redact: createSecretRedactor(config.redactKeys),
      log,
    });
    await writer.start();
    return {
      ready: { dir: store.dir, ...store.startup },
      async stop() {
        await writer.stop();
        await store.close();
      },
    };
  },
});
