// npm run build: every service as plain JavaScript, dist/<service>.mjs (with the dist/chunk-*.mjs
// it imports), which Node runs without tsx. The workspace packages (libs/*) export TypeScript sources, so a per-file emit
// could not be run as is; esbuild inlines them and leaves every npm package to node_modules.
// Type checking is `npm run typecheck` (tsc), which the image's build stage runs first.
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { isBuiltin } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { build, type Plugin } from "esbuild";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outdir = path.join(root, "dist");

const services = readdirSync(path.join(root, "services"), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name)
  .filter((name) => existsSync(path.join(root, "services", name, "src", "main.ts")))
  .sort();

// The image installs only `dependencies` (npm ci --omit=dev); a bundle importing anything else
// would start fine here and fail in the container, so the build refuses it.
const manifest = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8")) as {
  dependencies?: Record<string, string>;
};
const runtimePackages = new Set(Object.keys(manifest.dependencies ?? {}));
const WORKSPACE_SCOPE = "@toolmesh/";

function packageName(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] ?? specifier);
}

const missing = new Map<string, Set<string>>();
const npmPackagesExternal: Plugin = {
  name: "npm-packages-external",
  setup(pluginBuild) {
    pluginBuild.onResolve({ filter: /^[^./]/ }, (args) => {
      if (args.kind === "entry-point" || args.path.startsWith(WORKSPACE_SCOPE)) return undefined;
      if (isBuiltin(args.path)) return { path: args.path, external: true };
      const name = packageName(args.path);
      if (!runtimePackages.has(name)) {
        const importers = missing.get(name) ?? new Set<string>();
        importers.add(path.relative(root, args.importer));
        missing.set(name, importers);
      }
      return { path: args.path, external: true };
    });
  },
};

const started = Date.now();
const result = await build({
  absWorkingDir: root,
  entryPoints: {
    ...Object.fromEntries(
      services.map((name) => [name, path.join("services", name, "src", "main.ts")]),
    ),
    // docker-compose's first step: the bus's credentials and nats-server config.
    "bus-init": path.join("libs", "launcher", "src", "bus-init-main.ts"),
  },
  outdir,
  outExtension: { ".js": ".mjs" },
  bundle: true,
  // What a service loads only when it is used — the Dispatcher's `/mcp` endpoint and the MCP SDK
  // under it — is a chunk of its own, imported on first use (code shared by several services is
  // a chunk too). Chunks sit beside the bundles, so paths relative to a module stay the same.
  splitting: true,
  chunkNames: "chunk-[hash]",
  platform: "node",
  format: "esm",
  // The oldest Node line package.json's engines allows.
  target: "node22",
  sourcemap: true,
  // No keepNames: a class or function bundled unminified keeps its name, and keepNames would
  // wrap every closure a call creates in a defineProperty (3.5% of the Dispatcher's JS at c64).
  // A name two modules share is suffixed (describe2), in stack traces only.
  plugins: [npmPackagesExternal],
  logLevel: "warning",
  metafile: true,
});

if (missing.size > 0) {
  for (const [name, importers] of missing) {
    process.stderr.write(
      `build: ${name} is imported by ${[...importers].join(", ")} but is not in package.json dependencies (the image installs only those)\n`,
    );
  }
  process.exit(1);
}

// A service that no longer exists must not leave a bundle behind that looks current.
const written = new Set(Object.keys(result.metafile.outputs).map((file) => path.basename(file)));
for (const file of readdirSync(outdir)) {
  if (/\.mjs(\.map)?$/.test(file) && !written.has(file)) rmSync(path.join(outdir, file));
}

process.stdout.write(
  `build: ${[...services, "bus-init"].map((name) => `dist/${name}.mjs`).join(", ")} in ${Date.now() - started} ms\n`,
);
