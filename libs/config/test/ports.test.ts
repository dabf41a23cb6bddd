import { readFileSync } from "node:fs";
import net from "node:net";
import { describe, expect, it } from "vitest";
import { freePort, portIsFree } from "../src/ports.js";

function ephemeralLow(): number {
  try {
    return Number(
      readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0],
    );
  } catch {
    return 32_768;
  }
}

describe("free ports", () => {
  it("are chosen below the ephemeral range that client sockets take, and never twice", async () => {
    const ports = await Promise.all(Array.from({ length: 50 }, () => freePort()));
    expect(new Set(ports).size).toBe(50);
    for (const port of ports) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(ephemeralLow());
    }
  });

  it("say whether something listens on a port", async () => {
    const port = await freePort();
    expect(await portIsFree(port)).toBe(true);
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    try {
      expect(await portIsFree(port)).toBe(false);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
