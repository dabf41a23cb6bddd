import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createLogger } from "@toolmesh/log";
import { afterEach, describe, expect, it } from "vitest";
import { MemoryStore } from "../src/memory-store.js";

const log = createLogger("memory-store-test", "silent");

function callLines(callId: string): string {
  const call = { id: callId, parent_id: "", type: "tool_call", content: { call_id: callId } };
  const result = { id: `${callId}/result`, parent_id: callId, type: "tool_result", content: {} };
  return `${JSON.stringify(call)}\n${JSON.stringify(result)}\n`;
}

async function openStore(dataDir: string): Promise<MemoryStore> {
  return MemoryStore.open({
    dataDir,
    maxOpenFiles: 2,
    maxFileBytes: 64 * 1024 * 1024,
    recentCalls: 4096,
    recoveryCalls: 512,
    log,
  });
}

describe("a memory store reopening agent files", () => {
  let dataDir: string | undefined;
  afterEach(async () => {
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it("recognises a call an earlier process wrote, at first open and after the file was closed to make room", async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-memory-store-"));
    // An earlier process wrote call "earlier" and stopped before JetStream had its ack.
    const earlier = await openStore(dataDir);
    expect(await earlier.write("agent-a", "earlier", callLines("earlier"))).toBe("written");
    await earlier.close();

    const store = await openStore(dataDir);
    // It comes again, as an event that may have been written before (redelivered, or published
    // long ago): the file's tail is read, and it is recognised.
    expect(
      await store.write("agent-a", "earlier", callLines("earlier"), { mayBeWritten: true }),
    ).toBe("duplicate");
    expect(await store.write("agent-a", "a-1", callLines("a-1"))).toBe("written");
    // Two other agents take both file slots: agent-a's file is closed, and its tail forgotten.
    expect(await store.write("agent-b", "b-1", callLines("b-1"))).toBe("written");
    expect(await store.write("agent-c", "c-1", callLines("c-1"))).toBe("written");
    expect(store.openFiles).toBe(2);
    // Again after the file was reopened: its tail is read again.
    expect(
      await store.write("agent-a", "earlier", callLines("earlier"), { mayBeWritten: true }),
    ).toBe("duplicate");
    // This process's own calls are recognised from its window of recent calls.
    expect(await store.write("agent-a", "a-1", callLines("a-1"))).toBe("duplicate");
    expect(await store.write("agent-a", "a-2", callLines("a-2"))).toBe("written");
    await store.close();
  });
});
