import { execFile } from "node:child_process";
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { fromBinary } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { listSegments, storedSize, verifyArchive } from "@toolmesh/archive";
import {
  AuditLogHolder,
  AuditLogHoldSchema,
  type AuditService,
  TraceEventKind,
} from "@toolmesh/proto";
import { eventually, repoRoot, type ServiceProcess, TEST_JS_OPTIONS } from "@toolmesh/testkit";
import { AckPolicy, DeliverPolicy, type JetStreamManager } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { archivedBlock } from "../src/archiver.js";
import { AUDIT_LOG_STREAM } from "../src/audit-log.js";
import { readChainEnds } from "../src/log-ends.js";
import {
  type AuditBus,
  bearer,
  historyRecord,
  lastChained,
  publishHistory,
  queryAll,
  startAudit,
  startAuditBus,
} from "./fixtures.js";

const execFileAsync = promisify(execFile);
const JWT_SECRET = "archive-test-secret-0123456789abcdef";
const MAX_BYTES = 256 * 1024;
const ENV = {
  TOOLMESH_AUDIT_MAX_BYTES: String(MAX_BYTES),
  TOOLMESH_AUDIT_SEGMENT_BYTES: "32KiB",
  TOOLMESH_AUDIT_RETENTION_CHECK_MS: "200",
};

