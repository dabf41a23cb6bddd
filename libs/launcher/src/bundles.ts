import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import path from "node:path";

/** The sources dist/ is built from: every TypeScript file of services/ and libs/, and the lock. */
function newestSourceMs(root: string): number {
  let newest = statSync(path.join(root, "package-lock.json")).mtimeMs;
  for (const top of ["services", "libs"]) {
    for (const pkg of readdirSync(path.join(root, top), { withFileTypes: true })) {
      if (!pkg.isDirectory()) continue;
      const src = path.join(root, top, pkg.name, "src");
      if (!existsSync(src)) continue;
      for (const entry of readdirSync(src, { withFileTypes: true, recursive: true })) {
        if (!entry.isFile() || !/\.tsx?$/.test(entry.name)) continue;
        const ms = statSync(path.join(entry.parentPath, entry.name)).mtimeMs;
        if (ms > newest) newest = ms;
      }
    }
  }
  return newest;
}

/** Per root, the newest source's mtime; per bundle file, whether it is newer. */
const newestSource = new Map<string, number>();
const freshness = new Map<string, boolean>();

/**
 * True when dist/ holds a bundle of every service built after the last change to any source.
 * Looked up once per process: a test run or a stack does not edit its own sources.
 */
export function bundlesFresh(root: string, names: readonly string[]): boolean {
  return names.every((name) => {
    const file = bundlePath(root, name);
    let fresh = freshness.get(file);
    if (fresh === undefined) {
      let newest = newestSource.get(root);
      if (newest === undefined) {
        newest = newestSourceMs(root);
        newestSource.set(root, newest);
      }
      fresh = existsSync(file) && statSync(file).mtimeMs >= newest;
      freshness.set(file, fresh);
    }
    return fresh;
  });
}

export function bundlePath(root: string, name: string): string {
  return path.join(root, "dist", `${name}.mjs`);
}

/**
 * Builds dist/ (scripts/build.ts) unless it is current, so that services start as plain
 * JavaScript: about a third of the start-up time and a fifth less memory than compiling
 * TypeScript at every start. Returns false (and the caller runs the sources) when the build fails.
 */
export function ensureBundles(
  root: string,
  names: readonly string[],
  say: (line: string) => void,
): boolean {
  if (process.env.TOOLMESH_RUN_FROM === "source") return false;
  if (bundlesFresh(root, names)) return true;
  say("building dist/ (the sources changed since the last build)");
  const built = spawnSync(
    process.execPath,
    ["--import", "tsx", path.join(root, "scripts", "build.ts")],
    {
      cwd: root,
      stdio: ["ignore", "ignore", "inherit"],
    },
  );
  freshness.clear();
  newestSource.clear();
  if (built.status !== 0) {
    say("WARNING: npm run build failed; running the TypeScript sources instead");
    return false;
  }
  return bundlesFresh(root, names);
}

/**
 * The V8 flags every service runs with (the Dockerfile sets the same in NODE_OPTIONS). A young
 * generation of 8 MB semi-spaces: a call's garbage dies young, and larger ones only let more of
 * it sit in memory between collections. (The heap's growth is set by each service at start,
 * TOOLMESH_HEAP_GROWING_PERCENT.)
 */
export const SERVICE_NODE_FLAGS = ["--max-semi-space-size=8"] as const;

/**
 * The environment every service runs with unless it sets the variable itself (the Dockerfile sets
 * the same). Two malloc arenas: glibc otherwise gives each of a process's threads (libuv's pool,
 * V8's workers) an arena of its own, each keeping freed memory; measured at c64, two cut about
 * 10 MB of RSS from the Dispatcher and from Audit, which the heap's growth
 * (TOOLMESH_HEAP_GROWING_PERCENT, 50) spends on fewer full collections.
 */
export const SERVICE_ENV = { MALLOC_ARENA_MAX: "2" } as const;

/**
 * The node arguments that run a service: its bundle when dist/ is current (and not turned off by
 * TOOLMESH_RUN_FROM=source), else its TypeScript entry through tsx. Stack traces name the bundle's
 * lines unless TOOLMESH_SOURCE_MAPS=1: with source maps Node reads the maps of every package it
 * loads, which costs tens of MB a process and time on every stack trace.
 */
export function serviceArgs(root: string, name: string, entry: string): string[] {
  const fromSource = process.env.TOOLMESH_RUN_FROM === "source" || !bundlesFresh(root, [name]);
  if (fromSource) return [...SERVICE_NODE_FLAGS, "--import", "tsx", entry];
  const maps = process.env.TOOLMESH_SOURCE_MAPS === "1" ? ["--enable-source-maps"] : [];
  return [...SERVICE_NODE_FLAGS, ...maps, bundlePath(root, name)];
}
