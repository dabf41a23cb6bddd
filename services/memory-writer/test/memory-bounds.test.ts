import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { publishEvent, streamNames, subjects } from "@toolmesh/nats";
import { type CallbackEvent, CallbackEventSchema, CallStatus } from "@toolmesh/proto";
import {
  consumerDrained,
  type OneService,
  type ServiceProcess,
  startOneService,
} from "@toolmesh/testkit";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { MemoryEntry } from "../src/entries.js";
import {
  agentDirName,
  agentFiles,
  agentMemoryDir,
  dayOf,
  memoryFileName,
  readAgentMemory,
} from "../src/layout.js";
import { MEMORY_CONSUMER } from "../src/writer.js";

const callEvent = (callId: string, agentId: string, output: Record<string, unknown> = {}) =>
  create(CallbackEventSchema, {
    callId,
    traceId: randomBytes(16).toString("hex"),
    tool: "data.query",
    agentId,
    userId: "user-1",
    status: CallStatus.SUCCESS,
    output: { ok: true, ...output },
    durationMs: 1,
    attempts: 1,
    time: timestampFromMs(Date.now()),
  });

const entriesOf = (text: string) =>
  text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as MemoryEntry);

describe("memory writer bounds", () => {
  let bus: OneService;
  let dataDir: string;
  let writer: ServiceProcess | undefined;

  const start = (env: Record<string, string> = {}, timeoutMs?: number) =>
    bus.start({ TOOLMESH_DATA_DIR: dataDir, ...env }, timeoutMs ? { timeoutMs } : {});
  const publish = (e: CallbackEvent, msgId = e.callId) =>
    publishEvent(bus.js, subjects.callback("success", e.tool), CallbackEventSchema, e, {
      msgId,
    });
  /** Resolves once memory-writer has acked every event published so far. */
  const drained = () => consumerDrained(bus.jsm, streamNames.callback, MEMORY_CONSUMER, 60_000);

  beforeAll(async () => {
    bus = await startOneService("memory-writer", {
      streams: ["callback"],
      readyPattern: '"msg":"ready"',
      started: false,
    });
  });
  afterEach(async () => {
    await writer?.stop();
    writer = undefined;
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });
  afterAll(async () => {
    await bus?.stop();
  });

  it("starts on a file of 100,000 calls by reading its tail, and still recognises its last calls", async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-memory-big-"));
    const dir = agentMemoryDir(dataDir, "busy-agent");
    await mkdir(dir, { recursive: true });
    const calls = 100_000;
    const lines: string[] = [];
    const timestamp = new Date().toISOString();
    for (let i = 0; i < calls; i++) {
      lines.push(
        JSON.stringify({
          id: `old-${i}`,
          parent_id: "",
          timestamp,
          type: "tool_call",
          content: { call_id: `old-${i}`, trace_id: "t", tool: "data.query", user_id: "" },
        }),
        JSON.stringify({
          id: `old-${i}/result`,
          parent_id: `old-${i}`,
          timestamp,
          type: "tool_result",
          content: { call_id: `old-${i}`, status: "success", output: { rows: i } },
        }),
      );
    }
    const file = path.join(dir, memoryFileName(dayOf(new Date()), 0));
    // A crash mid-write leaves half a line at the end.
    await writeFile(file, `${lines.join("\n")}\n{"id":"old-100000","par`);
    const size = (await stat(file)).size;
    expect(size).toBeGreaterThan(20 * 1024 * 1024);

    const began = Date.now();
    // Reading every line once takes about a second here; measuring the file's byte length once
    // per line (the quadratic load this replaced) takes hours for 200,000 lines.
    writer = await start({}, 20_000);
    const ready = Date.now() - began;
    expect(ready).toBeLessThan(20_000);
    expect((await stat(file)).size).toBe(size - '{"id":"old-100000","par'.length);

    // The last call of the file comes again, published long after it ended (past the stream's
    // duplicate window, as a Callback down for minutes mid-broadcast would), then a new one.
    await publish({
      ...callEvent(`old-${calls - 1}`, "busy-agent"),
      time: timestampFromMs(Date.now() - 10 * 60 * 1000),
    });
    await publish(callEvent("new-1", "busy-agent"));
    await drained();
    const text = await readAgentMemory(dataDir, "busy-agent");
    const tail = entriesOf(text.slice(text.indexOf("\n", text.length - 4096) + 1));
    expect(tail.filter((e) => e.id === `old-${calls - 1}`)).toHaveLength(1);
    expect(tail.filter((e) => e.id === "new-1")).toHaveLength(1);
    expect(text.split("\n").length - 1).toBe(2 * calls + 2);
  }, 120_000);

  it("writes the memory of agents with 128-character ids", async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-memory-long-"));
    writer = await start();
    const ascii = `agent-${"a".repeat(122)}`;
    const wide = "é".repeat(128);
    const dotted = `${".".repeat(127)}/`;
    for (const agent of [ascii, wide, dotted]) {
      expect(agent).toHaveLength(128);
      await publish(callEvent(`long-${agent.charCodeAt(0)}-${agent.length}`, agent));
    }
    await drained();
    for (const agent of [ascii, wide, dotted]) {
      expect(agentDirName(agent).length).toBeLessThanOrEqual(65);
      const entries = entriesOf(await readAgentMemory(dataDir, agent));
      expect(entries.map((e) => e.type)).toEqual(["tool_call", "tool_result"]);
    }
    // Each agent has a directory of its own; none escaped the memory directory.
    expect((await readdir(path.join(dataDir, "memory"))).sort()).toEqual(
      [ascii, wide, dotted].map(agentDirName).sort(),
    );
    expect(new Set([ascii, wide, dotted].map(agentDirName)).size).toBe(3);
  });

  it("keeps at most TOOLMESH_MEMORY_MAX_OPEN_FILES files open with many agents", async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-memory-fds-"));
    const maxOpen = 8;
    writer = await start({ TOOLMESH_MEMORY_MAX_OPEN_FILES: String(maxOpen) });
    const pid = writer.child.pid as number;
    const fds = async () => (await readdir(`/proc/${pid}/fd`)).length;
    const baseline = await fds();
    const agents = 300;
    const total = 3000;
    const published = Array.from({ length: total }, (_, i) =>
      publish(callEvent(`fd-${i}`, `agent-${i % agents}`)),
    );
    let most = baseline;
    const sample = async () => {
      most = Math.max(most, await fds());
    };
    const sampler = setInterval(() => void sample(), 2);
    try {
      await Promise.all(published);
      await drained();
    } finally {
      clearInterval(sampler);
    }
    await sample();
    expect(most - baseline).toBeLessThanOrEqual(maxOpen);
    expect((await readdir(path.join(dataDir, "memory"))).length).toBe(agents);
    let written = 0;
    for (let a = 0; a < agents; a++)
      written += entriesOf(await readAgentMemory(dataDir, `agent-${a}`)).length;
    expect(written).toBe(2 * total);
  }, 120_000);

  it("rotates an agent's file by size and keeps the calls in order across files", async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-memory-rotate-"));
    const maxBytes = 64 * 1024;
    writer = await start({ TOOLMESH_MEMORY_MAX_FILE_BYTES: String(maxBytes) });
    const padding = "x".repeat(1000);
    for (let i = 0; i < 200; i++) await publish(callEvent(`rot-${i}`, "rotating", { padding }));
    await drained();
    const dir = agentMemoryDir(dataDir, "rotating");
    const files = await agentFiles(dir);
    expect(files.length).toBeGreaterThanOrEqual(3);
    expect(files[0]).toBe(memoryFileName(dayOf(new Date()), 0));
    for (const name of files)
      expect((await stat(path.join(dir, name))).size).toBeLessThanOrEqual(maxBytes);
    const calls = entriesOf(await readAgentMemory(dataDir, "rotating"))
      .filter((e) => e.type === "tool_call")
      .map((e) => e.id);
    expect(calls).toEqual(Array.from({ length: 200 }, (_, i) => `rot-${i}`));
    // A memory file read on its own is whole calls only.
    const first = entriesOf(await readFile(path.join(dir, files[0] as string), "utf8"));
    expect(first.at(-1)?.type).toBe("tool_result");
  });
});
