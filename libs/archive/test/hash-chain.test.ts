import { create } from "@bufbuild/protobuf";
import { type AuditRecord, AuditRecordSchema } from "@toolmesh/proto";
import { canonicalJson } from "@toolmesh/schema";
import { describe, expect, it } from "vitest";
import { recordHash, verifyRecords } from "../src/hash-chain.js";

function chain(count: number): AuditRecord[] {
  const out: AuditRecord[] = [];
  let prevHash = "";
  for (let i = 1; i <= count; i++) {
    const r = create(AuditRecordSchema, {
      id: `r${i}`,
      tool: "t",
      agentId: "a",
      arguments: { b: 1, a: [1, { z: 2, y: 3 }] },
      sequence: BigInt(i),
      prevHash,
    });
    r.hash = recordHash(r);
    prevHash = r.hash;
    out.push(r);
  }
  return out;
}

describe("hash chain", () => {
  it("hashes the canonical record, independent of key order", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, 1], c: null } })).toBe(
      '{"a":{"c":null,"d":[2,1]},"b":1}',
    );
    const a = create(AuditRecordSchema, { id: "x", arguments: { p: 1, q: 2 } });
    const b = create(AuditRecordSchema, { id: "x", arguments: { q: 2, p: 1 } });
    expect(recordHash(a)).toBe(recordHash(b));
    expect(recordHash(a)).toMatch(/^[0-9a-f]{64}$/);
    expect(recordHash({ ...a, hash: "anything" })).toBe(recordHash(a));
  });

  it("verifies an intact chain, and one that starts after expired records", () => {
    expect(verifyRecords(chain(5))).toEqual({ checked: 5 });
    expect(verifyRecords(chain(5).slice(2))).toEqual({ checked: 3 });
  });

  it("reports an altered, a removed and a re-pointed record", () => {
    const altered = chain(5);
    (altered[2] as AuditRecord).agentId = "someone-else";
    expect(verifyRecords(altered).break).toMatchObject({
      sequence: 3n,
      reason: expect.stringContaining("altered"),
    });

    const removed = chain(5);
    removed.splice(2, 1);
    expect(verifyRecords(removed).break).toMatchObject({
      sequence: 4n,
      reason: "records 3 to 3 are missing",
    });

    const repointed = chain(5);
    const r = repointed[3] as AuditRecord;
    r.prevHash = "0".repeat(64);
    r.hash = recordHash(r);
    expect(verifyRecords(repointed).break).toMatchObject({
      sequence: 4n,
      expectedHash: (repointed[2] as AuditRecord).hash,
      actualHash: "0".repeat(64),
    });
  });
});
