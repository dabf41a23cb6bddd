import { mkdirSync, rmSync } from "node:fs";
import path from "node:path";
import type { DatabaseSync } from "node:sqlite";
import type { Logger } from "@toolmesh/log";

/**
 * Loads `node:sqlite`. Node 22 and early 24 releases print an ExperimentalWarning when it loads;
 * the module is built in (no native build) and its synchronous API is what the index needs, so
 * exactly that one warning is dropped, and every other warning still reaches stderr.
 */
export async function loadSqlite(): Promise<typeof import("node:sqlite")> {
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === "string" ? warning : warning.message;
    const type = typeof rest[0] === "string" ? rest[0] : (rest[0] as { type?: string })?.type;
    if (type === "ExperimentalWarning" && /sqlite/i.test(text)) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    return await import("node:sqlite");
  } finally {
    process.emitWarning = emitWarning;
  }
}

/** Why an index file was started afresh. */
export type IndexRebuild = "unreadable" | "another schema version";

/** An index file, open at its schema version. */
export interface OpenedIndex {
  db: DatabaseSync;
  /** True when the file holds nothing yet (new, or started afresh): its caller fills it. */
  fresh: boolean;
  /** Why the file found was deleted and started afresh; undefined when it was used as it was. */
  rebuilt: IndexRebuild | undefined;
}

const META = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);";

/**
 * Opens an SQLite index of rows derived from a stream: the one convention of every such file. Its
 * `meta` table (key, value) holds `schema_version`; a file of another version (an older one, or
 * one from before this convention), or one that is not a database, is deleted with its WAL and
 * created afresh, so its caller rebuilds it from the stream. WAL with NORMAL sync: losing the
 * last transactions to a power cut costs a re-read, never a wrong row. `pragmas` run next, then
 * `schema` (CREATE … IF NOT EXISTS).
 */
export async function openIndex(options: {
  file: string;
  version: number;
  schema: string;
  pragmas?: string;
  /** What the file is, for the log line of a rebuild ("audit index"). */
  name: string;
  log: Logger;
}): Promise<OpenedIndex> {
  const { file, log } = options;
  const { DatabaseSync } = await loadSqlite();
  mkdirSync(path.dirname(file), { recursive: true });
  const version = String(options.version);
  const open = (): { db: DatabaseSync; fresh: boolean } => {
    const db = new DatabaseSync(file);
    try {
      db.exec(`PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; ${options.pragmas ?? ""}`);
      const hasMeta =
        db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").get() !==
        undefined;
      const found = hasMeta
        ? db.prepare("SELECT value FROM meta WHERE key = 'schema_version'").get()?.value
        : undefined;
      if (hasMeta && found !== version)
        throw new SchemaVersionError(String(found ?? "none"), version);
      db.exec(META + options.schema);
      if (!hasMeta)
        db.prepare("INSERT INTO meta (key, value) VALUES ('schema_version', ?)").run(version);
      return { db, fresh: !hasMeta };
    } catch (error) {
      db.close();
      throw error;
    }
  };
  try {
    return { ...open(), rebuilt: undefined };
  } catch (error) {
    const rebuilt: IndexRebuild =
      error instanceof SchemaVersionError ? "another schema version" : "unreadable";
    log.warn({ err: error, file, reason: rebuilt }, `${options.name} unusable; rebuilding it`);
    for (const suffix of ["", "-wal", "-shm", "-journal"]) rmSync(file + suffix, { force: true });
    return { ...open(), rebuilt };
  }
}

/** Raised when an index file was written at another schema version. */
class SchemaVersionError extends Error {
  override name = "SchemaVersionError";
  constructor(found: string, expected: string) {
    super(`index schema version ${found}, expected ${expected}`);
  }
}
