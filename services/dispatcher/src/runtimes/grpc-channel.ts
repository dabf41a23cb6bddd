import http2 from "node:http2";
import { codeFromHttpStatus } from "@connectrpc/connect/protocol-grpc";
import { Code } from "@toolmesh/errors";
import { grpcFrame } from "@toolmesh/server";

const { NGHTTP2_CANCEL, NGHTTP2_REFUSED_STREAM } = http2.constants;

/** How a gRPC stream ended: its status (a gRPC code; 0 is OK) and message. */
export interface GrpcEnd {
  code: Code | 0;
  message: string;
}

/** What one server-streaming call hears: each response message, then its end, once. */
export interface GrpcStreamHandlers {
  onMessage(bytes: Uint8Array): void;
  onEnd(end: GrpcEnd): void;
}

/** A call in flight; cancel() ends it with CANCELLED on both sides. */
export interface GrpcCall {
  cancel(): void;
}

/** HTTP/2 flow-control window per stream: a tool's whole answer without waiting for updates. */
const STREAM_WINDOW_BYTES = 1024 * 1024;
/** The connection's window, shared by the streams of one backend. */
const SESSION_WINDOW_BYTES = 8 * 1024 * 1024;

/**
 * A gRPC client over node:http2 for the Dispatcher's one outgoing call, a backend's
 * ToolBackendService.Invoke: one connection per address, reused and opened again when it closes.
 * It does what that call needs and no more — binary protobuf frames, no compression, metadata of
 * plain headers — so a call costs one HTTP/2 stream and a few buffers. @grpc/grpc-js's general
 * client (channel, resolver, load balancer, call stack, Metadata) was the Dispatcher's largest
 * single cost after protobuf on the call path, and about a fifth of what it allocated a call.
 */
export class GrpcChannels {
  private readonly sessions = new Map<string, http2.ClientHttp2Session>();
  /** Streams opened on each connection, to move to a fresh one before its stream ids run out. */
  private readonly opened = new WeakMap<http2.ClientHttp2Session, number>();

  constructor(
    private readonly maxMessageBytes: number,
    /**
     * Streams a connection carries before the next call opens another (the old one finishes
     * what it has and closes). HTTP/2 gives a connection 2^30 client streams; past them every
     * request on it fails — at 1,000 calls a second to one backend, after twelve days.
     */
    private readonly streamsPerConnection = 2 ** 30 - 1024,
  ) {}

  /**
   * Sends one request message (its encoded bytes) to `path` on the backend at `address`
   * (`host:port`) and reads the streamed answers; `headers` go as metadata.
   */
  serverStream(
    address: string,
    path: string,
    request: Uint8Array,
    headers: Record<string, string>,
    handlers: GrpcStreamHandlers,
  ): GrpcCall {
    let ended = false;
    const end = (code: Code | 0, message: string) => {
      if (ended) return;
      ended = true;
      handlers.onEnd({ code, message });
    };
    let stream: http2.ClientHttp2Stream;
    let session: http2.ClientHttp2Session;
    try {
      session = this.session(address);
      stream = session.request(
        {
          ":method": "POST",
          ":path": path,
          "content-type": "application/grpc",
          te: "trailers",
          ...headers,
        },
        { endStream: false },
      );
    } catch (error) {
      // A session closing under us refuses new streams synchronously.
      this.drop(address);
      end(Code.Unavailable, `cannot open a stream to ${address}: ${messageOf(error)}`);
      return { cancel: () => undefined };
    }
    stream.end(grpcFrame(request));

    const reader = new FrameReader(this.maxMessageBytes);
    let httpStatus = 0;
    let grpcStatus: string | undefined;
    let grpcMessage = "";
    const takeStatus = (h: http2.IncomingHttpHeaders) => {
      const s = h["grpc-status"];
      if (typeof s === "string") {
        grpcStatus = s;
        grpcMessage = decodeMessage(h["grpc-message"]);
      }
    };
    stream.on("response", (h) => {
      httpStatus = Number(h[":status"]);
      // Trailers-only: the status comes with the headers.
      takeStatus(h);
      if (grpcStatus !== undefined) return;
      const type = h["content-type"] ?? "";
      // Not a gRPC answer (a proxy's error page, another server on the port): its body is not
      // read as messages.
      if (httpStatus !== 200 || !type.startsWith("application/grpc")) {
        end(
          codeFromHttpStatus(httpStatus),
          `the backend answered HTTP ${httpStatus} with content-type "${type}", not gRPC`,
        );
        stream.close(NGHTTP2_CANCEL);
      }
    });
    stream.on("trailers", takeStatus);
    stream.on("data", (chunk: Buffer) => {
      if (ended) return;
      const problem = reader.push(chunk, handlers.onMessage);
      if (problem) {
        end(problem.code, problem.message);
        stream.close(NGHTTP2_CANCEL);
      }
    });
    let connectionLost: string | undefined;
    stream.on("error", (error: NodeJS.ErrnoException) => {
      // A reset of this stream alone is read on close from its code; anything else is the
      // connection failing under it (refused, reset, the backend gone).
      if (error.code !== "ERR_HTTP2_STREAM_ERROR") connectionLost = error.message;
    });
    stream.on("close", () => {
      if (ended) return;
      if (grpcStatus !== undefined) {
        const code = Number(grpcStatus);
        if (code === 0 && reader.partial())
          return end(Code.Internal, "the response ended inside a message");
        return end(
          Number.isInteger(code) && code >= 0 && code <= 16 ? code : Code.Unknown,
          grpcMessage,
        );
      }
      // A connection that closed under the stream resets it with CANCEL; only that tells it
      // from a backend that cancelled the stream itself.
      if (connectionLost === undefined && (session.destroyed || session.closed))
        connectionLost = "the connection closed";
      if (connectionLost !== undefined)
        return end(Code.Unavailable, `the connection to ${address} failed: ${connectionLost}`);
      const rst = stream.rstCode;
      if (rst === NGHTTP2_REFUSED_STREAM || httpStatus === 0)
        return end(
          Code.Unavailable,
          `the connection to ${address} failed or closed (${rst ?? "no answer"})`,
        );
      if (rst === NGHTTP2_CANCEL) return end(Code.Canceled, "the stream was cancelled");
      end(Code.Internal, `the stream ended without a gRPC status (HTTP/2 code ${rst})`);
    });
    return {
      cancel: () => {
        end(Code.Canceled, "cancelled by the caller");
        if (!stream.closed) stream.close(NGHTTP2_CANCEL);
      },
    };
  }

