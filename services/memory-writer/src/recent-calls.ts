/**
 * The ids of the last `capacity` calls written, oldest forgotten first: how a redelivered event
 * is recognised without a set of every call ever written. JetStream redelivers only what was not
 * acked, within its ack wait, so a window of a few seconds of calls is enough.
 */
export class RecentCalls {
  private readonly ids = new Set<string>();
  private readonly ring: (string | undefined)[];
  private next = 0;

  constructor(readonly capacity: number) {
    this.ring = new Array(capacity);
  }

  has(callId: string): boolean {
    return this.ids.has(callId);
  }

  add(callId: string): void {
    if (this.ids.has(callId)) return;
    const oldest = this.ring[this.next];
    if (oldest !== undefined) this.ids.delete(oldest);
    this.ring[this.next] = callId;
    this.next = (this.next + 1) % this.capacity;
    this.ids.add(callId);
  }

  get size(): number {
    return this.ids.size;
  }
}
