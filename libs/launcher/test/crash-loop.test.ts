import { mkdtemp, rename, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Health, HealthCheckResponse_ServingStatus } from "@toolmesh/proto";
import { eventually, repoRoot } from "@toolmesh/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { type RunningStack, seedFile, startStack } from "../src/index.js";

// The launcher's limits: a process that exits at once after every restart stops the stack (its
// name and last lines), and a stack stopped while a restart is under way leaves no process behind.
// Two services, so each stack starts in a few seconds.
const running: { stack: RunningStack; dataDir: string }[] = [];
const said: string[] = [];

async function start(firstDelayMs: number): Promise<{ stack: RunningStack; dataDir: string }> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-crash-loop-"));
  said.length = 0;
  const stack = await startStack({
    root: repoRoot,
    natsPort: -1,
    dataDir,
    env: { LOG_LEVEL: "info" },
    services: ["permission", "registry"],
    freePorts: true,
    startTimeoutMs: 60_000,
    restartPolicy: { maxRestarts: 2, windowMs: 60_000, firstDelayMs, maxDelayMs: 1000 },
    say: (line) => said.push(line),
  });
  running.push({ stack, dataDir });
  return { stack, dataDir };
}

afterEach(async () => {
  for (const { stack, dataDir } of running.splice(0)) {
    await stack.stop();
    await rm(dataDir, { recursive: true, force: true });
  }
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("a process that keeps crashing", () => {
  it("stops the stack after the allowed restarts, naming it and its last lines", async () => {
    const { stack, dataDir } = await start(100);
    const registry = stack.services.get("registry");
    const permission = stack.services.get("permission");
    if (!registry || !permission) throw new Error("the stack runs no registry or permission");
    // A bad environment for registry alone: its bus credential is gone, so each start exits.
    await rename(seedFile(dataDir, "registry"), `${seedFile(dataDir, "registry")}.moved`);
    process.kill(registry.pid, "SIGKILL");

    const failure = await stack.failed;
    expect(failure.name).toBe("registry");
    expect(failure.message).toBe(
      "registry keeps crashing: it exited again (code 1 before it was ready) after 2 restarts within 60 s, the most TOOLMESH_RESTART_LIMIT (2) and TOOLMESH_RESTART_WINDOW_MS (60000) allow",
    );
    expect(failure.lastLines).toContain("TOOLMESH_NATS_NKEY_FILE");
    expect(said.filter((l) => l.startsWith("registry exited ("))).toHaveLength(2);
    expect(stack.stackFile.processes.registry).toMatchObject({ pid: 0, restarts: 2 });

    // Until the stack is stopped, the others keep serving.
    const health = createClient(Health, createGrpcTransport({ baseUrl: permission.url }));
    expect((await health.check({ service: "" })).status).toBe(
      HealthCheckResponse_ServingStatus.SERVING,
    );
  }, 60_000);
});

describe("a stack stopped while a restart is under way", () => {
  it("stops the process the restart started and starts no other", async () => {
    const { stack } = await start(50);
    const registry = stack.services.get("registry");
    if (!registry) throw new Error("the stack runs no registry");
    const killed = registry.pid;
    process.kill(killed, "SIGKILL");
    // The restart has spawned its process, which is not SERVING yet.
    const restarting = await eventually(
      async () => {
        if (registry.pid === killed) throw new Error("no new registry process yet");
        return registry.pid;
      },
      10_000,
      "the launcher to start registry again",
    );
    expect(said.some((l) => l.startsWith("registry is back"))).toBe(false);

    await stack.stop();
    expect(alive(restarting)).toBe(false);
    // Past the restart's own delay: nothing started registry again.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(registry.pid).toBe(restarting);
    expect(said.some((l) => l.startsWith("registry is back"))).toBe(false);
  }, 60_000);
});
