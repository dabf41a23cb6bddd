import { defineTool, serveTools } from "@toolmesh/sdk";

// The chain's backend: a no-op tool served by the SDK and registered in the registry.
const served = await serveTools(
  [
    defineTool({
      name: "bench.noop",
      description: "Does nothing; for the benchmark.",
      inputSchema: {
        type: "object",
        additionalProperties: false,
        properties: { n: { type: "integer", minimum: 0 } },
      },
      outputSchema: { type: "object", properties: { n: { type: "integer" } } },
      requiredScopes: ["bench:run"],
      idempotent: true,
      handler: (args: { n?: number }) => ({ n: args.n ?? 0 }),
    }),
  ],
  {
    port: 0,
    registry: {
      url: process.env.TOOLMESH_REGISTRY_URL ?? "http://127.0.0.1:7101",
      token: process.env.TOOLMESH_TOOL_TOKEN ?? "",
    },
  },
);
process.stdout.write(`${JSON.stringify({ msg: "listening", port: served.port })}\n`);
