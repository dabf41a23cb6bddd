import { stat } from "node:fs/promises";
import type { ArchiveReader } from "@toolmesh/archive";
import type { Logger } from "@toolmesh/log";
import type { JetStreamManager } from "nats";
import { AUDIT_LOG_STREAM } from "./audit-log.js";
import { type ChainEnds, readChainEnds } from "./log-ends.js";

/**
 * How much history is kept where: gauges a metrics endpoint can export as they are (logged at
 * start). The hot log holds the newest blocks; the archive everything older, back to its age limit.
 */
export interface AuditLogUsage {
  /** Bytes the log stream holds, and its byte limit (0 for none). */
  bytes: number;
  maxBytes: number;
  /** bytes / maxBytes (0 without a limit). */
  usedRatio: number;
  /** Records the log stream holds, and the chain sequences of its oldest and newest. */
  records: number;
  firstSeq: number;
  lastSeq: number;
  /** Log stream messages (blocks of records) kept. */
  messages: number;
  /** When the oldest block the log stream keeps was stored (ISO), "" when it is empty. */
  oldestStored: string;
  /** Sealed segments in the archive, their bytes on disk, and the stream sequences they cover. */
  segments: number;
  archiveBytes: number;
  archiveFirstStreamSeq: number;
  archiveLastStreamSeq: number;
  /** The oldest stream sequence readable, from the archive or the log; index rows below go. */
  readableFromSeq: number;
}

/**
 * Watches where the log's history is: reads the log stream's and the archive's usage, and removes
 * the index rows of blocks neither holds any more (segments deleted by the archive's age limit;
 * the log drops only blocks the archive holds).
 */
export class RetentionWatch {
  private usage: AuditLogUsage | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      jsm: JetStreamManager;
      log: Logger;
      archive: ArchiveReader;
      /** The oldest stream sequence readable (archive or log). */
      floor: () => Promise<number>;
      /** Removes index rows below a stream sequence, a bounded number per call; returns how many. */
      pruneBelow: (seq: number) => number;
      intervalMs: number;
    },
  ) {}

  /** The latest gauges; undefined before the first check. */
  get status(): AuditLogUsage | undefined {
    return this.usage;
  }

  /** Checks now and then every intervalMs. */
  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => void this.check(), this.deps.intervalMs);
    this.timer.unref();
  }

  /** One check; overlapping calls share it. */
  check(): Promise<void> {
    this.checking ??= this.run().finally(() => {
      this.checking = undefined;
    });
    return this.checking;
  }

  private async run(): Promise<void> {
    const { jsm, log, archive } = this.deps;
    let info: Awaited<ReturnType<JetStreamManager["streams"]["info"]>>;
    let ends: ChainEnds;
    let floor: number;
    let segments: Awaited<ReturnType<ArchiveReader["list"]>>;
    try {
      info = await jsm.streams.info(AUDIT_LOG_STREAM);
      ends = await readChainEnds(jsm, info.state);
      segments = await archive.list(true);
      floor = await this.deps.floor();
    } catch (error) {
      log.warn({ err: error }, "cannot read the audit log's usage; retrying at the next check");
      return;
    }
    const sizes = await Promise.all(
      segments.map((s) =>
        stat(s.file).then(
          (st) => st.size,
          () => 0,
        ),
      ),
    );
    const { state, config } = info;
    const maxBytes = Math.max(config.max_bytes, 0);
    this.usage = {
      bytes: state.bytes,
      maxBytes,
      usedRatio: maxBytes > 0 ? state.bytes / maxBytes : 0,
      records: ends.records,
      firstSeq: Number(ends.first?.sequence ?? 0n),
      lastSeq: Number(ends.last?.sequence ?? 0n),
      messages: state.messages,
      oldestStored: state.messages > 0 ? state.first_ts : "",
      segments: segments.length,
      archiveBytes: sizes.reduce((n, size) => n + size, 0),
      archiveFirstStreamSeq: segments[0]?.firstStreamSeq ?? 0,
      archiveLastStreamSeq: segments.at(-1)?.lastStreamSeq ?? 0,
      readableFromSeq: floor,
    };
    await this.prune(floor);
  }

  /** Removes rows of blocks no longer kept, a chunk at a time so queries interleave. */
  private async prune(floor: number): Promise<void> {
    while (this.deps.pruneBelow(floor) > 0) {
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
