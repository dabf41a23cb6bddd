import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = path.dirname(fileURLToPath(import.meta.url));

// The console app: Preact and connect-web over the generated TypeScript, built to dist/web.
export default defineConfig({
  root: path.join(here, "web"),
  base: "/",
  logLevel: "warn",
  oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
  build: {
    outDir: path.join(here, "dist", "web"),
    emptyOutDir: true,
    target: "es2022",
    // Source maps would double what a browser downloads; the app is small enough to read as is.
    sourcemap: false,
    reportCompressedSize: false,
  },
});
