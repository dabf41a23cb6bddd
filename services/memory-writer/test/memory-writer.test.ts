import { randomBytes, randomUUID } from "node:crypto";
import { appendFile, mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { publishEvent, streamNames, subjects } from "@toolmesh/nats";
import { type CallbackEvent, CallbackEventSchema, CallStatus } from "@toolmesh/proto";
import {
  consumerDrained,
  eventually,
  type OneService,
  type ServiceProcess,
  startOneService,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MemoryEntry } from "../src/entries.js";
import { agentDirName, agentFiles } from "../src/layout.js";
import { MEMORY_CONSUMER } from "../src/writer.js";

const TOTAL = 2000;
const SECRET = `s3cr3t-${randomUUID()}`;
const AGENTS = ["agent-1", "agent-2", "team/alpha.*", "../escape"];

function event(i: number): CallbackEvent {
  const status = [CallStatus.SUCCESS, CallStatus.FAILURE, CallStatus.INTERRUPTED][
    i % 3
  ] as CallStatus;
  return create(CallbackEventSchema, {
    callId: `call-${i}`,
    traceId: randomBytes(16).toString("hex"),
    parentId: i % 7 === 0 ? "" : `call-${i - 1}`,
    tool: "data.query",
    agentId: AGENTS[i % AGENTS.length] as string,
    userId: "user-1",
    status,
    ...(status === CallStatus.SUCCESS
      ? { output: { rows: i, credentials: { password: SECRET }, token: SECRET } }
      : {}),
    ...(status === CallStatus.FAILURE
      ? { error: { code: "backend_error", message: "refused", details: { api_key: SECRET } } }
      : {}),
    ...(status === CallStatus.INTERRUPTED ? { reason: "timeout" } : {}),
    durationMs: 5,
    attempts: 1,
    time: timestampFromMs(Date.now()),
  });
}

describe("memory writer", () => {
  let bus: OneService;
  let dataDir: string;
  let writer: ServiceProcess | undefined;
  const logs: string[] = [];

  const start = async () => {
    writer = await bus.start({ TOOLMESH_DATA_DIR: dataDir, LOG_LEVEL: "debug" });
  };
  const keepLogs = (p: ServiceProcess) => logs.push(...p.stdout.lines, ...p.stderr.lines);
  const publish = (e: CallbackEvent, msgId = e.callId) =>
    publishEvent(bus.js, subjects.callback("success", e.tool), CallbackEventSchema, e, {
      msgId,
    });
  const drained = () => consumerDrained(bus.jsm, streamNames.callback, MEMORY_CONSUMER);
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
    bus = await startOneService("memory-writer", {
      streams: ["callback"],
      readyPattern: '"msg":"ready"',
      started: false,
    });
    dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-memory-"));
    await start();
  });

  afterAll(async () => {
    await bus?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it(`writes ${TOTAL} calls exactly once across a SIGKILL, without secrets`, async () => {
    const events = Array.from({ length: TOTAL }, (_, i) => event(i));
    await Promise.all(events.map((e) => publish(e)));
    await eventually(
      async () => {
        const info = await bus.jsm.consumers.info(streamNames.callback, MEMORY_CONSUMER);
        expect(info.ack_floor.stream_seq).toBeGreaterThanOrEqual(200);
      },
      20_000,
      "200 calls written before the kill",
      10,
    );
    const running = writer as ServiceProcess;
    await running.kill();
    keepLogs(running);
    // A publisher retrying beyond the dedupe window sends the same calls again.
    await Promise.all(events.slice(0, 100).map((e) => publish(e, `${e.callId}-again`)));
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
      content: { call_id: "call-4", tool: "data.query", user_id: "user-1" },
    });
    expect(Number.isNaN(Date.parse(call4?.timestamp ?? ""))).toBe(false);
    expect(agent1.find((e) => e.id === "call-4/result")?.content).toEqual({
      call_id: "call-4",
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
    const torn = create(CallbackEventSchema, { ...event(0), callId: "torn-1", agentId: "agent-1" });
    await publish(torn);
    await publish(torn, "torn-1-again");
    await drained();
    const entries = (await readMemory()).get(agentDirName("agent-1"))?.entries ?? [];
    expect(entries.filter((e) => e.id === "torn-1")).toHaveLength(1);
    expect(entries.filter((e) => e.id === "torn-1/result")).toHaveLength(1);
  });
});
