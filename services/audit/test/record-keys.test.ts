import { randomUUID } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createLogger } from "@toolmesh/log";
import { idKey, newCallId, newTraceId } from "@toolmesh/names";
import { AuditAction } from "@toolmesh/proto";
import { recordKey } from "@toolmesh/records";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RecordIndex } from "../src/record-index.js";
import type { IndexRow } from "../src/record-mapping.js";

const row = (seq: number, callId: string, recordId: string = randomUUID()): IndexRow => ({
  seq,
  blockSeq: seq,
  pos: 0,
  timeMs: Date.now(),
  agentId: "agent-1",
  userId: "",
  tool: "data.query",
  status: 1,
  traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
  callId,
  recordId,
  starts: false,
  hash: `h${seq}`,
  data: new Uint8Array([seq]),
});

describe("keys of the audit index", () => {
  let dir: string;
  let index: RecordIndex;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "toolmesh-keys-"));
    ({ index } = await RecordIndex.open(
      path.join(dir, "index.sqlite"),
      createLogger("audit-test", "silent"),
    ));
  });
  afterAll(async () => {
    index?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("keys the Dispatcher's call ids in the order they were made, within 53 bits", () => {
    const t = Date.UTC(2026, 10, 26);
    const keys = [0, 1, 2, 60_000, 86_400_000].map((d) => idKey(newCallId(t + d)));
    expect([...keys].sort((a, b) => a - b)).toEqual(keys);
    for (const k of keys) expect(Number.isSafeInteger(k) && k >= 0).toBe(true);
    // Ids a caller chose, and random ids, are hashed as before.
    expect(idKey("my-call")).toBe(idKey("my-call"));
    expect(Number.isSafeInteger(idKey(randomUUID()))).toBe(true);
  });

  it("finds records by call id whichever way the id is keyed, and tells same-key ids apart", () => {
    const made = newCallId();
    const sibling = `${made.slice(0, 18)}${made.slice(18).replace(/[0-9a-f]$/, (c: string) => (c === "0" ? "1" : "0"))}`;
    expect(idKey(sibling)).toBe(idKey(made));
    const chosen = `chosen-${randomUUID()}`;
    index.add([row(1, made, "r1"), row(2, chosen, "r2"), row(3, sibling, "r3")], 3, "h3");
    expect(index.has("r1", made)).toBe(true);
    expect(index.has("r3", made)).toBe(false);
    expect(index.has("r2", chosen)).toBe(true);
    const query = (callId: string) =>
      index
        .query(
          {
            agentId: "",
            userId: "",
            tool: "",
            status: 0,
            traceId: "",
            callId,
            startMs: undefined,
            endMs: undefined,
          },
          0,
          10,
        )
        .rows.map((r) => r.seq);
    expect(query(made)).toEqual([1]);
    expect(index.recordsOfTrace("4bf92f3577b34da6a3ce929d0e0e4736", 10)).toHaveLength(3);
    expect(index.recordsOfTrace(newTraceId(), 10)).toEqual([]);
    expect(query(sibling)).toEqual([3]);
    expect(query(chosen)).toEqual([2]);
  });

  it("knows a call's start as stored when it was chained with its end, not when its end was alone", () => {
    const merged = newCallId();
    const alone = newCallId();
    const key = (callId: string, action: AuditAction) => recordKey({ id: "", callId, action });
    index.add(
      [
        { ...row(10, merged, key(merged, AuditAction.TOOL_CALL)), starts: true },
        row(11, alone, key(alone, AuditAction.TOOL_CALL)),
      ],
      11,
      "h11",
    );
    expect(index.has(key(merged, AuditAction.TOOL_START), merged)).toBe(true);
    expect(index.has(key(merged, AuditAction.TOOL_CALL), merged)).toBe(true);
    // An end chained before its start (a batch delivered again after a fault): the start is not.
    expect(index.has(key(alone, AuditAction.TOOL_START), alone)).toBe(false);
    expect(index.hasEnd(alone)).toBe(true);
  });

  it("looks a run of records up in one read transaction, nested or not, and leaves none open", () => {
    const callId = newCallId();
    index.add([row(100, callId, "together-1")], 100, "h100");
    const found = index.readTogether(() => [
      index.has("together-1", callId),
      index.readTogether(() => index.has("together-2", callId)),
    ]);
    expect(found).toEqual([true, false]);
    expect(() =>
      index.readTogether(() => {
        throw new Error("a bad batch");
      }),
    ).toThrow("a bad batch");
    // A transaction left open would make the next write fail ("within a transaction").
    index.add([row(101, callId, "together-2")], 101, "h101");
    expect(index.readTogether(() => index.has("together-2", callId))).toBe(true);
  });
});
