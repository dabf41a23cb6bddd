import { randomBytes } from "node:crypto";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { publishEvent, subjects } from "@toolmesh/nats";
import { type AuditRecord, AuditRecordSchema, AuditService } from "@toolmesh/proto";
import { eventually, type ServiceProcess, startService, TEST_JS_OPTIONS } from "@toolmesh/testkit";
import type { NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUDIT_LOG_STREAM } from "../src/audit-log.js";
import { readChainEnds } from "../src/log-ends.js";
import { type AuditBus, bearer, historyRecord, startAuditBus } from "./fixtures.js";

const JWT_SECRET = randomBytes(32).toString("hex");
const MAX_BYTES = 64 * 1024;
const TOTAL = 800;

// A tiny byte limit on the audit log: the operator is warned before it is reached, records past
// it are dropped oldest first and reported, and the chain still verifies from the oldest kept.
describe("audit log retention", () => {
  let bus: AuditBus;
  let nc: NatsConnection;
  let audit: ServiceProcess;
  let client: Client<typeof AuditService>;
  let auditor: { headers: { authorization: string } };

  beforeAll(async () => {
    bus = await startAuditBus();
    nc = bus.nc;
    audit = await startService("audit", {
      NATS_URL: bus.nats.url,
      TOOLMESH_DATA_DIR: bus.dataDir,
      TOOLMESH_AUDIT_PORT: "0",
      TOOLMESH_JWT_SECRET: JWT_SECRET,
      TOOLMESH_AUDIT_MAX_BYTES: String(MAX_BYTES),
      TOOLMESH_AUDIT_BYTES_WARN_PERCENT: "50",
      TOOLMESH_AUDIT_RETENTION_CHECK_MS: "100",
    });
    client = createClient(AuditService, createGrpcTransport({ baseUrl: audit.url }));
    auditor = await bearer(JWT_SECRET, "reviewer", ["auditor"]);
  });

  afterAll(async () => {
    await audit?.stop();
    await bus?.destroy();
  });

  /** Publishes records into the audit input stream, as the Dispatcher does. */
  const publish = async (from: number, to: number) => {
    const js = nc.jetstream(TEST_JS_OPTIONS);
    for (let i = from; i < to; i++) {
      const r = historyRecord(i, Date.now());
      await publishEvent(
        js,
        subjects.audit("dispatcher", r.agentId, r.tool),
        AuditRecordSchema,
        r,
        {
          msgId: r.id,
        },
      );
    }
  };

  it("warns before the byte limit, reports dropped records, and still verifies the chain", async () => {
    const jsm = await nc.jetstreamManager();
    const warned = audit.stdout.waitFor(
      (l) => l.includes("of TOOLMESH_AUDIT_MAX_BYTES"),
      60_000,
      "the byte-limit warning",
    );
    const dropped = audit.stdout.waitFor(
      (l) => l.includes('"audit records dropped'),
      60_000,
      "the dropped-records error",
    );
    // Well under the limit: no warning yet.
    await publish(0, 40);
    await waitForStored(jsm, 40);
    expect(audit.stdout.lines.some((l) => l.includes("of TOOLMESH_AUDIT_MAX_BYTES"))).toBe(false);
    // Up to about 70% of the limit: warned, nothing dropped.
    const perRecord = (await jsm.streams.info(AUDIT_LOG_STREAM)).state.bytes / 40;
    const nearly = Math.floor((0.7 * MAX_BYTES) / perRecord);
    await publish(40, nearly);
    const warning = JSON.parse(await warned) as Record<string, unknown>;
    expect(warning).toMatchObject({
      level: "warn",
      maxBytes: MAX_BYTES,
      nearByteLimit: true,
      droppedByBytes: 0,
      firstSeq: 1,
    });
    expect(warning.usedRatio as number).toBeGreaterThanOrEqual(0.5);
    expect(warning.usedRatio as number).toBeLessThan(1);

    // Past the limit: the oldest records go, and that is reported as an error.
    await publish(nearly, TOTAL);
    await waitForStored(jsm, TOTAL);
    expect(JSON.parse(await dropped)).toMatchObject({ level: "error", max_bytes: MAX_BYTES });
    const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
    // Stream sequences count messages (blocks); the chain's sequences count records.
    const ends = await readChainEnds(jsm, state);
    const first = Number(ends.first?.sequence);
    expect(first).toBeGreaterThan(1);
    expect(Number(ends.last?.sequence)).toBe(TOTAL);
    expect(state.bytes).toBeLessThanOrEqual(MAX_BYTES);
    // Trimmed records are not a break: the chain verifies from the oldest kept record.
    const verify = await client.verifyChain({}, auditor);
    expect(verify).toMatchObject({ ok: true });
    expect(Number(verify.recordsChecked)).toBe(TOTAL - first + 1);
    // Every record dropped is counted, in records, once the next check has seen the last drop.
    await eventually(
      async () => {
        const reports = audit.stdout.lines.filter((l) => l.includes('"audit records dropped'));
        const latest = JSON.parse(reports.at(-1) ?? "{}") as { dropped_by_bytes?: number };
        expect(latest.dropped_by_bytes).toBe(first - 1);
      },
      30_000,
      "every dropped record reported",
    );
    // Queries answer only what the log keeps, once the index has dropped the trimmed rows.
    const kept = await eventually(
      async () => {
        const all = await allRecords();
        expect(all.at(-1)?.sequence).toBe(BigInt(first));
        // The newest rows may still be on their way into the index.
        expect(all).toHaveLength(TOTAL - first + 1);
        return all;
      },
      30_000,
      "trimmed records gone from the index and the newest ones in it",
    );
    expect(kept).toHaveLength(TOTAL - first + 1);
    expect(kept[0]?.sequence).toBe(BigInt(TOTAL));
  });

  const allRecords = async () => {
    const out: AuditRecord[] = [];
    let pageToken = "";
    do {
      const res = await client.queryRecords({ pageSize: 1000, pageToken }, auditor);
      out.push(...res.records);
      pageToken = res.nextPageToken;
    } while (pageToken);
    return out;
  };
});

async function waitForStored(
  jsm: Awaited<ReturnType<NatsConnection["jetstreamManager"]>>,
  count: number,
) {
  await eventually(
    async () => {
      const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
      const { last } = await readChainEnds(jsm, state);
      expect(Number(last?.sequence ?? 0)).toBeGreaterThanOrEqual(count);
    },
    30_000,
    `${count} records chained`,
  );
}
