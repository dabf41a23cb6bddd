import { createHash, randomBytes } from "node:crypto";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { Code } from "@toolmesh/errors";
import {
  CallStatus,
  DockerRuntimeSchema,
  LocalProtocol,
  RuntimeState,
  TraceEventKind,
} from "@toolmesh/proto";
import {
  type CallRecords,
  collectRecords,
  eventually,
  freePort,
  reachEngine,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import type Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildToolImage, containersOf } from "./docker-engine.js";

// Docker tools for real: a Docker Engine, an image built here FROM scratch with a static Go
// binary, and the whole stack (nats-server, registry, permission, dispatcher) as processes.
const engine = await reachEngine();
if (!engine.ok) console.warn(`docker tests skipped: ${engine.reason}`);

const MiB = 1024 * 1024;

describe.skipIf(!engine.ok)("docker runtime end to end", () => {
  const docker = (engine as { docker: Docker }).docker;
  const run = randomBytes(3).toString("hex");
  const image = `toolmesh-test/docker-tool:${run}`;
  // Tool names of this run only, so that runs on one Docker host never see each other's containers.
  const box = `box${run}`;
  const secret = randomBytes(16).toString("hex");
  let stack: TestStack;
  let secretsDir: string;
  let mountDir: string;
  let agent: string;
  let admin: string;
  let records: CallRecords;

  const dispatcher = () => stack.dispatcherClient();
  const call = (tool: string, args: Record<string, unknown> = {}, traceId?: string) =>
    dispatcher().dispatch(
      { tool, arguments: args as never, ...(traceId ? { context: { traceId } } : {}) },
      stack.as(agent),
    );
  const statusOf = async (tool: string) =>
    (await dispatcher().getRuntimeStatus({ tool }, stack.as(admin))).runtimes[0];
  /** The status once the tool runs again after its nth restart. */
  const restarted = (tool: string, restarts: number) =>
    eventually(
      async () => {
        const s = await statusOf(tool);
        if (s?.state !== RuntimeState.RUNNING || s.restarts !== restarts)
          throw new Error(`state ${RuntimeState[s?.state ?? 0]}, ${s?.restarts} restarts`);
        return s;
      },
      30_000,
      `${tool} to run again after restart ${restarts}`,
    );
  const register = (name: string, runtime: MessageInitShape<typeof DockerRuntimeSchema> = {}) =>
    stack.registryClient.registerTool(
      {
        tool: {
          name,
          description: `The ${name} container tool`,
          inputSchema: { type: "object" },
          runtime: {
            kind: {
              case: "docker",
              value: create(DockerRuntimeSchema, {
                image,
                protocol: LocalProtocol.HTTP,
                ...runtime,
              }),
            },
          },
        },
      },
      stack.as(admin),
    );

  beforeAll(async () => {
    secretsDir = await mkdtemp(path.join(tmpdir(), "toolmesh-secrets-"));
    mountDir = await mkdtemp(path.join(tmpdir(), "toolmesh-mount-"));
    await writeFile(path.join(secretsDir, "echo-token"), `${secret}\n`);
    await writeFile(path.join(mountDir, "hello.txt"), "hello from the host");
    // The container runs as nobody (65534): it reads what the world may read, as on the host.
    await chmod(mountDir, 0o755);
    await chmod(path.join(mountDir, "hello.txt"), 0o644);
    const [, started] = await Promise.all([
      buildToolImage(docker, image),
      startStack({
        serviceEnv: {
          dispatcher: {
            TOOLMESH_TOOL_SECRETS_DIR: secretsDir,
            TOOLMESH_DOCKER_IDLE_TIMEOUT_MS: "60000",
          },
        },
      }),
    ]);
    stack = started;
    records = collectRecords(stack.nc);
    admin = stack.adminToken;
    agent = await stack.agentToken("agent-1", { onBehalfOf: "" });
    await stack.grantAll("agent-1");

    await register(`${box}.echo`, {
      port: await freePort(),
      env: { MODE: "test" },
      resources: { memoryBytes: BigInt(64 * MiB), cpuMillis: 500, pids: 64 },
      secrets: [{ name: "echo-token", env: "ECHO_TOKEN" }],
    });
    await register(`${box}.mounted`, {
      mounts: [{ hostPath: mountDir, containerPath: "/data" }],
    });
    await register(`${box}.idle`, { idleTimeoutMs: 300 });
    await register(`${box}.crash`);
    await register(`${box}.oom`, { resources: { memoryBytes: BigInt(16 * MiB) } });
    await register(`${box}.missing-image`, { image: "toolmesh-test/not-built:1" });
    await register(`${box}.quick-exit`, { env: { EXIT_AT_START: "4" } });
    await register(`${box}.bad-command`, { command: ["/not-there"] });
    await register(`${box}.missing-secret`, { secrets: [{ name: "NOT_THERE" }] });
    // The dispatcher sees registry and grant changes through its watches.
    await eventually(() => statusOf(`${box}.missing-secret`), 10_000, "dispatcher sees the tools");
  }, 240_000);

  afterAll(async () => {
    await stack?.stop();
    for (const tool of ["echo", "mounted", "idle", "crash", "oom", "quick-exit"].map(
      (t) => `${box}.${t}`,
    )) {
      for (const info of await containersOf(docker, tool))
        await docker.getContainer(info.Id).remove({ force: true });
    }
    await docker
      .getImage(image)
      .remove({ force: true })
      .catch(() => {});
    await rm(secretsDir, { recursive: true, force: true });
    await rm(mountDir, { recursive: true, force: true });
  });

  it("runs a container tool on demand through the chain, with its trace, audit record and outcome", async () => {
    expect((await statusOf(`${box}.echo`))?.state).toBe(RuntimeState.STOPPED);
    const traceId = randomBytes(16).toString("hex");
    const res = await call(`${box}.echo`, { text: "hello" }, traceId);
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.output).toEqual({
      text: "hello",
      uid: 65534,
      gid: 65534,
      mode: "test",
      root_writable: false,
      tmp_writable: true,
      call_id: res.callId,
      token_sha256: createHash("sha256").update(secret).digest("hex"),
    });

    // The call started the container and waited for it: its trace says so.
    const events = await records.traces.waitFor((e) => e.traceId === traceId, 3);
    expect(events.map((e) => e.kind)).toEqual([
      TraceEventKind.TOOL_EXECUTE,
      TraceEventKind.CUSTOM,
      TraceEventKind.TOOL_RESULT,
    ]);
    expect(events[1]).toMatchObject({
      customKind: "INSTANCE_START_WAIT",
      payload: { instance: 1, started_for: "call" },
    });
    expect(events[0]?.payload?.runtime).toBe("docker");
    const [record] = await records.audits.waitFor((a) => a.callId === res.callId);
    expect(record?.tool).toBe(`${box}.echo`);
    const [outcome] = await records.outcomes.waitFor((o) => o.callId === res.callId);
    expect(outcome?.status).toBe(CallStatus.SUCCESS);

    const status = await statusOf(`${box}.echo`);
    expect(status).toMatchObject({ state: RuntimeState.RUNNING, pid: 0, restarts: 0 });
    expect(status?.containerId).toMatch(/^[0-9a-f]{64}$/);
    // The secret went to the container only: not to the records, not to the Dispatcher's logs.
    const recorded = JSON.stringify([events, record, outcome], (_, v) =>
      typeof v === "bigint" ? String(v) : v,
    );
    expect(recorded).not.toContain(secret);
    const logs = await stack.logText("dispatcher");
    expect(logs).toContain("container started");
    expect(logs).not.toContain(secret);
    // An agent reading the tool sees the names of its secrets, never env values.
    const seen = (await stack.registryClient.getTool({ name: `${box}.echo` }, stack.as(agent))).tool
      ?.spec?.runtime?.kind;
    expect(seen?.case === "docker" && seen.value.env).toEqual({ MODE: "[redacted]" });
    expect(seen?.case === "docker" && seen.value.secrets.map((x) => x.env)).toEqual(["ECHO_TOKEN"]);
  });

  it("isolates the container by default, as docker inspect shows", async () => {
    await call(`${box}.echo`, { text: "again" });
    const id = (await statusOf(`${box}.echo`))?.containerId ?? "";
    const info = await docker.getContainer(id).inspect();
    expect(info.Config.User).toBe("65534:65534");
    expect(info.HostConfig.ReadonlyRootfs).toBe(true);
    expect(info.HostConfig.SecurityOpt).toEqual(["no-new-privileges"]);
    expect(info.HostConfig.CapDrop).toEqual(["ALL"]);
    expect(info.HostConfig.CapAdd ?? []).toEqual([]);
    expect(info.HostConfig.Privileged).toBe(false);
    expect(info.HostConfig.Memory).toBe(64 * MiB);
    expect(info.HostConfig.MemorySwap).toBe(64 * MiB);
    expect(info.HostConfig.NanoCpus).toBe(500_000_000);
    expect(info.HostConfig.PidsLimit).toBe(64);
    expect(info.HostConfig.NetworkMode).toBe("host");
    expect(info.HostConfig.Binds ?? []).toEqual([]);
    expect(info.Mounts).toEqual([]);
    expect(info.Config.Env).toContain(`ECHO_TOKEN=${secret}`);
    expect(info.Config.Labels).toMatchObject({ "toolmesh.tool": `${box}.echo` });
  });

  it("mounts only a declared host path, read-only unless declared writable", async () => {
    const res = await call(`${box}.mounted`, { read: "/data/hello.txt" });
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(res.output).toMatchObject({ read: "hello from the host", read_dir_writable: false });
    expect(res.output).not.toHaveProperty("token_sha256");
    const id = (await statusOf(`${box}.mounted`))?.containerId ?? "";
    const info = await docker.getContainer(id).inspect();
    expect(info.Mounts).toEqual([
      expect.objectContaining({ Type: "bind", Source: mountDir, Destination: "/data", RW: false }),
    ]);
    // Defaults from the Dispatcher's configuration when the spec sets no limits.
    expect(info.HostConfig).toMatchObject({
      Memory: 256 * MiB,
      NanoCpus: 1_000_000_000,
      PidsLimit: 128,
    });
    await dispatcher().stopTool({ tool: `${box}.mounted` }, stack.as(admin));
  });

  it("restarts a crashed container with backoff and keeps serving", async () => {
    const first = await call(`${box}.crash`, { text: "one" });
    expect(first.status).toBe(CallStatus.SUCCESS);
    const before = await statusOf(`${box}.crash`);
    await docker.getContainer(before?.containerId ?? "").kill();
    const once = await restarted(`${box}.crash`, 1);
    expect(once.containerId).not.toBe(before?.containerId);
    expect(once.lastError).toContain("exited with code 137");
    // The crashed container is removed, not left behind.
    await expect(docker.getContainer(before?.containerId ?? "").inspect()).rejects.toMatchObject({
      statusCode: 404,
    });
    expect((await call(`${box}.crash`, { text: "two" })).output).toMatchObject({ text: "two" });

    // A second crash waits longer (100 ms, then 200 ms) and keeps the tool's last words.
    const crashedAt = Date.now();
    const dying = await call(`${box}.crash`, { exit: 3 });
    expect(dying.status).toBe(CallStatus.FAILURE);
    expect(dying.error?.code).toBe("backend_unavailable");
    const again = await restarted(`${box}.crash`, 2);
    expect(again.lastError).toContain("exited with code 3: ");
    expect(again.lastError).toContain("exiting with 3 as asked");
    expect((again.startedAt ? timestampMs(again.startedAt) : 0) - crashedAt).toBeGreaterThanOrEqual(
      200,
    );
    expect((await call(`${box}.crash`, { text: "three" })).status).toBe(CallStatus.SUCCESS);
  });

  it("enforces the memory limit: a tool over it is killed, reported and restarted", async () => {
    expect((await call(`${box}.oom`, { alloc_mb: 1 })).status).toBe(CallStatus.SUCCESS);
    const over = await call(`${box}.oom`, { alloc_mb: 64 });
    expect(over.status).toBe(CallStatus.FAILURE);
    expect(over.error?.code).toBe("backend_unavailable");
    const back = await restarted(`${box}.oom`, 1);
    expect(back.lastError).toContain("exited with code 137 (killed: out of memory)");
    expect((await call(`${box}.oom`, { text: "fine" })).output).toMatchObject({ text: "fine" });
  });

  it("stops a container that is idle and removes it", async () => {
    const res = await call(`${box}.idle`, { text: "once" });
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(await containersOf(docker, `${box}.idle`)).toHaveLength(1);
    await eventually(
      async () => {
        const s = await statusOf(`${box}.idle`);
        if (s?.state !== RuntimeState.STOPPED) throw new Error(`state ${s?.state}`);
      },
      10_000,
      "the idle container to stop",
    );
    expect(await containersOf(docker, `${box}.idle`)).toEqual([]);
    // The next call starts it again.
    expect((await call(`${box}.idle`, { text: "twice" })).status).toBe(CallStatus.SUCCESS);
  });

  it("StartTool, GetRuntimeStatus and StopTool cover docker tools like local ones", async () => {
    const started = await dispatcher().startTool({ tool: `${box}.mounted` }, stack.as(admin));
    expect(started.status).toMatchObject({
      tool: `${box}.mounted`,
      state: RuntimeState.RUNNING,
      pid: 0,
    });
    expect(started.status?.port).toBeGreaterThan(0);
    const all = await dispatcher().getRuntimeStatus({}, stack.as(admin));
    expect(all.runtimes.map((r) => r.tool)).toContain(`${box}.mounted`);
    // An agent sees the containers of the tools it may call; it may not stop them.
    const seen = await dispatcher().getRuntimeStatus({ tool: `${box}.mounted` }, stack.as(agent));
    expect(seen.runtimes[0]?.state).toBe(RuntimeState.RUNNING);
    const stranger = await stack.agentToken("agent-without-grants");
    await expect(
      dispatcher().getRuntimeStatus({ tool: `${box}.mounted` }, stack.as(stranger)),
    ).rejects.toMatchObject({ code: Code.NotFound });
    await expect(
      dispatcher().stopTool({ tool: `${box}.mounted` }, stack.as(agent)),
    ).rejects.toMatchObject({ code: Code.PermissionDenied });
    const stopped = await dispatcher().stopTool({ tool: `${box}.mounted` }, stack.as(admin));
    expect(stopped.status?.state).toBe(RuntimeState.STOPPED);
    expect(await containersOf(docker, `${box}.mounted`)).toEqual([]);
  });

  it("fails a call clearly when the image is missing or a declared secret is not there", async () => {
    const missingImage = await call(`${box}.missing-image`);
    expect(missingImage.status).toBe(CallStatus.FAILURE);
    expect(missingImage.error?.code).toBe("backend_unavailable");
    expect(missingImage.error?.message).toContain(
      'image "toolmesh-test/not-built:1" is not on the Docker host (the Dispatcher does not pull)',
    );
    const missingSecret = await call(`${box}.missing-secret`);
    expect(missingSecret.error?.message).toContain(
      'secret "NOT_THERE" is not in TOOLMESH_TOOL_SECRETS_DIR',
    );
    await expect(
      dispatcher().startTool({ tool: `${box}.missing-image` }, stack.as(admin)),
    ).rejects.toMatchObject({ code: Code.Unavailable });
    expect(await statusOf(`${box}.missing-image`)).toMatchObject({
      state: RuntimeState.FAILED,
      lastError: expect.stringContaining("is not on the Docker host"),
    });
    expect(await containersOf(docker, `${box}.missing-secret`)).toEqual([]);
  });

  it("fails a call clearly when the container exits at once or its command does not exist", async () => {
    const quick = await call(`${box}.quick-exit`);
    expect(quick.status).toBe(CallStatus.FAILURE);
    expect(quick.error?.message).toContain(
      "the docker tool did not start: exited with code 4: failing at start as asked before it was healthy",
    );
    const badCommand = await call(`${box}.bad-command`);
    expect(badCommand.error?.message).toMatch(
      /^the docker tool did not start: Docker refused to start the container \(HTTP \d+\): .*not-there/,
    );
    // Neither leaves a container behind.
    expect(await containersOf(docker, `${box}.quick-exit`)).toEqual([]);
    expect(await containersOf(docker, `${box}.bad-command`)).toEqual([]);
  });
  it("removes a container that outlived a killed Dispatcher before it runs the tool again", async () => {
    expect((await call(`${box}.echo`, { text: "before" })).status).toBe(CallStatus.SUCCESS);
    const [orphan] = await containersOf(docker, `${box}.echo`);
    await stack.dispatcher.kill();
    // SIGKILL gave the Dispatcher no chance to stop it: it still holds box.echo's fixed port.
    expect((await docker.getContainer(orphan?.Id ?? "").inspect()).State.Running).toBe(true);
    await stack.restartDispatcher();
    const res = await eventually(
      () => call(`${box}.echo`, { text: "after" }),
      15_000,
      "the restarted dispatcher to answer",
    );
    expect(res.status).toBe(CallStatus.SUCCESS);
    const now = await containersOf(docker, `${box}.echo`);
    expect(now.map((c) => c.Id)).not.toContain(orphan?.Id);
    expect(now).toHaveLength(1);
  });
});
