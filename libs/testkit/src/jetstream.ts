import type { JetStreamOptions } from "nats";

/**
 * JetStream options for tests: a test that publishes thousands of events at once on two loaded
 * cores, with fsync on every write, can wait longer than nats.js's 5 s default for an ack. Tests
 * assert on what arrives, not on how fast; benchmarks measure speed.
 */
export const TEST_JS_OPTIONS: JetStreamOptions = { timeout: 60_000 };
