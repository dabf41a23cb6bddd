import type http2 from "node:http2";
import {
  type DescMessage,
  type DescService,
  fromBinary,
  type MessageInitShape,
  type MessageShape,
  toBinary,
} from "@bufbuild/protobuf";
import { parseTimeout, setTrailerStatus } from "@connectrpc/connect/protocol-grpc";
import { Code, ConnectError } from "@toolmesh/errors";

/** What a unary handler on the fast path knows of its call besides the request message. */
export interface UnaryCall {
  /** Milliseconds left before the caller's deadline (`grpc-timeout`), when it set one. */
  readonly timeoutMs: number | undefined;
  /** Aborted when the caller goes away before the answer. */
  readonly signal: AbortSignal;
  /** A request header (lower-case name), or undefined. */
  header(name: string): string | undefined;
  /** The caller's address, `ip:port`. */
  readonly peer: string;
}

/** One unary method served on the fast path: its messages and its handler. */
export interface UnaryRoute {
  readonly service: string;
  readonly method: string;
  readonly input: DescMessage;
  readonly output: DescMessage;
  handle(request: never, call: UnaryCall): Promise<unknown>;
}

/** Fast-path routes by request path, `/package.Service/Method`. */
export type UnaryRoutes = ReadonlyMap<string, UnaryRoute>;

/** Handlers for some unary methods of a service, by their local name (`dispatch`). */
export type UnaryHandlers<S extends DescService> = {
  [K in keyof S["method"]]?: S["method"][K] extends {
    input: infer I extends DescMessage;
    output: infer O extends DescMessage;
  }
    ? (request: MessageShape<I>, call: UnaryCall) => Promise<MessageInitShape<O> | MessageShape<O>>
    : never;
};

/** The fast-path routes of a service's unary methods that have a handler. */
export function unaryRoutes<S extends DescService>(
  service: S,
  handlers: UnaryHandlers<S>,
): UnaryRoutes {
  const routes = new Map<string, UnaryRoute>();
  for (const method of service.methods) {
    const handle = handlers[method.localName as keyof S["method"]];
    if (!handle || method.methodKind !== "unary") continue;
    routes.set(`/${service.typeName}/${method.name}`, {
      service: service.typeName,
      method: method.name,
      input: method.input,
      output: method.output,
      handle: handle as unknown as UnaryRoute["handle"],
    });
  }
  return routes;
}

/** Told how each fast-path call ended, for the same metrics the Connect path keeps. */
export type UnaryObserver = (route: UnaryRoute, code: Code | undefined, seconds: number) => void;

/**
 * The route a stream takes on the fast path, or undefined when it must go through connect-node:
 * only plain binary gRPC over HTTP/2 (no compression, not gRPC-Web, not Connect) is served here.
 */
export function fastRoute(
  routes: UnaryRoutes | undefined,
  headers: http2.IncomingHttpHeaders,
): UnaryRoute | undefined {
  if (!routes || headers[":method"] !== "POST") return undefined;
  const route = routes.get(headers[":path"] ?? "");
  if (!route) return undefined;
  const type = headers["content-type"];
  if (type !== "application/grpc" && type !== "application/grpc+proto") return undefined;
  const encoding = headers["grpc-encoding"];
  if (encoding !== undefined && encoding !== "identity") return undefined;
  return route;
}

/**
 * Serves one unary gRPC call on its HTTP/2 stream: reads the length-prefixed request, runs the
 * handler, and writes the answer with its trailers (errors as a trailers-only response with the
 * same `grpc-status-details-bin` connect-node writes). A small unary call costs a fraction of what
 * the general adapter costs, which measured as the main port's largest cost on the call path; and
 * on the stream itself, without the request and response objects of Node's compatibility API
 * (two more streams' worth of state and listeners a call).
 */
