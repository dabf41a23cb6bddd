import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { FrameEntry } from "@toolmesh/archive";
import type { Logger } from "@toolmesh/log";
import { type AuditLogHold, AuditLogHolder, AuditLogHoldSchema } from "@toolmesh/proto";
import {
  AckPolicy,
  type ConsumerInfo,
  type JetStreamManager,
  type NatsConnection,
  type Subscription,
} from "nats";
import type { Archiver } from "./archiver.js";
import { AUDIT_LOG_STREAM, logFirstSeq } from "./audit-log.js";

/** What keeps the oldest block the log may not drop. */
export interface LogKeeper {
  /** The stream sequence of the oldest block that must stay. */
  seq: number;
  holder: "archive" | "consumer";
  /** The durable consumer, when one keeps it. */
  consumer?: string;
}

/** Raised to a wait for room when the chain writer stops (its lease lost, or shutdown). */
export class LogRoomClosedError extends Error {
  override name = "LogRoomClosedError";
  constructor() {
    super("the chain writer stopped while waiting for room in the audit log");
  }
}

/** nats-server's advisory that a consumer of the log was made. */
const CONSUMER_CREATED = `$JS.EVENT.ADVISORY.CONSUMER.CREATED.${AUDIT_LOG_STREAM}.>`;
/** How often the log's usage and consumers are read while appends wait. */
const WAIT_POLL_MS = 250;
/** How often a waiting append keeps its source messages from being redelivered. */
const KEEP_ALIVE_MS = 2000;
/** How often a hold is written again while it lasts (the bucket's keys expire). */
const REPUBLISH_MS = 60_000;

/**
 * Keeps the audit log from dropping what is not safe yet. The log stream drops its oldest blocks
 * at its byte limit (discard old); nats-server drops the front messages until the new one fits.
 * So an append of `s` bytes is safe when the log's bytes + s stay within the limit, or when the
 * blocks that would go first — all below the oldest block that must stay (not yet archived, or
 * not yet acknowledged by a durable consumer of the log) — add up to what must go. Their sizes
 * are known exactly from the archive's frames (what each took in the log, by nats-server's
 * accounting), and counted only for frames wholly in the log and below that block, so the sum
 * never overstates what may go. The log's bytes are the last reading plus every byte sent since
 * (or in flight at) that reading: never understated either.
 *
 * The chain writer asks whenRoom before each flight; while there is no room it waits, the
 * archive seals at once when it is what holds the log, and what holds it is logged and written
 * to the bucket `toolmesh-audit` (key `log.hold`), where the Dispatcher can name it.
 */
export class LogRoom {
  private bytes = 0;
  private firstSeq = 1;
  private lastSeq = 0;
  private maxBytes = 0;
  private floors: { consumer: string; seq: number }[] = [];
  private sentTotal = 0;
  private landedTotal = 0;
  private landedAtReading = 0;
  private held: { keeper: LogKeeper; since: number; publishedAt: number } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  private refreshing: Promise<void> | undefined;
  private advisories: Subscription | undefined;

  constructor(
    private readonly deps: {
      jsm: JetStreamManager;
      /** Where nats-server's consumer advisories arrive; without it consumers are polled only. */
      nc?: NatsConnection;
      log: Logger;
      archive: Pick<Archiver, "archivedSeq" | "frames" | "sealNow" | "lastError" | "forgetBelow">;
      /** Where the hold is told; errors are logged, not thrown. */
      publish?: (hold: AuditLogHold) => Promise<void>;
      archiveDir?: string;
      /** How often the log's usage is read while appends go on. */
      refreshMs?: number;
    },
  ) {}

  /** Reads the log's usage now, then every refreshMs and whenever a consumer is made on it. */
  async start(): Promise<void> {
    if (this.deps.nc) {
      this.advisories = this.deps.nc.subscribe(CONSUMER_CREATED, {
        callback: () => void this.refresh().catch(() => {}),
      });
    }
    await this.refresh();
    this.timer = setInterval(
      () => void this.refresh().catch(() => {}),
      this.deps.refreshMs ?? 1000,
    );
    this.timer.unref();
    // No hold is known at start: a value a writer that died left behind is replaced.
    await this.publish(false);
  }

