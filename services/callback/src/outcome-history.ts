import type { DatabaseSync, StatementSync } from "node:sqlite";
import { fromBinary } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import { idKey } from "@toolmesh/names";
import { streamNames } from "@toolmesh/nats";
import { type CallbackEvent, CallbackEventSchema } from "@toolmesh/proto";
import { openIndex } from "@toolmesh/service";
import {
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type StreamInfo,
} from "nats";

/** The broadcast stream: every final event, published with Nats-Msg-Id = call id. */
export const BROADCAST_STREAM = streamNames.callback;

/**
 * Bumped when the tables change; a file of another version is rebuilt from the stream. 1 kept
 * it under the meta key `version` (before libs/service's openIndex): such a file is rebuilt once.
 */
const SCHEMA_VERSION = 1;
const SCHEMA = `
CREATE TABLE IF NOT EXISTS outcomes (
  seq INTEGER PRIMARY KEY,
  call_key INTEGER NOT NULL,
  time_ms INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS outcomes_call ON outcomes (call_key);
`;
const MAX_ROWS_PER_TRANSACTION = 5000;
const FLUSH_DELAY_MS = 100;
const PRUNE_EVERY_MS = 60_000;

/** What a lookup found: the call's broadcast event, nothing, or nothing yet (still catching up). */
export type HistoryLookup =
  | { found: true; event: CallbackEvent }
  | { found: false; loading: false }
  | { found: false; loading: true; indexed: number; target: number };

/**
 * Finished calls by call id, after their key has left the callback bucket. A finished call's key
 * lives only TOOLMESH_CALLBACK_LIVE_SECONDS (nats-server holds every live key in memory, so keys
 * kept for days made its memory grow with history); its event stays in the broadcast stream. This
 * index maps call ids to broadcast stream sequences, in one SQLite file per replica, read from the
 * stream headers only (the call id is the message id): rows of 3 integers, the event itself is
 * fetched from the stream when asked for. It is continued from its checkpoint at start, not
 * rebuilt, and rows leave it with the stream's messages or after the configured TTL.
 */
export class OutcomeHistory {
  private messages: ConsumerMessages | undefined;
  private pending: { key: number; seq: number; timeMs: number }[] = [];
  private flushTimer: NodeJS.Timeout | undefined;
  private pruneTimer: NodeJS.Timeout | undefined;
  private indexedSeq = 0;
  /** The last sequence read, indexed at the next flush. */
  private readSeq = 0;
  private stopped = false;
  private readonly insert: StatementSync;
  private readonly byKey: StatementSync;
  private readonly saveSeq: StatementSync;

  private constructor(
    private readonly db: DatabaseSync,
    private readonly deps: OutcomeHistoryDeps,
    /** The stream's last sequence at start: lookups below it may not be indexed yet. */
    private readonly targetSeq: number,
  ) {
    this.insert = db.prepare(
      "INSERT OR IGNORE INTO outcomes (seq, call_key, time_ms) VALUES (?, ?, ?)",
    );
    this.byKey = db.prepare("SELECT seq, time_ms FROM outcomes WHERE call_key = ? ORDER BY seq");
    this.saveSeq = db.prepare("INSERT OR REPLACE INTO meta (key, value) VALUES ('last_seq', ?)");
  }

  /** Opens the file (rebuilding it when it cannot be continued) and starts following the stream. */
  static async open(deps: OutcomeHistoryDeps): Promise<OutcomeHistory> {
    const info = await deps.jsm.streams.info(BROADCAST_STREAM);
    const { db } = await openIndex({
      file: deps.file,
      version: SCHEMA_VERSION,
      schema: SCHEMA,
      name: "outcome history",
      log: deps.log,
    });
    const meta = (key: string) =>
      (db.prepare("SELECT value FROM meta WHERE key = ?").get(key) as { value: string } | undefined)
        ?.value ?? "";
    const lastSeq = Number(meta("last_seq")) || 0;
    const reason =
      meta("stream_created") !== info.created
        ? meta("stream_created") === ""
          ? "missing"
          : "another stream"
        : lastSeq > info.state.last_seq
          ? "ahead of the stream"
          : undefined;
    if (reason) {
      db.exec(
        "DELETE FROM outcomes; DELETE FROM meta WHERE key IN ('stream_created', 'last_seq');",
      );
      db.prepare("INSERT INTO meta (key, value) VALUES ('stream_created', ?)").run(info.created);
    }
    const history = new OutcomeHistory(db, deps, info.state.last_seq);
    const from = Math.max(reason ? 0 : lastSeq + 1, info.state.first_seq, 1);
    history.indexedSeq = from - 1;
    history.readSeq = from - 1;
    history.prune(info);
    await history.follow(from);
    deps.log.info(
      { file: deps.file, from_seq: from, target_seq: info.state.last_seq, rebuilt: reason ?? "" },
      "outcome history open",
    );
    history.pruneTimer = setInterval(() => void history.pruneNow(), PRUNE_EVERY_MS);
    history.pruneTimer.unref();
    return history;
  }

