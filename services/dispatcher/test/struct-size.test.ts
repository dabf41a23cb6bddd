import { fromJson, type JsonObject, type JsonValue, toBinary } from "@bufbuild/protobuf";
import { StructSchema } from "@bufbuild/protobuf/wkt";
import { describe, expect, it } from "vitest";
import { structSize } from "../src/chain/struct-size.js";

/** What the records carry: protobuf-es's own encoding of the object as a Struct. */
const encoded = (object: JsonObject) =>
  toBinary(StructSchema, fromJson(StructSchema, object)).length;

/** A random JSON value from a seeded generator, so a failure names a reproducible case. */
function randomValue(next: () => number, depth: number): JsonValue {
  const kind = Math.floor(next() * (depth > 3 ? 4 : 6));
  const text = () =>
    Array.from({ length: Math.floor(next() * 200) }, () =>
      String.fromCodePoint([0x41, 0xe9, 0x4e2d, 0x1f600, 0xd800][Math.floor(next() * 5)] ?? 0x41),
    ).join("");
  switch (kind) {
    case 0:
      return null;
    case 1:
      return [0, -1, 1.5, 1e300, -0][Math.floor(next() * 5)] ?? 0;
    case 2:
      return text();
    case 3:
      return next() < 0.5;
    case 4:
      return Array.from({ length: Math.floor(next() * 6) }, () => randomValue(next, depth + 1));
    default:
      return randomObject(next, depth + 1, text);
  }
}

function randomObject(next: () => number, depth: number, text: () => string): JsonObject {
  const object: JsonObject = {};
  for (let i = Math.floor(next() * 6); i > 0; i--) object[text()] = randomValue(next, depth);
  return object;
}

function seeded(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

describe("structSize", () => {
  it("counts what protobuf-es encodes for edge values", () => {
    const cases: JsonObject[] = [
      {},
      { "": "" },
      { n: 0, f: false, z: null, e: [], o: {} },
      { long: "x".repeat(200_000) },
      { unicode: "é中😀", lone: "\ud800" },
      { nested: { a: [1, [2, [3, { b: "c" }]]] } },
      Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`key${i}`, i])),
    ];
    for (const object of cases) expect(structSize(object)).toBe(encoded(object));
  });

  it("counts what protobuf-es encodes for 500 random objects", () => {
    const next = seeded(25);
    for (let i = 0; i < 500; i++) {
      const object = randomObject(next, 0, () => "k");
      expect(structSize(object), JSON.stringify(object).slice(0, 200)).toBe(encoded(object));
    }
  });
});