  /** Closes the connection to an address (a local tool that moved to a new port). */
  forget(address: string): void {
    this.sessions.get(address)?.close();
    this.sessions.delete(address);
  }

  close(): void {
    for (const session of this.sessions.values()) session.close();
    this.sessions.clear();
  }

  private session(address: string): http2.ClientHttp2Session {
    const open = this.sessions.get(address);
    if (open && !open.closed && !open.destroyed) {
      const streams = (this.opened.get(open) ?? 0) + 1;
      if (streams <= this.streamsPerConnection) {
        this.opened.set(open, streams);
        return open;
      }
      // Its stream ids are nearly spent: it finishes the calls on it, and a fresh one takes over.
      open.close();
    }
    const session = http2.connect(`http://${address}`, {
      settings: { initialWindowSize: STREAM_WINDOW_BYTES, enablePush: false },
      maxSessionMemory: 64,
    });
    session.once("connect", () => session.setLocalWindowSize(SESSION_WINDOW_BYTES));
    // A connection's failure reaches its streams (they close unanswered: UNAVAILABLE); the
    // session's own error event only has to be heard.
    session.on("error", () => this.drop(address, session));
    session.once("goaway", () => this.drop(address, session));
    session.once("close", () => this.drop(address, session));
    // An idle connection to a backend does not keep the Dispatcher's process alive.
    session.unref();
    this.sessions.set(address, session);
    this.opened.set(session, 1);
    return session;
  }

  private drop(address: string, session?: http2.ClientHttp2Session): void {
    if (!session || this.sessions.get(address) === session) this.sessions.delete(address);
  }
}

/** Splits a response body into gRPC messages as its chunks arrive. */
class FrameReader {
  private pending: Buffer | undefined;

  constructor(private readonly maxBytes: number) {}

  /** Hands each whole message on; returns what is wrong with the stream, if anything. */
  push(chunk: Buffer, onMessage: (bytes: Uint8Array) => void): GrpcEnd | undefined {
    let buf = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    this.pending = undefined;
    while (buf.length >= 5) {
      if (buf[0] !== 0)
        return {
          code: Code.Internal,
          message: "the backend sent a compressed message; toolmesh asks for none",
        };
      const length = buf.readUInt32BE(1);
      if (length > this.maxBytes)
        return {
          code: Code.ResourceExhausted,
          message: `a response message of ${length} bytes is larger than the limit of ${this.maxBytes}`,
        };
      if (buf.length < 5 + length) break;
      onMessage(buf.subarray(5, 5 + length));
      buf = buf.subarray(5 + length);
    }
    if (buf.length > 0) this.pending = buf;
    return undefined;
  }

  /** Whether a message was cut off by the end of the stream. */
  partial(): boolean {
    return this.pending !== undefined;
  }
}

/** `grpc-message` is percent-encoded. */
function decodeMessage(value: string | string[] | undefined): string {
  const raw = Array.isArray(value) ? value.join(",") : (value ?? "");
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
