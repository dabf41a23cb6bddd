import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmod, chown, mkdir, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { isolatedHostConfig, NOBODY } from "@toolmesh/docker";
import type { Logger } from "@toolmesh/log";
import type Docker from "dockerode";
import { type CommandResult, execIn, MAX_OUTPUT_BYTES } from "./container-exec.js";
import { ensureSandboxImage } from "./image-build.js";

/** How the sandboxes run (docs/configuration.md, the CodingAgent). */
export interface SandboxSettings {
  /** Where each task's folder lives: `<root>/<task id>/{workspace,staging}`. */
  root: string;
  /** A local image to build in; undefined builds one from `busybox`. */
  image: string | undefined;
  busybox: string;
  network: "none" | "host";
  memoryBytes: number;
  cpuMillis: number;
  pids: number;
  /** The longest one command may run. */
  commandTimeoutMs: number;
  /** The uv binary on the host; undefined when uv is off. */
  uv: string | undefined;
}

/** Raised for what the CodingAgent asked wrongly (the model reads the message). */
export class SandboxError extends Error {
  override name = "SandboxError";
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Labels that mark the containers of the CodingAgent's tasks. */
const LABEL_TASK = "toolmesh.task";

/** One task's sandbox: its folder on the host and, once made, its container. */
interface Env {
  taskId: string;
  dir: string;
  container?: Docker.Container;
  ports: number[];
}

/**
 * The CodingAgent's sandboxes: for each task a workspace on the host and a container that sees
 * only it (at /workspace, writable) and a staging folder (read-only), with the isolation every
 * toolmesh container gets, as nobody, and no network unless configured. File writes are staged
 * on the host where the container cannot reach, then copied by the container itself, so a link
 * the model made inside the workspace can never lead a write or read outside it.
 */
export class Sandboxes {
  private readonly envs = new Map<string, Env>();
  private image: Promise<string> | undefined;

  constructor(
    private readonly docker: Docker,
    private readonly settings: SandboxSettings,
    private readonly log: Logger,
  ) {}

  /** The task's workspace on the host (made on first use). */
  async workspace(taskId: string): Promise<string> {
    const env = await this.env(taskId);
    return path.join(env.dir, "workspace");
  }

  /** Creates the task's container (again with `ports` when given); its workspace is kept. */
  async create(taskId: string, ports?: number[]): Promise<{ container: string; ports: number[] }> {
    const env = await this.env(taskId);
    if (ports) env.ports = ports;
    if (env.container) {
      if (!ports) return { container: env.container.id.slice(0, 12), ports: env.ports };
      await env.container.remove({ force: true }).catch(() => {});
      env.container = undefined;
    }
    const container = await this.docker.createContainer({
      name: `toolmesh-task-${taskId.slice(0, 12)}-${randomBytes(3).toString("hex")}`,
      Image: await this.sandboxImage(),
      Entrypoint: ["/bin/sleep"],
      Cmd: ["2147483647"],
      User: NOBODY,
      WorkingDir: "/workspace",
      Env: this.environment(env),
      Labels: { [LABEL_TASK]: taskId },
      ExposedPorts: Object.fromEntries(env.ports.map((p) => [`${p}/tcp`, {}])),
      HostConfig: {
        ...isolatedHostConfig(this.isolation(env, false)),
        RestartPolicy: { Name: "no" },
        LogConfig: { Type: "json-file", Config: { "max-size": "1m", "max-file": "1" } },
      },
    } as Docker.ContainerCreateOptions);
    await container.start();
    env.container = container;
    this.log.info({ task_id: taskId, container_id: container.id.slice(0, 12) }, "sandbox created");
    return { container: container.id.slice(0, 12), ports: env.ports };
  }

  /** Runs a shell command in the task's container (made if there is none), bounded in time and output. */
  async run(taskId: string, command: string, timeoutMs?: number): Promise<CommandResult> {
    return this.exec(await this.container(taskId), ["/bin/sh", "-c", command], {}, timeoutMs);
  }

