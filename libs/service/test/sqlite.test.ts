import { writeFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createLogger } from "@toolmesh/log";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadSqlite, openIndex } from "../src/sqlite.js";

/**
 * The one convention of a stream-derived SQLite index: a new file is fresh, a file at its schema
 * version is used as it is, and one of another version or no database at all starts afresh.
 */
describe("openIndex", () => {
  let dir: string;
  const log = createLogger("sqlite-test", "silent");
  const schema = "CREATE TABLE IF NOT EXISTS rows (id INTEGER PRIMARY KEY);";
  const open = (file: string, version = 2) =>
    openIndex({ file: path.join(dir, file), version, schema, name: "test index", log });
  const rowsIn = (db: import("node:sqlite").DatabaseSync) =>
    Number(db.prepare("SELECT count(*) AS n FROM rows").get()?.n);

  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "toolmesh-sqlite-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("keeps a file of its version and starts one of another version afresh", async () => {
    const first = await open("a.sqlite");
    expect(first).toMatchObject({ fresh: true, rebuilt: undefined });
    first.db.exec("INSERT INTO rows (id) VALUES (1)");
    first.db.close();
    const again = await open("a.sqlite");
    expect(again).toMatchObject({ fresh: false, rebuilt: undefined });
    expect(rowsIn(again.db)).toBe(1);
    again.db.close();
    const newer = await open("a.sqlite", 3);
    expect(newer).toMatchObject({ fresh: true, rebuilt: "another schema version" });
    expect(rowsIn(newer.db)).toBe(0);
    newer.db.close();
  });

  it("starts afresh a file from before the convention and one that is not a database", async () => {
    const { DatabaseSync } = await loadSqlite();
    const old = new DatabaseSync(path.join(dir, "old.sqlite"));
    old.exec(
      "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT); INSERT INTO meta VALUES ('version', '2');",
    );
    old.close();
    const upgraded = await open("old.sqlite");
    expect(upgraded).toMatchObject({ fresh: true, rebuilt: "another schema version" });
    upgraded.db.close();
    writeFileSync(path.join(dir, "junk.sqlite"), "x".repeat(4096));
    const junk = await open("junk.sqlite");
    expect(junk).toMatchObject({ fresh: true, rebuilt: "unreadable" });
    expect(rowsIn(junk.db)).toBe(0);
    junk.db.close();
  });
});
