import { randomBytes } from "node:crypto";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { chainedAfter } from "@toolmesh/archive";
import { ensureStream, subjects, TYPE_HEADER } from "@toolmesh/nats";
import { type AuditRecord, AuditRecordSchema, type AuditService } from "@toolmesh/proto";
import { BLOCK_TYPE, isBlock, recordBytes } from "@toolmesh/records";
import { loadSqlite } from "@toolmesh/service";
import { eventually, type ServiceProcess, TEST_JS_OPTIONS } from "@toolmesh/testkit";
import { headers as natsHeaders } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUDIT_LOG_STREAM, auditLogStream } from "../src/audit-log.js";
import type { IndexStart } from "../src/index-follower.js";
import { encodeBlock } from "../src/log-block.js";
import { readChainEnds } from "../src/log-ends.js";
import {
  type AuditBus,
  appendHistory,
  bearer,
  type ChainHead,
  historyRecord,
  publishHistory,
  queryAll,
  startAudit,
  startAuditBus,
} from "./fixtures.js";

const JWT_SECRET = randomBytes(32).toString("hex");
const DAY_MS = 24 * 60 * 60 * 1000;
/** Written one record per message, as the Audit service did before blocks. */
const OLD = 300;
/** Then chained by the Audit service, in blocks. */
const BLOCKS = 800;
/** Then one record per message again, as an older replica would during a rolling upgrade. */
const OLD_AGAIN = 820;
const TOTAL = 1000;

