import { create, equals, fromBinary, toBinary } from "@bufbuild/protobuf";
import { BinaryWriter, WireType } from "@bufbuild/protobuf/wire";
import { expectedHash, recordHashV2 } from "@toolmesh/archive";
import { createSecretRedactor } from "@toolmesh/log";
import { TYPE_HEADER } from "@toolmesh/nats";
import { type AuditRecord, AuditRecordSchema, RecordBatchSchema } from "@toolmesh/proto";
import { encodeRecords } from "@toolmesh/records";
import type { JsMsg } from "nats";
import { describe, expect, it } from "vitest";
import { chainedRecordBytes, sameJson } from "../src/record-encoding.js";
import { recordsToChain } from "../src/record-mapping.js";
import { historyRecord } from "./fixtures.js";

const SECRET = "hunter2-very-secret";
const STORED_AT_MS = 1_700_000_123_456;
const redact = createSecretRedactor([]);

/** A message of the record stream: a batch of these records, as the consumer hands it over. */
function inputMessage(records: Uint8Array[]): JsMsg {
  return {
    data: encodeRecords(records),
    subject: "toolmesh.records.dispatcher",
    headers: { get: (name: string) => (name === TYPE_HEADER ? RecordBatchSchema.typeName : "") },
    seq: 7,
    info: { timestampNanos: STORED_AT_MS * 1e6 },
  } as unknown as JsMsg;
}

/** Chains what the recorder received the way it does, and returns the stored bytes. */
function chain(sent: Uint8Array): { record: AuditRecord; stored: Uint8Array } {
  const [received] = recordsToChain(inputMessage([sent]), redact);
  const { record, body } = received as { record: AuditRecord; body: Uint8Array };
  record.sequence = 42n;
  record.prevHash = "ab".repeat(32);
  record.hash = recordHashV2(record.sequence, record.prevHash, body);
  return { record, stored: chainedRecordBytes(body, record) };
}

const cases: [string, () => Uint8Array][] = [
  ["a record with nothing to redact", () => toBinary(AuditRecordSchema, historyRecord(1, 0))],
  [
    "a record with secrets under keys and in values",
    () =>
      toBinary(
        AuditRecordSchema,
        create(AuditRecordSchema, {
          ...historyRecord(2, 0),
          arguments: {
            password: SECRET,
            nested: { list: [{ API_KEY: SECRET }, `Bearer ${SECRET}`], keep: "visible" },
            ["__proto__"]: { token: SECRET },
          },
        }),
      ),
  ],
  [
    "a record without id and time",
    () => toBinary(AuditRecordSchema, create(AuditRecordSchema, { tool: "t", agentId: "a" })),
  ],
  [
    "a record whose publisher set chain fields",
    () =>
      toBinary(
        AuditRecordSchema,
        create(AuditRecordSchema, {
          ...historyRecord(3, 0),
          sequence: 99n,
          prevHash: SECRET,
          hash: SECRET,
        }),
      ),
  ],
  [
    "a record with a field this version does not know",
    () => {
      const known = toBinary(AuditRecordSchema, historyRecord(4, 0));
      const unknown = new BinaryWriter().tag(99, WireType.LengthDelimited).string("later").finish();
      return new Uint8Array([...unknown, ...known]);
    },
  ],
];

describe("stored record bytes", () => {
  it.each(cases)("%s decodes to the chained record and verifies", (_, sent) => {
    const { record, stored } = chain(sent());
    const decoded = fromBinary(AuditRecordSchema, stored);
    expect(equals(AuditRecordSchema, decoded, record)).toBe(true);
    expect(toBinary(AuditRecordSchema, decoded)).toEqual(toBinary(AuditRecordSchema, record));
    expect(expectedHash(decoded, stored)).toBe(record.hash);
    expect(Buffer.from(stored).includes(SECRET)).toBe(false);
  });

  it("redacts, and fills in the id and time the publisher left out", () => {
    const secret = chain(cases[1]?.[1]() as Uint8Array).record;
    expect(secret.arguments).toEqual({
      password: "[redacted]",
      nested: { list: [{ API_KEY: "[redacted]" }, "[redacted]"], keep: "visible" },
      ["__proto__"]: { token: "[redacted]" },
    });
    const bare = chain(cases[2]?.[1]() as Uint8Array).record;
    expect(bare.id).toBe("audit-seq-7");
    expect(Number(bare.time?.seconds) * 1000 + Math.floor((bare.time?.nanos ?? 0) / 1e6)).toBe(
      STORED_AT_MS,
    );
  });

  it("writes the chain fields as toBinary does", () => {
    const record = historyRecord(5, 0);
    const body = toBinary(AuditRecordSchema, record);
    for (const sequence of [1n, 300n, 2n ** 40n]) {
      Object.assign(record, { sequence, prevHash: "é".repeat(70), hash: "f".repeat(64) });
      expect(chainedRecordBytes(body, record)).toEqual(toBinary(AuditRecordSchema, record));
    }
    Object.assign(record, { sequence: 0n, prevHash: "", hash: "" });
    expect(chainedRecordBytes(body, record)).toEqual(body);
  });

  it("compares JSON values, unequal when in doubt", () => {
    expect(sameJson({ a: [1, { b: null }] }, { a: [1, { b: null }] })).toBe(true);
    expect(sameJson({ a: 1 }, { a: 1, b: undefined })).toBe(false);
    expect(sameJson([1, 2], { 0: 1, 1: 2 })).toBe(false);
    expect(sameJson({ a: "x" }, { a: "[redacted]" })).toBe(false);
    expect(sameJson(Number.NaN, Number.NaN)).toBe(false);
  });
});
