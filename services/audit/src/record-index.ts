import type { DatabaseSync, SQLInputValue, SQLOutputValue, StatementSync } from "node:sqlite";
import type { Logger } from "@toolmesh/log";
import { idKey, traceKey } from "@toolmesh/names";
import { AuditAction } from "@toolmesh/proto";
import { recordKey } from "@toolmesh/records";
import { type IndexRebuild, openIndex } from "@toolmesh/service";
import type { IndexRow } from "./record-mapping.js";

/** The store-once key of a call's end record, whose presence means the call is not open. */
const endKey = (callId: string) => recordKey({ id: "", callId, action: AuditAction.TOOL_CALL });
const startKey = (callId: string) => recordKey({ id: "", callId, action: AuditAction.TOOL_START });

/** What QueryRecords filters on; empty fields (and status 0) match everything. */
export type RecordFilter = Pick<
  IndexRow,
  "agentId" | "userId" | "tool" | "status" | "traceId" | "callId"
> & {
  /** Inclusive, ms since epoch; undefined for no bound. */
  startMs: number | undefined;
  /** Exclusive. */
  endMs: number | undefined;
};

/** How far the index has read the log stream, and which stream it read. */
export interface Checkpoint {
  /** The log stream's `created` time: another stream under the same name is another log. */
  streamCreated: string;
  /** The last log stream sequence (message) indexed; 0 before the first. */
  lastSeq: number;
  /** The chain hash of that message's last record, compared with the stream at start. */
  lastHash: string;
}

/**
 * Bumped when the tables change; an index of another version is rebuilt. 2: rows keyed by the
 * record's chain sequence, with the stream sequence of its block (1 keyed them by the stream
 * sequence, when each log message held one record). 3: trace ids keyed by their first 13 hex
 * digits (traceIndexKey), not a hash. 4: the open calls (a start record without its end), for
 * the sweeper; a call's records keyed by their store-once key (libs/records recordKey). 5: no
 * copy of each record (half the index's bytes): a row says where its record is (block and place),
 * and queries read it from the log. 6: whether a row holds its call's start (a start record, or
 * a call's start and end chained as one record), so a start delivered again is known as stored.
 * 7: a call's own record id kept without its call id (storedId), 36 bytes less a row.
 */
