import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ensureConsumer, streamNames } from "@toolmesh/nats";
import { type AuditRecord, CallStatus } from "@toolmesh/proto";
import {
  endRecord,
  eventually,
  logConsumed,
  type ServiceProcess,
  startAudit,
  startNats,
  startService,
  type TestNats,
  writeRecords,
} from "@toolmesh/testkit";
import {
  AckPolicy,
  connect,
  DeliverPolicy,
  type JetStreamManager,
  type NatsConnection,
  nanos,
} from "nats";
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
import { MEMORY_DURABLE } from "../src/writer.js";

/** The end record of a successful call of an agent. */
const callRecord = (callId: string, agentId: string, output: Record<string, unknown> = {}) =>
  endRecord(callId, CallStatus.SUCCESS, { agentId, output: { ok: true, ...output } });

const entriesOf = (text: string) =>
  text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as MemoryEntry);

describe("memory writer bounds", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let dataDir: string;
  let audit: ServiceProcess;
  let writer: ServiceProcess | undefined;

  const start = (env: Record<string, string> = {}, timeoutMs?: number) =>
    startService(
      "memory-writer",
      { NATS_URL: nats.url, TOOLMESH_DATA_DIR: dataDir, ...env },
      { readyPattern: '"msg":"ready"', ...(timeoutMs ? { timeoutMs } : {}) },
    );
  /** Writes records in batches of 50, as concurrent calls' records are written. */
  const write = async (records: AuditRecord[]) => {
    const writes: Promise<unknown>[] = [];
    for (let at = 0; at < records.length; at += 50)
      writes.push(writeRecords(nc, records.slice(at, at + 50)));
    await Promise.all(writes);
  };
  const drained = (onPoll?: () => void) =>
    eventually(async () => {
      onPoll?.();
      await logConsumed(jsm, MEMORY_DURABLE, 1000);
    }, 60_000);

  beforeAll(async () => {
    nats = await startNats();
    nc = await connect({ servers: nats.url });
    jsm = await nc.jetstreamManager();
    audit = await startAudit(nats.url);
  });
  afterEach(async () => {
    await writer?.stop();
    writer = undefined;
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });
  afterAll(async () => {
    await audit?.stop();
    await nc?.close();
    await nats?.destroy();
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

    // A writer that stopped after writing the file's last call, before acking its block: that
    // block is pending on the consumer and comes again to the next writer, redelivered.
    await ensureConsumer(jsm, streamNames.auditLog, {
      durable_name: MEMORY_DURABLE,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.New,
      ack_wait: nanos(5_000),
      max_ack_pending: 16,
    });
    await writeRecords(nc, [callRecord(`old-${calls - 1}`, "busy-agent")]);
    const held = await nc.jetstream().consumers.get(streamNames.auditLog, MEMORY_DURABLE);
    expect((await held.next({ expires: 20_000 }))?.redelivered).toBe(false);

    const began = Date.now();
    // Reading every line once takes about a second here; measuring the file's byte length once
    // per line (the quadratic load this replaced) takes hours for 200,000 lines.
    writer = await start({}, 20_000);
    const ready = Date.now() - began;
    expect(ready).toBeLessThan(20_000);
    expect((await stat(file)).size).toBe(size - '{"id":"old-100000","par'.length);

    await writeRecords(nc, [callRecord("new-1", "busy-agent")]);
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
      await writeRecords(nc, [callRecord(`long-${agent.charCodeAt(0)}-${agent.length}`, agent)]);
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
    const published = write(
      Array.from({ length: total }, (_, i) => callRecord(`fd-${i}`, `agent-${i % agents}`)),
    );
    let most = baseline;
    const sample = async () => {
      most = Math.max(most, await fds());
    };
    const sampler = setInterval(() => void sample(), 2);
    try {
      await published;
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
    await write(
      Array.from({ length: 200 }, (_, i) => callRecord(`rot-${i}`, "rotating", { padding })),
    );
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
