import { describe, expect, it } from "vitest";
import {
  kvKeyToken,
  subjects,
  subjectToken,
  subjectTokenDecode,
  TRACE_SHARDS,
  traceShard,
} from "../src/index.js";

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

  it("files trace events under a bounded set of shards, hostile ids included", () => {
    const shards = new Set<string>();
    for (let i = 0; i < 20_000; i++)
      shards.add(subjects.trace("dispatcher", `${i.toString(16)}.>*`));
    expect(shards.size).toBe(TRACE_SHARDS);
    for (const s of shards) expect(s).toMatch(/^toolmesh\.trace\.dispatcher\.[0-9a-f]{2}$/);
    const id = "4bf92f3577b34da6a3ce929d0e0e4736";
    expect(subjects.traceEvents(id)).toBe(`toolmesh.trace.*.${traceShard(id)}`);
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