  /** The largest block worth sending: a small log gets small blocks, so it can make room. */
  get maxBlockBytes(): number {
    return this.maxBytes > 0 ? Math.max(4096, Math.floor(this.maxBytes / 16)) : Infinity;
  }

  /** The most a flight of records should take: a quarter of a small log, so others fit beside it. */
  get maxBatchBytes(): number {
    return this.maxBytes > 0 ? Math.max(64 * 1024, Math.floor(this.maxBytes / 4)) : Infinity;
  }

  /** A block of `bytes` (as the log counts them) was sent. */
  sent(bytes: number): void {
    this.sentTotal += bytes;
  }

  /** A block sent earlier was acknowledged, stored or not. */
  landed(bytes: number): void {
    this.landedTotal += bytes;
  }

  /** What holds the log now, or undefined when appends go on. */
  get hold(): LogKeeper | undefined {
    return this.held?.keeper;
  }

  /** The oldest block that must stay, and what keeps it. */
  keeper(): LogKeeper {
    let keeper: LogKeeper = { seq: this.deps.archive.archivedSeq + 1, holder: "archive" };
    for (const floor of this.floors) {
      if (floor.seq < keeper.seq)
        keeper = { seq: floor.seq, holder: "consumer", consumer: floor.consumer };
    }
    return keeper;
  }

  /** True when appending `bytes` now drops no block that must stay. */
  mayAppend(bytes: number): boolean {
    if (this.maxBytes <= 0) return true;
    const need = this.bytes + (this.sentTotal - this.landedAtReading) + bytes - this.maxBytes;
    if (need <= 0) return true;
    const keep = this.keeper().seq;
    let droppable = 0;
    for (const frame of this.deps.archive.frames as readonly FrameEntry[]) {
      if (frame.lastStreamSeq >= keep) break;
      if (frame.firstStreamSeq < this.firstSeq) continue;
      droppable += frame.storedBytes;
      if (droppable >= need) return true;
    }
    return false;
  }

  /**
   * Resolves once `bytes` may be appended. While it waits, `keepAlive` is called every two
   * seconds (the caller's source messages must not be redelivered meanwhile); throws
   * LogRoomClosedError when the room is closed first.
   */
  async whenRoom(bytes: number, keepAlive?: () => void): Promise<void> {
    if (this.mayAppend(bytes)) return this.release();
    await this.refresh();
    let kept = Date.now();
    while (!this.mayAppend(bytes)) {
      if (this.closed) throw new LogRoomClosedError();
      await this.holdBy(this.keeper());
      if (this.held?.keeper.holder === "archive") await this.deps.archive.sealNow();
      await new Promise((resolve) => setTimeout(resolve, WAIT_POLL_MS));
      if (Date.now() - kept >= KEEP_ALIVE_MS) {
        kept = Date.now();
        keepAlive?.();
      }
      await this.refresh().catch((error: unknown) =>
        this.deps.log.warn({ err: error }, "cannot read the audit log's usage; retrying"),
      );
    }
    await this.release();
  }

  /** Reads the log's bytes and sequences and the ack floors of its durable consumers. */
  refresh(): Promise<void> {
    this.refreshing ??= this.read().finally(() => {
      this.refreshing = undefined;
    });
    return this.refreshing;
  }

  private async read(): Promise<void> {
    const landed = this.landedTotal;
    const { jsm } = this.deps;
    const info = await jsm.streams.info(AUDIT_LOG_STREAM);
    const floors: { consumer: string; seq: number }[] = [];
    for await (const consumer of jsm.consumers.list(AUDIT_LOG_STREAM)) {
      const floor = consumerFloor(consumer, info.state.last_seq);
      if (floor !== undefined) floors.push({ consumer: consumer.name, seq: floor });
    }
    const { state, config } = info;
    this.bytes = state.bytes;
    this.firstSeq = logFirstSeq(state);
    this.lastSeq = state.last_seq;
    this.maxBytes = Math.max(config.max_bytes, 0);
    this.floors = floors;
    // Blocks in flight when the reading began may or may not be in it: counted as not.
    this.landedAtReading = landed;
    this.deps.archive.forgetBelow(this.firstSeq);
  }