  /** Writes a file of the workspace (a path relative to it), creating its folders. */
  async writeFile(taskId: string, file: string, content: string, executable: boolean) {
    const target = workspacePath(file);
    const container = await this.container(taskId);
    const env = await this.env(taskId);
    const staged = `f-${randomBytes(8).toString("hex")}`;
    await writeFile(path.join(env.dir, "staging", staged), content, { mode: 0o644 });
    try {
      const done = await this.exec(
        container,
        [
          "/bin/sh",
          "-c",
          'mkdir -p -- "$(dirname -- "$TM_PATH")" && cat -- "/staging/$TM_SRC" > "$TM_PATH" && chmod "$TM_MODE" -- "$TM_PATH"',
        ],
        { TM_PATH: target, TM_SRC: staged, TM_MODE: executable ? "0755" : "0644" },
      );
      if (done.exitCode !== 0)
        throw new SandboxError("write_failed", `writing ${file} failed: ${done.stderr.trim()}`);
    } finally {
      await rm(path.join(env.dir, "staging", staged), { force: true });
    }
    return { path: file, bytes: Buffer.byteLength(content) };
  }

  /** Reads a file of the workspace, up to 64 KiB. */
  async readFile(taskId: string, file: string): Promise<{ content: string; truncated: boolean }> {
    const target = workspacePath(file);
    const done = await this.exec(
      await this.container(taskId),
      ["/bin/sh", "-c", `head -c ${MAX_OUTPUT_BYTES + 1} -- "$TM_PATH"`],
      { TM_PATH: target },
    );
    if (done.exitCode !== 0)
      throw new SandboxError("read_failed", `reading ${file} failed: ${done.stderr.trim()}`);
    const truncated = done.stdout.length > MAX_OUTPUT_BYTES;
    return { content: truncated ? done.stdout.slice(0, MAX_OUTPUT_BYTES) : done.stdout, truncated };
  }

  /**
   * Runs uv in a container of its own for this one command: the workspace, plus the host's /usr
   * (Python) and the uv binary, read-only; the same isolation and network as the task's sandbox.
   */
  async runUv(taskId: string, args: string[], timeoutMs?: number): Promise<CommandResult> {
    const uv = this.settings.uv;
    if (!uv)
      throw new SandboxError(
        "uv_disabled",
        "uv is turned off (TOOLMESH_CODING_UV_ENABLED); build a docker tool",
      );
    const env = await this.env(taskId);
    const container = await this.docker.createContainer({
      Image: await this.sandboxImage(),
      Entrypoint: ["/bin/sleep"],
      Cmd: ["2147483647"],
      User: NOBODY,
      WorkingDir: "/workspace",
      Env: [
        ...this.environment(env),
        "PATH=/opt/uv:/usr/bin:/bin",
        "HOME=/tmp",
        "UV_CACHE_DIR=/workspace/.uv-cache",
        "UV_PYTHON_DOWNLOADS=never",
        "UV_NO_PROGRESS=1",
      ],
      Labels: { [LABEL_TASK]: taskId },
      HostConfig: {
        ...isolatedHostConfig(this.isolation(env, true)),
        RestartPolicy: { Name: "no" },
      },
    } as Docker.ContainerCreateOptions);
    try {
      await container.start();
      return await this.exec(container, ["uv", ...args], {}, timeoutMs);
    } finally {
      await container.remove({ force: true }).catch(() => {});
    }
  }

  /** Removes the task's container (its workspace stays until the task ends). */
  async removeContainer(taskId: string): Promise<boolean> {
    const env = this.envs.get(taskId);
    const container = env?.container;
    if (!env || !container) return false;
    env.container = undefined;
    await container.remove({ force: true }).catch(() => {});
    return true;
  }

  /** Removes the task's containers and its folder. */
  async destroy(taskId: string): Promise<void> {
    const env = this.envs.get(taskId);
    this.envs.delete(taskId);
    const found = await this.docker.listContainers({
      all: true,
      filters: { label: [`${LABEL_TASK}=${taskId}`] },
    });
    for (const c of found)
      await this.docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => {});
    await rm(env?.dir ?? path.join(this.settings.root, taskId), { recursive: true, force: true });
  }