// A hot log of 256 KiB that history outgrows many times over: blocks leave it only once sealed
// in the archive and read by every durable consumer, so nothing is lost, and every read (the
// chain, queries, traces, the offline verifier) reaches the archive.
describe("audit archive", () => {
  let bus: AuditBus;
  let audit: ServiceProcess;
  let client: Client<typeof AuditService>;
  let auditor: { headers: { authorization: string } };
  let archiveDir: string;
  let jsm: JetStreamManager;
  const t0 = Date.now();
  let published = 0;

  const start = async () => {
    ({ audit, client } = await startAudit(bus, JWT_SECRET, ENV));
  };

  /** Publishes the test history's records up to `to` (exclusive), after those published. */
  const publishUpTo = async (to: number) => {
    await publishHistory(bus.nc, published, to, t0);
    published = to;
  };

  /** Resolves once the log's newest record is the `count`-th. */
  const chained = (count: number, timeoutMs = 60_000) =>
    eventually(
      async () => expect(await lastChained(jsm)).toBe(count),
      timeoutMs,
      `${count} records chained`,
    );
  const allRecords = (filter: { agentId?: string } = {}) => queryAll(client, auditor, filter);

  beforeAll(async () => {
    bus = await startAuditBus();
    jsm = await bus.nc.jetstreamManager();
    archiveDir = path.join(bus.dataDir, "audit", "archive");
    auditor = await bearer(JWT_SECRET, "reviewer", ["auditor"]);
    await start();
  });

  afterAll(async () => {
    await audit?.stop();
    await bus?.destroy();
  });

  it("keeps every record: the log drops only archived blocks, and VerifyChain and queries reach the archive", async () => {
    // A call whose records will be archived: its trace is derived from them.
    const traced = historyRecord(5, t0);
    await publishUpTo(3000);
    await chained(3000);
    const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
    // The log dropped its oldest blocks and stayed within its limit.
    expect(state.first_seq).toBeGreaterThan(1);
    expect(state.bytes).toBeLessThanOrEqual(MAX_BYTES);
    const segments = await listSegments(archiveDir);
    expect(segments.length).toBeGreaterThan(3);
    expect(segments[0]?.firstStreamSeq).toBe(1);
    // Every block that left the log is in a segment; segments follow each other.
    for (let i = 1; i < segments.length; i++)
      expect(segments[i]?.firstStreamSeq).toBe((segments[i - 1]?.lastStreamSeq ?? 0) + 1);
    expect(segments.at(-1)?.lastStreamSeq ?? 0).toBeGreaterThanOrEqual(state.first_seq - 1);

    // The chain verifies over the archive and the log, from the first record.
    expect(await client.verifyChain({}, auditor)).toMatchObject({
      ok: true,
      recordsChecked: 3000n,
    });
    const { first } = await readChainEnds(jsm, state);
    // Queries read the index, which follows the log on its own: on a loaded machine it may still
    // be indexing the last blocks the chain writer appended (2,400 of 3,000 in one CI run).
    const records = await eventually(
      async () => {
        const all = await allRecords();
        expect(all).toHaveLength(3000);
        return all;
      },
      30_000,
      "every record indexed",
    );
    expect(new Set(records.map((r) => r.id)).size).toBe(3000);
    // An archived call, by call id and by agent.
    const byCall = await client.queryRecords({ callId: "call-5" }, auditor);
    expect(byCall.records.map((r) => r.id)).toEqual(["hist-5"]);
    expect(byCall.records[0]?.sequence).toBeLessThan(first?.sequence ?? 0n);
    const byAgent = await allRecords({ agentId: "agent-0" });
    expect(byAgent).toHaveLength(600);
    expect(byAgent.some((r) => r.id === "hist-5" || r.id === "hist-0")).toBe(true);
    // The trace of an archived call.
    const trace = await client.getTrace({ traceId: traced.traceId }, auditor);
    expect(trace.events.map((e) => e.kind)).toEqual([
      TraceEventKind.TOOL_RESULT,
      TraceEventKind.CALLBACK_SUCCESS,
    ]);

    // What the archive counts a block as taking in the log is what nats-server counts.
    const reader = await bus.nc.jetstream(TEST_JS_OPTIONS).consumers.get(AUDIT_LOG_STREAM);
    let counted = 0;
    for await (const msg of await reader.fetch({ max_messages: state.messages, expires: 5000 })) {
      counted += storedSize(archivedBlock(msg));
      if (msg.info.pending === 0) break;
    }
    expect(counted).toBe(state.bytes);

    // The archive alone verifies offline.
    const verdict = await verifyArchive(archiveDir);
    expect(verdict.segments.flatMap((s) => s.problems)).toEqual([]);
    expect(verdict).toMatchObject({ ok: true, firstSequence: 1n, missing: [] });
  });

  it("names the durable consumer that holds the log, waits for it, and loses nothing", async () => {
    // A consumer that follows the log from now on and reads nothing yet: every block appended
    // from now on must stay for it, and the log fills up with them.
    const { state: before } = await jsm.streams.info(AUDIT_LOG_STREAM);
    await jsm.consumers.add(AUDIT_LOG_STREAM, {
      durable_name: "stalled",
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.New,
    });
    const keepFrom = before.last_seq + 1;
    const kv = await bus.nc.jetstream(TEST_JS_OPTIONS).views.kv("toolmesh-audit");
    const hold = async () => {
      const entry = await kv.get("log.hold");
      return entry ? fromBinary(AuditLogHoldSchema, entry.value) : undefined;
    };
    await publishUpTo(4200);
    const held = await eventually(
      async () => {
        const value = await hold();
        expect(value).toMatchObject({
          held: true,
          holder: AuditLogHolder.CONSUMER,
          consumer: "stalled",
          keepFromSeq: BigInt(keepFrom),
        });
        return value;
      },
      30_000,
      "the hold named in the bucket",
    );
    expect(held?.reason).toContain("durable consumer stalled has not acknowledged");
    await audit.stdout.waitFor(
      (l) => l.includes('"held_by":"stalled"'),
      5000,
      "the hold in Audit's log",
    );
    // Records wait; nothing the consumer has not read left the log.
    const { state: holding } = await jsm.streams.info(AUDIT_LOG_STREAM);
    expect(holding.first_seq).toBeLessThanOrEqual(keepFrom);
    expect(holding.bytes).toBeLessThanOrEqual(MAX_BYTES);
    expect(Number((await readChainEnds(jsm, holding)).last?.sequence)).toBeLessThan(4200);

    // The consumer catches up: the records waiting are appended.
    const consumer = await bus.nc
      .jetstream(TEST_JS_OPTIONS)
      .consumers.get(AUDIT_LOG_STREAM, "stalled");
    const messages = await consumer.consume({ max_messages: 100 });
    const reading = (async () => {
      for await (const msg of messages) msg.ack();
    })();
    await chained(4200);
    await messages.close();
    await reading;
    await jsm.consumers.delete(AUDIT_LOG_STREAM, "stalled");
    await eventually(async () => expect((await hold())?.held).toBe(false), 10_000, "released");
    expect(await client.verifyChain({}, auditor)).toMatchObject({
      ok: true,
      recordsChecked: 4200n,
    });
  });

  it("continues archiving from the last segment after a restart, and a SIGKILL leaves no half segment", async () => {
    await audit.stop();
    const sealed = await listSegments(archiveDir);
    const last = sealed.at(-1);
    await publishUpTo(4800);
    await start();
    const following = JSON.parse(
      await audit.stdout.waitFor(
        (l) => l.includes("audit archive following the log"),
        30_000,
        "the archive's start line",
      ),
    ) as { from_seq: number; archived_seq: number };
    expect(following.archived_seq).toBe(last?.lastStreamSeq);
    expect(following.from_seq).toBe((last?.lastStreamSeq ?? 0) + 1);
    await chained(4800);

    // Killed while it archives: the segment it was writing is only a temporary file.
    const killing = publishUpTo(5600);
    await audit.stdout.waitFor(
      (l) => l.includes("audit log segment sealed"),
      30_000,
      "a segment sealed after the restart",
    );
    await audit.kill();
    await killing;
    const unsealed = (await readdir(archiveDir)).filter((f) => f.endsWith(".seg.tmp"));
    const afterKill = await verifyArchive(archiveDir);
    expect(afterKill.segments.flatMap((s) => s.problems)).toEqual([]);
    await start();
    await chained(5600);
    const removed = audit.stdout.lines.some((l) => l.includes("removed segments a crash cut"));
    expect(removed).toBe(unsealed.length > 0);
    // What the killed process was writing is gone; only the new one's open segment may be there.
    const left = (await readdir(archiveDir)).filter((f) => f.endsWith(".seg.tmp"));
    expect(left.filter((f) => unsealed.includes(f))).toEqual([]);
    expect(left.length).toBeLessThanOrEqual(1);
    const verdict = await verifyArchive(archiveDir);
    expect(verdict.segments.flatMap((s) => s.problems)).toEqual([]);
    expect(verdict).toMatchObject({ ok: true, missing: [] });
    expect(await client.verifyChain({}, auditor)).toMatchObject({
      ok: true,
      recordsChecked: 5600n,
    });
    expect(await allRecords()).toHaveLength(5600);
  }, 180_000);

  it("rebuilds a deleted index from the archive, then the log", async () => {
    await audit.stop();
    await rm(path.join(bus.dataDir, "audit", "index.sqlite"), { force: true });
    const started = await startAudit(bus, JWT_SECRET, ENV);
    audit = started.audit;
    client = started.client;
    expect(started.opened).toMatchObject({ rebuilt: true, fromSeq: 1, readAtStart: 5600 });
    expect(await allRecords()).toHaveLength(5600);
    const byCall = await client.queryRecords({ callId: "call-7" }, auditor);
    expect(byCall.records.map((r) => r.id)).toEqual(["hist-7"]);
  });

  it("toolmesh audit verify --archive passes offline and names a tampered and a missing segment", async () => {
    const copy = await mkdtemp(path.join(tmpdir(), "toolmesh-archive-copy-"));
    try {
      await cp(archiveDir, copy, { recursive: true });
      const run = async () => {
        try {
          const { stdout } = await execFileAsync(
            process.execPath,
            [
              path.join(repoRoot, "libs/cli/bin/toolmesh.mjs"),
              "audit",
              "verify",
              "--archive",
              copy,
            ],
            { env: { PATH: process.env.PATH, NO_COLOR: "1" }, timeout: 60_000 },
          );
          return { code: 0, stdout };
        } catch (error) {
          return error as { code: number; stdout: string };
        }
      };
      const intact = await run();
      expect(intact.code).toBe(0);
      expect(intact.stdout).toMatch(/intact: \d+ records checked/);
      const segments = await listSegments(copy);
      const tampered = segments[1];
      const gone = segments[3];
      if (!tampered || !gone) throw new Error("the archive has fewer than four segments");
      const bytes = await readFile(tampered.file);
      bytes[100] = (bytes[100] as number) ^ 0x40;
      await writeFile(tampered.file, bytes);
      await rm(gone.file);
      const broken = await run();
      expect(broken.code).toBe(1);
      expect(broken.stdout).toMatch(new RegExp(`${tampered.name}.*checksum does not match`));
      expect(broken.stdout).toContain(
        `missing: stream sequences ${gone.firstStreamSeq}–${gone.lastStreamSeq}`,
      );
      expect(broken.stdout).toMatch(new RegExp(`broken at record \\d+ in ${tampered.name}`));
    } finally {
      await rm(copy, { recursive: true, force: true });
    }
  });
});
