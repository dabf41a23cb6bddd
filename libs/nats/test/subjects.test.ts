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
});
