import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type Docker from "dockerode";

const run = promisify(execFile);

/**
 * Builds the test tool (services/dispatcher/test/docker-tool, Go, static) and an image of it
 * FROM scratch through the Engine API: nothing is pulled, no registry is needed.
 */
export async function buildToolImage(docker: Docker, tag: string): Promise<void> {
  const context = await mkdtemp(path.join(tmpdir(), "toolmesh-image-"));
  try {
    await run("go", ["build", "-trimpath", "-o", path.join(context, "tool"), "."], {
      cwd: path.join(import.meta.dirname, "docker-tool"),
      env: { ...process.env, CGO_ENABLED: "0", GOFLAGS: "-mod=mod" },
    });
    await writeFile(
      path.join(context, "Dockerfile"),
      'FROM scratch\nCOPY tool /tool\nENTRYPOINT ["/tool"]\n',
    );
    const stream = await docker.buildImage({ context, src: ["Dockerfile", "tool"] }, { t: tag });
    const events = await new Promise<{ error?: string }[]>((resolve, reject) =>
      docker.modem.followProgress(stream, (error: Error | null, output: { error?: string }[]) =>
        error ? reject(error) : resolve(output),
      ),
    );
    const failed = events.find((e) => e.error);
    if (failed) throw new Error(`building ${tag} failed: ${failed.error}`);
  } finally {
    await rm(context, { recursive: true, force: true });
  }
}

/** The containers the Dispatcher runs for a tool (running or not). */
export function containersOf(docker: Docker, tool: string): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`toolmesh.tool=${tool}`] } });
}
