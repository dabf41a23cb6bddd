/** The services an operator's tools (the CLI, the console) talk to. */
export const SERVICE_PORTS = {
  dispatcher: { env: "TOOLMESH_DISPATCHER", port: 7100 },
  registry: { env: "TOOLMESH_REGISTRY", port: 7101 },
  permission: { env: "TOOLMESH_PERMISSION", port: 7102 },
  audit: { env: "TOOLMESH_AUDIT", port: 7103 },
  callback: { env: "TOOLMESH_CALLBACK", port: 7104 },
  "tool-agent": { env: "TOOLMESH_TOOL_AGENT", port: 7106 },
} as const;

export type ServiceName = keyof typeof SERVICE_PORTS;

/**
 * Where each service answers: `TOOLMESH_<SERVICE>_URL` when set, else `http://<host>:<port>`
 * from the same `TOOLMESH_HOST` and `TOOLMESH_<SERVICE>_PORT` the services listen on (a
 * wildcard host means this machine), so one environment configures the stack and its clients.
 */
export function serviceUrls(env: NodeJS.ProcessEnv): Record<ServiceName, string> {
  const rawHost = env.TOOLMESH_HOST?.trim() || "127.0.0.1";
  const host = rawHost === "0.0.0.0" || rawHost === "::" ? "127.0.0.1" : rawHost;
  const out = {} as Record<ServiceName, string>;
  for (const [name, spec] of Object.entries(SERVICE_PORTS) as [
    ServiceName,
    (typeof SERVICE_PORTS)[ServiceName],
  ][]) {
    const url = env[`${spec.env}_URL`]?.trim();
    const port = env[`${spec.env}_PORT`]?.trim() || String(spec.port);
    out[name] = (url || `http://${host.includes(":") ? `[${host}]` : host}:${port}`).replace(
      /\/+$/,
      "",
    );
  }
  return out;
}
