import { once } from "node:events";
import http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { create, type JsonObject, toBinary } from "@bufbuild/protobuf";
import {
  InvokeRequestSchema,
  InvokeResponseSchema,
  ToolSchema,
  TraceEventKind,
} from "@toolmesh/proto";
import { afterEach, describe, expect, it } from "vitest";
import { GrpcRuntime } from "../src/runtimes/grpc-runtime.js";
import type { Attempt } from "../src/runtimes/runtime.js";

// The Dispatcher's gRPC client for backends (grpc-channel.ts) against real HTTP/2 servers that
// answer the way a backend may: messages split and joined across DATA frames, trailers-only
// errors, oversized or undecodable messages, a stream cut off, a connection dropped mid-call, no
// server at all, and a server that is not gRPC. Each must end as the attempt result the chain
// maps to an outcome — never a hang, never a wrong success.

const MAX_BYTES = 64 * 1024;
const servers: http2.Http2Server[] = [];
const sessionsOf = new Map<http2.Http2Server, http2.ServerHttp2Session[]>();

/** Stops a backend the way a killed process does: its connections drop, its port closes. */
async function stop(server: http2.Http2Server): Promise<void> {
  for (const session of sessionsOf.get(server) ?? []) session.destroy();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
const runtimes: GrpcRuntime[] = [];

afterEach(async () => {
  for (const r of runtimes.splice(0)) await r.close();
  for (const s of servers.splice(0)) await stop(s);
});

type Handler = (stream: http2.ServerHttp2Stream, request: Buffer) => void;

/** An HTTP/2 server on a free loopback port that hands each request's body to `handle`. */
async function backend(handle: Handler): Promise<string> {
  const server = http2.createServer();
  server.on("session", (session) => {
    sessionsOf.set(server, [...(sessionsOf.get(server) ?? []), session]);
  });
  server.on("stream", (stream) => {
    const chunks: Buffer[] = [];
    stream.on("data", (c: Buffer) => chunks.push(c));
    stream.on("end", () => handle(stream, Buffer.concat(chunks)));
    stream.on("error", () => undefined);
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  servers.push(server);
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

function frame(bytes: Uint8Array, flag = 0): Buffer {
  const out = Buffer.alloc(5 + bytes.length);
  out[0] = flag;
  out.writeUInt32BE(bytes.length, 1);
  out.set(bytes, 5);
  return out;
}

const resultFrame = (output: JsonObject) =>
  frame(
    toBinary(
      InvokeResponseSchema,
      create(InvokeResponseSchema, { message: { case: "result", value: { output } } }),
    ),
  );
const eventFrame = (name: string) =>
  frame(
    toBinary(
      InvokeResponseSchema,
      create(InvokeResponseSchema, {
        message: { case: "event", value: { kind: TraceEventKind.CUSTOM, customKind: name } },
      }),
    ),
  );

function attempt(signal = new AbortController().signal) {
  const events: string[] = [];
  const a: Attempt = {
    tool: create(ToolSchema, { spec: { name: "t.grpc" } }),
    request: create(InvokeRequestSchema, {
      tool: "t.grpc",
      context: { callId: "c1" },
      arguments: { n: 1 },
    }),
    signal,
    onEvent: (e) => events.push(e.customKind),
    traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
  };
  return { a, events };
}

function runtime(): GrpcRuntime {
  const r = new GrpcRuntime(MAX_BYTES);
  runtimes.push(r);
  return r;
}

const ok = { ":status": 200, "content-type": "application/grpc" };

describe("the Dispatcher's gRPC client for backends", () => {
  it("reads events and the result split and joined across DATA frames, and sends the request and traceparent", async () => {
    let requestBytes = 0;
    const address = await backend((stream, body) => {
      requestBytes = body.length;
      stream.respond(ok, { waitForTrailers: true });
      const all = Buffer.concat([
        eventFrame("DATA_QUERY"),
        eventFrame("DATA_RESULT"),
        resultFrame({ n: 1 }),
      ]);
      // One byte, then the rest in two uneven pieces: frames cut anywhere.
      stream.write(all.subarray(0, 1));
      stream.write(all.subarray(1, 9));
      stream.write(all.subarray(9));
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end();
    });
    const server = servers[0] as http2.Http2Server;
    const headers = once(server, "stream").then(([, h]) => h as http2.IncomingHttpHeaders);
    const { a, events } = attempt();
    const result = await runtime().invokeAt(address, a);
    expect(result).toEqual({ ok: true, output: { n: 1 }, pending: false, costMicros: 0n });
    expect(events).toEqual(["DATA_QUERY", "DATA_RESULT"]);
    const h = await headers;
    expect(h[":path"]).toBe("/toolmesh.backend.v1.ToolBackendService/Invoke");
    expect(h["content-type"]).toBe("application/grpc");
    expect(h.traceparent).toBe(a.traceparent);
    expect(requestBytes).toBe(5 + toBinary(InvokeRequestSchema, a.request).length);
  });

  it("maps a trailers-only UNAVAILABLE to a transient backend_unavailable, and INTERNAL to backend_error", async () => {
    let status = "14";
    const address = await backend((stream) => {
      stream.respond(
        {
          ...ok,
          "grpc-status": status,
          "grpc-message": encodeURIComponent("down for a bit: 100%"),
        },
        { endStream: true },
      );
    });
    const r = runtime();
    expect(await r.invokeAt(address, attempt().a)).toMatchObject({
      ok: false,
      transient: true,
      error: {
        code: "backend_unavailable",
        message: "the tool backend is unavailable: down for a bit: 100%",
      },
    });
    status = "13";
    expect(await r.invokeAt(address, attempt().a)).toMatchObject({
      ok: false,
      transient: false,
      error: { code: "backend_error", message: "the tool backend failed: down for a bit: 100%" },
    });
    status = "7";
    expect(await r.invokeAt(address, attempt().a)).toMatchObject({
      error: {
        code: "backend_error",
        message: "the tool backend failed with PERMISSION_DENIED: down for a bit: 100%",
      },
    });
  });

  it("refuses a message over the limit without reading it, and one that is not an InvokeResponse", async () => {
    let body: Buffer = Buffer.alloc(0);
    const address = await backend((stream) => {
      stream.respond(ok, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(body);
    });
    const r = runtime();
    body = frame(Buffer.alloc(MAX_BYTES + 1, 1));
    expect(await r.invokeAt(address, attempt().a)).toMatchObject({
      ok: false,
      error: { code: "output_too_large" },
    });
    body = frame(Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]));
    expect(await r.invokeAt(address, attempt().a)).toMatchObject({
      ok: false,
      error: { code: "invalid_output" },
    });
    body = frame(Buffer.from([1, 2, 3]), 1);
    expect(await r.invokeAt(address, attempt().a)).toMatchObject({
      ok: false,
      error: { code: "backend_error" },
    });
    body = Buffer.alloc(0);
    expect(await r.invokeAt(address, attempt().a)).toMatchObject({
      ok: false,
      error: {
        code: "invalid_output",
        message:
          "the backend ended its stream without a result; it must send exactly one InvokeResult",
      },
    });
    // Cut inside a message: the status says OK, the body does not.
    body = resultFrame({ n: 1 }).subarray(0, 8);
    expect(await r.invokeAt(address, attempt().a)).toMatchObject({
      ok: false,
      error: { code: "backend_error" },
    });
  });

  it("answers backend_unavailable when nothing listens, and when the connection drops mid-call", async () => {
    const r = runtime();
    const closed = await backend(() => undefined);
    await stop(servers.pop() as http2.Http2Server);
    expect(await r.invokeAt(closed, attempt().a)).toMatchObject({
      ok: false,
      transient: true,
      error: { code: "backend_unavailable" },
    });
    const dropping = await backend((stream) => {
      stream.respond(ok);
      // Flushed to the socket first, so the event arrives before the connection drops.
      stream.write(eventFrame("DATA_QUERY"), () => stream.session?.socket.destroy());
    });
    const { a, events } = attempt();
    expect(await r.invokeAt(dropping, a)).toMatchObject({
      ok: false,
      transient: true,
      error: { code: "backend_unavailable" },
    });
    expect(events).toEqual(["DATA_QUERY"]);
  });

  it("reads a server that is not gRPC as the status its HTTP answer stands for", async () => {
    const address = await backend((stream) => {
      stream.respond({ ":status": 404, "content-type": "text/plain" });
      stream.end("no such path");
    });
    expect(await runtime().invokeAt(address, attempt().a)).toMatchObject({
      ok: false,
      error: { code: "backend_error", message: expect.stringContaining("UNIMPLEMENTED") },
    });
  });

  it("cancels the backend's stream when the call is aborted, and serves the next call on the same connection", async () => {
    let calls = 0;
    const cancelled: Promise<unknown>[] = [];
    const address = await backend((stream) => {
      calls++;
      if (calls === 1) {
        stream.respond(ok);
        cancelled.push(once(stream, "close"));
        return;
      }
      stream.respond(ok, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(resultFrame({ again: true }));
    });
    const r = runtime();
    const abort = new AbortController();
    const first = r.invokeAt(address, attempt(abort.signal).a);
    await expect.poll(() => calls).toBe(1);
    abort.abort();
    expect(await first).toMatchObject({ ok: false, error: { code: "interrupted" } });
    await cancelled[0];
    expect(await r.invokeAt(address, attempt().a)).toMatchObject({
      ok: true,
      output: { again: true },
    });
    const sessions = await new Promise<number>((resolve) =>
      (servers[0] as http2.Http2Server).getConnections((_, n) => resolve(n)),
    );
    expect(sessions).toBe(1);
  });

  it("moves to a fresh connection before one runs out of stream ids, finishing the calls on the old", async () => {
    let pending: http2.ServerHttp2Stream | undefined;
    const address = await backend((stream) => {
      stream.respond(ok, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      // The first call is answered only after the connection has been replaced.
      if (!pending) pending = stream;
      else stream.end(resultFrame({ fresh: true }));
    });
    const r = new GrpcRuntime(MAX_BYTES, 2);
    runtimes.push(r);
    const first = r.invokeAt(address, attempt().a);
    await expect.poll(() => pending !== undefined).toBe(true);
    expect(await r.invokeAt(address, attempt().a)).toMatchObject({ ok: true });
    // The third stream goes on a new connection; the old one still answers the first call.
    expect(await r.invokeAt(address, attempt().a)).toMatchObject({ ok: true });
    pending?.end(resultFrame({ old: true }));
    expect(await first).toMatchObject({ ok: true, output: { old: true } });
    expect(sessionsOf.get(servers[0] as http2.Http2Server)).toHaveLength(2);
  });

  it("connects again after the backend restarted on the same port", async () => {
    const reply: Handler = (stream) => {
      stream.respond(ok, { waitForTrailers: true });
      stream.on("wantTrailers", () => stream.sendTrailers({ "grpc-status": "0" }));
      stream.end(resultFrame({ up: true }));
    };
    const address = await backend(reply);
    const r = runtime();
    expect(await r.invokeAt(address, attempt().a)).toMatchObject({ ok: true });
    const first = servers.pop() as http2.Http2Server;
    const port = Number(address.split(":")[1]);
    await stop(first);
    const again = http2.createServer();
    again.on("stream", (stream) => {
      stream.on("data", () => undefined);
      stream.on("end", () => reply(stream, Buffer.alloc(0)));
    });
    again.listen(port, "127.0.0.1");
    await once(again, "listening");
    servers.push(again);
    await expect
      .poll(() => r.invokeAt(address, attempt().a), { timeout: 5000 })
      .toMatchObject({
        ok: true,
        output: { up: true },
      });
  });
});
