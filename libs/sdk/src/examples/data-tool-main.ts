import { serveTools } from "../serve-tools.js";
import { dataQueryTool, openOrdersDatabase } from "./data-query.js";

// Runs the example data tool: TOOLMESH_TOOL_PORT (default 7200), and registers it when
// TOOLMESH_REGISTRY_URL and TOOLMESH_TOOL_TOKEN (an admin credential) are set.
const db = await openOrdersDatabase();
const registryUrl = process.env.TOOLMESH_REGISTRY_URL;
const token = process.env.TOOLMESH_TOOL_TOKEN;
const served = await serveTools([dataQueryTool(db)], {
  port: Number(process.env.TOOLMESH_TOOL_PORT ?? 7200),
  host: process.env.TOOLMESH_TOOL_HOST ?? "127.0.0.1",
  ...(registryUrl && token ? { registry: { url: registryUrl, token } } : {}),
});
process.stdout.write(
  `${JSON.stringify({ level: "info", msg: "listening (tool backend)", port: served.port, tools: ["data.query"] })}\n`,
);
const stop = () => void served.close().then(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
