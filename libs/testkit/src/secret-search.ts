import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { JetStreamApiCodes, jetStreamErrorCode } from "@toolmesh/nats";
import type { NatsConnection } from "nats";

/**
 * Every file under a directory (files of 512 MiB and more left out). A running stack replaces
 * files as it goes (a consumer's state through a `.tmp`): one gone meanwhile is left out.
 */
export async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(ifGone([]))) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(full)));
    else if (
      entry.isFile() &&
      ((await stat(full).catch(ifGone(undefined)))?.size ?? Infinity) < 512 * 1024 * 1024
    )
      out.push(full);
  }
  return out;
}

/** A catch handler that answers `fallback` for a path that no longer exists. */
function ifGone<T>(fallback: T): (error: unknown) => T {
  return (error) => {
    if ((error as NodeJS.ErrnoException)?.code === "ENOENT") return fallback;
    throw error;
  };
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
      const bytes = await readFile(file).catch(ifGone(Buffer.alloc(0)));
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

/** What a search of every JetStream stream read: messages by stream, and where values were. */
export interface StreamSearch {
  /** Messages read, by stream name (a KV bucket is the stream KV_<bucket>). */
  read: Record<string, number>;
  /** `<stream> #<seq>: <the value's first characters>…` for each value found. */
  found: string[];
}

/**
 * Reads every message of every JetStream stream (KV buckets included), subject, headers and data,
 * and tells where any of `values` occurs. `nc` must be allowed the JetStream API (the bus's admin).
 */
export async function secretsInStreams(
  nc: NatsConnection,
  values: string[],
): Promise<StreamSearch> {
  const jsm = await nc.jetstreamManager();
  const search: StreamSearch = { read: {}, found: [] };
  const needles = values.map((value) => Buffer.from(value));
  for await (const info of jsm.streams.list()) {
    const name = info.config.name;
    search.read[name] = 0;
    for (
      let seq = info.state.first_seq;
      seq <= info.state.last_seq && info.state.messages > 0;
      seq++
    ) {
      const message = await jsm.streams.getMessage(name, { seq }).catch((error: unknown) => {
        // A deleted message (a KV entry's older revision, a purged one) leaves its sequence empty.
        if (jetStreamErrorCode(error) === JetStreamApiCodes.NoMessageFound) return undefined;
        throw error;
      });
      if (!message) continue;
      search.read[name]++;
      const headers = message.header
        ? [...message.header.keys()]
            .flatMap((key) => [key, ...message.header.values(key)])
            .join("\n")
        : "";
      const bytes = Buffer.concat([
        Buffer.from(`${message.subject}\n${headers}\n`),
        Buffer.from(message.data),
      ]);
      for (const [i, needle] of needles.entries())
        if (bytes.includes(needle))
          search.found.push(`${name} #${seq}: ${values[i]?.slice(0, 12)}…`);
    }
  }
  return search;
}
