import { hostname } from "node:os";
import type { Logger } from "@toolmesh/log";
import type { DockerRuntime as DockerRuntimeSpec } from "@toolmesh/proto";
import type Docker from "dockerode";
import { type DockerSettings, LABEL_OWNER, launchContainer } from "./docker-container.js";
import type { GrpcRuntime } from "./grpc-runtime.js";
import type { RemoteRuntime } from "./remote-runtime.js";
import type { SupervisorSettings } from "./supervised-backend.js";
import { type InstanceBreakers, SupervisedRuntime } from "./supervised-runtime.js";

export type { DockerSettings } from "./docker-container.js";

/**
 * Tools whose backend is a container image the Dispatcher runs on demand through the Docker
 * Engine API, isolated by default, supervised like a local tool (health, restart with backoff,
 * idle stop).
 */
export class DockerRuntime extends SupervisedRuntime<DockerRuntimeSpec> {
  constructor(
    grpcRuntime: GrpcRuntime,
    remote: RemoteRuntime,
    supervisor: SupervisorSettings,
    docker: DockerSettings,
    log: Logger,
    breakers?: InstanceBreakers,
  ) {
    // The Engine's client loads on the first docker tool's launch: a Dispatcher without one
    // never pays for it (dockerode and its dependencies, several MB of memory).
    let client: Promise<Docker> | undefined;
    const engine = () => {
      client ??= import("dockerode").then(
        ({ default: Engine }) => new Engine({ socketPath: docker.socket }),
      );
      return client;
    };
    // Containers name their Dispatcher so that one left behind by a crashed Dispatcher can be told apart.
    const owner = `${hostname()}:${process.pid}`;
    let swept: Promise<void> | undefined;
    super(
      {
        noun: "docker tool",
        name: "docker",
        specOf: (tool) => {
          const kind = tool.spec?.runtime?.kind;
          return kind?.case === "docker" ? kind.value : undefined;
        },
        launcher: (tool, toolLog, secrets) => async (spec) => {
          const engineClient = await engine();
          swept ??= removeOrphans(engineClient, log);
          await swept;
          return launchContainer(engineClient, tool, owner, spec, docker, toolLog, secrets);
        },
      },
      grpcRuntime,
      remote,
      supervisor,
      log,
      breakers,
    );
  }
}

/**
 * Removes containers that a Dispatcher on this host started and that outlived it (it was killed
 * before it could stop them): on the host network they would hold their tool's port.
 */
async function removeOrphans(client: Docker, log: Logger): Promise<void> {
  const prefix = `${hostname()}:`;
  let containers: Docker.ContainerInfo[];
  try {
    containers = await client.listContainers({ all: true, filters: { label: [LABEL_OWNER] } });
  } catch {
    return; // The Engine is unreachable; the launch that follows says so.
  }
  for (const info of containers) {
    const owner = info.Labels[LABEL_OWNER] ?? "";
    if (!owner.startsWith(prefix)) continue;
    const pid = Number(owner.slice(prefix.length));
    if (pid === process.pid || processAlive(pid)) continue;
    log.warn(
      { container_id: info.Id.slice(0, 12), owner },
      "removing a container of a gone Dispatcher",
    );
    await client
      .getContainer(info.Id)
      .remove({ force: true })
      .catch(() => {});
  }
}

function processAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== "ESRCH";
  }
}
