import { Code, ConnectError } from "@toolmesh/errors";
import { describe, expect, it } from "vitest";
import { pageTokens } from "../src/page-token.js";

const pages = pageTokens({
  defaultSize: 10,
  maxSize: 100,
  position: /^[\x21-\x7e]{1,40}$/,
  maxPositionLength: 40,
});

const refusal = (run: () => unknown): ConnectError => {
  try {
    run();
  } catch (error) {
    return ConnectError.from(error);
  }
  throw new Error("expected a refusal");
};

describe("page tokens", () => {
  it("hands back the position of any token it issued, the longest included", () => {
    const f = pages.fingerprint(["agent-1", 3]);
    // `"` and `\` take two characters each in the token's JSON: the worst case of the bound.
    for (const position of ["a", '"\\'.repeat(20), "~".repeat(40)])
      expect(pages.decode(pages.encode(position, f), f)).toBe(position);
    expect(pages.decode("", f)).toBe("");
  });

  it("refuses a token for other filters, an oversized one and garbage with INVALID_ARGUMENT", () => {
    const token = pages.encode("p-7", pages.fingerprint(["agent-1"]));
    const other = refusal(() => pages.decode(token, pages.fingerprint(["agent-2"])));
    expect(other.code).toBe(Code.InvalidArgument);
    expect(other.rawMessage).toContain("page_token: was issued for different filters");
    const forged = Buffer.from(JSON.stringify({ p: "x".repeat(41), f: "" })).toString("base64url");
    for (const garbage of ["A".repeat(1_000_000), "not a token!", "e30", forged]) {
      const bad = refusal(() => pages.decode(garbage, pages.fingerprint(["agent-1"])));
      expect(bad.code).toBe(Code.InvalidArgument);
      expect(bad.rawMessage).toMatch(/^page_token: malformed page token; pass the next_page_token/);
    }
  });

  it("never issues a token it would refuse", () => {
    expect(() => pages.encode("x".repeat(41), "f")).toThrow(/out of shape/);
    expect(() => pages.encode("with space", "f")).toThrow(/out of shape/);
  });

  it("bounds page sizes", () => {
    expect(pages.pageSize(0)).toBe(10);
    expect(refusal(() => pages.pageSize(101)).rawMessage).toBe(
      "page_size: is 101; at most 100 allowed",
    );
  });
});
