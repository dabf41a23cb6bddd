import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";
import type { Logger } from "@toolmesh/log";
import type { ProxiedRequest, ProxiedResponse } from "./proxy.js";

const TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".json": "application/json",
  ".ico": "image/x-icon",
};

/** Scripts, styles and data only from this origin; the app is never framed. */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

interface Asset {
  type: string;
  body: Buffer;
  gzip: Buffer;
  immutable: boolean;
}

/**
 * Serves the built app from memory (it is small): `/` is index.html, hashed files under
 * /assets/ are cached for a year, every response carries a strict content security policy.
 */
export function createAssetHandler(dir: string) {
  if (!existsSync(path.join(dir, "index.html")))
    throw new Error(
      `the console app is not built in ${dir}: run npm run build:console, or set TOOLMESH_CONSOLE_ASSETS to a built app`,
    );
  const assets = new Map<string, Asset>();
  const walk = (sub: string) => {
    for (const entry of readdirSync(path.join(dir, sub), { withFileTypes: true })) {
      const rel = path.posix.join(sub, entry.name);
      if (entry.isDirectory()) walk(rel);
      else {
        const body = readFileSync(path.join(dir, rel));
        assets.set(`/${rel}`, {
          type: TYPES[path.extname(entry.name)] ?? "application/octet-stream",
          body,
          gzip: gzipSync(body, { level: 9 }),
          immutable: rel.startsWith("assets/"),
        });
      }
    }
  };
  walk("");
  return (req: ProxiedRequest, res: ProxiedResponse): boolean => {
    if (req.method !== "GET" && req.method !== "HEAD") return false;
    const pathname = (req.url ?? "/").split("?", 1)[0] ?? "/";
    const asset = assets.get(pathname === "/" ? "/index.html" : pathname);
    if (!asset) return false;
    req.resume();
    const gzip = /\bgzip\b/.test(String(req.headers["accept-encoding"] ?? ""));
    const body = gzip ? asset.gzip : asset.body;
    res.writeHead(200, {
      "content-type": asset.type,
      "content-length": String(body.length),
      "cache-control": asset.immutable ? "public, max-age=31536000, immutable" : "no-cache",
      ...(gzip ? { "content-encoding": "gzip" } : {}),
      vary: "accept-encoding",
      ...SECURITY_HEADERS,
    });
    if (req.method === "HEAD") res.end();
    else {
      res.write(body);
      res.end();
    }
    return true;
  };
}

/** Newest modification time under `dir` (files only). */
function newest(dir: string): number {
  let latest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    latest = Math.max(latest, entry.isDirectory() ? newest(full) : statSync(full).mtimeMs);
  }
  return latest;
}

/**
 * Builds the app with Vite when its output is missing or older than its sources, so `npm start`
 * after a pull serves the current app. A deployment passes TOOLMESH_CONSOLE_ASSETS instead and
 * never builds.
 */
export async function ensureBuilt(consoleRoot: string, outDir: string, log: Logger): Promise<void> {
  const index = path.join(outDir, "index.html");
  // A bundled console (dist/console.mjs) has no sources beside it: it serves what was built.
  if (!existsSync(path.join(consoleRoot, "web", "index.html"))) return;
  const sources = Math.max(
    newest(path.join(consoleRoot, "web")),
    statSync(path.join(consoleRoot, "vite.config.ts")).mtimeMs,
  );
  const fresh = () => existsSync(index) && statSync(index).mtimeMs >= sources;
  if (fresh()) return;
  // Several consoles may start at once (tests): one builds, the others wait for it.
  const lock = `${outDir}.lock`;
  mkdirSync(path.dirname(lock), { recursive: true });
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      // A lock older than the longest build was left by a process that died while building.
      if (Date.now() - statSync(lock).mtimeMs > 120_000)
        rmSync(lock, { recursive: true, force: true });
      if (Date.now() > deadline)
        throw new Error(`another process holds ${lock}; remove it if none is building`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    if (fresh()) return;
    log.info({ out_dir: outDir }, "building the console app");
    // Vite is a development dependency: the name is not a literal, so the service bundle (which
    // serves prebuilt assets) does not import it.
    const vite = "vite";
    const { build } = (await import(vite)) as typeof import("vite");
    await build({ configFile: path.join(consoleRoot, "vite.config.ts"), logLevel: "warn" });
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