  private async holdBy(keeper: LogKeeper): Promise<void> {
    const now = Date.now();
    const previous = this.held;
    const changed =
      !previous ||
      previous.keeper.holder !== keeper.holder ||
      previous.keeper.consumer !== keeper.consumer;
    if (!changed && now - previous.publishedAt < REPUBLISH_MS) {
      previous.keeper = keeper;
      return;
    }
    this.held = { keeper, since: previous?.since ?? now, publishedAt: now };
    if (changed) this.deps.log.warn(this.fields(), this.reason(keeper));
    await this.publish(true);
  }

  private async release(): Promise<void> {
    const held = this.held;
    if (!held) return;
    this.held = undefined;
    this.deps.log.info(
      { ...this.fields(), held_ms: Date.now() - held.since },
      "audit log appends go on: the blocks that had to stay are archived and read",
    );
    await this.publish(false);
  }

  /** For an operator: what holds the log and what to do about it. */
  private reason(keeper: LogKeeper): string {
    const full = `the audit log is full (${this.bytes} of ${this.maxBytes} bytes, TOOLMESH_AUDIT_MAX_BYTES)`;
    if (keeper.holder === "consumer")
      return `${full} and its durable consumer ${keeper.consumer} has not acknowledged block ${keeper.seq}; new records wait until it catches up (start it, or delete the consumer if it is gone for good)`;
    const error = this.deps.archive.lastError;
    return `${full} and block ${keeper.seq} is not archived yet${error ? ` (${error})` : ""}; new records wait until the archive seals it (check that ${this.deps.archiveDir ?? "TOOLMESH_AUDIT_ARCHIVE_DIR"} is writable and has room)`;
  }

  private fields(): Record<string, unknown> {
    const keeper = this.held?.keeper;
    return {
      held_by: keeper ? (keeper.holder === "consumer" ? keeper.consumer : "archive") : undefined,
      keep_from_seq: keeper?.seq,
      log_bytes: this.bytes,
      max_bytes: this.maxBytes,
      log_first_seq: this.firstSeq,
      log_last_seq: this.lastSeq,
      archived_seq: this.deps.archive.archivedSeq,
    };
  }

  private async publish(held: boolean): Promise<void> {
    if (!this.deps.publish) return;
    const keeper = this.held?.keeper;
    const now = Date.now();
    const value = create(AuditLogHoldSchema, {
      held,
      holder:
        held && keeper
          ? keeper.holder === "consumer"
            ? AuditLogHolder.CONSUMER
            : AuditLogHolder.ARCHIVE
          : AuditLogHolder.UNSPECIFIED,
      consumer: held ? (keeper?.consumer ?? "") : "",
      keepFromSeq: BigInt(held && keeper ? keeper.seq : 0),
      since: held && this.held ? timestampFromMs(this.held.since) : undefined,
      reason: held && keeper ? this.reason(keeper) : "",
      logBytes: BigInt(this.bytes),
      maxBytes: BigInt(this.maxBytes),
      archivedSeq: BigInt(this.deps.archive.archivedSeq),
      updated: timestampFromMs(now),
    });
    try {
      await this.deps.publish(value);
    } catch (error) {
      this.deps.log.warn({ err: error }, "cannot write what holds the audit log to its bucket");
    }
  }

  /** Stops reading; a wait for room ends with LogRoomClosedError. */
  stop(): void {
    this.closed = true;
    clearInterval(this.timer);
    this.advisories?.unsubscribe();
  }
}

/**
 * The oldest stream sequence a durable consumer of the log still needs: the one after its ack
 * floor, or after the log's last when it has nothing pending. Undefined for an ephemeral one (an
 * ordered reader, such as an index or a verification, which reads what is there).
 */
function consumerFloor(consumer: ConsumerInfo, lastSeq: number): number | undefined {
  if (!consumer.config.durable_name) return undefined;
  if (consumer.num_pending === 0 && consumer.num_ack_pending === 0) return lastSeq + 1;
  const done =
    consumer.config.ack_policy === AckPolicy.None
      ? consumer.delivered.stream_seq
      : consumer.ack_floor.stream_seq;
  return done + 1;
}
