import type { ConsumerConfig, JetStreamManager } from "nats";
import { JetStreamApiCodes, jetStreamErrorCode } from "./jetstream-errors.js";

/**
 * Creates a durable consumer, or brings an existing one to these limits (the server refuses to
 * create one that exists with other settings).
 */
export async function ensureConsumer(
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
