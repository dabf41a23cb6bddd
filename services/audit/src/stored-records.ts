import { fromBinary } from "@bufbuild/protobuf";
import { type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import { recordBytes } from "@toolmesh/records";
import type { LogReader } from "./log-reader.js";
import type { RecordPlace } from "./record-index.js";

/** The bytes of recently read blocks kept, at most: a query's page mostly shares a few blocks. */
const CACHE_BYTES = 16 * 1024 * 1024;
/** How long a read waits before it looks again for a block found nowhere. */
const MISS_RETRY_MS = 100;

/**
 * Reads indexed records from where they are stored — the log stream, or the archive once they
 * left it — so the index holds no copy of them. Blocks read lately are kept (bounded in bytes),
 * and a block several readers want at once is read once.
 */
export class StoredRecords {
  private readonly blocks = new Map<number, Promise<Uint8Array[]>>();
  private readonly sizes = new Map<number, number>();
  private cachedBytes = 0;

  constructor(private readonly reader: Pick<LogReader, "block">) {}

  /**
   * The records at these places, in the same order; one no longer stored (the archive's age
   * limit dropped it since the index was read) is left out.
   */
  async read(places: readonly RecordPlace[]): Promise<AuditRecord[]> {
    let slices = await Promise.all(places.map((p) => this.slices(p.blockSeq)));
    // A block found nowhere is looked for once more: one leaving the log for a segment the
    // archive had not listed yet is there a moment later.
    if (slices.some((s) => s.length === 0)) {
      await new Promise((resolve) => setTimeout(resolve, MISS_RETRY_MS));
      slices = await Promise.all(places.map((p) => this.slices(p.blockSeq)));
    }
    const out: AuditRecord[] = [];
    for (const [i, place] of places.entries()) {
      const bytes = slices[i]?.[place.pos];
      if (!bytes) continue;
      const record = fromBinary(AuditRecordSchema, bytes);
      // A block read again under a reused sequence (a log made anew) is not this record.
      if (record.sequence === BigInt(place.seq)) out.push(record);
    }
    return out;
  }

  private slices(blockSeq: number): Promise<Uint8Array[]> {
    const cached = this.blocks.get(blockSeq);
    if (cached) {
      // Most recently used last.
      this.blocks.delete(blockSeq);
      this.blocks.set(blockSeq, cached);
      return cached;
    }
    const read = this.reader.block(blockSeq).then(
      (block) => {
        // A block found nowhere is not kept: the next read looks for it again.
        if (!block) {
          this.blocks.delete(blockSeq);
          return [];
        }
        this.remember(blockSeq, block.data.length);
        return recordBytes(block.headers, block.data);
      },
      (error: unknown) => {
        this.blocks.delete(blockSeq);
        throw error;
      },
    );
    this.blocks.set(blockSeq, read);
    return read;
  }

  private remember(blockSeq: number, bytes: number): void {
    this.sizes.set(blockSeq, bytes);
    this.cachedBytes += bytes;
    for (const old of this.blocks.keys()) {
      if (this.cachedBytes <= CACHE_BYTES || old === blockSeq) break;
      this.blocks.delete(old);
      this.cachedBytes -= this.sizes.get(old) ?? 0;
      this.sizes.delete(old);
    }
  }
}
