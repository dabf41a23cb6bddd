import { fromBinary } from "@bufbuild/protobuf";
import { subjects } from "@toolmesh/nats";
import { type TraceEvent, TraceEventSchema } from "@toolmesh/proto";
import type { JetStreamClient, JetStreamManager } from "nats";

const TRACE_STREAM = "TOOLMESH_TRACE";

/** Reads every event of one trace from the trace stream, in publication order. */
export class TraceReader {
  constructor(
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly maxEvents = 10_000,
  ) {}

  /** The events of a trace; empty when the stream holds none. */
  async events(traceId: string): Promise<TraceEvent[]> {
    const subject = subjects.traceEvents(traceId);
    const info = await this.jsm.streams.info(TRACE_STREAM, { subjects_filter: subject });
    // One count per publisher's subject (toolmesh.trace.<source>.<trace_id>).
    const stored = Object.values(info.state.subjects ?? {}).reduce((sum, n) => sum + n, 0);
    const count = Math.min(stored, this.maxEvents);
    if (count === 0) return [];
    const consumer = await this.js.consumers.get(TRACE_STREAM, { filterSubjects: subject });
    const events: TraceEvent[] = [];
    while (events.length < count) {
      const batch = await consumer.fetch({ max_messages: count - events.length, expires: 2000 });
      let received = 0;
      for await (const msg of batch) {
        received++;
        events.push(fromBinary(TraceEventSchema, msg.data));
        if (events.length >= count) break;
      }
      if (received === 0) break;
    }
    return events;
  }
}
