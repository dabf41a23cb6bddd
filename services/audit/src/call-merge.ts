import { AuditAction } from "@toolmesh/proto";
import { ofCall, onlyFields } from "@toolmesh/records";
import type { ReceivedRecord } from "./record-mapping.js";

/** AuditRecord fields only a start record carries: arguments, instance, deadline, timeout, runtime. */
const START_FIELDS: ReadonlySet<number> = new Set([10, 25, 26, 27, 28]);

/**
 * One call's start and end records as the one record the log keeps of a call that ended soon
 * after it started: the end record, with the start's arguments, instance, deadline, timeout and
 * runtime. Its bytes are the start's fields cut from its bytes followed by the end's (protobuf
 * merges concatenated messages), so nothing is encoded again.
 */
export function mergedCall(start: ReceivedRecord, end: ReceivedRecord): ReceivedRecord {
  const record = end.record;
  const from = start.record;
  if (from.arguments) record.arguments = from.arguments;
  record.instance = from.instance;
  if (from.deadline) record.deadline = from.deadline;
  record.timeoutMs = from.timeoutMs;
  record.runtime = from.runtime;
  const head = onlyFields(start.body, START_FIELDS);
  const body = new Uint8Array(head.length + end.body.length);
  body.set(head);
  body.set(end.body, head.length);
  return { record, body };
}

/** True for a call's start record (alone: not yet chained with its end). */
export function isStart(record: ReceivedRecord["record"]): boolean {
  return record.action === AuditAction.TOOL_START && ofCall(record);
}

/** True for a call's end record. */
export function isEnd(record: ReceivedRecord["record"]): boolean {
  return record.action === AuditAction.TOOL_CALL && ofCall(record);
}

/** A start record waiting for its end, and since when. */
interface Held<T> {
  item: T;
  since: number;
}

/**
 * Start records held a moment for their end, so that a call that ends soon after it starts is
 * chained as one record (mergedCall): half the records, chain hashes and index rows of the log.
 * A start whose end has not come within `holdMs` is chained alone, as is an end whose start is
 * not held. The records stay unacknowledged in the record stream while held, so a chain writer
 * that dies holding them has them delivered again to the next.
 */
export class StartHolds<T extends ReceivedRecord> {
  private readonly held = new Map<string, Held<T>>();

  constructor(
    private readonly holdMs: number,
    /** Makes the pending record of a merge from the start's and the end's. */
    private readonly merge: (start: T, end: T) => T,
  ) {}

  get size(): number {
    return this.held.size;
  }

  /** The records to chain now out of these: starts are held, ends take their held start. */
  take(items: T[], now = Date.now()): T[] {
    const out: T[] = [];
    for (const item of items) {
      const { record } = item;
      if (isStart(record) && this.holdMs > 0) {
        this.held.set(record.callId, { item, since: now });
        continue;
      }
      const start = isEnd(record) ? this.held.get(record.callId) : undefined;
      if (start) {
        this.held.delete(record.callId);
        out.push(this.merge(start.item, item));
      } else out.push(item);
    }
    return out;
  }

  /** True when a start has been held its time: expired() has something. */
  due(now = Date.now()): boolean {
    const first = this.held.values().next().value;
    return first !== undefined && now - first.since >= this.holdMs;
  }

  /** The starts held longer than the hold, to be chained alone; they are no longer held. */
  expired(now = Date.now()): T[] {
    const out: T[] = [];
    for (const [callId, held] of this.held) {
      if (now - held.since < this.holdMs) break;
      this.held.delete(callId);
      out.push(held.item);
    }
    return out;
  }

  /** Every start held, given up (for a stop, or a hand-back): they are no longer held. */
  drain(): T[] {
    const out = [...this.held.values()].map((h) => h.item);
    this.held.clear();
    return out;
  }

  /** The records held now. */
  items(): T[] {
    return [...this.held.values()].map((h) => h.item);
  }
}