  /** The last broadcast stream sequence indexed, and the one it must reach to be complete. */
  get progress(): { indexed: number; target: number } {
    return { indexed: this.indexedSeq, target: this.targetSeq };
  }

  /**
   * The call's broadcast event, if the stream still holds it and it is younger than the TTL. Keys
   * may collide, so each candidate's message id is compared with the call id.
   */
  async find(callId: string): Promise<HistoryLookup> {
    const rows = this.byKey.all(idKey(callId)) as { seq: number; time_ms: number }[];
    const oldest = Date.now() - this.deps.ttlMs;
    for (const row of rows) {
      if (row.time_ms < oldest) continue;
      const msg = await this.deps.jsm.streams
        .getMessage(BROADCAST_STREAM, { seq: row.seq })
        .catch(() => undefined);
      if (msg?.header.get("Nats-Msg-Id") !== callId) continue;
      return { found: true, event: fromBinary(CallbackEventSchema, msg.data) };
    }
    if (this.indexedSeq < this.targetSeq) return { found: false, loading: true, ...this.progress };
    return { found: false, loading: false };
  }

  private async follow(fromSeq: number): Promise<void> {
    const consumer = await this.deps.js.consumers.get(BROADCAST_STREAM, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: fromSeq,
      // The call id is the message id and the time is the message's: the payload is not needed.
      headers_only: true,
    });
    const messages = await consumer.consume({ max_messages: 2000 });
    this.messages = messages;
    void (async () => {
      try {
        for await (const msg of messages) this.take(msg);
      } catch (error) {
        if (!this.stopped)
          this.deps.log.error({ err: error }, "stopped following the outcome history; restart");
      }
    })();
  }

  private take(msg: JsMsg): void {
    const callId = msg.headers?.get("Nats-Msg-Id") ?? "";
    if (callId !== "") {
      const timeMs = Math.floor(msg.info.timestampNanos / 1e6);
      this.pending.push({ key: idKey(callId), seq: msg.seq, timeMs });
    }
    this.readSeq = msg.seq;
    if (this.pending.length >= MAX_ROWS_PER_TRANSACTION) this.flush();
    else this.flushTimer ??= setTimeout(() => this.flush(), FLUSH_DELAY_MS);
  }

  /** Writes what was read in one transaction with the checkpoint. */
  private flush(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const seq = this.readSeq;
    if (seq <= this.indexedSeq) return;
    const rows = this.pending;
    this.pending = [];
    try {
      this.db.exec("BEGIN");
      for (const row of rows) this.insert.run(row.seq, row.key, row.timeMs);
      this.saveSeq.run(String(seq));
      this.db.exec("COMMIT");
    } catch (error) {
      if (this.db.isTransaction) this.db.exec("ROLLBACK");
      // The checkpoint did not move, so a restart reads these again; stopping keeps the index
      // from skipping them.
      this.deps.log.error(
        { err: error, seq },
        "cannot write the outcome history; restart to retry",
      );
      void this.messages?.close();
      return;
    }
    this.indexedSeq = seq;
  }

  private async pruneNow(): Promise<void> {
    try {
      this.prune(await this.deps.jsm.streams.info(BROADCAST_STREAM));
    } catch (error) {
      this.deps.log.warn({ err: error }, "could not prune the outcome history; trying again later");
    }
  }

  /** Drops rows whose message the stream no longer holds, and rows older than the TTL. */
  private prune(info: StreamInfo): void {
    const cutoff = Date.now() - this.deps.ttlMs;
    // Rows are in stream order, which is time order: the first young row bounds the old ones.
    const young = this.db
      .prepare("SELECT seq FROM outcomes WHERE time_ms >= ? ORDER BY seq LIMIT 1")
      .get(cutoff) as { seq: number } | undefined;
    const below = Math.max(info.state.first_seq, young?.seq ?? this.indexedSeq + 1);
    this.db.prepare("DELETE FROM outcomes WHERE seq < ?").run(below);
  }

  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    clearInterval(this.pruneTimer);
    await this.messages?.close();
    this.flush();
    this.db.close();
  }
}

export interface OutcomeHistoryDeps {
  js: JetStreamClient;
  jsm: JetStreamManager;
  log: Logger;
  /** The SQLite file; default `<data dir>/callback/outcomes.sqlite`. */
  file: string;
  /** How long a finished call's outcome can be read (TOOLMESH_CALLBACK_TTL_DAYS). */
  ttlMs: number;
}
