import { randomBytes } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import type { Client } from "@connectrpc/connect";
import { verifyArchive } from "@toolmesh/archive";
import { AuditLogHolder, AuditLogHoldSchema, type AuditService } from "@toolmesh/proto";
import { eventually, type ServiceProcess, TEST_JS_OPTIONS } from "@toolmesh/testkit";
import type { JetStreamManager } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AUDIT_LOG_STREAM } from "../src/audit-log.js";
import {
  type AuditBus,
  bearer,
  lastChained,
  publishHistory,
  startAudit,
  startAuditBus,
} from "./fixtures.js";

const JWT_SECRET = randomBytes(32).toString("hex");
const MAX_BYTES = 256 * 1024;
const TOTAL = 1500;

/** A bus and an Audit whose hot log holds 256 KiB, with these settings on top. */
function smallLog(env: (bus: AuditBus) => Promise<Record<string, string>>) {
  const stack = {} as {
    bus: AuditBus;
    jsm: JetStreamManager;
    audit: ServiceProcess;
    client: Client<typeof AuditService>;
    auditor: { headers: { authorization: string } };
  };
  beforeAll(async () => {
    stack.bus = await startAuditBus();
    stack.jsm = await stack.bus.nc.jetstreamManager();
    ({ audit: stack.audit, client: stack.client } = await startAudit(stack.bus, JWT_SECRET, {
      TOOLMESH_AUDIT_MAX_BYTES: String(MAX_BYTES),
      TOOLMESH_AUDIT_SEGMENT_BYTES: "32KiB",
      TOOLMESH_AUDIT_RETENTION_CHECK_MS: "200",
      ...(await env(stack.bus)),
    }));
    stack.auditor = await bearer(JWT_SECRET, "reviewer", ["auditor"]);
  });
  afterAll(async () => {
    await stack.audit?.stop();
    await stack.bus?.destroy();
  });
  return stack;
}

// The hot log at its byte limit with an archive that cannot write: the log keeps every block,
// appends wait and the hold names the archive and why; once the archive can write, the waiting
// records are appended and nothing is lost.
describe("audit log retention", () => {
  const dirOf = (bus: AuditBus) => path.join(bus.dataDir, "archive");
  const at = smallLog(async (bus) => {
    // A file where the archive directory should be: nothing can be sealed.
    await writeFile(dirOf(bus), "not a directory");
    return { TOOLMESH_AUDIT_ARCHIVE_DIR: dirOf(bus) };
  });

  it("keeps every block while the archive cannot write, names it, and goes on once it can", async () => {
    const { bus, jsm, client, auditor } = at;
    await publishHistory(bus.nc, 0, TOTAL);
    const kv = await bus.nc.jetstream(TEST_JS_OPTIONS).views.kv("toolmesh-audit");
    const hold = async () => {
      const entry = await kv.get("log.hold");
      return entry ? fromBinary(AuditLogHoldSchema, entry.value) : undefined;
    };
    const held = await eventually(
      async () => {
        const value = await hold();
        expect(value).toMatchObject({ held: true, holder: AuditLogHolder.ARCHIVE });
        return value;
      },
      30_000,
      "the archive named as what holds the log",
    );
    expect(held?.reason).toMatch(/block 1 is not archived yet \(.*E(EXIST|NOTDIR)/);
    expect(held?.reason).toContain(dirOf(bus));
    // Nothing left the log; the records that did not fit wait in the input stream.
    const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
    expect(state.first_seq).toBe(1);
    expect(state.bytes).toBeLessThanOrEqual(MAX_BYTES);
    expect(await lastChained(jsm)).toBeLessThan(TOTAL);

    // The archive can write again: it seals what the log holds, and the rest is appended.
    await rm(dirOf(bus));
    await eventually(async () => expect(await lastChained(jsm)).toBe(TOTAL), 60_000, "chained");
    expect((await jsm.streams.info(AUDIT_LOG_STREAM)).state.first_seq).toBeGreaterThan(1);
    expect(await client.verifyChain({}, auditor)).toMatchObject({
      ok: true,
      recordsChecked: BigInt(TOTAL),
    });
    const verdict = await verifyArchive(dirOf(bus));
    expect(verdict.segments.flatMap((s) => s.problems)).toEqual([]);
    expect(verdict).toMatchObject({ ok: true, firstSequence: 1n });
    await eventually(async () => expect((await hold())?.held).toBe(false), 10_000, "released");
  });
});

// Segments past the archive's age limit are deleted once the log no longer holds their blocks,
// and their records leave the index; the chain verifies from the oldest record kept.
describe("archive age limit", () => {
  const at = smallLog(async () => ({ TOOLMESH_AUDIT_ARCHIVE_MAX_AGE_SECONDS: "4" }));

  it("deletes old segments that left the log, prunes their rows, and verifies from the oldest kept", async () => {
    const { bus, jsm, audit, client, auditor } = at;
    await publishHistory(bus.nc, 0, TOTAL);
    const deleted = await audit.stdout.waitFor(
      (l) => l.includes("archive segments past TOOLMESH_AUDIT_ARCHIVE_MAX_AGE_DAYS deleted"),
      30_000,
      "old segments deleted",
    );
    const through = (JSON.parse(deleted) as { through_seq: number }).through_seq;
    const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
    // Only blocks the log had already let go of.
    expect(through).toBeLessThan(state.first_seq);
    // Their records are gone from queries; the newest are there.
    await eventually(
      async () => {
        const res = await client.queryRecords({ callId: "call-0" }, auditor);
        expect(res.records).toHaveLength(0);
      },
      10_000,
      "the rows of deleted segments pruned",
    );
    const newest = await client.queryRecords({ callId: `call-${TOTAL - 1}` }, auditor);
    expect(newest.records).toHaveLength(1);
    const verify = await client.verifyChain({}, auditor);
    expect(verify.ok).toBe(true);
    expect(Number(verify.recordsChecked)).toBeGreaterThan(0);
    expect(Number(verify.recordsChecked)).toBeLessThan(TOTAL);
  });
});
