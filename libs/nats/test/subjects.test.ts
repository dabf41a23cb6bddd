import { describe, expect, it } from "vitest";
import {
  ID_SHARDS,
  idShard,
  kvKeyToken,
  subjects,
  subjectToken,
  subjectTokenDecode,
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

  it("files trace events and outcomes under a bounded set of shards, hostile ids included", () => {
    const traces = new Set<string>();
    const outcomes = new Set<string>();
    for (let i = 0; i < 20_000; i++) {
      traces.add(subjects.trace("dispatcher", `${i.toString(16)}.>*`));
      outcomes.add(subjects.outcome("callback", `call ${i}.*`));
    }
    expect(traces.size).toBe(ID_SHARDS);
    expect(outcomes.size).toBe(ID_SHARDS);
    for (const s of traces) expect(s).toMatch(/^toolmesh\.trace\.dispatcher\.[0-9a-f]{2}$/);
    for (const s of outcomes) expect(s).toMatch(/^toolmesh\.outcome\.callback\.[0-9a-f]{2}$/);
    const id = "4bf92f3577b34da6a3ce929d0e0e4736";
    expect(subjects.traceEvents(id)).toBe(`toolmesh.trace.*.${idShard(id)}`);
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
