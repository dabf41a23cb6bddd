import { randomBytes } from "node:crypto";
import { Code, ConnectError, invalidField } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import type { Principal } from "@toolmesh/proto";
import { deadline } from "../deadline.js";
import { type ChatMessage, type ChatModel, ModelError } from "../model/chat-model.js";
import type { AgentToolbox, Caller } from "./agent-tools.js";
import { SERVICE_AGENT_PROMPT } from "./prompts.js";
import { SessionConflictError, type SessionStore, windowKey } from "./session-store.js";

/** The bounds of a chat. */
export interface ChatSettings {
  maxMessageChars: number;
  /** Messages a window keeps. */
  historyMessages: number;
  /** Model replies one message may take. */
  maxSteps: number;
  timeoutMs: number;
}

/** One message to the ServiceAgent, from an authenticated caller. */
export interface ChatTurn {
  principal: Principal;
  /** The caller's Authorization header: the ServiceAgent reads the Registry as the caller. */
  authorization: string;
  message: string;
  /** Empty opens a new window. */
  chatId: string;
  /** True for a window of the IM connection. */
  im?: boolean;
}

export interface ChatAnswer {
  response: string;
  chatId: string;
  taskIds: string[];
}

const CHAT_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/** Checks a chat id from a request; INVALID_ARGUMENT naming `field` otherwise. */
export function checkChatId(field: string, chatId: string): void {
  if (!CHAT_ID.test(chatId))
    throw invalidField(field, "must be 1-128 characters of A-Z a-z 0-9 _ . : -");
}

/**
 * The ServiceAgent: one instance, many windows. Each message runs in its window (owner and chat
 * id) one at a time: the window's history, the message, then model replies and the tools they
 * call until the model answers in words or the step or time budget is spent; then the window is
 * stored, history bounded. Windows of different owners never share anything.
 */
export class ServiceAgent {
  /** The message being answered per window, so a window's messages run in order. */
  private readonly busy = new Map<string, Promise<unknown>>();

  constructor(
    private readonly deps: {
      model: ChatModel | undefined;
      sessions: SessionStore;
      /** The ServiceAgent's tools. */
      toolbox: AgentToolbox;
      settings: ChatSettings;
      log: Logger;
    },
  ) {}

  /** Answers one message; ConnectErrors name what to fix or why the model failed. */
  async chat(turn: ChatTurn, signal?: AbortSignal): Promise<ChatAnswer> {
    const { settings } = this.deps;
    const message = turn.message.trim();
    if (message === "") throw invalidField("message", "is empty; say something");
    if (message.length > settings.maxMessageChars)
      throw invalidField(
        "message",
        `is ${message.length} characters; at most ${settings.maxMessageChars} (TOOLMESH_CHAT_MAX_MESSAGE_CHARS)`,
      );
    const chatId = turn.chatId === "" ? `w-${randomBytes(6).toString("hex")}` : turn.chatId;
    checkChatId("chat_id", chatId);
    const model = this.deps.model;
    if (!model)
      throw new ConnectError(
        "no model is configured for the ServiceAgent: set TOOLMESH_MODEL_URL (an OpenAI-compatible base URL such as http://127.0.0.1:11434/v1) and TOOLMESH_MODEL on the tool agent",
        Code.Unavailable,
      );
    const owner = { agentId: turn.principal.agentId, userId: turn.principal.userId };
    const key = windowKey(owner, chatId);
    // Messages of one window wait for each other here; the store's compare-and-set catches a
    // message answered at once by another replica.
    const before = this.busy.get(key) ?? Promise.resolve();
    const run = before
      .catch(() => undefined)
      .then(() => this.answer(model, turn, chatId, message, signal));
    this.busy.set(key, run);
    try {
      return await run;
    } finally {
      if (this.busy.get(key) === run) this.busy.delete(key);
    }
  }

