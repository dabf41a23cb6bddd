import { mkdir, rename, rm } from "node:fs/promises";
import path from "node:path";
import {
  type ArchivedBlock,
  type FrameEntry,
  listSegments,
  natsHeaderBytes,
  removeUnsealed,
  type SegmentFile,
  type SegmentFooter,
  SegmentReader,
  SegmentWriter,
  syncDirectory,
} from "@toolmesh/archive";
import type { Logger } from "@toolmesh/log";
import { pullOptions, TYPE_HEADER } from "@toolmesh/nats";
import {
  type ConsumerMessages,
  DeliverPolicy,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from "nats";
import { AUDIT_LOG_STREAM, logFirstSeq, logReadBatch } from "./audit-log.js";

/** What the Archiver needs and how it seals. */
export interface ArchiverOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  log: Logger;
  dir: string;
  /** A segment is sealed once its blocks took this much in the log... */
  segmentBytes: number;
  /** ... or once its oldest block is this old. */
  segmentMaxAgeMs: number;
  /** Segments whose newest block is older than this are deleted (0: never). */
  maxAgeMs: number;
  /** Told of each segment sealed. */
  onSealed?: (footer: SegmentFooter) => void;
  /** Told of segments deleted for their age, with the last stream sequence deleted. */
  onDeleted?: (throughSeq: number) => void;
}

/** How long after a failure (a full disk, an unreadable log) archiving starts again. */
const RETRY_MS = 5000;

/**
 * Copies the audit log into sealed segments, under the chain writer's lease: from the block after
 * the last sealed segment (found in the archive directory at start) it follows the log and seals
 * a segment when the blocks since the last one took `segmentBytes` in the log, when the oldest is
 * `segmentMaxAgeMs` old, or at once when the log needs room (sealNow). It keeps the frames of
 * sealed segments that may still be in the log: what the log may drop (log-room.ts).
 */
export class Archiver {
  /** The last stream sequence in a sealed segment; 0 before the first. */
  archivedSeq = 0;
  /** What keeps archiving from going on now, for an operator; undefined while it works. */
  lastError: string | undefined;
  /** Frames of sealed segments, in log order, from the log's first sequence on. */
  readonly frames: FrameEntry[] = [];
  private writer: SegmentWriter | undefined;
  private next = 0;
  private messages: ConsumerMessages | undefined;
  private serial: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private stopped = false;
  private streamCreated = "";
  private lastExpiryCheck = 0;
  /** True once start found where the archive ends: a retry then only follows the log again. */
  private begun = false;

  constructor(private readonly options: ArchiverOptions) {}

  /** Blocks read from the log and not yet in a sealed segment: what they took in the log. */
  get unsealedBytes(): number {
    return this.writer?.stored ?? 0;
  }

  /**
   * Finds where the archive ends and starts following the log from there. A directory it cannot
   * use is not fatal: it says why (lastError, which the log's hold names) and tries again.
   */
  async start(): Promise<void> {
    this.timer = setInterval(() => void this.tick(), Math.min(1000, this.options.segmentMaxAgeMs));
    this.timer.unref();
    await this.begin().catch((error: unknown) => this.fail(error, "cannot start archiving"));
  }

  private async begin(): Promise<void> {
    const { dir, log } = this.options;
    this.frames.length = 0;
    await mkdir(dir, { recursive: true });
    const removed = await removeUnsealed(dir);
    if (removed.length > 0)
      log.warn(
        { files: removed, dir },
        "removed segments a crash cut short before they were sealed",
      );
    const { created, state } = await this.options.jsm.streams.info(AUDIT_LOG_STREAM);
    this.streamCreated = created;
    let segments = await listSegments(dir);
    const last = segments.at(-1);
    if (last && (await footerOf(last)).streamCreated !== created) {
      await this.moveAside(segments);
      segments = [];
    }
    this.archivedSeq = segments.at(-1)?.lastStreamSeq ?? 0;
    const logFirst = logFirstSeq(state);
    for (const segment of segments) {
      if (segment.lastStreamSeq >= logFirst) this.frames.push(...(await footerOf(segment)).frames);
    }
    if (this.archivedSeq > 0 && this.archivedSeq + 1 < logFirst) {
      log.error(
        { archived_seq: this.archivedSeq, log_first_seq: logFirst, dir },
        `audit log blocks ${this.archivedSeq + 1} to ${logFirst - 1} left the log before they were archived; the archive goes on from ${logFirst}`,
      );
    }
    await this.follow(Math.max(this.archivedSeq + 1, logFirst, 1));
    this.begun = true;
  }

