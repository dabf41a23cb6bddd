import { readFileSync } from "node:fs";
import net from "node:net";

/** Ports handed out by this process lately, not handed out again. */
const handedOut = new Set<number>();
const MAX_REMEMBERED = 4096;
/** The lowest port chosen from; below it are the well-known ports toolmesh itself uses. */
const LOWEST = 20_000;

/**
 * Where free ports are chosen from: below the kernel's ephemeral range, which outgoing
 * connections draw from. A port from that range (what listen(0) returns) can be taken by any
 * client socket between the moment it is chosen and the moment a service binds it, and a busy
 * test or bench opens many. Undefined when that range leaves too little room below it.
 */
function candidateRange(): { low: number; high: number } | undefined {
  let ephemeralLow = 32_768;
  try {
    const [low] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8")
      .trim()
      .split(/\s+/)
      .map(Number);
    if (low !== undefined && Number.isInteger(low)) ephemeralLow = low;
  } catch {
    // Not Linux: the usual default.
  }
  const high = ephemeralLow - 1;
  return high - LOWEST >= 1_000 ? { low: LOWEST, high } : undefined;
}

const range = candidateRange();

/** Whether nothing listens on 127.0.0.1:port right now. */
export async function portIsFree(port: number): Promise<boolean> {
  return (await bindable(port)) !== undefined;
}

function bindable(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once("error", () => resolve(undefined));
    server.listen(port, "127.0.0.1", () => {
      const { port: bound } = server.address() as net.AddressInfo;
      server.close(() => resolve(bound));
    });
  });
}

/** A TCP port that was free a moment ago on 127.0.0.1, and that no client socket will take. */
export async function freePort(): Promise<number> {
  if (range) {
    for (let attempt = 0; attempt < 100; attempt++) {
      const port = range.low + Math.floor(Math.random() * (range.high - range.low + 1));
      if (handedOut.has(port)) continue;
      // A long-lived process (a Dispatcher starting tools for months) forgets the oldest half.
      if (handedOut.size >= MAX_REMEMBERED) {
        for (const old of handedOut) {
          handedOut.delete(old);
          if (handedOut.size < MAX_REMEMBERED / 2) break;
        }
      }
      // Reserved before the check, so concurrent callers never both get it.
      handedOut.add(port);
      if ((await bindable(port)) !== undefined) return port;
      handedOut.delete(port);
    }
  }
  const port = await bindable(0);
  if (port === undefined) throw new Error("no free TCP port on 127.0.0.1");
  return port;
}
