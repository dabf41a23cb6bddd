import { createRequire } from "node:module";
import { describe, expect, it } from "vitest";
import { compileSchema, SchemaCompileError } from "../src/index.js";

// A file of its own: the pattern engine is loaded once per process, and this checks when.
const engineLoaded = () =>
  Object.keys(createRequire(import.meta.url).cache).some((id) => id.includes("re2-wasm"));

describe("the pattern engine is loaded by the first pattern of a schema", () => {
  it("is not loaded by schemas without a pattern, though the meta-schema has two", () => {
    const validate = compileSchema({
      $id: "https://example.test/tool#",
      type: "object",
      properties: { name: { type: "string" }, n: { type: "integer" } },
    });
    expect(validate({ name: "x", n: 1 })).toBe(true);
    // The meta-schema's own patterns still check what they check: an $id with a fragment is refused.
    expect(() => compileSchema({ $id: "https://example.test/a#frag", type: "string" })).toThrow(
      SchemaCompileError,
    );
    expect(engineLoaded()).toBe(false);

    expect(compileSchema({ type: "string", pattern: "^(a+)+$" })("aaa")).toBe(true);
    expect(engineLoaded()).toBe(true);
  });
});
