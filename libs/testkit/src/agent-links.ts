import { freePort } from "@toolmesh/launcher";

type ServiceEnv = Record<string, Record<string, string>>;

const PORTS = {
  registry: "TOOLMESH_REGISTRY_PORT",
  dispatcher: "TOOLMESH_DISPATCHER_PORT",
  "tool-agent": "TOOLMESH_TOOL_AGENT_PORT",
} as const;

/**
 * The environment that links the tool agent with the Dispatcher and the Registry in a stack on
 * free ports: they call each other by URL, so their ports are chosen before they start (a port
 * the caller already gave is kept). Merged under the caller's own serviceEnv.
 */
export async function toolAgentLinks(given: ServiceEnv = {}): Promise<ServiceEnv> {
  const ports = {} as Record<keyof typeof PORTS, string>;
  for (const [service, variable] of Object.entries(PORTS) as [keyof typeof PORTS, string][])
    ports[service] = given[service]?.[variable] ?? String(await freePort());
  const url = (service: keyof typeof PORTS) => `http://127.0.0.1:${ports[service]}`;
  const links: ServiceEnv = {
    registry: { [PORTS.registry]: ports.registry },
    dispatcher: {
      [PORTS.dispatcher]: ports.dispatcher,
      TOOLMESH_REGISTRY_URL: url("registry"),
      TOOLMESH_TOOL_AGENT_URL: url("tool-agent"),
    },
    "tool-agent": {
      [PORTS["tool-agent"]]: ports["tool-agent"],
      TOOLMESH_REGISTRY_URL: url("registry"),
      TOOLMESH_DISPATCHER_URL: url("dispatcher"),
    },
  };
  const merged: ServiceEnv = { ...given };
  for (const [service, env] of Object.entries(links))
    merged[service] = { ...env, ...given[service] };
  return merged;
}