const SCHEMA_VERSION = 7;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS records (
  seq INTEGER PRIMARY KEY,
  block_seq INTEGER NOT NULL,
  time_ms INTEGER NOT NULL,
  agent_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  tool TEXT NOT NULL,
  status INTEGER NOT NULL,
  trace_id TEXT NOT NULL,
  call_id TEXT NOT NULL,
  record_id TEXT NOT NULL,
  trace_key INTEGER NOT NULL,
  call_key INTEGER NOT NULL,
  pos INTEGER NOT NULL,
  starts INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS records_agent_tool ON records (agent_id, tool, seq, time_ms);
CREATE INDEX IF NOT EXISTS records_tool ON records (tool, seq, time_ms);
CREATE INDEX IF NOT EXISTS records_user ON records (user_id, seq);
CREATE INDEX IF NOT EXISTS records_trace ON records (trace_key);
CREATE INDEX IF NOT EXISTS records_call ON records (call_key);
CREATE INDEX IF NOT EXISTS records_time ON records (time_ms);
CREATE INDEX IF NOT EXISTS records_block ON records (block_seq);
CREATE TABLE IF NOT EXISTS open_calls (
  call_id TEXT PRIMARY KEY,
  instance TEXT NOT NULL,
  deadline_ms INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS open_calls_deadline ON open_calls (deadline_ms);
`;

/**
 * A trace id's key: its first 52 bits (libs/names traceKey), so the Dispatcher's trace ids, which
 * begin with their time, arrive in order; anything else is hashed like any id.
 */
/**
 * The record id as a row keeps it: a call's own record is keyed `<call id>/<action>`, and the row
 * has the call id already, so only `/<action>` is kept.
 */
function storedId(recordId: string, callId: string): string {
  return callId !== "" && recordId.startsWith(`${callId}/`)
    ? recordId.slice(callId.length)
    : recordId;
}

export function traceIndexKey(traceId: string): number {
  return traceKey(traceId) ?? idKey(traceId);
}

/**
 * The Audit query index: one SQLite file of rows derived from the log stream, plus a checkpoint
 * written in the same transaction as the rows it covers, so a restart continues from it. The
 * stream stays the source of truth: a missing, unreadable or stale index is rebuilt from it.
 */
export class RecordIndex {
  private readonly queries = new Map<string, StatementSync>();
  private readonly insert: StatementSync;
  private readonly lastSeq: StatementSync;
  private readonly setMeta: StatementSync;
  private readonly hasId: StatementSync;
  private readonly blockAt: StatementSync;
  private readonly traceAll: StatementSync;
  private readonly callAll: StatementSync;
  private readonly opened: StatementSync;
  private readonly closedCall: StatementSync;
  private readonly openPast: StatementSync;
  private closed = false;

  private constructor(
    private readonly db: DatabaseSync,
    readonly file: string,
  ) {
    // A row read again (a re-read after a restart, two instances on one file) is the same row and
    // is ignored. A chain sequence that a later block holds again replaces the row: a chain
    // restarted after retention emptied the log reuses sequences whose rows are not pruned yet.
    this.insert = db.prepare(
      `INSERT INTO records (seq, block_seq, time_ms, agent_id, user_id, tool, status,
        trace_id, call_id, record_id, trace_key, call_key, pos, starts)
        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
        ON CONFLICT (seq) DO UPDATE SET block_seq = excluded.block_seq, time_ms = excluded.time_ms,
          agent_id = excluded.agent_id, user_id = excluded.user_id, tool = excluded.tool,
          status = excluded.status, trace_id = excluded.trace_id, call_id = excluded.call_id,
          record_id = excluded.record_id, trace_key = excluded.trace_key,
          call_key = excluded.call_key, pos = excluded.pos, starts = excluded.starts
        WHERE excluded.block_seq > records.block_seq`,
    );
    this.lastSeq = db.prepare("SELECT value FROM meta WHERE key = 'last_seq'");
    this.setMeta = db.prepare("UPDATE meta SET value = ? WHERE key = ?");
    this.hasId = db.prepare(
      `SELECT 1 FROM records WHERE call_key = ? AND call_id = ?
        AND (record_id = ? OR (starts = 1 AND ? = 1)) LIMIT 1`,
    );
    this.blockAt = db.prepare(
      "SELECT block_seq FROM records WHERE seq <= ? ORDER BY seq DESC LIMIT 1",
    );
    this.traceAll = db.prepare(
      "SELECT seq, block_seq, pos FROM records WHERE trace_key = ? AND trace_id = ? ORDER BY seq LIMIT ?",
    );
    this.callAll = db.prepare(
      "SELECT seq, block_seq, pos FROM records WHERE call_key = ? AND call_id = ? ORDER BY seq",
    );
    // A start whose end is already indexed (a batch sent again after its end) opens nothing.
    this.opened = db.prepare(
      `INSERT INTO open_calls (call_id, instance, deadline_ms)
        SELECT ?, ?, ? WHERE NOT EXISTS (
          SELECT 1 FROM records WHERE call_key = ? AND call_id = ? AND record_id = ?)
        ON CONFLICT (call_id) DO NOTHING`,
    );
    this.closedCall = db.prepare("DELETE FROM open_calls WHERE call_id = ?");
    this.openPast = db.prepare(
      "SELECT call_id, instance, deadline_ms FROM open_calls WHERE deadline_ms < ? ORDER BY deadline_ms LIMIT ?",
    );
  }

  /**
   * Opens (or creates) the index at `file`; a file that is not a usable index (not a database,
   * another schema version) is started afresh, and `rebuilt` says why.
   */
  static async open(
    file: string,
    log: Logger,
  ): Promise<{ index: RecordIndex; rebuilt: IndexRebuild | undefined }> {
    const { db, fresh, rebuilt } = await openIndex({
      file,
      version: SCHEMA_VERSION,
      schema: SCHEMA,
      // The random-key indexes dirty a page per insert wherever the key falls, so the WAL is
      // copied back only every 16,384 pages (64 MB), not SQLite's 1,000: a page written many
      // times in between is copied once. At 1,000,000 rows that took an insert from about 50 µs
      // to 35 µs (20 µs on an empty index); the cache size made no difference.
      pragmas: `PRAGMA busy_timeout = 10000; PRAGMA cache_size = -32000;
        PRAGMA temp_store = MEMORY; PRAGMA wal_autocheckpoint = 16384;`,
      name: "audit index",
      log,
    });
    if (fresh) initMeta(db, "");
    return { index: new RecordIndex(db, file), rebuilt };
  }

  /** Where reading the log stream continues from. */
  checkpoint(): Checkpoint {
    const rows = this.db.prepare("SELECT key, value FROM meta").all();
    const meta = new Map(rows.map((r) => [String(r.key), String(r.value)]));
    return {
      streamCreated: meta.get("stream_created") ?? "",
      lastSeq: Number(meta.get("last_seq") ?? 0),
      lastHash: meta.get("last_hash") ?? "",
    };
  }

  /** Empties the index for a rebuild from the stream named by `streamCreated`. */
  reset(streamCreated: string): void {
    this.db.exec("BEGIN IMMEDIATE");
    try {
      this.db.exec("DROP TABLE records");
      this.db.exec("DROP TABLE open_calls");
      this.db.exec(SCHEMA);
      initMeta(this.db, streamCreated);
      this.db.exec("COMMIT");
    } catch (error) {
      this.db.exec("ROLLBACK");
      throw error;
    }
  }

  /**
   * Adds rows (in stream order) and moves the checkpoint to `lastSeq` (the last message read,
   * with or without rows) and `lastHash` (its last record's) in one transaction.
   */
  add(rows: IndexRow[], lastSeq: number, lastHash: string): void {
    this.db.exec("BEGIN IMMEDIATE");
    try {
      for (const r of rows) {
        this.insert.run(
          r.seq,
          r.blockSeq,
          r.timeMs,
          r.agentId,
          r.userId,
          r.tool,
          r.status,
          r.traceId,
          r.callId,
          storedId(r.recordId, r.callId),
          traceIndexKey(r.traceId),
          idKey(r.callId || r.recordId),
          r.pos,
          r.starts ? 1 : 0,
        );
        if (r.opens) {
          const key = idKey(r.callId);
          this.opened.run(
            r.callId,
            r.opens.instance,
            r.opens.deadlineMs,
            key,
            r.callId,
            storedId(endKey(r.callId), r.callId),
          );
        } else if (r.closes) {
          this.closedCall.run(r.callId);
        }
      }
      // Two instances may share one file; the checkpoint only moves forward.
      if (Number(this.lastSeq.get()?.value ?? 0) < lastSeq) {
        this.setMeta.run(String(lastSeq), "last_seq");
        this.setMeta.run(lastHash, "last_hash");
      }
      this.db.exec("COMMIT");
    } catch (error) {
      this.db.exec("ROLLBACK");
      throw error;
    }
  }

  /**
   * Drops rows of the messages the stream no longer keeps (below its first stream sequence); at
   * most `limit` a call.
   */
  pruneBelow(firstSeq: number, limit = 10_000): number {
    const result = this.db
      .prepare(
        "DELETE FROM records WHERE seq IN (SELECT seq FROM records WHERE block_seq < ? ORDER BY block_seq LIMIT ?)",
      )
      .run(firstSeq, limit);
    return Number(result.changes);
  }

  /**
   * The stream sequence of the message holding the record at `sequence`, or of the nearest
   * indexed record before it; undefined when the index holds none at or before it.
   */
  blockAtOrBefore(sequence: bigint): number | undefined {
    const row = this.blockAt.get(sequence);
    return row ? Number(row.block_seq) : undefined;
  }

  /**
   * Runs `read` in one read transaction: each lookup outside one takes and drops the WAL's read
   * locks (a few fcntl calls on the file and its -shm) itself, and the recorder asks one per record.
   * Inside a transaction already (none is held across an await), it just runs.
   */
  readTogether<T>(read: () => T): T {
    if (this.db.isTransaction) return read();
    this.db.exec("BEGIN");
    try {
      return read();
    } finally {
      this.db.exec("COMMIT");
    }
  }

  /**
   * True when a record with this source id (of this call) is indexed — a call's start record also
   * when its start is stored in the one record of its start and end.
   */
  has(recordId: string, callId: string): boolean {
    const start = callId !== "" && recordId === startKey(callId) ? 1 : 0;
    const id = storedId(recordId, callId);
    return this.hasId.get(idKey(callId || recordId), callId, id, start) !== undefined;
  }

  /**
   * Stored records matching the filter, newest first, below `beforeSeq` (exclusive; 0 for the
   * newest); at most `limit`, and whether more remain.
   */
  query(
    filter: RecordFilter,
    beforeSeq: number,
    limit: number,
  ): { rows: RecordPlace[]; more: boolean } {
    const where: string[] = [];
    const params: SQLInputValue[] = [];
    const add = (clause: string, value: SQLInputValue) => {
      where.push(clause);
      params.push(value);
    };
    if (beforeSeq > 0) add("seq < ?", beforeSeq);
    if (filter.agentId) add("agent_id = ?", filter.agentId);
    if (filter.userId) add("user_id = ?", filter.userId);
    if (filter.tool) add("tool = ?", filter.tool);
    if (filter.status) add("status = ?", filter.status);
    if (filter.traceId) {
      add("trace_key = ?", traceIndexKey(filter.traceId));
      add("trace_id = ?", filter.traceId);
    }
    if (filter.callId) {
      add("call_key = ?", idKey(filter.callId));
      add("call_id = ?", filter.callId);
    }
    if (filter.startMs !== undefined) add("time_ms >= ?", filter.startMs);
    if (filter.endMs !== undefined) add("time_ms < ?", filter.endMs);
    const sql = `SELECT seq, block_seq, pos FROM records${where.length ? ` WHERE ${where.join(" AND ")}` : ""}
      ORDER BY seq DESC LIMIT ?`;
    let statement = this.queries.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.queries.set(sql, statement);
    }
    const found = statement.all(...params, limit + 1);
    return { rows: found.slice(0, limit).map(placeOf), more: found.length > limit };
  }

  /** Every stored record of a trace, in chain order, at most `limit`. */
  recordsOfTrace(traceId: string, limit: number): RecordPlace[] {
    return this.traceAll.all(traceIndexKey(traceId), traceId, limit).map(placeOf);
  }

  /** Every stored record of a call, in chain order. */
  recordsOfCall(callId: string): RecordPlace[] {
    return this.callAll.all(idKey(callId), callId).map(placeOf);
  }

  /** True when a call's end record (its TOOL_CALL) is indexed. */
  hasEnd(callId: string): boolean {
    return this.has(endKey(callId), callId);
  }

  /** Calls started and not ended whose deadline is before `beforeMs`, oldest deadline first. */
  openCallsPast(
    beforeMs: number,
    limit: number,
  ): { callId: string; instance: string; deadlineMs: number }[] {
    return this.openPast.all(beforeMs, limit).map((r) => ({
      callId: String(r.call_id),
      instance: String(r.instance),
      deadlineMs: Number(r.deadline_ms),
    }));
  }

  /** Rows indexed (a count over the table; for logs and tests, not the hot path). */
  count(): number {
    return Number(this.db.prepare("SELECT count(*) AS n FROM records").get()?.n ?? 0);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.db.close();
  }
}

/** Where a record is: its chain sequence, the block (stream sequence) and its place in it. */
export interface RecordPlace {
  seq: number;
  blockSeq: number;
  pos: number;
}

function placeOf(row: Record<string, SQLOutputValue>): RecordPlace {
  return { seq: Number(row.seq), blockSeq: Number(row.block_seq), pos: Number(row.pos) };
}

function initMeta(db: DatabaseSync, streamCreated: string): void {
  const put = db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)");
  put.run("stream_created", streamCreated);
  put.run("last_seq", "0");
  put.run("last_hash", "");
}