export function serveUnary(
  route: UnaryRoute,
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  options: {
    readMaxBytes: number;
    observe?: UnaryObserver;
    /** Hears errors that are not a ConnectError (a bug), which the caller sees as UNKNOWN. */
    log: { error(obj: object, msg: string): void };
  },
): void {
  const started = performance.now();
  const abort = new AbortController();
  let answered = false;
  const finish = (code: Code | undefined) => {
    answered = true;
    options.observe?.(route, code, (performance.now() - started) / 1000);
  };
  // A reset by the caller surfaces as the stream's error, then its close: the close cancels.
  stream.on("error", () => {});
  stream.once("close", () => {
    if (!answered) abort.abort("cancelled");
  });
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  stream.on("data", (chunk: Buffer) => {
    size += chunk.length;
    // The envelope's five bytes come on top of the message.
    if (size > options.readMaxBytes + 5) tooLarge = true;
    else chunks.push(chunk);
  });
  stream.once("end", () => {
    let request: unknown;
    try {
      if (tooLarge)
        throw new ConnectError(
          `message size is larger than configured readMaxBytes ${options.readMaxBytes}`,
          Code.ResourceExhausted,
        );
      request = fromBinary(
        route.input,
        unwrap(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)),
      );
    } catch (error) {
      finish(sendError(stream, error));
      return;
    }
    const header = (name: string): string | undefined => {
      const value = headers[name];
      return Array.isArray(value) ? value[0] : value;
    };
    const timeout = parseTimeout(header("grpc-timeout") ?? null, Number.MAX_SAFE_INTEGER);
    if (timeout.error) {
      finish(sendError(stream, timeout.error));
      return;
    }
    const socket = stream.session?.socket;
    const call: UnaryCall = {
      timeoutMs: timeout.timeoutMs,
      signal: abort.signal,
      header,
      peer: socket?.remoteAddress ? `${socket.remoteAddress}:${socket.remotePort}` : "unknown",
    };
    route.handle(request as never, call).then(
      (response) => {
        if (stream.destroyed) return finish(Code.Canceled);
        const body = grpcFrame(toBinary(route.output, response as MessageShape<DescMessage>));
        stream.respond(RESPONSE_HEADERS, { waitForTrailers: true });
        stream.once("wantTrailers", sendOk);
        stream.end(body);
        finish(undefined);
      },
      (error: unknown) => {
        if (!(error instanceof ConnectError))
          options.log.error(
            { err: error, method: route.method },
            "unexpected error in a unary RPC",
          );
        finish(sendError(stream, error));
      },
    );
  });
}

const RESPONSE_HEADERS: http2.OutgoingHttpHeaders = {
  ":status": 200,
  "content-type": "application/grpc",
};
const OK_TRAILERS: http2.OutgoingHttpHeaders = { "grpc-status": "0" };

function sendOk(this: http2.ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}

/** One message as a length-prefixed gRPC frame, uncompressed. */
export function grpcFrame(message: Uint8Array): Buffer {
  const frame = Buffer.allocUnsafe(5 + message.length);
  frame[0] = 0;
  frame.writeUInt32BE(message.length, 1);
  frame.set(message, 5);
  return frame;
}

/** The message of a length-prefixed gRPC frame; exactly one, uncompressed. */
function unwrap(frame: Buffer | undefined): Uint8Array {
  if (!frame || frame.length < 5)
    throw new ConnectError("protocol error: the request has no gRPC message", Code.Internal);
  if (frame[0] !== 0)
    throw new ConnectError(
      "protocol error: a compressed message without grpc-encoding",
      Code.Internal,
    );
  const length = frame.readUInt32BE(1);
  if (frame.length !== 5 + length)
    throw new ConnectError(
      "protocol error: a unary request must carry exactly one message",
      Code.Unimplemented,
    );
  return frame.subarray(5);
}

/** A trailers-only error answer; returns the code it sent. */
function sendError(stream: http2.ServerHttp2Stream, error: unknown): Code {
  const connectError = ConnectError.from(error);
  if (stream.destroyed || stream.headersSent) return connectError.code;
  const trailer = setTrailerStatus(new Headers(), connectError);
  const headers: http2.OutgoingHttpHeaders = { ...RESPONSE_HEADERS };
  trailer.forEach((value, name) => {
    headers[name] = value;
  });
  // One HEADERS frame that ends the stream: what gRPC calls trailers-only. gRPC C-core (Python,
  // and others built on it) rejects a stream closed with an empty DATA frame instead.
  stream.respond(headers, { endStream: true });
  return connectError.code;
}
