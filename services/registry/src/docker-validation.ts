import { invalidField } from "@toolmesh/errors";
import { type DockerRuntime, LocalProtocol } from "@toolmesh/proto";
import { ENV_KEY, maxCount, maxLength } from "./field-checks.js";
import { checkSupervision } from "./operation-checks.js";

/** The limits a docker runtime shares with a local one. */
export interface SharedRuntimeLimits {
  args: number;
  argLength: number;
  envEntries: number;
  envKeyLength: number;
  envValueLength: number;
  httpPathLength: number;
}

/** Size limits of a docker runtime; a value over a limit is INVALID_ARGUMENT naming the field. */
export const dockerLimits = {
  imageLength: 512,
  minMemoryBytes: 6n * 1024n * 1024n,
  maxMemoryBytes: 64n * 1024n * 1024n * 1024n,
  cpuMillis: 64_000,
  pids: 32_768,
  mounts: 16,
  pathLength: 1024,
  secrets: 32,
} as const;

// A reference as `docker pull` takes it: [host[:port]/]path[:tag][@sha256:digest], or an image id.
const IMAGE =
  /^(?:(?:[a-zA-Z0-9-]+\.)*[a-zA-Z0-9-]+(?::\d+)?\/)?[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:\/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*(?::\w[\w.-]{0,127})?(?:@sha256:[0-9a-f]{64})?$|^sha256:[0-9a-f]{64}$/;
const USER = /^(\d{1,10})(?::(\d{1,10}))?$/;
const SECRET_NAME = /^[A-Za-z0-9_.-]{1,128}$/;
// Set by the Dispatcher for every container; a spec may not override them.
const RESERVED_ENV = new Set(["TOOLMESH_TOOL_PORT", "TOOLMESH_TOOL_HOST"]);
// Host paths whose mount hands the tool the host itself.
const FORBIDDEN_HOST_PATHS = new Set(["/", "/var/run/docker.sock", "/run/docker.sock"]);

/** Validates a docker runtime; every failure is INVALID_ARGUMENT naming the field. */
export function checkDockerRuntime(docker: DockerRuntime, limits: SharedRuntimeLimits): void {
  const at = (field: string) => `tool.runtime.docker.${field}`;
  if (docker.image === "")
    throw invalidField(
      at("image"),
      "is required: an image on the Docker host, such as toolmesh/echo:1",
    );
  maxLength(at("image"), docker.image, dockerLimits.imageLength);
  if (!IMAGE.test(docker.image))
    throw invalidField(
      at("image"),
      `"${docker.image}" is not an image reference ([host/]name[:tag][@sha256:digest], lowercase name)`,
    );

  maxCount(at("command"), docker.command.length, limits.args);
  docker.command.forEach((arg, i) => {
    maxLength(`${at("command")}[${i}]`, arg, limits.argLength);
  });
  if (docker.command.length > 0 && docker.command[0]?.trim() === "")
    throw invalidField(`${at("command")}[0]`, "is empty: the first element is the executable");

  const env = Object.entries(docker.env);
  maxCount(at("env"), env.length, limits.envEntries);
  for (const [key, value] of env) {
    const field = `${at("env")}[${JSON.stringify(key)}]`;
    if (key.length > limits.envKeyLength || !ENV_KEY.test(key))
      throw invalidField(field, "is not an environment variable name ([A-Za-z_][A-Za-z0-9_]*)");
    if (RESERVED_ENV.has(key)) throw invalidField(field, "is set by the Dispatcher; remove it");
    maxLength(field, value, limits.envValueLength);
  }

  if (docker.port !== 0 && (docker.port < 1024 || docker.port > 65535))
    throw invalidField(
      at("port"),
      `is ${docker.port}; use 1024-65535 (the container has no capability to bind lower ports) or 0 to let the Dispatcher choose`,
    );
  if (!(docker.protocol in LocalProtocol))
    throw invalidField(at("protocol"), `${docker.protocol} is not a LocalProtocol`);
  if (docker.httpPath !== "") {
    maxLength(at("http_path"), docker.httpPath, limits.httpPathLength);
    if (!docker.httpPath.startsWith("/"))
      throw invalidField(at("http_path"), 'must start with "/"');
  }

  const resources = docker.resources;
  if (resources) {
    const memory = resources.memoryBytes;
    if (
      memory !== 0n &&
      (memory < dockerLimits.minMemoryBytes || memory > dockerLimits.maxMemoryBytes)
    )
      throw invalidField(
        at("resources.memory_bytes"),
        `is ${memory}; use 6 MiB (${dockerLimits.minMemoryBytes}) to 64 GiB, or 0 for the Dispatcher's default`,
      );
    if (resources.cpuMillis > dockerLimits.cpuMillis)
      throw invalidField(
        at("resources.cpu_millis"),
        `is ${resources.cpuMillis}; at most ${dockerLimits.cpuMillis} (64 cores) allowed`,
      );
    if (resources.pids > dockerLimits.pids)
      throw invalidField(
        at("resources.pids"),
        `is ${resources.pids}; at most ${dockerLimits.pids} allowed`,
      );
  }

  maxCount(at("mounts"), docker.mounts.length, dockerLimits.mounts);
  const targets = new Set<string>();
  docker.mounts.forEach((mount, i) => {
    const hostField = `${at("mounts")}[${i}].host_path`;
    const targetField = `${at("mounts")}[${i}].container_path`;
    checkPath(hostField, mount.hostPath);
    checkPath(targetField, mount.containerPath);
    if (FORBIDDEN_HOST_PATHS.has(mount.hostPath.replace(/(.)\/+$/, "$1")))
      throw invalidField(
        hostField,
        `"${mount.hostPath}" would hand the tool the host; mount a narrower path`,
      );
    if (mount.containerPath === "/")
      throw invalidField(targetField, "is the container's root; mount below it");
    if (targets.has(mount.containerPath))
      throw invalidField(targetField, `"${mount.containerPath}" is mounted twice`);
    targets.add(mount.containerPath);
  });

  maxCount(at("secrets"), docker.secrets.length, dockerLimits.secrets);
  const secretEnv = new Set<string>();
  docker.secrets.forEach((secret, i) => {
    const field = `${at("secrets")}[${i}]`;
    if (!SECRET_NAME.test(secret.name))
      throw invalidField(`${field}.name`, "must be 1-128 characters of [A-Za-z0-9_.-]");
    const name = secret.env || secret.name;
    const envField = secret.env ? `${field}.env` : `${field}.name`;
    if (!ENV_KEY.test(name) || name.length > limits.envKeyLength)
      throw invalidField(
        envField,
        `"${name}" is not an environment variable name; set env to one ([A-Za-z_][A-Za-z0-9_]*)`,
      );
    if (RESERVED_ENV.has(name)) throw invalidField(envField, `"${name}" is set by the Dispatcher`);
    if (name in docker.env || secretEnv.has(name))
      throw invalidField(envField, `"${name}" is set twice (in env or by another secret)`);
    secretEnv.add(name);
  });

  if (docker.user !== "") {
    const match = USER.exec(docker.user);
    if (!match)
      throw invalidField(
        at("user"),
        `"${docker.user}" is not uid or uid:gid (numbers, such as 1000:1000)`,
      );
    if (Number(match[1]) === 0 || (match[2] !== undefined && Number(match[2]) === 0))
      throw invalidField(at("user"), "is root (0); docker tools run as a non-root user");
  }

  checkSupervision(at, docker, docker.port);
}

function checkPath(field: string, value: string): void {
  if (value === "") throw invalidField(field, "is required: an absolute path");
  maxLength(field, value, dockerLimits.pathLength);
  if (!value.startsWith("/")) throw invalidField(field, `"${value}" is not an absolute path`);
  if (value.split("/").includes("..")) throw invalidField(field, `"${value}" contains ".."`);
  if (value.includes(",") || value.includes("\0"))
    throw invalidField(field, `"${value}" contains a comma or NUL`);
}
