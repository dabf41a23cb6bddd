import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { createLogger } from "@toolmesh/log";
import { GetToolResponseSchema, RegistryService } from "@toolmesh/proto";
import { describe, expect, it } from "vitest";
import { createToolmeshServer } from "../src/index.js";

describe("drain", () => {
  it("closes HTTP/1.1 keep-alive connections instead of waiting out the grace period", async () => {
    const server = createToolmeshServer({
      services: [RegistryService],
      log: createLogger("test", "silent"),
      readMaxBytes: 1024,
      routes(router) {
        router.service(RegistryService, { getTool: () => create(GetToolResponseSchema) });
      },
    });
    const listening = await server.listen(0, "127.0.0.1");
    const client = createClient(
      RegistryService,
      createConnectTransport({ baseUrl: listening.url, httpVersion: "1.1" }),
    );
    await client.getTool({ name: "x" });
    const started = performance.now();
    await listening.close(30_000);
    // Without closing idle keep-alive sockets this waits for the 30 s grace timer.
    expect(performance.now() - started).toBeLessThan(1_000);
  });
});
