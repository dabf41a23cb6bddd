import { randomUUID } from "node:crypto";
import { appendFile, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { streamNames } from "@toolmesh/nats";
import { type AuditRecord, AuditRecordSchema, CallStatus } from "@toolmesh/proto";
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
import { connect, type JetStreamManager, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MemoryEntry } from "../src/entries.js";
import { agentDirName, agentFiles } from "../src/layout.js";
import { MEMORY_DURABLE } from "../src/writer.js";

const TOTAL = 2000;
const SECRET = `s3cr3t-${randomUUID()}`;
const AGENTS = ["agent-1", "agent-2", "team/alpha.*", "../escape"];

/** The end record of call i: success, failure and interrupted in turn, with secrets to hide. */
function ended(i: number): AuditRecord {
  const status = [CallStatus.SUCCESS, CallStatus.FAILURE, CallStatus.INTERRUPTED][
    i % 3
  ] as CallStatus;
  return endRecord(`call-${i}`, status, {
    parentId: i % 7 === 0 ? "" : `call-${i - 1}`,
    agentId: AGENTS[i % AGENTS.length] as string,
    ...(status === CallStatus.SUCCESS
      ? { output: { rows: i, credentials: { password: SECRET }, token: SECRET } }
      : {}),
    ...(status === CallStatus.FAILURE
      ? { errorMessage: "refused", errorDetails: { api_key: SECRET } }
      : {}),
    durationMs: 5,
  });
}

describe("memory writer", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let dataDir: string;
  let audit: ServiceProcess;
  let writer: ServiceProcess | undefined;
  const logs: string[] = [];

  const start = async () => {
    writer = await startService(
      "memory-writer",
      { NATS_URL: nats.url, TOOLMESH_DATA_DIR: dataDir, LOG_LEVEL: "debug" },
      { readyPattern: '"msg":"ready"' },
    );
  };
  const keepLogs = (p: ServiceProcess) => logs.push(...p.stdout.lines, ...p.stderr.lines);
  const drained = () => logConsumed(jsm, MEMORY_DURABLE);
  /** Each agent directory's memory: its files read in name order, as a reader of the layout does. */
  const readMemory = async () => {
    const dir = path.join(dataDir, "memory");
    const out = new Map<string, { text: string; entries: MemoryEntry[] }>();
    for (const name of await readdir(dir)) {
      let text = "";
      for (const file of await agentFiles(path.join(dir, name)))
        text += await readFile(path.join(dir, name, file), "utf8");
      out.set(name, {
        text,
        entries: text
          .split("\n")
          .filter(Boolean)
          .map((l) => JSON.parse(l) as MemoryEntry),
      });
    }
    return out;
  };

  beforeAll(async () => {
    nats = await startNats();
    nc = await connect({ servers: nats.url });
    jsm = await nc.jetstreamManager();
    audit = await startAudit(nats.url);
    dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-memory-"));
    await start();
  });

  afterAll(async () => {
    await writer?.stop();
    await audit?.stop();
    await nc?.close();
    await nats?.destroy();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it(`writes ${TOTAL} calls exactly once across a SIGKILL, without secrets`, async () => {
    const records = Array.from({ length: TOTAL }, (_, i) => ended(i));
    const write = (from: number, to: number) => {
      const writes: Promise<unknown>[] = [];
      for (let at = from; at < to; at += 10)
        writes.push(writeRecords(nc, records.slice(at, at + 10)));
      return Promise.all(writes);
    };
    const firstHalf = write(0, TOTAL / 2);
    await eventually(
      async () => {
        const info = await jsm.consumers.info(streamNames.auditLog, MEMORY_DURABLE);
        expect(info.ack_floor.stream_seq).toBeGreaterThan(0);
      },
      20_000,
      "calls written before the kill",
    );
    const running = writer as ServiceProcess;
    await running.kill();
    keepLogs(running);
    await firstHalf;
    // Records keep coming while it is down; none may be lost.
    await write(TOTAL / 2, TOTAL);
    // A writer that lost its acks sends the same records again: the log keeps each once.
    await writeRecords(nc, records.slice(0, 100), { msgId: "again" });
    await start();
    await drained();

    const files = await readMemory();
    expect([...files.keys()].sort()).toEqual(AGENTS.map(agentDirName).sort());
    expect(files.has("%2E%2E%2Fescape")).toBe(true);
    const calls: string[] = [];
    for (const [name, { text, entries }] of files) {
      expect(text.includes(SECRET)).toBe(false);
      for (let i = 0; i < entries.length; i += 2) {
        const call = entries[i] as MemoryEntry;
        const result = entries[i + 1] as MemoryEntry;
        expect(call.type).toBe("tool_call");
        expect(result).toMatchObject({
          type: "tool_result",
          parent_id: call.id,
          id: `${call.id}/result`,
        });
        expect(agentDirName(AGENTS[Number(call.id.slice(5)) % AGENTS.length] as string)).toBe(name);
        calls.push(call.id);
      }
    }
    expect(calls).toHaveLength(TOTAL);
    expect(new Set(calls).size).toBe(TOTAL);

    const agent1 = files.get(agentDirName("agent-1"))?.entries ?? [];
    const call4 = agent1.find((e) => e.id === "call-4");
    expect(call4).toMatchObject({
      parent_id: "call-3",
      type: "tool_call",
      content: { tool: "data.query", user_id: "user-1" },
    });
    expect(Number.isNaN(Date.parse(call4?.timestamp ?? ""))).toBe(false);
    expect(agent1.find((e) => e.id === "call-4/result")?.content).toEqual({
      status: "failure",
      error: { code: "backend_error", message: "refused", details: { api_key: "[redacted]" } },
      duration_ms: 5,
      attempts: 1,
    });
    const team = files.get(agentDirName("team/alpha.*"))?.entries ?? [];
    expect(team.find((e) => e.id === "call-6/result")?.content).toMatchObject({
      status: "success",
      // `credentials` is a secret key itself under the one redaction rule, so all of it is hidden.
      output: { rows: 6, credentials: "[redacted]", token: "[redacted]" },
    });

    keepLogs(writer as ServiceProcess);
    expect(logs.some((l) => l.includes(SECRET))).toBe(false);
  });

  it("repairs a torn tail left by a crash and writes the call once", async () => {
    const running = writer as ServiceProcess;
    await running.stop();
    const agentDir = path.join(dataDir, "memory", agentDirName("agent-1"));
    const file = path.join(agentDir, (await agentFiles(agentDir)).at(-1) as string);
    const before = await readFile(file, "utf8");
    // A call entry without its result, then half a line: what a crash mid-write leaves.
    await appendFile(
      file,
      `${JSON.stringify({ id: "torn-1", parent_id: "", timestamp: new Date().toISOString(), type: "tool_call", content: {} })}\n{"id":"tor`,
    );
    await start();
    expect(await readFile(file, "utf8")).toBe(before);
    const torn = create(AuditRecordSchema, { ...ended(0), callId: "torn-1", agentId: "agent-1" });
    await writeRecords(nc, [torn]);
    await writeRecords(nc, [torn], { msgId: "torn-1-again" });
    await drained();
    const entries = (await readMemory()).get(agentDirName("agent-1"))?.entries ?? [];
    expect(entries.filter((e) => e.id === "torn-1")).toHaveLength(1);
    expect(entries.filter((e) => e.id === "torn-1/result")).toHaveLength(1);
  });
});
