import type { Logger } from "@toolmesh/log";
import type { JetStreamManager } from "nats";
import { AUDIT_LOG_STREAM } from "./audit-log.js";
import { type ChainEnds, readChainEnds } from "./log-ends.js";

/**
 * How full the audit log is: gauges a metrics endpoint can export as they are (logged meanwhile
 * with every warning).
 */
export interface AuditLogUsage {
  /** Bytes the log stream holds. */
  bytes: number;
  /** Its byte limit; 0 for none. */
  maxBytes: number;
  /** bytes / maxBytes (0 without a limit). */
  usedRatio: number;
  /** The ratio at which the operator is warned. */
  warnRatio: number;
  /** True from warnRatio on: raise the limit or archive before records are dropped. */
  nearByteLimit: boolean;
  /** Records kept. */
  records: number;
  /** The chain sequence of the oldest kept record; 0 when the log is empty. */
  firstSeq: number;
  /** The chain sequence of the newest record; 0 when the log is empty. */
  lastSeq: number;
  /** Log stream messages (blocks of records) kept. */
  messages: number;
  /** When the oldest kept record was stored (ISO), "" when the log is empty. */
  oldestStored: string;
  /** Records dropped because the byte limit was reached, since this process started. */
  droppedByBytes: number;
}

/** How often a warning is repeated while the log stays near its byte limit. */
const WARN_REPEAT_MS = 60 * 60 * 1000;
/** A stream this full has reached its byte limit: what it dropped was dropped for bytes. */
const AT_LIMIT = 0.9;
const NANOS_PER_MS = 1_000_000;

/**
 * Watches the log stream's retention: warns when it nears its byte limit (long before the limit
 * drops records), reports records dropped for bytes as errors, and removes rows of dropped
 * records from the index.
 */
export class RetentionWatch {
  private usage: AuditLogUsage | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastWarnAt = 0;
  private droppedByBytes = 0;
  private checking: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      jsm: JetStreamManager;
      log: Logger;
      /** Removes index rows below a sequence, a bounded number per call; returns how many. */
      pruneBelow: (seq: number) => number;
      maxBytes: number;
      warnPercent: number;
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
    const { jsm, log, maxBytes, warnPercent } = this.deps;
    let info: Awaited<ReturnType<JetStreamManager["streams"]["info"]>>;
    let ends: ChainEnds;
    try {
      info = await jsm.streams.info(AUDIT_LOG_STREAM);
      ends = await readChainEnds(jsm, info.state);
    } catch (error) {
      log.warn({ err: error }, "cannot read the audit log's usage; retrying at the next check");
      return;
    }
    const { state } = info;
    const previous = this.usage;
    const usedRatio = maxBytes > 0 ? state.bytes / maxBytes : 0;
    const warnRatio = warnPercent / 100;
    const firstSeq = Number(ends.first?.sequence ?? 0n);
    if (
      previous &&
      previous.firstSeq > 0 &&
      firstSeq > previous.firstSeq &&
      droppedForBytes(previous, usedRatio, info.config.max_age / NANOS_PER_MS)
    ) {
      const dropped = firstSeq - previous.firstSeq;
      this.droppedByBytes += dropped;
      log.error(
        {
          dropped,
          dropped_by_bytes: this.droppedByBytes,
          first_sequence: firstSeq,
          bytes: state.bytes,
          max_bytes: maxBytes,
        },
        "audit records dropped: the audit log reached TOOLMESH_AUDIT_MAX_BYTES; the chain now verifies from the oldest kept record",
      );
    }
    this.usage = {
      bytes: state.bytes,
      maxBytes,
      usedRatio,
      warnRatio,
      nearByteLimit: maxBytes > 0 && usedRatio >= warnRatio,
      records: ends.records,
      firstSeq,
      lastSeq: Number(ends.last?.sequence ?? 0n),
      messages: state.messages,
      oldestStored: state.messages > 0 ? state.first_ts : "",
      droppedByBytes: this.droppedByBytes,
    };
    const now = Date.now();
    if (
      this.usage.nearByteLimit &&
      (!previous?.nearByteLimit || now - this.lastWarnAt >= WARN_REPEAT_MS)
    ) {
      this.lastWarnAt = now;
      log.warn(
        { ...this.usage, percent: Math.round(usedRatio * 100) },
        `the audit log is at ${Math.round(usedRatio * 100)}% of TOOLMESH_AUDIT_MAX_BYTES; at 100% its oldest records are dropped: raise the limit or archive the log`,
      );
    }
    await this.prune(state.first_seq);
  }

  /** Removes rows of records the stream dropped, a chunk at a time so queries interleave. */
  private async prune(firstSeq: number): Promise<void> {
    while (this.deps.pruneBelow(firstSeq) > 0) {
      await new Promise((resolve) => setImmediate(resolve));
    }
  }

  stop(): void {
    clearInterval(this.timer);
  }
}

/**
 * Whether the records dropped since the `previous` check went for bytes rather than age: the
 * stream is at its byte limit, or it has no age limit, or the oldest record then kept was not old
 * enough to expire. The last holds when one block appended freed more than a tenth of the limit.
 */
function droppedForBytes(previous: AuditLogUsage, usedRatio: number, maxAgeMs: number): boolean {
  if (usedRatio >= AT_LIMIT || maxAgeMs <= 0) return true;
  return Date.parse(previous.oldestStored) + maxAgeMs > Date.now();
}
