import path from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root, found from this file. */
export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");
