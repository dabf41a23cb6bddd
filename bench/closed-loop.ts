/** One call of a closed loop; it rejects on failure. */
export type Call = () => Promise<void>;

/** What a closed loop did. */
export interface LoopRun {
  /** Latencies in ms of the calls that succeeded (only when recording). */
  latencies: number[];
  /** Calls that succeeded. */
  calls: number;
  errors: number;
  /** Seconds it ran. */
  elapsed: number;
}

/**
 * Runs `workers` callers for `durationMs`, each starting its next call when the last returned
 * (closed loop), and counts what they did; the first error is written to stderr under `name`.
 */
export async function closedLoop(
  name: string,
  call: Call,
  durationMs: number,
  workers: number,
  record = true,
): Promise<LoopRun> {
  const latencies: number[] = [];
  let calls = 0;
  let errors = 0;
  const end = performance.now() + durationMs;
  const worker = async () => {
    while (performance.now() < end) {
      const start = performance.now();
      try {
        await call();
        calls++;
        if (record) latencies.push(performance.now() - start);
      } catch (error) {
        errors++;
        if (errors === 1) process.stderr.write(`${name}: ${String(error)}\n`);
      }
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: workers }, worker));
  return { latencies, calls, errors, elapsed: (performance.now() - started) / 1000 };
}

/** The q-quantile (0–1) of latencies sorted ascending: the one at ⌊q·n⌋; NaN for none. */
export const percentile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
