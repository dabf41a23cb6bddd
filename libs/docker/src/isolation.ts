import type Docker from "dockerode";

/** The user a container runs as unless told otherwise: nobody. Root (0) is never used. */
export const NOBODY = "65534:65534";

/** What one container may use and see. */
export interface Isolation {
  memoryBytes: number;
  /** CPU in thousandths of a core. */
  cpuMillis: number;
  pids: number;
  /** `host` shares the host's network (docker tools); `none` has only its own loopback. */
  network: "host" | "none";
  /** Host paths it sees, read-only unless writable. */
  mounts: { source: string; target: string; writable: boolean }[];
  /** The options of its /tmp (a tmpfs): small and noexec unless said otherwise. */
  tmp?: string;
}

/**
 * The host configuration every toolmesh container gets — docker tools the Dispatcher runs and
 * the CodingAgent's sandboxes alike, so neither can be weakened alone: a read-only root, no new
 * privileges, every capability dropped, its own IPC, memory (swap included), CPU and pids
 * limits, and host paths only as listed.
 */
export function isolatedHostConfig(isolation: Isolation): Docker.HostConfig {
  return {
    NetworkMode: isolation.network,
    ReadonlyRootfs: true,
    SecurityOpt: ["no-new-privileges"],
    CapDrop: ["ALL"],
    IpcMode: "private",
    Memory: isolation.memoryBytes,
    MemorySwap: isolation.memoryBytes,
    NanoCpus: isolation.cpuMillis * 1_000_000,
    PidsLimit: isolation.pids,
    Mounts: isolation.mounts.map((m) => ({
      Type: "bind" as const,
      Source: m.source,
      Target: m.target,
      ReadOnly: !m.writable,
    })),
    Tmpfs: { "/tmp": isolation.tmp ?? "rw,noexec,nosuid,nodev,size=16m" },
  };
}
