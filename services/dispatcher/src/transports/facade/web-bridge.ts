import type http from "node:http";
import type http2 from "node:http2";
import { Readable } from "node:stream";
import type { ReadableStream as NodeReadableStream } from "node:stream/web";

type NodeRequest = http.IncomingMessage | http2.Http2ServerRequest;
type NodeResponse = Pick<http.ServerResponse, "writeHead" | "end" | "on"> & {
  write(chunk: Uint8Array): boolean;
};

/** A web-standard Request for a Node request (HTTP/1.1 or HTTP/2), its body streamed. */
export function toWebRequest(req: NodeRequest, signal: AbortSignal): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (name.startsWith(":") || value === undefined) continue;
    headers.set(name, Array.isArray(value) ? value.join(", ") : value);
  }
  const host =
    headers.get("host") ?? (req.headers[":authority"] as string | undefined) ?? "localhost";
  const method = req.method ?? "GET";
  const hasBody = method !== "GET" && method !== "HEAD";
  return new Request(new URL(req.url ?? "/", `http://${host}`), {
    method,
    headers,
    signal,
    ...(hasBody
      ? { body: Readable.toWeb(req as Readable) as ReadableStream<Uint8Array>, duplex: "half" }
      : {}),
  } as RequestInit);
}

/** Writes a web-standard Response to a Node response, streaming its body (SSE included). */
export async function sendWebResponse(res: NodeResponse, response: Response): Promise<void> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  res.writeHead(response.status, headers);
  if (!response.body) {
    res.end();
    return;
  }
  const body = Readable.fromWeb(response.body as NodeReadableStream<Uint8Array>);
  res.on("close", () => body.destroy());
  for await (const chunk of body) res.write(chunk as Uint8Array);
  res.end();
}
