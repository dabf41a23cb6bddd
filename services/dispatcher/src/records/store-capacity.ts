import type { Logger } from "@toolmesh/log";
import { DiscardPolicy, type JetStreamManager } from "nats";

/** A stream a call's records go to, and the subjects that land in it. */
export interface RecordStream {
  name: string;
  /** Subject prefixes of the stream, such as `toolmesh.audit.`. */
  prefixes: readonly string[];
}

interface Room {
  stream: string;
  /** Bytes left under max_bytes at the last check, less what this process published since. */
  bytes: number;
  limit: number;
}

/**
 * Whether the streams a call's records go to have room. A stream that refuses new messages when
 * full (discard new: the audit input, the leases) would make a call fail half-way through its
 * records; the chain asks this before anything runs and refuses instead. Each stream's room is
 * read on a timer, off the hot path, and between reads every publish of this process is taken
 * off it, so the records of calls already accepted always fit in the margin left.
 */
export class StoreCapacity {
  private fullReason: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly rooms = new Map<string, Room>();
  private readonly limits = new Map<string, string>();
  private checking: Promise<void> | undefined;

  constructor(
    private readonly jsm: JetStreamManager,
    private readonly streams: readonly RecordStream[],
    /** Room each stream must keep for the records of calls already running. */
    private readonly marginBytes: number,
    private readonly log: Logger,
  ) {}

  /** Why calls cannot be recorded now, or undefined when every stream has room. */
  get full(): string | undefined {
    return this.fullReason;
  }

  /**
   * Takes a published message off its stream's room. Once the estimate falls under the margin
   * the stream is read again at once — Audit trims what it chained meanwhile, so the estimate
   * runs ahead of the stream at full speed — and calls are refused on the estimate alone only
   * when it has used half the margin before the read answers.
   */
  consume(subject: string, bytes: number): void {
    const stream = this.streams.find((s) => s.prefixes.some((p) => subject.startsWith(p)));
    const room = stream && this.rooms.get(stream.name);
    if (!room) return;
    room.bytes -= bytes;
    if (room.bytes >= this.marginBytes) return;
    this.recheck();
    if (room.bytes < this.marginBytes / 2) this.fullReason ??= describe(room, this.marginBytes);
  }

  /** Reads the streams now, unless a read is under way. */
  private recheck(): void {
    this.checking ??= this.check()
      .catch((error: unknown) => {
        this.log.debug({ err: error }, "could not read stream limits");
      })
      .finally(() => {
        this.checking = undefined;
      });
  }

  /** Marks the store full after a refused publish, until the next check finds room. */
  refused(reason: string): void {
    this.fullReason ??= reason;
  }

  start(intervalMs: number): void {
    this.timer = setInterval(() => this.recheck(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Reads each stream's use against its limits. */
  async check(): Promise<void> {
    let reason: string | undefined;
    for (const { name } of this.streams) {
      const { config, state } = await this.jsm.streams.info(name);
      const limits = `${config.discard} ${config.max_bytes} ${config.max_msgs}`;
      if (this.limits.get(name) !== limits) {
        this.limits.set(name, limits);
        this.log.info(
          {
            stream: name,
            discard: config.discard,
            max_bytes: config.max_bytes,
            max_msgs: config.max_msgs,
            margin_bytes: this.marginBytes,
          },
          "record stream limits",
        );
      }
      if (config.discard !== DiscardPolicy.New) {
        this.rooms.delete(name);
        continue;
      }
      if (config.max_bytes > 0) {
        const room = {
          stream: name,
          bytes: config.max_bytes - state.bytes,
          limit: config.max_bytes,
        };
        this.rooms.set(name, room);
        if (room.bytes < this.marginBytes) reason ??= describe(room, this.marginBytes);
      }
      if (config.max_msgs > 0 && state.messages + 16 > config.max_msgs) {
        reason ??= `stream ${name} holds ${state.messages} of its ${config.max_msgs} messages`;
      }
    }
    if (reason !== this.fullReason) {
      if (reason) this.log.error({ reason }, "the record store is full; refusing new calls");
      else this.log.info("the record store has room again; accepting calls");
    }
    this.fullReason = reason;
  }
}

function describe(room: Room, margin: number): string {
  return `stream ${room.stream} has ${Math.max(0, room.bytes)} of its ${room.limit} bytes left, under the ${margin} bytes kept for calls already running`;
}
