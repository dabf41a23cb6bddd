import { randomBytes } from "node:crypto";
import { rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { Client } from "@connectrpc/connect";
import { ensureStream } from "@toolmesh/nats";
import type { AuditService } from "@toolmesh/proto";
import type { ServiceProcess } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { auditLogStream } from "../src/audit-log.js";
import type { IndexStart } from "../src/index-follower.js";
import {
  AGENTS,
  type AuditBus,
  appendHistory,
  bearer,
  type ChainHead,
  startAudit,
  startAuditBus,
  TOOLS,
} from "./fixtures.js";

const JWT_SECRET = randomBytes(32).toString("hex");
const HISTORY = 100_000;
const LATER = 25;
const DAY_MS = 24 * 60 * 60 * 1000;

/** How many of the first `n` history records have agent-1, data.query and a time in [from, to). */
function expectedMatches(n: number, t0: number, from: number, to: number): number {
  let count = 0;
  for (let i = 0; i < n; i++) {
    const time = t0 + i * 1000;
    if (i % AGENTS === 1 && TOOLS[i % 2] === "data.query" && time >= from && time < to) count++;
  }
  return count;
}

// A restart continues the SQLite index from its checkpoint; a missing or unreadable index is
// rebuilt from the log stream. History is appended straight into the log stream, chained.
describe("audit index across restarts", () => {
  let bus: AuditBus;
  let audit: ServiceProcess | undefined;
  let client: Client<typeof AuditService>;
  let auditor: { headers: { authorization: string } };
  let head: ChainHead = { sequence: 0n, hash: "" };
  const t0 = Date.now() - 30 * DAY_MS;
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
  /** Agent-1's data.query records in a 10-hour window mid-history, paged through. */
  const windowQuery = async () => {
    const from = t0 + 10 * 60 * 60 * 1000;
    const to = from + 10 * 60 * 60 * 1000;
    const ids: string[] = [];
    let pageToken = "";
    do {
      const res = await client.queryRecords(
        {
          agentId: "agent-1",
          tool: "data.query",
          startTime: timestampFromMs(from),
          endTime: timestampFromMs(to),
          pageSize: 1000,
          pageToken,
        },
        auditor,
      );
      ids.push(...res.records.map((r) => r.id));
      pageToken = res.nextPageToken;
    } while (pageToken);
    return { ids, expected: expectedMatches(HISTORY + LATER, t0, from, to) };
  };

  beforeAll(async () => {
    bus = await startAuditBus();
    const jsm = await bus.nc.jetstreamManager();
    await ensureStream(jsm, auditLogStream({ replicas: 1, maxBytes: 0 }));
    head = await appendHistory(bus.nc.jetstream(), head, 0, HISTORY, t0);
    auditor = await bearer(JWT_SECRET, "reviewer", ["auditor"]);
  }, 240_000);

  afterAll(async () => {
    await audit?.stop();
    await bus?.destroy();
  });

  it(`builds the index once, then a restart reads only the ${LATER} records after its checkpoint`, async () => {
    const first = await start();
    expect(first).toMatchObject({ rebuilt: true, reason: "missing", readAtStart: HISTORY });
    await stop();

    // Records another instance appended while this one was down.
    head = await appendHistory(bus.nc.jetstream(), head, HISTORY, HISTORY + LATER, t0);
    const second = await start();
    expect(second).toMatchObject({
      rebuilt: false,
      fromSeq: HISTORY + 1,
      targetSeq: HISTORY + LATER,
      readAtStart: LATER,
    });
    const { ids, expected } = await windowQuery();
    expect(expected).toBeGreaterThan(0);
    expect(ids).toHaveLength(expected);
    expect(new Set(ids).size).toBe(expected);
    const latest = await client.queryRecords({ callId: `call-${HISTORY + LATER - 1}` }, auditor);
    expect(latest.records.map((r) => r.sequence)).toEqual([BigInt(HISTORY + LATER)]);
    const byTrace = await client.queryRecords(
      { traceId: (HISTORY + 1).toString(16).padStart(32, "0") },
      auditor,
    );
    expect(byTrace.records.map((r) => r.id)).toEqual([`hist-${HISTORY}`]);
    expect(await client.verifyChain({ fromSequence: BigInt(HISTORY - 10) }, auditor)).toMatchObject(
      { ok: true, recordsChecked: BigInt(LATER + 11) },
    );
  });

  it("rebuilds a deleted index from the log stream, and answers the same", async () => {
    const before = await windowQuery();
    await stop();
    await rm(indexFile());
    const rebuilt = await start();
    expect(rebuilt).toMatchObject({
      rebuilt: true,
      reason: "missing",
      readAtStart: HISTORY + LATER,
    });
    expect(await windowQuery()).toEqual(before);
  });

  it("rebuilds an index file that is not a database", async () => {
    const before = await windowQuery();
    await stop();
    const size = (await stat(indexFile())).size;
    await writeFile(indexFile(), randomBytes(Math.min(size, 1 << 20)));
    const rebuilt = await start();
    expect(rebuilt).toMatchObject({
      rebuilt: true,
      reason: "unreadable",
      readAtStart: HISTORY + LATER,
    });
    expect(await windowQuery()).toEqual(before);
  });
});
