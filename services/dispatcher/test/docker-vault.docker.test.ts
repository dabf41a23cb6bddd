import { spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { Code } from "@toolmesh/errors";
import { LocalProtocol } from "@toolmesh/proto";
import {
  allowSpec,
  eventually,
  failure,
  putUsersSecret,
  reachEngine,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildToolImage, containersOf } from "./docker-engine.js";

// A docker tool's vault secrets: each user's value in a file of a directory only the container's
// user can read, mounted read-only, removed when the container goes. A Docker Engine and the test
// image (a static Go binary that reports what it sees from inside).
const engine = await reachEngine();
if (!engine.ok) console.warn(`docker tests skipped: ${engine.reason}`);

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");
const MOUNT = "/run/toolmesh/secrets";

describe.skipIf(!engine.ok)("vault secrets of docker tools", () => {
  const docker = (engine as { docker: Docker }).docker;
  const run = randomBytes(3).toString("hex");
  const image = `toolmesh-test/docker-tool:${run}`;
  const tool = `vault${run}.reader`;
  const values = {
    alice: `alice-${randomBytes(12).toString("hex")}`,
    bob: `bob-${randomBytes(12).toString("hex")}`,
  };
  let stack: TestStack;
  const admin = () => stack.as(stack.adminToken);

  async function call(user: string) {
    const token = await stack.agentToken("bot", { onBehalfOf: user });
    return stack
      .dispatcherClient()
      .dispatch({ tool, arguments: { read: `${MOUNT}/token` } }, stack.as(token));
  }

  /** The host directory mounted at MOUNT in the tool's one container. */
  async function hostDir(): Promise<string> {
    const [info] = await containersOf(docker, tool);
    const inspected = await docker.getContainer(info?.Id ?? "").inspect();
    // The environment names where the files are, and holds no value.
    const env = (inspected.Config.Env ?? []).join("\n");
    expect(env).toContain(`TOOLMESH_SECRETS_DIR=${MOUNT}`);
    for (const value of Object.values(values)) expect(env).not.toContain(value);
    const mount = inspected.Mounts.find((m) => m.Destination === MOUNT);
    expect(mount?.RW).toBe(false);
    return mount?.Source ?? "";
  }

  beforeAll(async () => {
    const [, started] = await Promise.all([buildToolImage(docker, image), startStack()]);
    stack = started;
    await stack.registryClient.registerTool(
      {
        tool: {
          name: tool,
          description: "reads its vault secret from a file",
          inputSchema: { type: "object" },
          runtime: {
            kind: {
              case: "docker",
              value: { image, protocol: LocalProtocol.HTTP, user: "4321:4321" },
            },
          },
          secrets: [{ secret: "reader-token", target: { case: "file", value: "token" } }],
        },
      },
      admin(),
    );
    await putUsersSecret(stack, "reader-token", tool, values);
    await stack.grantAll("bot");
    await stack.permissionClient.grant({ grant: allowSpec("user:*", "glob:**", ["*"]) }, admin());
  }, 180_000);

  afterAll(async () => {
    await stack
      ?.dispatcherClient()
      .stopTool({ tool }, admin())
      .catch(() => {});
    await stack?.stop();
    for (const info of engine.ok ? await containersOf(docker, tool) : [])
      await docker
        .getContainer(info.Id)
        .remove({ force: true })
        .catch(() => {});
    if (engine.ok)
      await docker
        .getImage(image)
        .remove({ force: true })
        .catch(() => {});
  });

  it("gives each user's container their own value in a file only the container's user reads", async () => {
    const alice = await eventually(
      () => call("alice"),
      10_000,
      "the tool and secret to reach the Dispatcher",
    );
    const seen = alice.output as Record<string, unknown>;
    expect(seen).toMatchObject({
      uid: 4321,
      gid: 4321,
      secrets_dir: MOUNT,
      // The value came back in the output: hidden there, as in every output.
      read: "[redacted]",
      read_sha256: sha256(values.alice),
      read_file: { mode: "400", uid: 4321, gid: 4321 },
      read_dir: { mode: "500", uid: 4321, gid: 4321 },
      read_dir_writable: false,
    });

    // On the host the directory is the container user's alone: another uid cannot read the file.
    const dir = await hostDir();
    expect(dir).not.toBe("");
    const other = spawnSync(
      process.execPath,
      ["-e", `require("node:fs").readFileSync(${JSON.stringify(`${dir}/token`)})`],
      { uid: 65534, gid: 65534, encoding: "utf8" },
    );
    expect(other.status).not.toBe(0);
    expect(other.stderr).toContain("EACCES");

    // Bob's call runs in a container of its own, with bob's value.
    const bob = await call("bob");
    expect(bob.output).toMatchObject({ read_sha256: sha256(values.bob), read: "[redacted]" });
    expect(await containersOf(docker, tool)).toHaveLength(2);

    // A user without a value of their own is refused before any container starts.
    const carol = await failure(call("carol"));
    expect(carol.code).toBe(Code.FailedPrecondition);
    expect(carol.rawMessage).toContain('needs secret "reader-token"');
    expect(await containersOf(docker, tool)).toHaveLength(2);

    // Stopping the tool removes every user's container and their secret directories.
    await stack.dispatcherClient().stopTool({ tool }, admin());
    expect(existsSync(dir)).toBe(false);
    await eventually(
      async () => expect(await containersOf(docker, tool)).toEqual([]),
      10_000,
      "the containers to go",
    );
  });
});
