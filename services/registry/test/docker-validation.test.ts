import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import { ToolSpecSchema } from "@toolmesh/proto";
import { ValidatorCache } from "@toolmesh/schema";
import { describe, expect, it } from "vitest";
import { checkToolSpec } from "../src/validation.js";

type Docker = Record<string, unknown>;

/** A tool with a docker runtime: the valid base plus one override. */
function dockerTool(docker: Docker): MessageInitShape<typeof ToolSpecSchema> {
  return {
    name: "box.echo",
    description: "Echoes in a container",
    inputSchema: { type: "object" },
    runtime: { kind: { case: "docker", value: { image: "toolmesh/echo:1", ...docker } } },
  } as MessageInitShape<typeof ToolSpecSchema>;
}

function check(docker: Docker) {
  return checkToolSpec(create(ToolSpecSchema, dockerTool(docker)), new ValidatorCache());
}

describe("docker runtime validation", () => {
  it("accepts a full docker runtime and keeps every field", () => {
    const { spec } = check({
      image: `registry.example:5000/team/tool@sha256:${"a".repeat(64)}`,
      command: ["/tool", "--serve"],
      env: { MODE: "fast" },
      port: 8080,
      resources: { memoryBytes: 64n * 1024n * 1024n, cpuMillis: 250, pids: 16 },
      mounts: [{ hostPath: "/srv/data", containerPath: "/data" }],
      secrets: [{ name: "github-token", env: "GITHUB_TOKEN" }, { name: "API_KEY" }],
      user: "1000:1000",
      maxConcurrency: 4,
      idleTimeoutMs: 60_000,
    });
    const kind = spec.runtime?.kind;
    expect(kind?.case).toBe("docker");
    expect(kind?.case === "docker" && kind.value.secrets.map((s) => s.name)).toEqual([
      "github-token",
      "API_KEY",
    ]);
    expect(() => check({ image: `sha256:${"0".repeat(64)}` })).not.toThrow();
    expect(() => check({ image: "alpine" })).not.toThrow();
  });

  const bad: [string, Docker, string][] = [
    ["no image", { image: "" }, "tool.runtime.docker.image: is required"],
    [
      "an uppercase image",
      { image: "Tool:1" },
      'tool.runtime.docker.image: "Tool:1" is not an image reference',
    ],
    ["an empty executable", { command: [""] }, "tool.runtime.docker.command[0]: is empty"],
    [
      "a bad env name",
      { env: { "A-B": "1" } },
      'tool.runtime.docker.env["A-B"]: is not an environment variable name',
    ],
    [
      "a reserved env name",
      { env: { TOOLMESH_TOOL_PORT: "1" } },
      'tool.runtime.docker.env["TOOLMESH_TOOL_PORT"]: is set by the Dispatcher',
    ],
    ["a privileged port", { port: 80 }, "tool.runtime.docker.port: is 80; use 1024-65535"],
    ["a port out of range", { port: 70000 }, "tool.runtime.docker.port: is 70000"],
    [
      "an unknown protocol",
      { protocol: 7 },
      "tool.runtime.docker.protocol: 7 is not a LocalProtocol",
    ],
    [
      "a relative http path",
      { httpPath: "invoke" },
      'tool.runtime.docker.http_path: must start with "/"',
    ],
    [
      "too little memory",
      { resources: { memoryBytes: 1024n } },
      "tool.runtime.docker.resources.memory_bytes: is 1024; use 6 MiB",
    ],
    [
      "too many cpus",
      { resources: { cpuMillis: 65_000 } },
      "tool.runtime.docker.resources.cpu_millis: is 65000; at most 64000",
    ],
    [
      "too many pids",
      { resources: { pids: 40_000 } },
      "tool.runtime.docker.resources.pids: is 40000; at most 32768",
    ],
    [
      "a relative host path",
      { mounts: [{ hostPath: "data", containerPath: "/data" }] },
      'tool.runtime.docker.mounts[0].host_path: "data" is not an absolute path',
    ],
    [
      "a host path with ..",
      { mounts: [{ hostPath: "/srv/../etc", containerPath: "/data" }] },
      'tool.runtime.docker.mounts[0].host_path: "/srv/../etc" contains ".."',
    ],
    [
      "the Docker socket",
      { mounts: [{ hostPath: "/var/run/docker.sock", containerPath: "/d" }] },
      'tool.runtime.docker.mounts[0].host_path: "/var/run/docker.sock" would hand the tool the host',
    ],
    [
      "the host root",
      { mounts: [{ hostPath: "/", containerPath: "/host" }] },
      'tool.runtime.docker.mounts[0].host_path: "/" would hand the tool the host',
    ],
    [
      "a mount over the root",
      { mounts: [{ hostPath: "/srv", containerPath: "/" }] },
      "tool.runtime.docker.mounts[0].container_path: is the container's root",
    ],
    [
      "a target mounted twice",
      {
        mounts: [
          { hostPath: "/a", containerPath: "/d" },
          { hostPath: "/b", containerPath: "/d" },
        ],
      },
      'tool.runtime.docker.mounts[1].container_path: "/d" is mounted twice',
    ],
    [
      "a bad secret name",
      { secrets: [{ name: "a/b" }] },
      "tool.runtime.docker.secrets[0].name: must be 1-128 characters",
    ],
    [
      "a secret name that is no env name",
      { secrets: [{ name: "github-token" }] },
      'tool.runtime.docker.secrets[0].name: "github-token" is not an environment variable name; set env',
    ],
    [
      "a secret env set twice",
      { env: { TOKEN: "x" }, secrets: [{ name: "TOKEN" }] },
      'tool.runtime.docker.secrets[0].name: "TOKEN" is set twice',
    ],
    ["a root user", { user: "0" }, "tool.runtime.docker.user: is root (0)"],
    ["a root group", { user: "1000:0" }, "tool.runtime.docker.user: is root (0)"],
    ["a user name", { user: "nobody" }, 'tool.runtime.docker.user: "nobody" is not uid or uid:gid'],
    [
      "too much concurrency",
      { maxConcurrency: 5000 },
      "tool.runtime.docker.max_concurrency: is 5000; at most 1024",
    ],
  ];
  for (const [what, docker, message] of bad) {
    it(`refuses ${what} with INVALID_ARGUMENT naming the field`, () => {
      let thrown: unknown;
      try {
        check(docker);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ConnectError);
      expect((thrown as ConnectError).code).toBe(Code.InvalidArgument);
      expect((thrown as ConnectError).rawMessage).toContain(message);
    });
  }
});
