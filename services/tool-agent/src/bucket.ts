import type { DescMessage } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import { KvSnapshot, openBucket } from "@toolmesh/nats";
import type { JetStreamClient, JetStreamManager, KV } from "nats";

/** Where a store of the tool agent opens its bucket, and for how long keys live. */
export interface BucketOptions {
  js: JetStreamClient;
  jsm: JetStreamManager;
  replicas: number;
  ttlMs: number;
  log: Logger;
}

/**
 * Opens one of the tool agent's buckets and follows the keys under `prefix` in memory (the small
 * records every replica lists), leaving the rest to be read when asked for.
 */
export async function openFollowedBucket<Desc extends DescMessage>(
  options: BucketOptions,
  bucket: string,
  prefix: string,
  schema: Desc,
): Promise<{ kv: KV; snapshot: KvSnapshot<Desc> }> {
  const kv = await openBucket(options.js, options.jsm, bucket, {
    replicas: options.replicas,
    ttlMs: options.ttlMs,
  });
  const snapshot = new KvSnapshot(kv, prefix, schema, options.log);
  await snapshot.start();
  return { kv, snapshot };
}
