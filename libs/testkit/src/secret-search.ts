import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";

/** Every file under a directory (files of 512 MiB and more left out). */
export async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(full)));
    else if (entry.isFile() && (await stat(full)).size < 512 * 1024 * 1024) out.push(full);
  }
  return out;
}

/**
 * Where any of `values` occurs, as `<file or URL>: <the value's first characters>…`: every file
 * under `dirs` (a stack's data directory holds its NATS store, indexes, memory files and logs)
 * and the text every URL of `pages` answers (metrics pages). Empty when none holds one.
 */
export async function secretsFound(
  values: string[],
  where: { dirs: string[]; pages?: string[] },
): Promise<string[]> {
  const found: string[] = [];
  for (const dir of where.dirs)
    for (const file of await filesUnder(dir)) {
      const bytes = await readFile(file);
      for (const value of values)
        if (bytes.includes(Buffer.from(value))) found.push(`${file}: ${value.slice(0, 12)}…`);
    }
  for (const url of where.pages ?? []) {
    const text = await fetch(url).then(
      (r) => r.text(),
      () => "",
    );
    for (const value of values)
      if (text.includes(value)) found.push(`${url}: ${value.slice(0, 12)}…`);
  }
  return found;
}
