import { type DescMessage, fromBinary, type MessageShape, toBinary } from "@bufbuild/protobuf";
import { compareAndSet, updateWithRetry } from "@toolmesh/nats";
import type { KV } from "nats";

/** What one audit log block adds to one key. */
export interface BlockShare {
  /** The block's sequence in the audit log. */
  seq: number;
}

/** A stored aggregate that remembers the audit log blocks it counted. */
type Counting<Desc extends DescMessage> = MessageShape<Desc> & { countedBlocks: bigint[] };

/**
 * Adds what audit log blocks bring to one key's aggregate, each block once: the value remembers
 * the blocks it counted (those above the consumer's ack `floor`), so a block delivered again — to
 * this replica or another, in any order — adds nothing. Blocks at or below the floor were acked
 * and never come again, so they are forgotten. `apply` adds the fresh blocks to the stored value
 * (undefined for a new key). Returns the blocks it added.
 */
export async function addBlocksOnce<Desc extends DescMessage, B extends BlockShare>(
  kv: KV,
  key: string,
  schema: Desc,
  blocks: readonly B[],
  floor: number,
  apply: (stored: Counting<Desc> | undefined, fresh: readonly B[]) => Counting<Desc>,
): Promise<B[]> {
  if (blocks.length === 0) return [];
  // Another replica may write the key meanwhile: read it again and add what it has not.
  return updateWithRetry(`key "${key}"`, async () => {
    const entry = await kv.get(key);
    const stored =
      entry?.operation === "PUT" && entry.value.length > 0
        ? (fromBinary(schema, entry.value) as Counting<Desc>)
        : undefined;
    const counted = new Set((stored?.countedBlocks ?? []).map(Number));
    const fresh = blocks.filter((b) => !counted.has(b.seq));
    if (fresh.length === 0) return [];
    const next = apply(stored, fresh);
    for (const block of fresh) counted.add(block.seq);
    next.countedBlocks = [...counted]
      .filter((seq) => seq > floor)
      .sort((x, y) => x - y)
      .map(BigInt);
    const value = toBinary(schema, next);
    if (entry && stored) await compareAndSet(() => kv.update(key, value, entry.revision));
    else await compareAndSet(() => kv.create(key, value));
    return fresh;
  });
}