  private async answer(
    model: ChatModel,
    turn: ChatTurn,
    chatId: string,
    message: string,
    signal: AbortSignal | undefined,
  ): Promise<ChatAnswer> {
    const { sessions, settings, log } = this.deps;
    const started = Date.now();
    const owner = { agentId: turn.principal.agentId, userId: turn.principal.userId };
    const session = await sessions.read(owner, chatId).catch((error: unknown) => {
      log.error({ err: error, chat_id: chatId }, "a window could not be read");
      throw new ConnectError(`window "${chatId}" could not be read; try again`, Code.Unavailable);
    });
    const taskIds: string[] = [];
    const { toolbox } = this.deps;
    const caller: Caller = {
      principal: turn.principal,
      authorization: turn.authorization,
      chatId,
      filed: (id) => taskIds.push(id),
    };
    const limit = deadline(settings.timeoutMs, signal);
    const added: ChatMessage[] = [{ role: "user", content: message }];
    let response = "";
    let steps = 0;
    try {
      for (; steps < settings.maxSteps; steps++) {
        const { message: reply } = await model.complete(
          [{ role: "system", content: SERVICE_AGENT_PROMPT }, ...session.history, ...added],
          toolbox.definitions(),
          limit.signal,
        );
        added.push(reply);
        const calls = reply.tool_calls ?? [];
        if (calls.length === 0) {
          response = reply.content ?? "";
          break;
        }
        for (const call of calls) {
          const content = await toolbox.run(call, caller, limit.signal);
          added.push({ role: "tool", tool_call_id: call.id, content });
        }
      }
    } catch (error) {
      throw chatFailure(error, limit.expired, settings.timeoutMs);
    } finally {
      limit.clear();
    }
    if (steps === settings.maxSteps) {
      response = `I stopped after ${settings.maxSteps} steps without an answer (TOOLMESH_CHAT_MAX_STEPS); ask again, more narrowly.`;
      added.push({ role: "assistant", content: response });
    }
    const history = boundHistory([...session.history, ...added], settings.historyMessages);
    try {
      await sessions.write(owner, chatId, session, history, turn.im === true);
    } catch (error) {
      if (error instanceof SessionConflictError)
        throw new ConnectError(
          `another message of window "${chatId}" was answered at the same time; send yours again`,
          Code.Aborted,
        );
      log.error({ err: error, chat_id: chatId }, "a window could not be stored");
      throw new ConnectError(
        `window "${chatId}" could not be stored, so the answer is not kept; send the message again`,
        Code.Unavailable,
      );
    }
    log.info(
      {
        agent_id: owner.agentId,
        chat_id: chatId,
        steps: steps + 1,
        tasks: taskIds.length,
        ms: Date.now() - started,
      },
      "chat answered",
    );
    return { response, chatId, taskIds };
  }
}

/** A model or time failure as the chatting agent sees it. */
function chatFailure(error: unknown, expired: boolean, timeoutMs: number): ConnectError {
  if (error instanceof ConnectError) return error;
  if (expired)
    return new ConnectError(
      `the answer took longer than ${timeoutMs} ms (TOOLMESH_CHAT_TIMEOUT_MS)`,
      Code.DeadlineExceeded,
    );
  if (error instanceof ModelError) {
    const code =
      error.failure === "timeout"
        ? Code.DeadlineExceeded
        : error.failure === "cancelled"
          ? Code.Canceled
          : Code.Unavailable;
    return new ConnectError(error.message, code);
  }
  return ConnectError.from(error);
}

/**
 * The last `limit` messages of a history, starting at a user message, so a turn's tool calls
 * and their results are kept or dropped together.
 */
export function boundHistory(messages: ChatMessage[], limit: number): ChatMessage[] {
  const fitted = messages.map(clipContent);
  let start = Math.max(0, fitted.length - limit);
  // Whole turns go until the rest fits one KV value.
  while (start < fitted.length && JSON.stringify(fitted.slice(start)).length > HISTORY_CHARS)
    start++;
  while (start < fitted.length && fitted[start]?.role !== "user") start++;
  if (start === fitted.length) {
    // One turn longer than the limits: keep it from its user message.
    start = fitted.findLastIndex((m) => m.role === "user");
  }
  return fitted.slice(Math.max(0, start));
}

/** The most of a window's history kept, in characters of JSON: well under a KV value's limit. */
const HISTORY_CHARS = 512 * 1024;
/** The most of one message kept in a window's history. */
const MESSAGE_CHARS = 16_000;

function clipContent(message: ChatMessage): ChatMessage {
  if (typeof message.content !== "string" || message.content.length <= MESSAGE_CHARS)
    return message;
  return {
    ...message,
    content: `${message.content.slice(0, MESSAGE_CHARS)}… (cut)`,
  } as ChatMessage;
}
