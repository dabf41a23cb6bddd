import { createHash } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { bucketNames, compareAndSet, KvConflictError, type KvSnapshot } from "@toolmesh/nats";
import { ChatHistorySchema, type ChatWindow, ChatWindowSchema } from "@toolmesh/proto";
import type { KV } from "nats";
import { type BucketOptions, openFollowedBucket } from "../bucket.js";
import type { ChatMessage } from "../model/chat-model.js";

/** Who a window belongs to: an agent, and the user it acts for (empty when none). */
export interface WindowOwner {
  agentId: string;
  userId: string;
}

/** A window's conversation as read, with the revision a write must still find. */
export interface Session {
  window: ChatWindow | undefined;
  history: ChatMessage[];
  /** 0 for a window never written. */
  revision: number;
}

/** Raised when a window's history changed since it was read (another message was answered). */
export class SessionConflictError extends Error {
  override name = "SessionConflictError";
}

/**
 * The ServiceAgent's windows in the bucket `toolmesh-agent-sessions`: `windows.<key>` holds a
 * ChatWindow (who, which chat id, whether it is an IM window) and `history.<key>` its messages,
 * where the key is a hash of owner and chat id, so another principal's same chat id is another
 * window. Keys expire a TTL after their last write; only the windows are held in memory.
 */
export class SessionStore {
  private constructor(
    private readonly kv: KV,
    private readonly windowSnapshot: KvSnapshot<typeof ChatWindowSchema>,
  ) {}

  static async open(options: BucketOptions): Promise<SessionStore> {
    const { kv, snapshot } = await openFollowedBucket(
      options,
      bucketNames.agentSessions,
      "windows.>",
      ChatWindowSchema,
    );
    return new SessionStore(kv, snapshot);
  }

  /** Every window, as last written. */
  windows(): ChatWindow[] {
    return [...this.windowSnapshot.values()];
  }

  /** A window and its history; an empty session for a window never written. */
  async read(owner: WindowOwner, chatId: string): Promise<Session> {
    const key = windowKey(owner, chatId);
    const entry = await this.kv.get(`history.${key}`);
    if (entry?.operation !== "PUT") {
      return { window: this.windowSnapshot.get(`windows.${key}`), history: [], revision: 0 };
    }
    const stored = fromBinary(ChatHistorySchema, entry.value);
    return {
      window: this.windowSnapshot.get(`windows.${key}`),
      history: stored.messages.map((m) => JSON.parse(m) as ChatMessage),
      revision: entry.revision,
    };
  }

  /**
   * Stores a window's history if it is still at `session.revision` (SessionConflictError
   * otherwise), then its ChatWindow; returns the window.
   */
  async write(
    owner: WindowOwner,
    chatId: string,
    session: Session,
    history: ChatMessage[],
    im: boolean,
  ): Promise<ChatWindow> {
    const key = windowKey(owner, chatId);
    const value = toBinary(
      ChatHistorySchema,
      create(ChatHistorySchema, { messages: history.map((m) => JSON.stringify(m)) }),
    );
    try {
      await compareAndSet(() =>
        session.revision === 0
          ? this.kv.create(`history.${key}`, value)
          : this.kv.update(`history.${key}`, value, session.revision),
      );
    } catch (error) {
      if (error instanceof KvConflictError)
        throw new SessionConflictError(
          `window "${chatId}" changed while this message was answered`,
          { cause: error },
        );
      throw error;
    }
    const now = timestampNow();
    const window = create(ChatWindowSchema, {
      chatId,
      owner: { agentId: owner.agentId, userId: owner.userId },
      imWindow: im || (session.window?.imWindow ?? false),
      openedAt: session.window?.openedAt ?? now,
      updatedAt: now,
      messageCount: history.length,
    });
    await this.kv.put(`windows.${key}`, toBinary(ChatWindowSchema, window));
    return window;
  }

  stop(): void {
    this.windowSnapshot.stop();
  }
}

/** The key of a window: owner and chat id hashed, so no user data reaches a KV key. */
export function windowKey(owner: WindowOwner, chatId: string): string {
  return createHash("sha256")
    .update(`${owner.agentId}\n${owner.userId}\n${chatId}`)
    .digest("hex")
    .slice(0, 40);
}