  /** Segments of another log stream (one deleted and made again) go to a folder of their own. */
  private async moveAside(segments: SegmentFile[]): Promise<void> {
    const { dir, log } = this.options;
    const footer = await footerOf(segments.at(-1) as SegmentFile);
    const aside = path.join(dir, `stream-${footer.streamCreated.replace(/[^0-9A-Za-z]/g, "")}`);
    await mkdir(aside, { recursive: true });
    for (const segment of segments) await rename(segment.file, path.join(aside, segment.name));
    await syncDirectory(dir);
    log.warn(
      { dir: aside, segments: segments.length, stream_created: footer.streamCreated },
      "the archive held segments of another audit log stream; they were moved aside and verify on their own",
    );
  }

  private async follow(fromSeq: number): Promise<void> {
    const { js, jsm, log } = this.options;
    this.next = fromSeq;
    const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
    const consumer = await js.consumers.get(AUDIT_LOG_STREAM, {
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: fromSeq,
    });
    const messages = await consumer.consume(
      pullOptions({ max_messages: logReadBatch(state, 1000) }),
    );
    this.messages = messages;
    void (async () => {
      try {
        for await (const msg of messages) await this.run(() => this.add(msg));
      } catch (error) {
        this.fail(error, "archiving stopped");
      }
    })();
    log.info(
      { from_seq: fromSeq, archived_seq: this.archivedSeq },
      "audit archive following the log",
    );
  }

  /** Runs archive work one piece at a time: adding, sealing and deleting never interleave. */
  private run<T>(work: () => Promise<T>): Promise<T> {
    const done = this.serial.then(work);
    this.serial = done.catch(() => {});
    return done;
  }

  private async add(msg: JsMsg): Promise<void> {
    if (this.stopped) return;
    if (msg.seq > this.next) {
      // The log dropped blocks the archive had not read: a segment must not span the gap.
      await this.seal();
      this.options.log.error(
        { from_seq: this.next, to_seq: msg.seq - 1 },
        `audit log blocks ${this.next} to ${msg.seq - 1} left the log before they were archived`,
      );
    }
    if (msg.seq < this.next) return;
    this.writer ??= await SegmentWriter.open(this.options.dir, {
      stream: AUDIT_LOG_STREAM,
      streamCreated: this.streamCreated,
    });
    await this.writer.add(archivedBlock(msg));
    this.next = msg.seq + 1;
    this.lastError = undefined;
    if (this.writer.stored >= this.options.segmentBytes) await this.seal();
  }

  private async seal(): Promise<void> {
    const writer = this.writer;
    if (!writer || writer.blocks === 0) return;
    this.writer = undefined;
    const started = performance.now();
    const { file, footer } = await writer.seal();
    this.archivedSeq = footer.lastStreamSeq;
    this.frames.push(...footer.frames);
    this.options.log.info(
      {
        segment: path.basename(file),
        blocks: footer.blocks,
        records: footer.records,
        stored_bytes: footer.storedBytes,
        file_bytes: footer.frames.reduce((n, f) => n + f.length, 0),
        ms: Math.round(performance.now() - started),
      },
      "audit log segment sealed",
    );
    this.options.onSealed?.(footer);
  }

