import { readdirSync, readFileSync } from "node:fs";

/** utime + stime of a process in ms (Linux /proc; 0 elsewhere). */
export function cpuMs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
  } catch {
    return 0;
  }
}

/** The pid of the nats-server started with this argument (its port or store dir), from /proc. */
export function natsPid(arg: number | string): number | undefined {
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmd = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      if (cmd[0]?.endsWith("nats-server") && cmd.includes(String(arg))) return Number(entry);
    } catch {
      // the process went away
    }
  }
  return undefined;
}
