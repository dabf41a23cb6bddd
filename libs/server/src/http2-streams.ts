import http2 from "node:http2";

type RequestHandler = (req: http2.Http2ServerRequest, res: http2.Http2ServerResponse) => void;

/**
 * Hands a stream that is not served on the fast path to a handler of Node's compatibility API,
 * as Node's own `request` event would: the server answers the streams of its `stream` event
 * itself, so that a fast-path call never pays for a request and a response object. What Node
 * does besides (CONNECT, `Expect`) is kept: toolmesh serves no CONNECT, and `100-continue` is
 * answered at once.
 */
export function compatRequest(
  stream: http2.ServerHttp2Stream,
  headers: http2.IncomingHttpHeaders,
  rawHeaders: string[],
  handler: RequestHandler,
): void {
  const req = new http2.Http2ServerRequest(stream, headers, {}, rawHeaders);
  const res = new http2.Http2ServerResponse(stream);
  if (headers[":method"] === "CONNECT") {
    res.statusCode = 405;
    res.end();
    return;
  }
  const expect = headers.expect;
  if (expect !== undefined) {
    if (expect !== "100-continue") {
      res.statusCode = 417;
      res.end();
      return;
    }
    res.writeContinue();
  }
  handler(req, res);
}
