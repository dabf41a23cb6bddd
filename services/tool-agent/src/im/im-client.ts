import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { ConnectError, codeName } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { type ImStatus, ImStatusSchema, type Principal } from "@toolmesh/proto";
import { checkChatId, type ServiceAgent } from "../chat/service-agent.js";
import type { SessionStore } from "../chat/session-store.js";

/** A frame of the IM protocol (docs/agents.md, "IM"). */
interface ImFrame {
  type?: unknown;
  from?: unknown;
  chat_id?: unknown;
  receiver_chat_id?: unknown;
  text?: unknown;
}

export interface ImClientDeps {
  /** The IM server (ws:// or wss://). */
  url: string;
  /** Who the client is on the IM server: `tool_agent`. */
  contact: string;
  agent: ServiceAgent;
  sessions: SessionStore;
  /** The toolmesh credential IM windows act with, and who it stands for. */
  authorization: string;
  principal: () => Promise<Principal>;
  maxBackoffMs: number;
  log: Logger;
}

/**
 * The IM client: one WebSocket connection to an IM server as contact `tool_agent`, each chat
 * window of it a ServiceAgent window. A message naming a `receiver_chat_id` goes to that window; one
 * without goes to every IM window (or opens one named after the sender's chat id); each answer
 * goes back to the sender, to its `chat_id`. A lost connection is made again with backoff, and
 * shows in the status meanwhile.
 */
export class ImClient {
  private socket: WebSocket | undefined;
  private stopped = false;
  private attempt = 0;
  private timer: NodeJS.Timeout | undefined;
  private readonly state = create(ImStatusSchema, { configured: true });
  private everConnected = false;

  constructor(private readonly deps: ImClientDeps) {
    const shown = new URL(deps.url);
    shown.username = "";
    shown.password = "";
    this.state.url = shown.toString();
    this.state.contact = deps.contact;
  }

  start(): void {
    this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.socket?.close(1000, "the tool agent is stopping");
  }

  status(): ImStatus {
    return create(ImStatusSchema, this.state);
  }

  private connect(): void {
    const url = new URL(this.deps.url);
    url.searchParams.set("contact", this.deps.contact);
    let socket: WebSocket;
    try {
      socket = new WebSocket(url);
    } catch (error) {
      this.lost(`cannot open ${this.state.url}: ${String(error)}`);
      return;
    }
    this.socket = socket;
    socket.addEventListener("open", () => {
      if (this.everConnected) this.state.reconnects++;
      this.everConnected = true;
      this.attempt = 0;
      this.state.connected = true;
      this.state.connectedSince = timestampNow();
      this.deps.log.info({ im: this.state.url, contact: this.deps.contact }, "IM connected");
    });
    socket.addEventListener("message", (event) => void this.receive(String(event.data)));
    socket.addEventListener("close", (event) => {
      if (this.socket !== socket) return;
      this.lost(`connection closed (${event.code}${event.reason ? ` ${event.reason}` : ""})`);
    });
    socket.addEventListener("error", () => {
      // A close event follows; it schedules the reconnect.
    });
  }

  private lost(why: string): void {
    this.socket = undefined;
    this.state.connected = false;
    this.state.connectedSince = undefined;
    this.state.lastError = why;
    if (this.stopped) return;
    const delay =
      Math.min(this.deps.maxBackoffMs, 250 * 2 ** this.attempt) * (0.5 + Math.random() / 2);
    this.attempt = Math.min(this.attempt + 1, 20);
    this.deps.log.warn(
      { im: this.state.url, retry_ms: Math.round(delay) },
      `IM ${why}; reconnecting`,
    );
    this.timer = setTimeout(() => this.connect(), delay);
  }

  private async receive(data: string): Promise<void> {
    let frame: ImFrame;
    try {
      frame = JSON.parse(data) as ImFrame;
    } catch {
      this.deps.log.warn("IM frame is not JSON; ignored");
      return;
    }
    if (frame.type !== "message") {
      if (frame.type === "error") this.deps.log.warn({ frame }, "IM server reported an error");
      return;
    }
    const from = typeof frame.from === "string" ? frame.from : "";
    const senderChat = typeof frame.chat_id === "string" ? frame.chat_id : "";
    const text = typeof frame.text === "string" ? frame.text : "";
    if (from === "") return;
    const reply = (chatId: string, body: Record<string, unknown>) =>
      this.socket?.send(
        JSON.stringify({
          type: "message",
          to: from,
          chat_id: chatId,
          receiver_chat_id: senderChat,
          ...body,
        }),
      );
    let principal: Principal;
    let targets: string[];
    try {
      principal = await this.deps.principal();
      targets = this.windowsFor(principal, frame, senderChat, from);
    } catch (error) {
      const e = ConnectError.from(error);
      reply("", {
        text: `error: ${e.rawMessage}`,
        error: { code: codeName(e.code), message: e.rawMessage },
      });
      return;
    }
    await Promise.all(
      targets.map(async (chatId) => {
        try {
          const answer = await this.deps.agent.chat({
            principal,
            authorization: this.deps.authorization,
            message: text,
            chatId,
            im: true,
          });
          reply(chatId, { text: answer.response, task_ids: answer.taskIds });
        } catch (error) {
          const e = ConnectError.from(error);
          reply(chatId, {
            text: `error: ${e.rawMessage}`,
            error: { code: codeName(e.code), message: e.rawMessage },
          });
        }
      }),
    );
  }

  /** The windows a message goes to: the one it names, else every IM window (or a new one). */
  private windowsFor(
    principal: Principal,
    frame: ImFrame,
    senderChat: string,
    from: string,
  ): string[] {
    if (typeof frame.receiver_chat_id === "string" && frame.receiver_chat_id !== "") {
      checkChatId("receiver_chat_id", frame.receiver_chat_id);
      return [frame.receiver_chat_id];
    }
    const open = this.deps.sessions
      .windows()
      .filter(
        (w) =>
          w.imWindow &&
          w.owner?.agentId === principal.agentId &&
          w.owner?.userId === principal.userId,
      )
      .map((w) => w.chatId);
    if (open.length > 0) return open;
    const chatId = senderChat !== "" ? senderChat : `im-${from}`;
    checkChatId("chat_id", chatId);
    return [chatId];
  }
}
