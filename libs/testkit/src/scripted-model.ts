import http from "node:http";
import type { AddressInfo, Socket } from "node:net";

/** A function call the scripted model makes; `arguments` as a string is sent as is (garbled). */
export interface ScriptedCall {
  name: string;
  arguments: string | Record<string, unknown>;
}

/** One answer of the scripted model. Every kind may wait `delayMs` first. */
export type ModelTurn = { delayMs?: number } & (
  | { text: string }
  | { toolCalls: ScriptedCall[]; text?: string }
  /**
   * Repeats the last user message: `you said: <text>`, with `count` followed by how many user
   * messages the conversation holds (` (3 user messages)`), which a client in any language can check.
   */
  | { echo: true; count?: boolean }
  /** An HTTP error status with this body. */
  | { status: number; body?: string }
  /** A 200 whose body is not a Chat Completions reply. */
  | { raw: string }
  /** Closes the connection without an answer. */
  | { hangUp: true }
);

/** A conversation: the requests whose first user message contains `match`. */
export interface ModelScript {
  match: string;
  /** The answers in order: the nth answer of a request with n-1 assistant messages before it. */
  turns: ModelTurn[];
  /** Tokens each answer reports using (the CodingAgent's token budget counts them); 10 by default. */
  tokensPerTurn?: number;
}

/** A request the scripted model received. */
export interface ModelRequest {
  path: string;
  /** The Authorization header, as sent (tests check a key arrives, and nowhere else). */
  authorization: string | undefined;
  body: {
    model?: string;
    messages?: { role: string; content?: unknown; tool_calls?: unknown[] }[];
    tools?: { type: string; function: { name: string } }[];
    [key: string]: unknown;
  };
  /** The script it matched, and which of its turns answered. */
  match: string | undefined;
  turn: number;
}

/** An OpenAI-compatible Chat Completions endpoint that answers from scripts. */
export interface ScriptedModel {
  /** The base URL a client is given (`http://127.0.0.1:<port>/v1`). */
  readonly url: string;
  readonly requests: ModelRequest[];
  /** Adds a conversation; the first script whose `match` fits a request answers it. */
  script(script: ModelScript): void;
  /** The requests of one conversation. */
  requestsFor(match: string): ModelRequest[];
  close(): Promise<void>;
}

/**
 * Starts a scripted model on a free port (or `port`, to come back where a stopped one was): the
 * one external thing agent tests stand in for. Each
 * request is matched to a script by its first user message, and answered by the turn numbered by
 * the assistant messages it already holds, so the answers are deterministic however the client
 * retries or interleaves conversations. Every request is recorded.
 */
export async function startScriptedModel(
  scripts: ModelScript[] = [],
  options: { port?: number } = {},
): Promise<ScriptedModel> {
  const all = [...scripts];
  const requests: ModelRequest[] = [];
  let counter = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => {
      void answer(req, res, Buffer.concat(chunks).toString("utf8"));
    });
  });
  const sockets = new Set<Socket>();
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });

  const answer = async (req: http.IncomingMessage, res: http.ServerResponse, text: string) => {
    const path = req.url ?? "";
    if (req.method !== "POST" || !path.endsWith("/chat/completions")) {
      send(res, 404, { error: { message: `the scripted model serves POST /v1/chat/completions` } });
      return;
    }
    let body: ModelRequest["body"];
    try {
      body = JSON.parse(text) as ModelRequest["body"];
    } catch {
      send(res, 400, { error: { message: "the request body is not JSON" } });
      return;
    }
    const messages = Array.isArray(body.messages) ? body.messages : [];
    const first = textOf(messages.find((m) => m.role === "user")?.content);
    const script = all.find((s) => first.includes(s.match));
    const turn = messages.filter((m) => m.role === "assistant").length;
    requests.push({
      path,
      authorization: req.headers.authorization,
      body,
      match: script?.match,
      turn,
    });
    if (!script) {
      send(res, 400, {
        error: { message: `no script matches the first user message ${JSON.stringify(first)}` },
      });
      return;
    }
    const step = script.turns[Math.min(turn, script.turns.length - 1)];
    if (!step) {
      send(res, 400, { error: { message: `script "${script.match}" has no turns` } });
      return;
    }
    if (step.delayMs) await new Promise((resolve) => setTimeout(resolve, step.delayMs));
    if ("hangUp" in step) {
      req.socket.destroy();
      return;
    }
    if ("status" in step) {
      res.writeHead(step.status, { "content-type": "application/json" });
      res.end(step.body ?? JSON.stringify({ error: { message: `scripted ${step.status}` } }));
      return;
    }
    if ("raw" in step) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(step.raw);
      return;
    }
    const lastUser = textOf([...messages].reverse().find((m) => m.role === "user")?.content);
    const users = messages.filter((m) => m.role === "user").length;
    const content =
      "echo" in step
        ? `you said: ${lastUser}${step.count ? ` (${users} user messages)` : ""}`
        : (step.text ?? null);
    const calls = "toolCalls" in step ? step.toolCalls : [];
    counter++;
    const tokens = script.tokensPerTurn ?? 10;
    send(res, 200, {
      id: `chatcmpl-${counter}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model: body.model ?? "scripted",
      choices: [
        {
          index: 0,
          message: {
            role: "assistant",
            content,
            ...(calls.length > 0
              ? {
                  tool_calls: calls.map((call, i) => ({
                    id: `call_${counter}_${i}`,
                    type: "function",
                    function: {
                      name: call.name,
                      arguments:
                        typeof call.arguments === "string"
                          ? call.arguments
                          : JSON.stringify(call.arguments),
                    },
                  })),
                }
              : {}),
          },
          finish_reason: calls.length > 0 ? "tool_calls" : "stop",
        },
      ],
      usage: { prompt_tokens: tokens - 1, completion_tokens: 1, total_tokens: tokens },
    });
  };

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(options.port ?? 0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    script(script) {
      all.push(script);
    },
    requestsFor(match) {
      return requests.filter((r) => r.match === match);
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

/** The text of a message's content: a string, or the text parts of a list. */
function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content
      .map((part) => (part && typeof part === "object" && "text" in part ? String(part.text) : ""))
      .join("");
  return "";
}
