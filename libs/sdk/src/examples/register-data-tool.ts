import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { create } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code, ConnectError } from "@toolmesh/errors";
import { LocalProtocol, RegistryService, RuntimeSchema } from "@toolmesh/proto";
import { toolSpec } from "../serve-tools.js";
import { dataQueryTool } from "./data-query.js";

// Registers data.query as a LOCAL tool: the Dispatcher starts data-tool-main.ts on demand.
// TOOLMESH_REGISTRY_URL (default http://127.0.0.1:7101) and an admin credential in
// TOOLMESH_TOOL_TOKEN (default: the contents of <TOOLMESH_DATA_DIR or .toolmesh>/admin.token).
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../../..");
const token =
  process.env.TOOLMESH_TOOL_TOKEN ??
  readFileSync(
    path.join(process.env.TOOLMESH_DATA_DIR ?? path.join(root, ".toolmesh"), "admin.token"),
    "utf8",
  ).trim();
// The definition is only read for its metadata here; the handler runs in data-tool-main.ts.
const spec = toolSpec(dataQueryTool(undefined as never), "");
spec.runtime = create(RuntimeSchema, {
  kind: {
    case: "local",
    value: {
      command: process.execPath,
      args: ["--import", "tsx", "libs/sdk/src/examples/data-tool-main.ts"],
      protocol: LocalProtocol.GRPC,
      workingDir: root,
    },
  },
});
const registry = createClient(
  RegistryService,
  createGrpcTransport({ baseUrl: process.env.TOOLMESH_REGISTRY_URL ?? "http://127.0.0.1:7101" }),
);
const headers = { authorization: `Bearer ${token}` };
try {
  await registry.registerTool({ tool: spec }, { headers });
} catch (error) {
  if (ConnectError.from(error).code !== Code.AlreadyExists) throw error;
  await registry.updateTool({ tool: spec }, { headers });
}
process.stdout.write("registered data.query (local runtime)\n");
