import { createSecretRedactor } from "@toolmesh/log";
import { runService } from "@toolmesh/service";
import { memoryWriterConfig } from "./config.js";
import { MemoryStore } from "./memory-store.js";
import { MemoryWriter } from "./writer.js";

await runService({
  name: "memory-writer",
  config: memoryWriterConfig,
  streams: ["callback"],
  async start({ config, log, js, jsm }) {
    const store = await MemoryStore.open(config.dataDir);
    const writer = new MemoryWriter({
      js,
      jsm,
      store,
      redact: createSecretRedactor(config.redactKeys),
      log,
    });
    await writer.start();
    return {
      ready: { dir: store.dir, calls_known: store.size },
      async stop() {
        await writer.stop();
        await store.close();
      },
    };
  },
});