  /** Seals what has been read so far, so the log may drop it (the log needs room). */
  sealNow(): Promise<void> {
    return this.run(() => this.seal()).catch((error) => this.fail(error, "cannot seal a segment"));
  }

  /** Drops the frames of blocks the log no longer holds: they are not the log's to drop. */
  forgetBelow(logFirstSeq: number): void {
    let n = 0;
    while (n < this.frames.length && (this.frames[n] as FrameEntry).lastStreamSeq < logFirstSeq)
      n++;
    if (n > 0) this.frames.splice(0, n);
  }

  private async tick(): Promise<void> {
    const first = this.writer?.firstTimeMs;
    if (first !== undefined && Date.now() - first >= this.options.segmentMaxAgeMs)
      await this.sealNow();
    // Every minute, or more often for an age limit of minutes.
    const everyMs = Math.min(60_000, Math.max(1000, this.options.maxAgeMs / 4));
    if (this.options.maxAgeMs > 0 && Date.now() - this.lastExpiryCheck >= everyMs) {
      this.lastExpiryCheck = Date.now();
      await this.run(() => this.deleteExpired()).catch((error) =>
        this.options.log.warn({ err: error }, "cannot delete expired archive segments; will retry"),
      );
    }
  }

  /**
   * Deletes the oldest segments whose newest block is older than the archive's age limit, once
   * the log no longer holds their blocks (the log keeps its newest blocks whatever their age).
   */
  async deleteExpired(): Promise<number> {
    const { dir, jsm, log, maxAgeMs } = this.options;
    if (maxAgeMs <= 0) return 0;
    const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
    const logFirst = logFirstSeq(state);
    const deleted: SegmentFile[] = [];
    for (const segment of await listSegments(dir)) {
      if (segment.lastStreamSeq >= logFirst || segment.lastStreamSeq > this.archivedSeq) break;
      const footer = await footerOf(segment);
      if (Date.parse(footer.lastTime) + maxAgeMs > Date.now()) break;
      await rm(segment.file, { force: true });
      deleted.push(segment);
    }
    const through = deleted.at(-1)?.lastStreamSeq;
    if (through === undefined) return 0;
    await syncDirectory(dir);
    log.info(
      { segments: deleted.map((s) => s.name), through_seq: through },
      "archive segments past TOOLMESH_AUDIT_ARCHIVE_MAX_AGE_DAYS deleted",
    );
    this.options.onDeleted?.(through);
    return deleted.length;
  }

  private fail(error: unknown, what: string): void {
    if (this.stopped) return;
    this.lastError = `${what}: ${(error as Error).message ?? String(error)}`;
    this.options.log.error({ err: error, dir: this.options.dir }, `${what}; retrying in 5 s`);
    void this.messages?.close();
    const writer = this.writer;
    this.writer = undefined;
    void writer?.discard();
    clearTimeout(this.retry);
    this.retry = setTimeout(() => {
      const again = this.begun ? this.follow(this.archivedSeq + 1) : this.begin();
      again.catch((e: unknown) => this.fail(e, "cannot archive the log"));
    }, RETRY_MS);
  }

  /** Stops following; the blocks read since the last segment are read again at the next start. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    clearTimeout(this.retry);
    await this.messages?.close();
    await this.serial;
    await this.writer?.discard();
    this.writer = undefined;
  }
}

/** The block a log message is, as a segment keeps it. */
export function archivedBlock(msg: JsMsg): ArchivedBlock {
  return {
    seq: msg.seq,
    timeNanos: BigInt(Math.round(msg.info.timestampNanos)),
    subject: msg.subject,
    type: msg.headers?.get(TYPE_HEADER) ?? "",
    msgId: msg.headers?.get("Nats-Msg-Id") ?? "",
    headerBytes: natsHeaderBytes(msg.headers),
    data: msg.data,
  };
}

async function footerOf(segment: SegmentFile): Promise<SegmentFooter> {
  const reader = await SegmentReader.open(segment.file);
  try {
    return reader.footer;
  } finally {
    await reader.close();
  }
}
