import type { NatsConnection } from "nats";
import { cpuMs } from "./proc.js";

/** What one acked JetStream write costs on this machine with this nats-server's settings. */
export interface JetStreamFloor {
  writesPerSecond: number;
  natsCpuUsPerWrite: number;
}

/**
 * As many streams as a call's writes go to (records, audit log, callback feed, usage): fsyncs of
 * different streams overlap.
 */
const STREAMS = 4;

/**
 * Publishes small messages into scratch streams with `inFlight` unacked at a time for `seconds`
 * and reports acked writes per second and nats-server CPU per write. With `sync_interval: always`
 * every write is an fsync, which bounds every stream of the stack; the chain's record batches
 * share that bound. With one in flight, 1 / writes per second is what one acked write adds to a
 * call's latency.
 */
export async function measureJetStreamFloor(
  nc: NatsConnection,
  natsPid: number,
  seconds: number,
  inFlight = 64,
): Promise<JetStreamFloor> {
  const jsm = await nc.jetstreamManager();
  for (let i = 0; i < STREAMS; i++)
    await jsm.streams.add({
      name: `BENCH_FLOOR_${i}`,
      subjects: [`bench.floor.${i}.>`],
      max_msgs: 100_000,
    });
  const js = nc.jetstream();
  const data = new Uint8Array(400);
  let acked = 0;
  const end = performance.now() + seconds * 1000;
  const cpu0 = cpuMs(natsPid);
  const started = performance.now();
  const worker = async (w: number) => {
    while (performance.now() < end) {
      await js.publish(`bench.floor.${w % STREAMS}.${w}`, data);
      acked++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, (_, w) => worker(w)));
  const elapsed = (performance.now() - started) / 1000;
  const cpu = cpuMs(natsPid) - cpu0;
  for (let i = 0; i < STREAMS; i++) await jsm.streams.delete(`BENCH_FLOOR_${i}`);
  return { writesPerSecond: acked / elapsed, natsCpuUsPerWrite: (cpu * 1000) / acked };
}
