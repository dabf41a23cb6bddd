import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import {
  chmod,
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type Docker from "dockerode";

const run = promisify(execFile);

/** Raised when an image cannot be built; the message carries the builder's own words. */
export class ImageBuildError extends Error {
  override name = "ImageBuildError";
}

/** Every path under `dir` (files, links and folders), relative, for the build context. */
export async function contextEntries(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.map((e) => path.relative(dir, path.join(e.parentPath, e.name)));
}

/**
 * Builds an image from a context directory through the Engine API, with no network (nothing is
 * pulled; no registry is needed) and bounded output; ImageBuildError with the builder's last
 * words when it fails.
 */
export async function buildImage(
  docker: Docker,
  context: string,
  tag: string,
  signal?: AbortSignal,
): Promise<void> {
  const stream = await docker.buildImage(
    { context, src: await contextEntries(context) },
    { t: tag, networkmode: "none", rm: true, forcerm: true, abortSignal: signal },
  );
  const events = await new Promise<{ error?: string; stream?: string }[]>((resolve, reject) =>
    docker.modem.followProgress(stream, (error: Error | null, output: { error?: string }[]) =>
      error ? reject(error) : resolve(output),
    ),
  );
  const failed = events.find((e) => e.error);
  if (failed) {
    const said = events
      .map((e) => e.stream ?? "")
      .join("")
      .trim()
      .split("\n")
      .slice(-8)
      .join("\n");
    throw new ImageBuildError(`building ${tag} failed: ${failed.error}\n${said}`.slice(0, 2000));
  }
}

/**
 * The CodingAgent's sandbox image, built here FROM scratch: a statically linked busybox and its
 * applets, a `nobody` user, mount points for the workspace and staging, and `lib` links into
 * /usr (where a uv sandbox mounts the host's Python). Tagged by the busybox's hash, so it is
 * built once per busybox and never pulled.
 */
export async function ensureSandboxImage(docker: Docker, busybox: string): Promise<string> {
  let binary: Buffer;
  try {
    binary = await readFile(busybox);
  } catch (error) {
    throw new ImageBuildError(
      `no busybox at ${busybox} (TOOLMESH_CODING_BUSYBOX): install a statically linked one (Debian: apt-get install busybox-static) or set TOOLMESH_CODING_IMAGE to a local image`,
      { cause: error },
    );
  }
  const tag = `toolmesh/coding-sandbox:${createHash("sha256").update(binary).digest("hex").slice(0, 12)}`;
  try {
    await docker.getImage(tag).inspect();
    return tag;
  } catch {
    // Not built yet on this Docker host.
  }
  let applets: string[];
  try {
    applets = (await run(busybox, ["--list"])).stdout
      .split("\n")
      .filter((a) => /^[\w.[-]+$/.test(a));
  } catch (error) {
    throw new ImageBuildError(`${busybox} --list failed; is it a busybox?`, { cause: error });
  }
  const context = await mkdtemp(path.join(tmpdir(), "toolmesh-sandbox-image-"));
  try {
    const root = path.join(context, "rootfs");
    for (const dir of ["bin", "etc", "usr", "workspace", "staging", "tmp", "opt/uv", "app"])
      await mkdir(path.join(root, dir), { recursive: true });
    await copyFile(busybox, path.join(root, "bin", "busybox"));
    await chmod(path.join(root, "bin", "busybox"), 0o755);
    for (const applet of applets)
      if (applet !== "busybox") await symlink("busybox", path.join(root, "bin", applet));
    await symlink("usr/lib", path.join(root, "lib"));
    await symlink("usr/lib64", path.join(root, "lib64"));
    await writeFile(
      path.join(root, "etc", "passwd"),
      "root:x:0:0::/:/bin/sh\nnobody:x:65534:65534::/tmp:/bin/sh\n",
    );
    await writeFile(path.join(root, "etc", "group"), "root:x:0:\nnogroup:x:65534:\n");
    await writeFile(
      path.join(context, "Dockerfile"),
      "FROM scratch\nCOPY rootfs/ /\nENV PATH=/bin:/usr/bin\n",
    );
    await buildImage(docker, context, tag);
  } finally {
    await rm(context, { recursive: true, force: true });
  }
  return tag;
}
