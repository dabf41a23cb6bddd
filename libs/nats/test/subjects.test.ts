import { describe, expect, it } from "vitest";
import { kvKeyToken, subjects, subjectToken, subjectTokenDecode } from "../src/index.js";

describe("subject tokens", () => {
  it("keeps plain names readable", () => {
    expect(subjects.callback("SUCCESS", "search_web")).toBe("toolmesh.callback.SUCCESS.search_web");
  });

  it("escapes dots, wildcards and spaces so a name cannot widen a subscription", () => {
    for (const hostile of ["data.query", "*", ">", "a b", "x.>", "%00", "ünï", "tab\there"]) {
      const token = subjectToken(hostile);
      expect(token).toMatch(/^[A-Za-z0-9_%-]+$/);
      expect(subjectTokenDecode(token)).toBe(hostile);
    }
  });

  it("files record batches under one subject a source, whatever the calls in them", () => {
    expect(subjects.records("dispatcher")).toBe("toolmesh.records.dispatcher");
    expect(subjects.allRecords).toBe("toolmesh.records.>");
    // A tool's broadcasts, whatever their status, escaped like any name.
    expect(subjects.callbacksOf("data.query")).toBe("toolmesh.callback.*.data%2Equery");
  });

  it("gives the empty string a token of its own", () => {
    expect(subjectTokenDecode(subjectToken(""))).toBe("");
    expect(subjectToken("")).not.toBe(subjectToken("%00"));
  });

  it("escapes KV key tokens reversibly and without dots", () => {
    expect(kvKeyToken("agent-1")).toBe("agent-1");
    expect(kvKeyToken("a.b=c")).toBe("a=2Eb=3Dc");
    expect(kvKeyToken("")).toBe("=00");
  });

  it("escapes every UTF-8 byte of a character outside the kept set, astral ones whole", () => {
    // Keys and subjects already stored were escaped byte by byte: the same input gives the same
    // token, or a stored name would no longer be found.
    expect(subjectToken("a.é😀")).toBe("a%2E%C3%A9%F0%9F%98%80");
    expect(kvKeyToken("a.é😀")).toBe("a=2E=C3=A9=F0=9F=98=80");
    // A lone surrogate is not valid UTF-16: UTF-8 has U+FFFD for it, as TextEncoder writes.
    expect(subjectToken("x\ud800")).toBe("x%EF%BF%BD");
    expect(subjectToken("\u0000\u007f")).toBe("%00%7F");
  });
});