  /** The containers of tasks no process is building any more (after a crash). */
  async removeStray(keep: (taskId: string) => boolean): Promise<void> {
    const found = await this.docker.listContainers({ all: true, filters: { label: [LABEL_TASK] } });
    for (const c of found) {
      const taskId = c.Labels[LABEL_TASK] ?? "";
      if (/^[0-9a-f]{32}$/.test(taskId) && !keep(taskId)) await this.destroy(taskId);
    }
  }

  /** Runs argv in a container, bounded by the configured command time (or less). */
  private exec(
    container: Docker.Container,
    argv: string[],
    vars: Record<string, string>,
    timeoutMs = this.settings.commandTimeoutMs,
  ): Promise<CommandResult> {
    return execIn(
      this.docker,
      container,
      argv,
      vars,
      Math.min(timeoutMs, this.settings.commandTimeoutMs),
    );
  }

  /** The task's container, made now if it has none. */
  private async container(taskId: string): Promise<Docker.Container> {
    const existing = this.envs.get(taskId)?.container;
    if (existing) return existing;
    await this.create(taskId);
    const made = this.envs.get(taskId)?.container;
    if (!made) throw new SandboxError("no_env", "the sandbox could not be created");
    return made;
  }

  /** The sandbox image, built once (or the configured one). */
  sandboxImage(): Promise<string> {
    if (this.settings.image) return Promise.resolve(this.settings.image);
    this.image ??= ensureSandboxImage(this.docker, this.settings.busybox).catch((error) => {
      this.image = undefined;
      throw error;
    });
    return this.image;
  }

  private async env(taskId: string): Promise<Env> {
    let env = this.envs.get(taskId);
    if (!env) {
      const dir = path.join(this.settings.root, taskId);
      await mkdir(path.join(dir, "workspace"), { recursive: true });
      await mkdir(path.join(dir, "staging"), { recursive: true });
      // The container runs as nobody; the workspace is theirs to write.
      await chownToNobody(path.join(dir, "workspace"));
      env = { taskId, dir, ports: [] };
      this.envs.set(taskId, env);
    }
    return env;
  }

  private environment(env: Env): string[] {
    return env.ports.length > 0 ? [`TOOLMESH_TOOL_PORT=${env.ports[0]}`] : [];
  }

  private isolation(env: Env, withUv: boolean) {
    const mounts = [
      { source: path.join(env.dir, "workspace"), target: "/workspace", writable: true },
      { source: path.join(env.dir, "staging"), target: "/staging", writable: false },
    ];
    if (withUv && this.settings.uv) {
      mounts.push({ source: "/usr", target: "/usr", writable: false });
      mounts.push({ source: this.settings.uv, target: "/opt/uv/uv", writable: false });
    }
    return {
      network: this.settings.network,
      memoryBytes: this.settings.memoryBytes,
      cpuMillis: this.settings.cpuMillis,
      pids: this.settings.pids,
      mounts,
      tmp: "rw,nosuid,nodev,size=64m",
    };
  }
}

/** A path inside the workspace from a relative one; SandboxError for one that leaves it. */
export function workspacePath(file: string): string {
  if (file === "" || file.includes("\0") || file.length > 512)
    throw new SandboxError(
      "bad_path",
      "give a relative path inside the workspace, such as src/main.py",
    );
  const normal = path.posix.normalize(`/workspace/${file}`);
  if (!normal.startsWith("/workspace/") || path.posix.isAbsolute(file))
    throw new SandboxError(
      "bad_path",
      `"${file}" is not inside the workspace; give a relative path such as src/main.py`,
    );
  return normal;
}

async function chownToNobody(dir: string): Promise<void> {
  // Only root may give a folder away; a non-root agent's sandbox runs as nobody all the same and
  // the folder is opened to it by mode instead.
  if (process.getuid?.() === 0) await chown(dir, 65534, 65534);
  else await chmod(dir, 0o777);
}

/** An executable's absolute path (a bare name is looked up on PATH); undefined when there is none. */
export function resolveBinary(name: string): string | undefined {
  if (path.isAbsolute(name)) return name;
  try {
    const found = execFileSync("/bin/sh", ["-c", 'command -v -- "$1"', "sh", name], {
      encoding: "utf8",
    }).trim();
    return found === "" ? undefined : found;
  } catch {
    return undefined;
  }
}
