import { execFileSync } from "node:child_process";
import { randomBytes, randomInt } from "node:crypto";

/**
 * A network namespace of its own joined to this one by a veth pair: a process started in it (a
 * nats-server under `wrap`) is reachable at `host` until `cut()` takes the link down, which is a
 * network partition of that process from everything else on the machine, and `heal()` ends it.
 */
export interface IsolatedHost {
  /** The address inside the namespace. */
  readonly host: string;
  /** The command prefix that runs a process inside it. */
  readonly wrap: string[];
  cut(): void;
  heal(): void;
  /** Deletes the namespace and its link; safe to call twice. */
  destroy(): void;
}

const ip = (...args: string[]) => execFileSync("ip", args, { stdio: ["ignore", "ignore", "pipe"] });

/**
 * Makes an isolated host, or returns why this machine cannot (no `ip`, no CAP_SYS_ADMIN …), so a
 * test can say why it skips. Names and the /30 subnet are random, so tests beside each other do
 * not collide; the namespace is deleted at exit if the test could not.
 */
export function isolatedHost(): IsolatedHost | string {
  const tag = randomBytes(3).toString("hex");
  const ns = `toolmesh-${tag}`;
  const outside = `tmh${tag}`;
  const inside = `tmn${tag}`;
  const net = `10.${randomInt(200, 255)}.${randomInt(0, 256)}`;
  const base = randomInt(0, 64) * 4;
  const [ours, theirs] = [`${net}.${base + 1}`, `${net}.${base + 2}`];
  let destroyed = false;
  const destroy = () => {
    if (destroyed) return;
    destroyed = true;
    process.off("exit", destroy);
    try {
      // Deleting the namespace deletes its end of the pair, and with it ours.
      ip("netns", "del", ns);
    } catch {
      // Already gone.
    }
  };
  try {
    ip("netns", "add", ns);
    process.on("exit", destroy);
    ip("link", "add", outside, "type", "veth", "peer", "name", inside);
    ip("link", "set", inside, "netns", ns);
    ip("addr", "add", `${ours}/30`, "dev", outside);
    ip("link", "set", outside, "up");
    ip("netns", "exec", ns, "ip", "addr", "add", `${theirs}/30`, "dev", inside);
    ip("netns", "exec", ns, "ip", "link", "set", inside, "up");
    ip("netns", "exec", ns, "ip", "link", "set", "lo", "up");
  } catch (error) {
    destroy();
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    return `cannot make a network namespace here (${stderr || (error as Error).message})`;
  }
  return {
    host: theirs,
    wrap: ["ip", "netns", "exec", ns],
    cut: () => ip("link", "set", outside, "down"),
    heal: () => ip("link", "set", outside, "up"),
    destroy,
  };
}
