import type { JsonObject } from "@bufbuild/protobuf";
import { readBody } from "@toolmesh/server";
import { failure } from "./grpc-runtime.js";
import { type Attempt, type AttemptResult, COST_HEADER, type ToolRuntime } from "./runtime.js";

/**
 * POSTs the arguments as JSON to an HTTP endpoint: 2xx is success with the JSON object body as
 * output, 4xx a failure, 5xx and connection errors a transient failure, non-JSON invalid_output.
 */
export class RemoteRuntime implements ToolRuntime {
  constructor(private readonly maxResponseBytes: number) {}

  invoke(attempt: Attempt): Promise<AttemptResult> {
    const runtime = attempt.tool.spec?.runtime?.kind;
    if (runtime?.case !== "remote") {
      return Promise.resolve(failure("backend_misconfigured", "the tool has no remote URL", false));
    }
    return this.post(runtime.value.url, runtime.value.headers, attempt);
  }

  /** POSTs one attempt to url (also used by local tools speaking HTTP). */
  async post(
    url: string,
    headers: Record<string, string>,
    attempt: Attempt,
  ): Promise<AttemptResult> {
    const ctx = attempt.request.context;
    const injected = injectHttp(url, attempt);
    let response: Response;
    try {
      response = await fetch(injected.url, {
        method: "POST",
        headers: {
          ...headers,
          ...injected.headers,
          "content-type": "application/json",
          accept: "application/json",
          "x-toolmesh-trace-id": ctx?.traceId ?? "",
          "x-toolmesh-call-id": ctx?.callId ?? "",
          "x-toolmesh-attempt": String(attempt.request.attempt),
          ...(attempt.traceparent ? { traceparent: attempt.traceparent } : {}),
        },
        body: JSON.stringify(attempt.request.arguments ?? {}),
        signal: attempt.signal,
      });
    } catch (error) {
      if (attempt.signal.aborted) return failure("interrupted", "the call was interrupted", false);
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      return failure(
        "backend_unavailable",
        `cannot reach ${new URL(url).host}: ${cause?.code ?? cause?.message ?? String(error)}`,
        true,
      );
    }
    let text: string;
    try {
      text = await readCapped(response, this.maxResponseBytes);
    } catch (error) {
      if (attempt.signal.aborted) return failure("interrupted", "the call was interrupted", false);
      if (error instanceof TooLargeError) {
        return failure(
          "output_too_large",
          `the tool's HTTP response exceeds ${this.maxResponseBytes} bytes`,
          false,
        );
      }
      return failure(
        "backend_unavailable",
        `reading the tool's response failed: ${String(error)}`,
        true,
      );
    }
    const costMicros = reportedCost(response.headers.get(COST_HEADER));
    if (response.status >= 500) {
      return failure(
        "backend_unavailable",
        `the tool answered HTTP ${response.status}: ${text.slice(0, 200)}`,
        true,
      );
    }
    if (response.status >= 400) {
      return failure(
        "backend_error",
        `the tool answered HTTP ${response.status}: ${text.slice(0, 500)}`,
        false,
      );
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return failure(
        "invalid_output",
        `the tool answered HTTP ${response.status} with a body that is not JSON: ${text.slice(0, 100)}`,
        false,
      );
    }
    if (body === null || typeof body !== "object" || Array.isArray(body)) {
      return failure("invalid_output", "the tool answered JSON that is not an object", false);
    }
    return { ok: true, output: body as JsonObject, costMicros };
  }
}

/** A cost an HTTP tool reported: a whole number of millionths, else nothing. */
function reportedCost(header: string | null): bigint {
  return header !== null && /^\d{1,18}$/.test(header.trim()) ? BigInt(header.trim()) : 0n;
}

class TooLargeError extends Error {
  override name = "TooLargeError";
}

async function readCapped(response: Response, maxBytes: number): Promise<string> {
  const length = Number(response.headers.get("content-length") ?? "0");
  if (length > maxBytes) {
    await response.body?.cancel();
    throw new TooLargeError();
  }
  const text = await readBody(response.body, maxBytes);
  if (text === undefined) throw new TooLargeError();
  return text;
}

/**
 * The URL and headers of a request with the call's secrets in it (header and query injections):
 * only the request to the backend ever holds them.
 */
function injectHttp(
  url: string,
  attempt: Attempt,
): { url: string; headers: Record<string, string> } {
  const injected = attempt.secrets?.injected;
  if (!injected || injected.length === 0) return { url, headers: {} };
  const headers: Record<string, string> = {};
  let withQuery: URL | undefined;
  for (const { injection, text } of injected) {
    const target = injection.target;
    if (target.case === "header") headers[target.value.toLowerCase()] = text;
    else if (target.case === "query") {
      withQuery ??= new URL(url);
      withQuery.searchParams.set(target.value, text);
    }
  }
  return { url: withQuery?.toString() ?? url, headers };
}
