import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import { RegistryService } from "@toolmesh/proto";
import { repoRoot } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ListeningServer } from "../src/index.js";
import { listenRegistryServer } from "./registry-server.js";

const run = promisify(execFile);
const grpcurl = path.join(repoRoot, ".toolmesh", "bin", "grpcurl");

/** grpcurl's stdout, stderr and exit code (it exits non-zero on a gRPC error). */
async function grpcurlRun(args: string[]) {
  try {
    const { stdout, stderr } = await run(grpcurl, args, { timeout: 20_000 });
    return { stdout, stderr, code: 0 };
  } catch (error) {
    const e = error as { stdout: string; stderr: string; code: number };
    return { stdout: e.stdout, stderr: e.stderr, code: e.code };
  }
}

// A real server on port 0 reached by grpcurl (reflection, unknown methods) and plain HTTP (metrics).
describe("operator endpoints of every port", () => {
  let listening: ListeningServer;
  let address: string;
  beforeAll(async () => {
    if (!existsSync(grpcurl)) throw new Error(`${grpcurl} is missing; run npm run setup`);
    listening = await listenRegistryServer(["admin"], (router) => {
      // Registered without handlers: every method answers UNIMPLEMENTED from the router.
      router.service(RegistryService, {});
    });
    address = `127.0.0.1:${listening.port}`;
  });
  afterAll(() => listening.close(100));

  it("lists its services over reflection v1 without a credential", async () => {
    const out = await grpcurlRun(["-plaintext", address, "list"]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout.split("\n")).toEqual(
      expect.arrayContaining([
        "toolmesh.registry.v1.RegistryService",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
      ]),
    );
  });

  it("describes a method and a message with its imports over reflection", async () => {
    const method = await grpcurlRun([
      "-plaintext",
      address,
      "describe",
      "toolmesh.registry.v1.RegistryService.GetTool",
    ]);
    expect(method.code, method.stderr).toBe(0);
    expect(method.stdout).toContain("rpc GetTool ( .toolmesh.registry.v1.GetToolRequest )");
    const message = await grpcurlRun([
      "-plaintext",
      address,
      "describe",
      "toolmesh.registry.v1.ToolSpec",
    ]);
    expect(message.code, message.stderr).toBe(0);
    expect(message.stdout).toContain("google.protobuf.Struct input_schema");
  });

  it("answers v1alpha reflection clients", async () => {
    // grpcurl falls back to v1alpha only when v1 is missing; ask v1alpha directly instead.
    const out = await grpcurlRun([
      "-plaintext",
      "-d",
      '{"list_services": ""}',
      address,
      "grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
    ]);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain("toolmesh.registry.v1.RegistryService");
  });

  it("answers an unknown method with UNIMPLEMENTED and gRPC trailers", async () => {
    const out = await grpcurlRun([
      "-plaintext",
      "-use-reflection=false",
      "-proto",
      "toolmesh/callback/v1/callback.proto",
      "-import-path",
      path.join(repoRoot, "proto"),
      "-d",
      "{}",
      address,
      "toolmesh.callback.v1.CallbackService/GetOutcome",
    ]);
    expect(out.stderr).toContain("Code: Unimplemented");
    expect(out.stderr).toContain("unknown method /toolmesh.callback.v1.CallbackService/GetOutcome");
    const unknown = await fetch(`http://${address}/toolmesh.nope.v1.NopeService/Do`, {
      method: "POST",
      headers: { "content-type": "application/grpc-web+proto" },
      body: new Uint8Array(5),
    });
    expect(unknown.status).toBe(200);
    expect(unknown.headers.get("grpc-status")).toBe("12");
    expect(decodeURIComponent(unknown.headers.get("grpc-message") ?? "")).toContain(
      "unknown method /toolmesh.nope.v1.NopeService/Do",
    );
  });

  it("serves Prometheus metrics on GET /metrics, counting RPCs and auth failures", async () => {
    const refused = await fetch(`${listening.url}/toolmesh.registry.v1.RegistryService/GetTool`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(refused.status).toBe(401);
    const unimplemented = await grpcurlRun([
      "-plaintext",
      "-H",
      "authorization: Bearer good",
      "-d",
      "{}",
      address,
      "toolmesh.registry.v1.RegistryService/GetTool",
    ]);
    expect(unimplemented.stderr).toContain("Code: Unimplemented");
    const res = await fetch(`${listening.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toContain("text/plain");
    const text = await res.text();
    expect(text).toMatch(
      /toolmesh_rpc_server_handled_total\{service="toolmesh.registry.v1.RegistryService",method="GetTool",code="UNAUTHENTICATED"\} [1-9]/,
    );
    expect(text).toMatch(
      /toolmesh_rpc_server_handled_total\{service="toolmesh.registry.v1.RegistryService",method="GetTool",code="UNIMPLEMENTED"\} [1-9]/,
    );
    expect(text).toMatch(
      /toolmesh_auth_failures_total\{service="toolmesh.registry.v1.RegistryService"\} [1-9]/,
    );
  });
});
