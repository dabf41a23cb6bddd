import Docker from "dockerode";

/** The Docker Engine the tests use, or why there is none. */
export type Engine = { ok: true; docker: Docker; socket: string } | { ok: false; reason: string };

/**
 * Pings the Docker Engine at TOOLMESH_DOCKER_SOCKET (or the default socket). The tests that need
 * one (*.docker.test.ts, npm run test:docker) skip with one line naming the reason where there is
 * none, and run wherever there is.
 */
export async function reachEngine(): Promise<Engine> {
  const socket = process.env.TOOLMESH_DOCKER_SOCKET || "/var/run/docker.sock";
  const docker = new Docker({ socketPath: socket, timeout: 5000 });
  try {
    await docker.ping();
    return { ok: true, docker, socket };
  } catch (error) {
    const e = error as { code?: string; message?: string };
    return {
      ok: false,
      reason: `no Docker Engine at ${socket} (${e.code ?? e.message}); start dockerd (see .ci/run) to run them`,
    };
  }
}
