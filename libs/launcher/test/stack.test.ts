import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Health, HealthCheckResponse_ServingStatus, RegistryService } from "@toolmesh/proto";
import { repoRoot } from "@toolmesh/testkit";
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

  it("reports a service that dies, with its exit code", async () => {
    const audit = stack.endpoints.find((e) => e.name === "audit");
    process.kill(audit?.pid as number, "SIGKILL");
    const died = await stack.firstExit;
    expect(died).toMatchObject({ name: "audit", code: null, signal: "SIGKILL" });
    expect(died.lastLines).toContain("listening");
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
