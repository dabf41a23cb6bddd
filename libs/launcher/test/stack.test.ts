import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Health, HealthCheckResponse_ServingStatus, RegistryService } from "@toolmesh/proto";
import { eventually, repoRoot } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  availableServices,
  diskSpaceWarning,
  type RunningStack,
  StackError,
  startStack,
} from "../src/index.js";

// The whole stack as `npm start` runs it: a local nats-server and every service as processes,
// on free ports and a temp data dir so it can run beside anything else.
const freePorts = {
  TOOLMESH_PERMISSION_PORT: "0",
  TOOLMESH_REGISTRY_PORT: "0",
  TOOLMESH_DISPATCHER_PORT: "0",
  TOOLMESH_AUDIT_PORT: "0",
  TOOLMESH_CALLBACK_PORT: "0",
  LOG_LEVEL: "info",
};

describe("launcher", () => {
  let dataDir: string;
  let stack: RunningStack;
  const said: string[] = [];

  beforeAll(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-launcher-"));
    stack = await startStack({
      root: repoRoot,
      natsPort: -1,
      dataDir,
      env: freePorts,
      startTimeoutMs: 60_000,
      metrics: { host: "127.0.0.1", port: 0 },
      say: (line) => said.push(line),
    });
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await rm(dataDir, { recursive: true, force: true });
  });

  it("starts every built service and reports each SERVING endpoint", async () => {
    const names = stack.endpoints.map((e) => e.name);
    expect(names).toEqual(availableServices(repoRoot).map((s) => s.name));
    expect(names).toEqual(
      expect.arrayContaining(["permission", "registry", "dispatcher", "audit", "callback"]),
    );
    for (const endpoint of stack.endpoints.filter((e) => e.url)) {
      const health = createClient(Health, createGrpcTransport({ baseUrl: endpoint.url as string }));
      expect((await health.check({ service: "" })).status).toBe(
        HealthCheckResponse_ServingStatus.SERVING,
      );
    }
    expect(said.some((line) => line.includes("nats-server with JetStream"))).toBe(true);
  });

  it("hands out the bootstrapped admin token, stored with mode 0600, and it works", async () => {
    expect(stack.adminToken).toMatch(/^tmk_[0-9a-f]+_/);
    expect((await stat(path.join(dataDir, "admin.token"))).mode & 0o777).toBe(0o600);
    const registry = stack.endpoints.find((e) => e.name === "registry")?.url as string;
    const client = createClient(RegistryService, createGrpcTransport({ baseUrl: registry }));
    const res = await client.listTools(
      {},
      { headers: { authorization: `Bearer ${stack.adminToken}` } },
    );
    expect(res.tools).toEqual([]);
  });

  it("writes stack.json with every address and the token files' paths, never a secret", async () => {
    const written = JSON.parse(await readFile(path.join(dataDir, "stack.json"), "utf8"));
    expect(written).toEqual(stack.stackFile);
    expect(written.natsUrl).toBe(stack.natsUrl);
    for (const endpoint of stack.endpoints) {
      expect(written.services[endpoint.name]).toEqual({
        pid: endpoint.pid,
        ...(endpoint.url ? { url: endpoint.url } : {}),
      });
    }
    expect(written.tokenFiles.admin).toBe(path.join(dataDir, "admin.token"));
    const text = JSON.stringify(written);
    for (const file of ["admin.token", "service.token"]) {
      const secret = (await readFile(path.join(dataDir, file), "utf8")).trim();
      expect(text).not.toContain(secret.split("_").slice(2).join("_"));
    }
    expect(stack.adminTokenCreated).toBe(true);
  });

  it("restarts a service that dies at its address, says so, and counts it", async () => {
    const audit = stack.services.get("audit");
    if (!audit) throw new Error("the stack runs no audit");
    const { pid: killed, url } = audit;
    process.kill(killed, "SIGKILL");
    const back = await eventually(
      async () => {
        const state = stack.stackFile.processes.audit;
        if (!state?.pid || state.pid === killed) throw new Error("audit is not back yet");
        return state;
      },
      30_000,
      "the launcher restarts audit",
    );
    expect(back).toMatchObject({ pid: audit.pid, restarts: 1, lastExit: "signal SIGKILL" });
    expect(audit.url).toBe(url);
    const health = createClient(Health, createGrpcTransport({ baseUrl: url }));
    expect((await health.check({ service: "" })).status).toBe(
      HealthCheckResponse_ServingStatus.SERVING,
    );

    // One line naming the process, how it died, the attempt and the delay; then its last lines.
    const line = said.findIndex((l) => l.startsWith("audit exited"));
    expect(said[line]).toMatch(
      /^audit exited \(signal SIGKILL\); restarting it in \d+ ms \(restart 1 of at most 5 within 60 s\); its last lines:$/,
    );
    expect(said.slice(line + 1, line + 9).some((l) => l.includes('"msg":"listening'))).toBe(true);
    expect(said).toContainEqual(
      expect.stringMatching(/^audit is back at http:.* after it exited$/),
    );

    // stack.json (what `toolmesh status` reads) and the launcher's metrics count it.
    const written = JSON.parse(await readFile(path.join(dataDir, "stack.json"), "utf8"));
    expect(written.processes.audit).toEqual(back);
    expect(written.processes["nats-server"]).toMatchObject({ restarts: 0 });
    expect(written.services.audit).toEqual({ url, pid: audit.pid });
    const metrics = await (await fetch(stack.metricsUrl as string)).text();
    expect(metrics).toContain('toolmesh_launcher_restarts_total{process="audit"} 1');
    expect(metrics).toContain('toolmesh_launcher_restarts_total{process="dispatcher"} 0');
    expect(metrics).toMatch(
      /toolmesh_launcher_last_restart_timestamp_seconds\{process="audit"\} \d+/,
    );
  });
});

describe("launcher failures", () => {
  it("names the process and the cause when nats-server cannot start", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-launcher-"));
    const options = {
      root: repoRoot,
      natsBin: "/nonexistent/nats-server",
      natsPort: -1,
      dataDir,
      env: freePorts,
      startTimeoutMs: 10_000,
      say: () => {},
    };
    try {
      await expect(startStack(options)).rejects.toThrow(StackError);
      await expect(startStack(options)).rejects.toThrow(/nats-server exited .*npm run setup/);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe("a second start on the same data directory", () => {
  it("finds the admin token the first start created instead of creating one", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-launcher-"));
    const options = {
      root: repoRoot,
      natsPort: -1,
      dataDir,
      env: freePorts,
      services: ["permission"],
      startTimeoutMs: 60_000,
      say: () => {},
    };
    try {
      const first = await startStack(options);
      await first.stop();
      const second = await startStack(options);
      await second.stop();
      expect(first.adminTokenCreated).toBe(true);
      expect(second.adminTokenCreated).toBe(false);
      expect(second.adminToken).toBe(first.adminToken);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("disk space", () => {
  it("warns when the data directory's disk has less room than the thresholds", () => {
    expect(diskSpaceWarning(tmpdir(), { minFreeBytes: 0, minFreeRatio: 0 })).toBeUndefined();
    expect(
      diskSpaceWarning(tmpdir(), { minFreeBytes: Number.MAX_SAFE_INTEGER, minFreeRatio: 0 }),
    ).toMatch(/GiB free of .* toolmesh refuses every call/);
  });
});
