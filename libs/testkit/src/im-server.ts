import http from "node:http";
import type { AddressInfo } from "node:net";
import { type WebSocket as ServerSocket, WebSocketServer } from "ws";

/** A frame of the reference IM protocol (docs/agents.md, "IM"). */
export interface ImFrame {
  type: string;
  from?: string;
  to?: string;
  chat_id?: string;
  receiver_chat_id?: string;
  text?: string;
  [key: string]: unknown;
}

/** A contact connected to the reference IM server, for a test to talk as. */
export interface ImContact {
  readonly name: string;
  send(frame: ImFrame): void;
  /** The next frame received that `match` accepts (frames already received count too). */
  next(match: (frame: ImFrame) => boolean, timeoutMs?: number): Promise<ImFrame>;
  /** Every frame received so far. */
  readonly received: ImFrame[];
  close(): void;
}

/** The reference IM server: contacts connect over WebSocket and message each other by name. */
export interface ImServer {
  /** ws://127.0.0.1:<port> (the port stays the same across stop and start). */
  readonly url: string;
  /** The contacts connected now. */
  contacts(): string[];
  /** Resolves once `contact` is connected. */
  connected(contact: string, timeoutMs?: number): Promise<void>;
  /** Connects as a contact. */
  connect(contact: string): Promise<ImContact>;
  /** Drops every connection and stops listening (a crash, as far as clients can tell). */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
}

const CONTACT = /^[A-Za-z0-9_.-]{1,64}$/;

/**
 * Starts the reference IM server on a free port. A contact connects to `/?contact=<name>` (a
 * second connection of a name replaces the first); a `message` frame with `to` is passed to that
 * contact with `from` set to the sender; a frame to a contact that is not connected comes back as
 * an `error` frame.
 */
export async function startImServer(): Promise<ImServer> {
  const sockets = new Map<string, ServerSocket>();
  const waiters: (() => void)[] = [];
  let http1: http.Server | undefined;
  let wss: WebSocketServer | undefined;
  let port = 0;

  const listen = async () => {
    const server = http.createServer((_req, res) => {
      res.writeHead(426, { "content-type": "text/plain" });
      res.end("connect over WebSocket: ws://host:port/?contact=<name>\n");
    });
    const ws = new WebSocketServer({ server, maxPayload: 1024 * 1024 });
    ws.on("connection", (socket, req) => {
      const name = new URL(req.url ?? "/", "http://im").searchParams.get("contact") ?? "";
      if (!CONTACT.test(name)) {
        socket.close(4400, "name yourself with ?contact=<1-64 of A-Za-z0-9_.->");
        return;
      }
      sockets.get(name)?.close(4000, "replaced by a new connection of the same contact");
      sockets.set(name, socket);
      socket.send(JSON.stringify({ type: "welcome", contact: name }));
      for (const wake of waiters.splice(0)) wake();
      socket.on("close", () => {
        if (sockets.get(name) === socket) sockets.delete(name);
      });
      socket.on("message", (data) => {
        let frame: ImFrame;
        try {
          frame = JSON.parse(String(data)) as ImFrame;
        } catch {
          socket.send(JSON.stringify({ type: "error", code: "bad_frame", message: "not JSON" }));
          return;
        }
        if (frame.type !== "message" || typeof frame.to !== "string") {
          socket.send(
            JSON.stringify({
              type: "error",
              code: "bad_frame",
              message: 'send {"type":"message","to":"<contact>","chat_id":…,"text":…}',
            }),
          );
          return;
        }
        const target = sockets.get(frame.to);
        if (!target) {
          socket.send(
            JSON.stringify({
              type: "error",
              code: "not_connected",
              to: frame.to,
              message: `${frame.to} is not connected`,
            }),
          );
          return;
        }
        target.send(JSON.stringify({ ...frame, from: name }));
      });
    });
    await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
    http1 = server;
    wss = ws;
  };

  await listen();
  const url = `ws://127.0.0.1:${port}`;
  return {
    url,
    contacts: () => [...sockets.keys()],
    async connected(contact, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!sockets.has(contact)) {
        if (Date.now() > deadline) throw new Error(`${contact} did not connect in ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, deadline - Date.now());
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
    },
    connect: (contact) => connectContact(url, contact),
    async stop() {
      for (const socket of sockets.values()) socket.terminate();
      sockets.clear();
      await new Promise<void>((resolve) => wss?.close(() => resolve()));
      await new Promise<void>((resolve) => http1?.close(() => resolve()));
    },
    start: listen,
  };
}

/** Connects a test contact with Node's own WebSocket client. */
async function connectContact(url: string, name: string): Promise<ImContact> {
  const socket = new WebSocket(`${url}/?contact=${encodeURIComponent(name)}`);
  const received: ImFrame[] = [];
  const listeners = new Set<() => void>();
  socket.addEventListener("message", (event) => {
    received.push(JSON.parse(String(event.data)) as ImFrame);
    for (const listener of listeners) listener();
  });
  await new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true });
    socket.addEventListener("error", () => reject(new Error(`cannot connect to ${url}`)), {
      once: true,
    });
  });
  // Frames a `next` returned; each is returned once, in the order received.
  const taken = new Set<number>();
  return {
    name,
    received,
    send: (frame) => socket.send(JSON.stringify(frame)),
    next(match, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const look = () => {
          const index = received.findIndex((frame, i) => !taken.has(i) && match(frame));
          if (index < 0) return;
          taken.add(index);
          listeners.delete(look);
          clearTimeout(timer);
          resolve(received[index] as ImFrame);
        };
        const timer = setTimeout(() => {
          listeners.delete(look);
          reject(
            new Error(
              `${name} received no matching frame in ${timeoutMs} ms; got ${JSON.stringify(received)}`,
            ),
          );
        }, timeoutMs);
        listeners.add(look);
        look();
      });
    },
    close: () => socket.close(),
  };
}
