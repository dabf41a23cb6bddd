import { randomBytes } from "node:crypto";
import { freePort, portIsFree } from "@toolmesh/config";
import { isolatedHostConfig, NOBODY } from "@toolmesh/docker";
import type { Logger } from "@toolmesh/log";
import type { DockerRuntime as DockerRuntimeSpec } from "@toolmesh/proto";
import { hideSecrets } from "@toolmesh/vault";
import type Docker from "dockerode";
import type { CallSecretValues } from "./call-secrets.js";
import { resolveSecrets } from "./docker-secrets.js";
import { secretEnv, writeSecretFiles } from "./secret-files.js";
import { type LaunchedBackend, ToolStartError } from "./supervised-backend.js";

/** How docker tools are run when their spec leaves a value at zero, from the configuration. */
export interface DockerSettings {
  /** The Docker Engine's socket, for messages. */
  socket: string;
  memoryBytes: number;
  cpuMillis: number;
  pids: number;
  /** One file per secret a tool may declare; empty means none can be declared. */
  secretsDir: string;
  startTimeoutMs: number;
}

/** Labels that mark a container as one the Dispatcher runs. */
export const LABEL_TOOL = "toolmesh.tool";
export const LABEL_OWNER = "toolmesh.owner";
/** Where a container finds the vault's file secrets (TOOLMESH_SECRETS_DIR). */
const SECRETS_MOUNT = "/run/toolmesh/secrets";
/** How long a container gets to exit after SIGTERM before Docker kills it. */
const STOP_GRACE_S = 2;
/** Lines of a crashed container's output kept for its status. */
const LOG_TAIL_LINES = 20;

/**
 * Creates and starts one container for a docker tool with isolation that the spec cannot weaken:
 * a non-root user, a read-only root filesystem (a small noexec /tmp), no new privileges, every
 * capability dropped, memory, CPU and pids limits, host paths only as declared, declared secrets
 * only. The container shares the host network and is removed once it has ended.
 */
export async function launchContainer(
  docker: Docker,
  tool: string,
  owner: string,
  spec: DockerRuntimeSpec,
  settings: DockerSettings,
  log: Logger,
  vaultSecrets?: CallSecretValues,
): Promise<LaunchedBackend> {
  let port = spec.port;
  if (port === 0) port = await freePort();
  else if (!(await portIsFree(port)))
    throw new ToolStartError(
      `port ${port} on 127.0.0.1 is already in use; stop what holds it or register the tool with port 0`,
    );
  const secrets = await resolveSecrets(spec.secrets, settings.secretsDir);
  secrets.values.push(...(vaultSecrets?.values ?? []));
  const user = spec.user || NOBODY;
  // The vault's file secrets: a directory only the container's user can read, mounted read-only.
  const files = await writeSecretFiles(vaultSecrets, ownerOf(user));
  const env = {
    ...spec.env,
    ...secrets.env,
    ...secretEnv(vaultSecrets),
    ...(files ? { TOOLMESH_SECRETS_DIR: SECRETS_MOUNT } : {}),
    TOOLMESH_TOOL_PORT: String(port),
    TOOLMESH_TOOL_HOST: "127.0.0.1",
  };
  const memory = Number(spec.resources?.memoryBytes ?? 0n) || settings.memoryBytes;
  const signal = AbortSignal.timeout(settings.startTimeoutMs);
  let container: Docker.Container;
  try {
    container = await docker.createContainer({
      name: `toolmesh-${tool}-${randomBytes(4).toString("hex")}`,
      Image: spec.image,
      ...(spec.command.length > 0
        ? { Entrypoint: spec.command.slice(0, 1), Cmd: spec.command.slice(1) }
        : {}),
      User: user,
      Env: Object.entries(env).map(([key, value]) => `${key}=${value}`),
      Labels: { [LABEL_TOOL]: tool, [LABEL_OWNER]: owner },
      HostConfig: {
        ...isolatedHostConfig({
          network: "host",
          memoryBytes: memory,
          cpuMillis: spec.resources?.cpuMillis || settings.cpuMillis,
          pids: spec.resources?.pids || settings.pids,
          mounts: [
            ...spec.mounts.map((m) => ({
              source: m.hostPath,
              target: m.containerPath,
              writable: m.writable,
            })),
            ...(files ? [{ source: files.dir, target: SECRETS_MOUNT, writable: false }] : []),
          ],
        }),
        RestartPolicy: { Name: "no" },
        LogConfig: { Type: "json-file", Config: { "max-size": "1m", "max-file": "1" } },
      },
      abortSignal: signal,
    } as Docker.ContainerCreateOptions);
  } catch (error) {
    await files?.remove();
    throw startError(error, "create", spec.image, settings.socket, secrets.values);
  }
  try {
    await container.start({ abortSignal: signal });
  } catch (error) {
    await container.remove({ force: true }).catch(() => {});
    await files?.remove();
    throw startError(error, "start", spec.image, settings.socket, secrets.values);
  }
  // Asked after the start, "not-running" answers at once for a container that already exited
  // (where "next-exit" would wait for an exit that has happened).
  const exited = container.wait({ condition: "not-running" }) as Promise<{ StatusCode: number }>;
  const id = container.id;
  log.info({ container_id: id.slice(0, 12), image: spec.image, port }, "container started");
  const ended = exited
    .then(
      async (result) =>
        `exited with code ${result.StatusCode}${await endNotes(container, secrets.values)}`,
      (error: unknown) => `lost track of the container: ${describe(error)}`,
    )
    .then(async (how) => {
      await container.remove({ force: true }).catch((error: unknown) => {
        log.warn({ err: error, container_id: id.slice(0, 12) }, "could not remove container");
      });
      await files?.remove();
      return how;
    });
  return {
    port,
    pid: 0,
    containerId: id,
    ended,
    async stop() {
      await container.stop({ t: STOP_GRACE_S }).catch(() => {
        // Already stopped or gone: `ended` settles either way.
      });
      await ended;
    },
  };
}

