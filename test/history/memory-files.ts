import { appendFile, mkdir } from "node:fs/promises";
import path from "node:path";
import { agentMemoryDir, dayOf, memoryFileName } from "../../services/memory-writer/src/layout.js";

/** Bytes buffered per agent before they are appended. */
const FLUSH_BYTES = 64 * 1024;

interface AgentBuffer {
  dir: string;
  part: number;
  /** Bytes in the current part, on disk and buffered. */
  size: number;
  buffered: string[];
  bufferedBytes: number;
  created: boolean;
}

/**
 * Memory files as memory-writer leaves them (services/memory-writer/src/layout.ts): one directory
 * per agent, files of today's date with a part number that grows before a file would pass
 * maxFileBytes, a call's lines never split across two files. Appends are buffered per agent.
 */
export class MemoryFiles {
  private readonly agents = new Map<string, AgentBuffer>();
  /** Lines of parts an agent rotated away from, not yet written. */
  private pendingRotations: { agent: AgentBuffer; buffered: string[]; part: number }[] = [];
  private readonly day = dayOf(new Date());

  constructor(
    private readonly dataDir: string,
    private readonly maxFileBytes: number,
  ) {}

  /** Adds one call's lines to its agent's memory. */
  append(agentId: string, text: string): void {
    let agent = this.agents.get(agentId);
    if (!agent) {
      agent = {
        dir: agentMemoryDir(this.dataDir, agentId),
        part: 0,
        size: 0,
        buffered: [],
        bufferedBytes: 0,
        created: false,
      };
      this.agents.set(agentId, agent);
    }
    const bytes = Buffer.byteLength(text);
    if (agent.size + bytes > this.maxFileBytes && agent.size > 0) {
      // The rest of the buffer belongs to the current part; flushAll/flushFull write it there.
      this.pendingRotations.push({ agent, buffered: agent.buffered, part: agent.part });
      agent.buffered = [];
      agent.bufferedBytes = 0;
      agent.part++;
      agent.size = 0;
    }
    agent.buffered.push(text);
    agent.bufferedBytes += bytes;
    agent.size += bytes;
  }

  /** Appends the buffers that reached FLUSH_BYTES (and whatever a rotation left behind). */
  async flushFull(): Promise<void> {
    await this.flush((a) => a.bufferedBytes >= FLUSH_BYTES);
  }

  /** Appends every buffer. */
  async flushAll(): Promise<void> {
    await this.flush(() => true);
  }

  private async flush(wanted: (agent: AgentBuffer) => boolean): Promise<void> {
    const rotations = this.pendingRotations.splice(0);
    for (const r of rotations) await this.write(r.agent, r.part, r.buffered);
    for (const agent of this.agents.values()) {
      if (agent.buffered.length === 0 || !wanted(agent)) continue;
      const lines = agent.buffered;
      agent.buffered = [];
      agent.bufferedBytes = 0;
      await this.write(agent, agent.part, lines);
    }
  }

  private async write(agent: AgentBuffer, part: number, lines: string[]): Promise<void> {
    if (!agent.created) {
      await mkdir(agent.dir, { recursive: true });
      agent.created = true;
    }
    await appendFile(path.join(agent.dir, memoryFileName(this.day, part)), lines.join(""));
  }
}
