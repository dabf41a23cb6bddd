import { mkdir, readdir, rename, stat } from "node:fs/promises";
import path from "node:path";
import type { Logger } from "@toolmesh/log";
import { subjectTokenDecode } from "@toolmesh/nats";
import { AgentFile } from "./agent-file.js";
import { agentDirName, agentFiles, dayOf, MEMORY_DIR, memoryFileName } from "./layout.js";
import { OpenFiles } from "./open-files.js";
import { RecentCalls } from "./recent-calls.js";

/** The limits a memory store works within. */
export interface MemoryStoreSettings {
  dataDir: string;
  /** Agent files open at once (least recently used closed first). */
  maxOpenFiles: number;
  /** A file rotates to the next part before it would pass this size. */
  maxFileBytes: number;
  /** Ids of the calls this process wrote last, to recognise redeliveries. */
  recentCalls: number;
  /** Ids read back from an agent's tail at open: at least the consumer's max ack pending. */
  recoveryCalls: number;
  log: Logger;
  now?: () => Date;
}

/** The outcome of writing one call. */
export type WriteResult = "written" | "duplicate";

interface Queued {
  callId: string;
  text: string;
  /** Redelivered, or published long ago: it may be in the file from an earlier process. */
  mayBeWritten: boolean;
  resolve(result: WriteResult): void;
  reject(error: unknown): void;
}

/**
 * Agents' memory files (layout in layout.ts). Calls of one agent that arrive together are
 * appended in one write and one fdatasync (group commit), and each resolves only once on disk.
 * A call already written — by this process, recently, or, for an event that may have been
 * written before, found at the tail of the agent's file as it was opened — is not written again. Nothing here grows with the history: start-up
 * reads the tail of each agent's newest file, memory holds a window of recent call ids and at
 * most maxOpenFiles open files.
 */
export class MemoryStore {
  private readonly files: OpenFiles<string, AgentFile>;
  private readonly recent: RecentCalls;
  private readonly queues = new Map<string, Queued[]>();
  private readonly inFlight = new Map<string, Promise<WriteResult>>();
  private readonly now: () => Date;

  private constructor(
    readonly dir: string,
    private readonly settings: MemoryStoreSettings,
    /** What start-up found: agent directories, and torn tails it cut. */
    readonly startup: { agents: number; repaired: number; migrated: number },
  ) {
    this.files = new OpenFiles(settings.maxOpenFiles);
    this.recent = new RecentCalls(settings.recentCalls);
    this.now = settings.now ?? (() => new Date());
  }

  /** Opens the memory directory: moves files of the old flat layout in, repairs torn tails. */
  static async open(settings: MemoryStoreSettings): Promise<MemoryStore> {
    const { log } = settings;
    const dir = path.join(settings.dataDir, MEMORY_DIR);
    await mkdir(dir, { recursive: true });
    const startup = { agents: 0, repaired: 0, migrated: 0 };
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (!entry.isFile() || !entry.name.endsWith(".jsonl")) continue;
      if (await migrateFlatFile(dir, entry.name)) startup.migrated++;
      else
        log.warn({ file: entry.name }, "a flat memory file beside its agent directory; left as is");
    }
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (!entry.isDirectory()) continue;
      startup.agents++;
      const repair = await AgentFile.repair(path.join(dir, entry.name));
      if (repair) {
        startup.repaired++;
        log.warn(repair, "cut a torn write off the end of a memory file");
      }
    }
    return new MemoryStore(dir, settings, startup);
  }

  /** Open agent files right now. */
  get openFiles(): number {
    return this.files.openCount;
  }

  /**
   * Appends a call's lines (each ending in a newline) to its agent's memory unless the call is
   * there already; resolves once they are on disk.
   */
  write(
    agentId: string,
    callId: string,
    text: string,
    options: { mayBeWritten?: boolean } = {},
  ): Promise<WriteResult> {
    if (this.recent.has(callId)) return Promise.resolve("duplicate");
    const running = this.inFlight.get(callId);
    if (running) return running.then(() => "duplicate");
    const done = new Promise<WriteResult>((resolve, reject) => {
      const queue = this.queues.get(agentId);
      const item = { callId, text, mayBeWritten: options.mayBeWritten ?? false, resolve, reject };
      if (queue) {
        queue.push(item);
      } else {
        this.queues.set(agentId, [item]);
        // After the current batch has queued all its calls, so they share the first round.
        queueMicrotask(() => void this.drain(agentId));
      }
    }).finally(() => this.inFlight.delete(callId));
    this.inFlight.set(callId, done);
    return done;
  }

  /** Writes an agent's queue in rounds: what queued during one round's fsync is the next round. */
  private async drain(agentId: string): Promise<void> {
    const queue = this.queues.get(agentId) as Queued[];
    while (queue.length > 0) {
      const round = queue.splice(0, queue.length);
      try {
        await this.files.use(
          agentId,
          () => this.openAgent(agentId),
          (file) => this.writeRound(file, round),
        );
      } catch (error) {
        this.settings.log.error(
          { err: error, agent_id: agentId, calls: round.length },
          "cannot write memory; the calls will be retried",
        );
        await this.files.discard(agentId);
        for (const item of round) item.reject(error);
      }
    }
    this.queues.delete(agentId);
  }

  private async writeRound(file: AgentFile, round: Queued[]): Promise<void> {
    // Past what `recent` covers, the file holds only calls an earlier process wrote; an event
    // can be one of those only if it may have been written before (see MemoryWriter).
    const recovered =
      file.recoveredIfRead ??
      (round.some((i) => i.mayBeWritten) ? await file.recovered() : undefined);
    const fresh: Queued[] = [];
    for (const item of round) {
      if (recovered?.has(item.callId) || this.recent.has(item.callId)) {
        item.resolve("duplicate");
      } else {
        fresh.push(item);
      }
    }
    if (fresh.length > 0) {
      await file.append(
        fresh.map((i) => i.text),
        this.now(),
        this.settings.maxFileBytes,
      );
    }
    for (const item of fresh) {
      this.recent.add(item.callId);
      item.resolve("written");
    }
  }

  private async openAgent(agentId: string): Promise<AgentFile> {
    const { file, repair } = await AgentFile.open(
      path.join(this.dir, agentDirName(agentId)),
      this.now(),
      {
        recoveryCalls: this.settings.recoveryCalls,
        temporary: (fn) => this.files.temporary(fn),
      },
    );
    if (repair) {
      this.settings.log.warn(
        { ...repair, agent_id: agentId },
        "cut a torn write off the end of a memory file",
      );
    }
    return file;
  }

  /** Waits for queued writes, then closes every file. */
  async close(): Promise<void> {
    await Promise.allSettled([...this.inFlight.values()]);
    await this.files.closeAll();
  }
}

/**
 * Moves a file of the flat layout (`memory/<escaped agent>.jsonl`, before rotation) to
 * `memory/<agent dir>/<day of its last write>.0000.jsonl`, so its calls stay in their agent's
 * memory and its tail is found like any other. False when the agent directory has files
 * already: then the flat file is left where it is for the operator.
 */
async function migrateFlatFile(dir: string, name: string): Promise<boolean> {
  const from = path.join(dir, name);
  const agentId = subjectTokenDecode(name.slice(0, -".jsonl".length));
  const agentDir = path.join(dir, agentDirName(agentId));
  if ((await agentFiles(agentDir)).length > 0) return false;
  await mkdir(agentDir, { recursive: true });
  const day = dayOf((await stat(from)).mtime);
  await rename(from, path.join(agentDir, memoryFileName(day, 0)));
  return true;
}