/** Why the container ended, beyond its exit code: out of memory, and its last output lines. */
async function endNotes(container: Docker.Container, secretValues: string[]): Promise<string> {
  let notes = "";
  try {
    const info = await container.inspect();
    if (info.State.OOMKilled) notes += " (killed: out of memory)";
    const raw = (await container.logs({
      stdout: true,
      stderr: true,
      tail: LOG_TAIL_LINES,
    })) as Buffer;
    const tail = hideSecrets(demuxLogs(raw).trim(), secretValues).slice(-500);
    if (tail) notes += `: ${tail}`;
  } catch {
    // The container may already be gone; the exit code says enough.
  }
  return notes;
}

/**
 * The text of a non-TTY container's log stream: frames of an 8-byte header (stream, 0, 0, 0,
 * length as big-endian uint32) followed by that many bytes.
 */
export function demuxLogs(raw: Buffer): string {
  const parts: Buffer[] = [];
  let offset = 0;
  while (offset + 8 <= raw.length) {
    const length = raw.readUInt32BE(offset + 4);
    parts.push(raw.subarray(offset + 8, offset + 8 + length));
    offset += 8 + length;
  }
  return Buffer.concat(parts).toString("utf8");
}

/** A start failure the operator can act on, keyed on the Engine API's status code. */
function startError(
  error: unknown,
  step: "create" | "start",
  image: string,
  socket: string,
  secretValues: string[],
): ToolStartError {
  const e = error as { statusCode?: number; code?: string; json?: { message?: string } };
  if (e.code === "ENOENT" || e.code === "ECONNREFUSED" || e.code === "EACCES")
    return new ToolStartError(`cannot reach the Docker Engine at ${socket}: ${e.code}`);
  // Creating answers 404 only for a missing image.
  if (step === "create" && e.statusCode === 404)
    return new ToolStartError(
      `image "${image}" is not on the Docker host (the Dispatcher does not pull): build or load it there`,
    );
  const detail = e.json?.message ?? describe(error);
  return new ToolStartError(
    `Docker refused to ${step} the container${e.statusCode ? ` (HTTP ${e.statusCode})` : ""}: ${hideSecrets(detail, secretValues)}`,
  );
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The uid and gid of a container's `uid[:gid]` user (gid defaults to the uid). */
function ownerOf(user: string): { uid: number; gid: number } {
  const [uid, gid] = user.split(":");
  const u = Number(uid);
  return { uid: u, gid: gid === undefined ? u : Number(gid) };
}
