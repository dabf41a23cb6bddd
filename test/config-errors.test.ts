import { spawn } from "node:child_process";
import path from "node:path";
import { availableServices } from "@toolmesh/launcher";
import { repoRoot } from "@toolmesh/testkit";
import { describe, expect, it } from "vitest";

/** Runs a service's main.ts with extra environment until it exits; returns code and stderr. */
function run(
  name: string,
  env: Record<string, string>,
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", path.join(repoRoot, "services", name, "src", "main.ts")],
      {
        cwd: repoRoot,
        env: { ...process.env, ...env },
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once("exit", (code) => resolve({ code, stderr }));
  });
}

// A bad value must stop a process at once with a message naming the variable, before it
// touches NATS (the URL below points nowhere, so reaching NATS would hang instead).
describe("configuration errors stop every process with a message naming the variable", () => {
  for (const service of availableServices(repoRoot)) {
    it(service.name, async () => {
      const env: Record<string, string> = {
        NATS_URL: "http://not-nats",
        LOG_LEVEL: "chatty",
        ...(service.portEnv ? { [service.portEnv]: "70000" } : {}),
      };
      const { code, stderr } = await run(service.name, env);
      expect(code).toBe(2);
      expect(stderr).toContain('NATS_URL="http://not-nats" must use nats: or tls:');
      expect(stderr).toContain('LOG_LEVEL="chatty" is not one of');
      if (service.portEnv) expect(stderr).toContain(`${service.portEnv}=70000 is out of range`);
    });
  }
});