// A log written before blocks stays readable: an index file of the old schema is rebuilt from
// it, and a log that mixes one-record messages and blocks verifies and queries as one chain.
describe("audit log of one-record messages and blocks", () => {
  let bus: AuditBus;
  let audit: ServiceProcess | undefined;
  let client: Client<typeof AuditService>;
  let auditor: { headers: { authorization: string } };
  const t0 = Date.now() - DAY_MS;
  const indexFile = () => path.join(bus.dataDir, "audit", "index.sqlite");

  /** Starts Audit and returns what its index did at start, from its log line. */
  const start = async (): Promise<IndexStart> => {
    const started = await startAudit(bus, JWT_SECRET);
    audit = started.audit;
    client = started.client;
    return started.opened;
  };
  const stop = async () => {
    expect(await audit?.stop()).toBe(0);
    audit = undefined;
  };
  const jsm = () => bus.nc.jetstreamManager();
  /** The chain's newest record, read from the stream. */
  const head = async (): Promise<ChainHead> => {
    const m = await jsm();
    const { last } = await readChainEnds(m, (await m.streams.info(AUDIT_LOG_STREAM)).state);
    return { sequence: last?.sequence ?? 0n, hash: last?.hash ?? "" };
  };
  /** Writes records to the record stream at once, as the Dispatcher does. */
  const publish = (from: number, to: number) => publishHistory(bus.nc, from, to, t0, 50);
  const chained = (count: number) =>
    eventually(
      async () => expect((await head()).sequence).toBe(BigInt(count)),
      60_000,
      `${count} records chained`,
    );
  const allRecords = (extra: { agentId?: string; tool?: string } = {}) =>
    queryAll(client, auditor, extra, 97);

  const indexed = (count: number) =>
    eventually(
      async () => {
        const res = await client.queryRecords({ callId: `call-${count - 1}` }, auditor);
        expect(res.records.map((r) => r.sequence)).toEqual([BigInt(count)]);
      },
      30_000,
      `record ${count} indexed`,
    );

  beforeAll(async () => {
    bus = await startAuditBus();
    const m = await jsm();
    await ensureStream(m, auditLogStream({ replicas: 1, maxBytes: 0 }));
    const tip = await appendHistory(bus.nc.jetstream(), { sequence: 0n, hash: "" }, 0, OLD, t0);
    // An index an Audit service of schema 1 left, its checkpoint at the stream's head.
    const { DatabaseSync } = await loadSqlite();
    mkdirSync(path.dirname(indexFile()), { recursive: true });
    const db = new DatabaseSync(indexFile());
    db.exec(`CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
      CREATE TABLE records (seq INTEGER PRIMARY KEY, data BLOB NOT NULL);`);
    const put = db.prepare("INSERT INTO meta (key, value) VALUES (?, ?)");
    put.run("schema_version", "1");
    put.run("stream_created", (await m.streams.info(AUDIT_LOG_STREAM)).created);
    put.run("last_seq", String(OLD));
    put.run("last_hash", tip.hash);
    db.close();
    auditor = await bearer(JWT_SECRET, "reviewer", ["auditor"]);
  });

  afterAll(async () => {
    await audit?.stop();
    await bus?.destroy();
  });

  it("rebuilds an index of the old schema, then chains in blocks after one-record messages", async () => {
    expect(await start()).toMatchObject({
      rebuilt: true,
      reason: "another schema version",
      readAtStart: OLD,
    });
    await publish(OLD, BLOCKS);
    await chained(BLOCKS);
    await stop();

    await appendHistory(bus.nc.jetstream(), await head(), BLOCKS, OLD_AGAIN, t0);
    expect(await start()).toMatchObject({
      rebuilt: false,
      readAtStart: OLD_AGAIN - BLOCKS,
    });
    await publish(OLD_AGAIN, TOTAL);
    await chained(TOTAL);
    await indexed(TOTAL);

    const { state } = await (await jsm()).streams.info(AUDIT_LOG_STREAM);
    // Some messages hold many records: the ones Audit appended went in blocks.
    expect(state.messages).toBeLessThan(TOTAL - (BLOCKS - OLD) / 2);
    expect(state.messages).toBeGreaterThan(OLD + (OLD_AGAIN - BLOCKS));
  });

  it("verifies the mixed log whole, and from a record inside a block or a one-record message", async () => {
    expect(await client.verifyChain({}, auditor)).toMatchObject({
      ok: true,
      recordsChecked: BigInt(TOTAL),
    });
    const inBlock = await secondRecordOfABlock();
    for (const from of [1, 100, inBlock, inBlock + 1, 810, TOTAL, TOTAL + 5]) {
      expect(await client.verifyChain({ fromSequence: BigInt(from) }, auditor)).toMatchObject({
        ok: true,
        recordsChecked: BigInt(Math.max(TOTAL - from + 1, 0)),
      });
    }
  });

  it("queries the mixed log: every record once, by its chain sequence, and by filters", async () => {
    const all = await allRecords();
    expect(all.map((r) => r.sequence)).toEqual(
      Array.from({ length: TOTAL }, (_, i) => BigInt(TOTAL - i)),
    );
    // Chained in the order they were published: record i is the chain's (i + 1)th.
    expect(all.map((r) => r.id)).toEqual(
      Array.from({ length: TOTAL }, (_, i) => `hist-${TOTAL - 1 - i}`),
    );
    const filtered = await allRecords({ agentId: "agent-1", tool: "data.query" });
    const expected = Array.from({ length: TOTAL }, (_, i) => i)
      .filter((i) => i % 5 === 1 && i % 2 === 0)
      .reverse();
    expect(filtered.map((r) => r.id)).toEqual(expected.map((i) => `hist-${i}`));
    const inBlock = await secondRecordOfABlock();
    const byCall = await client.queryRecords({ callId: `call-${inBlock - 1}` }, auditor);
    expect(byCall.records.map((r) => r.sequence)).toEqual([BigInt(inBlock)]);
  });

  it("continues from its checkpoint on a block, and VerifyChain finds a forged record in a block", async () => {
    await stop();
    expect(await start()).toMatchObject({ rebuilt: false, readAtStart: 0 });

    // A block chained on the head whose second record's content was changed after hashing.
    let tip = await head();
    const forged = [TOTAL, TOTAL + 1].map((i) => {
      const r = chainedAfter(historyRecord(i, t0), tip);
      tip = { sequence: r.sequence, hash: r.hash };
      return r;
    });
    (forged[1] as AuditRecord).agentId = "someone-else";
    const h = natsHeaders();
    h.set(TYPE_HEADER, BLOCK_TYPE);
    await bus.nc
      .jetstream(TEST_JS_OPTIONS)
      .publish(
        subjects.auditLogBlock,
        encodeBlock(forged.map((r) => toBinary(AuditRecordSchema, r))),
        {
          headers: h,
        },
      );
    await indexed(TOTAL + 1);
    expect(await client.verifyChain({}, auditor)).toMatchObject({
      ok: false,
      recordsChecked: BigInt(TOTAL + 2),
      firstBreakSequence: BigInt(TOTAL + 2),
      reason: expect.stringContaining("altered"),
    });
    expect(await client.verifyChain({ fromSequence: BigInt(TOTAL + 1) }, auditor)).toMatchObject({
      ok: false,
      recordsChecked: 2n,
      firstBreakSequence: BigInt(TOTAL + 2),
    });
  });

  /** The chain sequence of the second record of the first block that holds several. */
  async function secondRecordOfABlock(): Promise<number> {
    const m = await jsm();
    const { state } = await m.streams.info(AUDIT_LOG_STREAM);
    for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
      const msg = await m.streams.getMessage(AUDIT_LOG_STREAM, { seq });
      if (!isBlock(msg.header)) continue;
      const records = recordBytes(msg.header, msg.data);
      if (records.length < 2) continue;
      return Number(fromBinary(AuditRecordSchema, records[1] as Uint8Array).sequence);
    }
    throw new Error("no block of several records in the log");
  }
});
