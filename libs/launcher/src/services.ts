import { existsSync } from "node:fs";
import path from "node:path";

/** A process of the stack, in start order. */
export interface ServiceSpec {
  /** Folder under services/. */
  name: string;
  /** Environment variable holding its port; undefined for processes without one. */
  portEnv?: string;
  defaultPort?: number;
}

/** Every process the architecture names; the launcher starts those that exist. */
export const stackServices: ServiceSpec[] = [
  { name: "permission", portEnv: "TOOLMESH_PERMISSION_PORT", defaultPort: 7102 },
  { name: "registry", portEnv: "TOOLMESH_REGISTRY_PORT", defaultPort: 7101 },
  { name: "dispatcher", portEnv: "TOOLMESH_DISPATCHER_PORT", defaultPort: 7100 },
  { name: "audit", portEnv: "TOOLMESH_AUDIT_PORT", defaultPort: 7103 },
  { name: "callback", portEnv: "TOOLMESH_CALLBACK_PORT", defaultPort: 7104 },
  { name: "tool-agent", portEnv: "TOOLMESH_TOOL_AGENT_PORT", defaultPort: 7106 },
  { name: "memory-writer" },
  { name: "knowhub-sync" },
  { name: "console", portEnv: "TOOLMESH_CONSOLE_PORT", defaultPort: 7105 },
];

/** The services of the stack built so far (those with services/<name>/src/main.ts). */
export function availableServices(root: string): ServiceSpec[] {
  return stackServices.filter((s) => existsSync(serviceEntry(root, s.name)));
}

export function serviceEntry(root: string, name: string): string {
  return path.join(root, "services", name, "src", "main.ts");
}
