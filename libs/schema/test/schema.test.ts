import { describe, expect, it } from "vitest";
import {
  canonicalJson,
  compileSchema,
  SchemaCompileError,
  schemaHash,
  ValidatorCache,
} from "../src/index.js";

describe("canonicalJson and schemaHash", () => {
  it("sort keys at every level and ignore key order", () => {
    expect(canonicalJson({ b: 1, a: { d: [2, { z: 1, y: null }], c: "x" } })).toBe(
      '{"a":{"c":"x","d":[2,{"y":null,"z":1}]},"b":1}',
    );
    expect(schemaHash({ type: "object", properties: {} })).toBe(
      schemaHash({ properties: {}, type: "object" }),
    );
  });

  it("tell input from output and an absent output from an empty one", () => {
    const schema = { type: "object" };
    expect(schemaHash(schema)).not.toBe(schemaHash(schema, schema));
    expect(schemaHash(schema, undefined)).not.toBe(schemaHash(schema, {}));
    expect(schemaHash(schema)).toMatch(/^[0-9a-f]{64}$/);
  });
});

describe("compileSchema", () => {
  it("validates with formats", () => {
    const validate = compileSchema({
      type: "object",
      properties: { email: { type: "string", format: "email" } },
      required: ["email"],
    });
    expect(validate({ email: "a@example.com" })).toBe(true);
    expect(validate({ email: "nope" })).toBe(false);
    expect(validate.errors?.[0]?.instancePath).toBe("/email");
  });

  it("refuses what strict mode refuses, with ajv's message", () => {
    expect(() => compileSchema({ type: "object", foo: 1 })).toThrow(SchemaCompileError);
    expect(() => compileSchema({ type: "object", foo: 1 })).toThrow(
      'strict mode: unknown keyword: "foo"',
    );
    expect(() => compileSchema({ type: "object", required: ["x"] })).toThrow(
      'required property "x" is not defined',
    );
  });

  it("compiles what JSON Schema 2020-12 and MCP allow that ajv's lints would refuse", () => {
    const validate = compileSchema({
      type: "object",
      $defs: { address: { $anchor: "addressDef", type: "object" } },
      properties: {
        phone: { type: "string", "x-mcp-header": "Phone" },
        email: { type: "string" },
        address: { $ref: "#/$defs/address" },
      },
      // `required` beside the properties it names, as composition does.
      anyOf: [{ required: ["phone"] }, { required: ["email"] }],
      additionalProperties: false,
    });
    expect(validate({ phone: "1" })).toBe(true);
    expect(validate({})).toBe(false);
  });

  it("compiles two schemas with the same $id independently", () => {
    const a = compileSchema({ $id: "https://x/s", type: "object" });
    const b = compileSchema({ $id: "https://x/s", type: "string" });
    expect(a({})).toBe(true);
    expect(b("s")).toBe(true);
  });
});

describe("ValidatorCache", () => {
  it("compiles once per hash and drops the least recently used", () => {
    const cache = new ValidatorCache(2);
    const s1 = { type: "object" };
    const first = cache.get("h1", s1);
    expect(cache.get("h1", s1)).toBe(first);
    cache.get("h2", { type: "string" });
    cache.get("h1", s1);
    cache.get("h3", { type: "number" });
    expect(cache.size).toBe(2);
    expect(cache.get("h1", s1)).toBe(first);
  });
});

describe("schema patterns run in linear time on RE2", () => {
  it("matches like a RegExp, and a backtracking pattern stays fast on a hostile input", () => {
    const validate = compileSchema({
      type: "object",
      properties: {
        s: { type: "string", pattern: "^(a+)+$" },
        t: { type: "string", pattern: "^\\d{3}-[a-z]+$" },
      },
    });
    expect(validate({ s: "aaaa", t: "123-ab" })).toBe(true);
    expect(validate({ s: "aab", t: "12-ab" })).toBe(false);
    // With a backtracking engine this input takes minutes; RE2 answers at once.
    const hostile = `${"a".repeat(5000)}b`;
    expect(validate({ s: hostile })).toBe(false);
  });

  it("refuses what RE2 cannot run, too long a pattern, and one larger than the engine", () => {
    expect(() => compileSchema({ type: "string", pattern: "(a)\\1" })).toThrow(SchemaCompileError);
    expect(() => compileSchema({ type: "string", pattern: "(?=a)b" })).toThrow(SchemaCompileError);
    expect(() => compileSchema({ type: "string", pattern: "a".repeat(2000) })).toThrow(
      /at most 1024/,
    );
    expect(() => compileSchema({ type: "string", pattern: "[\\p{L}]{1000}" })).toThrow(
      /more memory than the pattern engine allows/,
    );
    // The engine was replaced after that; patterns still work.
    expect(compileSchema({ type: "string", pattern: "^x+$" })("xx")).toBe(true);
  });

  it("keeps working past the number of patterns it holds compiled", () => {
    const validators = Array.from({ length: 600 }, (_, i) =>
      compileSchema({ type: "string", pattern: `^p${i}-[a-z]{1,20}$` }),
    );
    for (const [i, validate] of validators.entries()) {
      expect(validate(`p${i}-abc`)).toBe(true);
      expect(validate(`p${i}-ABC`)).toBe(false);
    }
  });
});
