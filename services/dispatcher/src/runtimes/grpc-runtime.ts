import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, codeName } from "@toolmesh/errors";
import {
  CallErrorSchema,
  InvokeRequestSchema,
  InvokeResponseSchema,
  ToolBackendService,
} from "@toolmesh/proto";
import { GrpcChannels, type GrpcEnd } from "./grpc-channel.js";
import {
  type Attempt,
  type AttemptResult,
  MAX_BACKEND_EVENTS,
  type ToolRuntime,
} from "./runtime.js";

const INVOKE_PATH = `/${ToolBackendService.typeName}/${ToolBackendService.method.invoke.name}`;
const NO_HEADERS: Record<string, string> = {};

/** Calls ToolBackendService.Invoke over HTTP/2 (grpc-channel.ts), one connection per address. */
export class GrpcRuntime implements ToolRuntime {
  private readonly channels: GrpcChannels;

  constructor(
    private readonly maxResponseBytes: number,
    /** Streams one connection to a backend carries (grpc-channel.ts); tests set it low. */
    streamsPerConnection?: number,
  ) {
    this.channels = new GrpcChannels(maxResponseBytes, streamsPerConnection);
  }

  invoke(attempt: Attempt): Promise<AttemptResult> {
    const runtime = attempt.tool.spec?.runtime?.kind;
    const address = runtime?.case === "grpc" ? runtime.value.address : "";
    return this.invokeAt(address, attempt);
  }

  /** Runs an attempt against a backend at host:port (also used by local tools). */
  invokeAt(address: string, attempt: Attempt): Promise<AttemptResult> {
    if (!address) {
      return Promise.resolve(
        failure("backend_misconfigured", "the tool has no grpc address", false),
      );
    }
    if (attempt.signal.aborted)
      return Promise.resolve(failure("interrupted", "the call was interrupted", false));
    return new Promise<AttemptResult>((resolve) => {
      let result: AttemptResult | undefined;
      let events = 0;
      const onAbort = () => call.cancel();
      const call = this.channels.serverStream(
        address,
        INVOKE_PATH,
        toBinary(InvokeRequestSchema, attempt.request),
        attempt.traceparent ? { traceparent: attempt.traceparent } : NO_HEADERS,
        {
          onMessage: (bytes) => {
            if (result) return;
            let message: ReturnType<typeof fromBinary<typeof InvokeResponseSchema>>;
            try {
              message = fromBinary(InvokeResponseSchema, bytes);
            } catch (error) {
              result = failure(
                "invalid_output",
                `the tool backend sent a response that is not a valid InvokeResponse: ${error instanceof Error ? error.message : String(error)}`,
                false,
              );
              return;
            }
            const m = message.message;
            if (m.case === "event") {
              if (++events <= MAX_BACKEND_EVENTS) attempt.onEvent(m.value);
            } else if (m.case === "result") {
              const r = m.value;
              result = r.error
                ? { ok: false, error: r.error, transient: false, costMicros: r.costMicros }
                : {
                    ok: true,
                    output: r.output ?? {},
                    pending: r.pending,
                    costMicros: r.costMicros,
                  };
            }
          },
          onEnd: (end) => {
            attempt.signal.removeEventListener("abort", onAbort);
            if (attempt.signal.aborted)
              return resolve(failure("interrupted", "the call was interrupted", false));
            if (end.code !== 0)
              return resolve(
                result?.ok === false ? result : endFailure(end, this.maxResponseBytes),
              );
            resolve(
              result ??
                failure(
                  "invalid_output",
                  "the backend ended its stream without a result; it must send exactly one InvokeResult",
                  false,
                ),
            );
          },
        },
      );
      attempt.signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Drops the connection of an address (a local tool that moved to a new port). */
  forget(address: string): void {
    this.channels.forget(address);
  }

  async close(): Promise<void> {
    this.channels.close();
  }
}

/** The failed attempt a stream's non-OK status stands for. */
function endFailure(end: GrpcEnd, maxBytes: number): AttemptResult {
  switch (end.code) {
    case Code.Unavailable:
      return failure(
        "backend_unavailable",
        `the tool backend is unavailable: ${end.message}`,
        true,
      );
    case Code.ResourceExhausted:
      return failure(
        "output_too_large",
        `the tool backend's response exceeds ${maxBytes} bytes: ${end.message}`,
        false,
      );
    case Code.Canceled:
      return failure("interrupted", "the call was interrupted", false);
    case Code.Internal:
      return failure("backend_error", `the tool backend failed: ${end.message}`, false);
    default:
      return failure(
        "backend_error",
        // Never 0 here: only a stream that did not end OK is a failure.
        `the tool backend failed with ${codeName(end.code as Code)}: ${end.message}`,
        false,
      );
  }
}

/** A failed attempt. */
export function failure(code: string, message: string, transient: boolean): AttemptResult {
  return { ok: false, error: create(CallErrorSchema, { code, message }), transient };
}
