import type { ConsumerConfig, JetStreamManager } from "nats";
import { JetStreamApiCodes, jetStreamErrorCode, retrySetup } from "./jetstream-errors.js";

/**
 * Creates a durable consumer, or brings an existing one to these limits (the server refuses to
 * create one that exists with other settings); tried again while no leader answers.
 */
export function ensureConsumer(
  jsm: JetStreamManager,
  stream: string,
  config: Partial<ConsumerConfig> & { durable_name: string },
): Promise<void> {
  return retrySetup(() => createOrUpdate(jsm, stream, config));
}

async function createOrUpdate(
  jsm: JetStreamManager,
  stream: string,
  config: Partial<ConsumerConfig> & { durable_name: string },
): Promise<void> {
  try {
    const { config: current } = await jsm.consumers.info(stream, config.durable_name);
    if (
      current.ack_wait !== config.ack_wait ||
      current.max_ack_pending !== config.max_ack_pending
    ) {
      await jsm.consumers.update(stream, config.durable_name, {
        ack_wait: config.ack_wait,
        max_ack_pending: config.max_ack_pending,
      });
    }
  } catch (error) {
    if (jetStreamErrorCode(error) !== JetStreamApiCodes.ConsumerNotFound) throw error;
    await jsm.consumers.add(stream, config);
  }
}

/**
 * How long one pull of a consumer lasts. nats.js also takes it as the interval it waits between
 * tries to find its consumer again after a reconnect (jittered to half to one and a half times
 * it): with its default of 30 s, a reader whose first try came while a restarted nats-server was
 * still recovering its streams stopped for 15–45 s. Two seconds bounds that pause; an idle reader
 * asks again every two seconds and hears a heartbeat every second, which costs nothing.
 */
export const PULL_EXPIRES_MS = 2000;

/** Options of a durable reader's `consume()`: the pull sizes given, and PULL_EXPIRES_MS. */
export function pullOptions<T extends { max_bytes: number } | { max_messages: number }>(
  sizes: T,
): T & { expires: number } {
  return { ...sizes, expires: PULL_EXPIRES_MS };
}
