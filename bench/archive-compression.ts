import { mkdtemp, rm, stat } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { type ArchivedBlock, blockHeaders, encodeEntry, SegmentWriter } from "@toolmesh/archive";
import { recordBytes } from "@toolmesh/records";
import { defineTool, serveTools, ToolError } from "@toolmesh/sdk";
import { startStack } from "@toolmesh/testkit";
import { archivedBlock } from "../services/audit/src/archiver.js";

// npm run bench:archive: which compression the audit archive's segments use. Real calls go
// through a stack (Dispatcher → Audit), the audit log's blocks are read back, and each codec and
// frame size built into Node 22.13 compresses them: ratio, and MB/s of raw block bytes on one
// core. BENCH_ARCHIVE_CALLS picks how many calls (5,000); zstd is measured where Node has it,
// for comparison only (segments must read back on every Node toolmesh supports).
const CALLS = Number(process.env.BENCH_ARCHIVE_CALLS ?? 5000);
const CONCURRENCY = 16;
const say = (line: string) => process.stdout.write(`${line}\n`);

const stack = await startStack({ services: ["permission", "registry", "dispatcher", "audit"] });
try {
  const served = await serveTools(
    [
      defineTool({
        name: "bench.lookup",
        description: "Looks a customer up; fails for unknown ids.",
        inputSchema: {
          type: "object",
          properties: {
            table: { type: "string" },
            customer_id: { type: "integer" },
            fields: { type: "array", items: { type: "string" } },
            limit: { type: "integer" },
          },
        },
        requiredScopes: ["read:data"],
        handler: (args: { customer_id: number }) => {
          if (args.customer_id % 17 === 0) throw new ToolError("NOT_FOUND", "no such customer");
          return { found: true, id: args.customer_id };
        },
      }),
    ],
    { port: 0, registry: { url: stack.registry.url, token: stack.adminToken } },
  );
  await stack.grantAll("bench-agent");
  const token = await stack.agentToken("bench-agent");
  const client = stack.dispatcherClient();
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < CALLS; i = next++) {
        await client.dispatch(
          {
            tool: "bench.lookup",
            arguments: {
              table: ["customers", "orders", "invoices"][i % 3],
              customer_id: 1000 + i,
              fields: ["name", "email", "plan"].slice(0, 1 + (i % 3)),
              limit: 10 + (i % 5),
            },
          },
          stack.as(token),
        );
      }
    }),
  );
  say(`archive-compression: ${CALLS} calls in ${Math.round(performance.now() - started)} ms`);
  await served.close();

  // The log's blocks, as the archiver reads them.
  const js = stack.nc.jetstream();
  const jsm = await stack.nc.jetstreamManager();
  let blocks: ArchivedBlock[] = [];
  let records = 0;
  for (const deadline = Date.now() + 60_000; ; ) {
    const { state } = await jsm.streams.info("TOOLMESH_AUDIT_LOG");
    const consumer = await js.consumers.get("TOOLMESH_AUDIT_LOG");
    blocks = [];
    records = 0;
    const messages = await consumer.fetch({ max_messages: state.messages, expires: 10_000 });
    for await (const msg of messages) {
      const block = archivedBlock(msg);
      blocks.push(block);
      records += recordBytes(blockHeaders(block), block.data).length;
      if (msg.info.pending === 0) break;
    }
    // Every call leaves at least one record.
    if (records >= CALLS || Date.now() > deadline) break;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const dataBytes = blocks.reduce((n, b) => n + b.data.length, 0);
  say(
    `log: ${blocks.length} blocks, ${records} records, ${dataBytes} bytes (${Math.round(dataBytes / records)} B a record); ${os.cpus().length} cores, load ${os.loadavg()[0]?.toFixed(1)}, Node ${process.version}`,
  );

  // The raw frames: block entries as a segment holds them, cut at each frame size.
  const whole = Buffer.concat(blocks.map(encodeEntry));
  const frames = (size: number) => {
    const out: Buffer[] = [];
    for (let at = 0; at < whole.length; at += size) out.push(whole.subarray(at, at + size));
    return out;
  };
  type Codec = {
    name: string;
    compress: (b: Buffer) => Buffer;
    decompress: (b: Buffer) => Buffer;
  };
  const brotli = (quality: number): Codec => ({
    name: `brotli q${quality}`,
    compress: (b) =>
      zlib.brotliCompressSync(b, {
        params: {
          [zlib.constants.BROTLI_PARAM_QUALITY]: quality,
          [zlib.constants.BROTLI_PARAM_SIZE_HINT]: b.length,
        },
      }),
    decompress: (b) => zlib.brotliDecompressSync(b),
  });
  const gzip = (level: number): Codec => ({
    name: `gzip ${level}`,
    compress: (b) => zlib.gzipSync(b, { level }),
    decompress: (b) => zlib.gunzipSync(b),
  });
  const codecs: Codec[] = [gzip(1), gzip(6), gzip(9), brotli(4), brotli(5), brotli(6), brotli(9)];
  const zstd = zlib as unknown as {
    zstdCompressSync?: (b: Buffer, o?: object) => Buffer;
    zstdDecompressSync?: (b: Buffer) => Buffer;
  };
  if (zstd.zstdCompressSync && zstd.zstdDecompressSync) {
    const compress = zstd.zstdCompressSync;
    const decompress = zstd.zstdDecompressSync;
    codecs.push({
      name: "zstd 3 (not used)",
      compress: (b) => compress(b),
      decompress: (b) => decompress(b),
    });
  }
  say(`raw segment bytes (block entries): ${whole.length}`);
  // The segment the archive writes of these blocks, against what they take in the log stream.
  const dir = await mkdtemp(path.join(os.tmpdir(), "toolmesh-bench-archive-"));
  try {
    const writer = await SegmentWriter.open(dir, { stream: "bench", streamCreated: "" });
    for (const block of blocks) await writer.add(block);
    const { file, footer } = await writer.seal();
    const { size } = await stat(file);
    say(
      `segment file: ${size} bytes for ${footer.storedBytes} bytes of log (${(footer.storedBytes / size).toFixed(2)}× smaller), ${footer.frames.length} frames`,
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  say("| codec | frame | ratio | compress MB/s | decompress MB/s |");
  say("|---|---|---|---|---|");
  for (const frameBytes of [64 * 1024, 256 * 1024, 1024 * 1024]) {
    const parts = frames(frameBytes);
    for (const codec of codecs) {
      let compressed = 0;
      let t = performance.now();
      const outs = parts.map((p) => codec.compress(p));
      const compressMs = performance.now() - t;
      for (const o of outs) compressed += o.length;
      t = performance.now();
      for (const o of outs) codec.decompress(o);
      const decompressMs = performance.now() - t;
      const mb = whole.length / 1e6;
      say(
        `| ${codec.name} | ${frameBytes / 1024} KiB | ${(whole.length / compressed).toFixed(2)}× | ${(mb / (compressMs / 1000)).toFixed(0)} | ${(mb / (decompressMs / 1000)).toFixed(0)} |`,
      );
    }
  }
} finally {
  await stack.stop();
}
