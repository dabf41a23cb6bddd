import { readFileSync } from "node:fs";
import path from "node:path";
import { repoRoot } from "@toolmesh/testkit";
import { afterEach, describe, expect, it } from "vitest";
import { SERVICE_ENV, SERVICE_NODE_FLAGS, serviceArgs } from "../src/bundles.js";

// The V8 flags of a service have one home (SERVICE_NODE_FLAGS), and its environment another
// (SERVICE_ENV); the image repeats them, so a change to one without the other fails here.
describe("a service's node flags", () => {
  const entry = path.join(repoRoot, "services", "registry", "src", "main.ts");
  afterEach(() => {
    delete process.env.TOOLMESH_SOURCE_MAPS;
    delete process.env.TOOLMESH_RUN_FROM;
  });

  it("are given from the bundle and from source, source maps only when asked for", () => {
    process.env.TOOLMESH_RUN_FROM = "source";
    expect(serviceArgs(repoRoot, "registry", entry)).toEqual([
      ...SERVICE_NODE_FLAGS,
      "--import",
      "tsx",
      entry,
    ]);
    delete process.env.TOOLMESH_RUN_FROM;
    const args = serviceArgs(repoRoot, "registry", entry);
    expect(args.slice(0, SERVICE_NODE_FLAGS.length)).toEqual([...SERVICE_NODE_FLAGS]);
    expect(args).not.toContain("--enable-source-maps");
    process.env.TOOLMESH_SOURCE_MAPS = "1";
    expect(serviceArgs(repoRoot, "registry", entry)).toContain("--enable-source-maps");
  });

  it("are the image's NODE_OPTIONS", () => {
    const dockerfile = readFileSync(path.join(repoRoot, "Dockerfile"), "utf8");
    expect(dockerfile).toContain(`ENV NODE_OPTIONS=${SERVICE_NODE_FLAGS.join(" ")}\n`);
    expect(dockerfile).not.toContain("--enable-source-maps");
    for (const [name, value] of Object.entries(SERVICE_ENV))
      expect(dockerfile).toContain(`ENV ${name}=${value}\n`);
  });
});
