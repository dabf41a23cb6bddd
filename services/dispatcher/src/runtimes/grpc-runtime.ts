import { create } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import {
  CallErrorSchema,
  type InvokeRequest,
  type InvokeResponse,
  ToolBackendService,
} from "@toolmesh/proto";
import { grpcServiceDefinition } from "@toolmesh/server";
import {
  type Attempt,
  type AttemptResult,
  MAX_BACKEND_EVENTS,
  type ToolRuntime,
} from "./runtime.js";

const invokeMethod = grpcServiceDefinition(ToolBackendService).invoke as grpc.MethodDefinition<
  InvokeRequest,
  InvokeResponse
>;

/** Calls ToolBackendService.Invoke over @grpc/grpc-js, one reused channel per address. */
export class GrpcRuntime implements ToolRuntime {
  private readonly clients = new Map<string, grpc.Client>();

  constructor(private readonly maxResponseBytes: number) {}

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
    const client = this.client(address);
    return new Promise<AttemptResult>((resolve) => {
      let settled = false;
      let result: AttemptResult | undefined;
      let events = 0;
      const finish = (value: AttemptResult) => {
        if (settled) return;
        settled = true;
        attempt.signal.removeEventListener("abort", onAbort);
        resolve(value);
      };
      const metadata = new grpc.Metadata();
      if (attempt.traceparent) metadata.set("traceparent", attempt.traceparent);
      const call = client.makeServerStreamRequest(
        invokeMethod.path,
        invokeMethod.requestSerialize,
        invokeMethod.responseDeserialize,
        attempt.request,
        metadata,
        {},
      );
      const onAbort = () => {
        call.cancel();
        finish(failure("interrupted", "the call was interrupted", false));
      };
      if (attempt.signal.aborted) {
        onAbort();
        return;
      }
      attempt.signal.addEventListener("abort", onAbort, { once: true });
      call.on("data", (message: InvokeResponse) => {
        const m = message.message;
        if (m.case === "event") {
          if (++events <= MAX_BACKEND_EVENTS) attempt.onEvent(m.value);
        } else if (m.case === "result" && !result) {
          const r = m.value;
          result = r.error
            ? { ok: false, error: r.error, transient: false, costMicros: r.costMicros }
            : { ok: true, output: r.output ?? {}, pending: r.pending, costMicros: r.costMicros };
        }
      });
      call.on("error", (error: grpc.ServiceError) =>
        finish(mapGrpcError(error, this.maxResponseBytes)),
      );
      call.on("end", () =>
        finish(
          result ??
            failure(
              "invalid_output",
              "the backend ended its stream without a result; it must send exactly one InvokeResult",
              false,
            ),
        ),
      );
    });
  }

  private client(address: string): grpc.Client {
    let client = this.clients.get(address);
    if (!client) {
      client = new grpc.Client(address, grpc.credentials.createInsecure(), {
        "grpc.max_receive_message_length": this.maxResponseBytes,
        "grpc.max_send_message_length": 64 * 1024 * 1024,
        "grpc.enable_retries": 0,
        "grpc.initial_reconnect_backoff_ms": 100,
        "grpc.max_reconnect_backoff_ms": 1000,
      });
      this.clients.set(address, client);
    }
    return client;
  }

  /** Drops the channel of an address (a local tool that moved to a new port). */
  forget(address: string): void {
    this.clients.get(address)?.close();
    this.clients.delete(address);
  }

  async close(): Promise<void> {
    for (const client of this.clients.values()) client.close();
    this.clients.clear();
  }
}

function mapGrpcError(error: grpc.ServiceError, maxBytes: number): AttemptResult {
  switch (error.code) {
    case grpc.status.UNAVAILABLE:
      return failure(
        "backend_unavailable",
        `the tool backend is unavailable: ${error.details}`,
        true,
      );
    case grpc.status.RESOURCE_EXHAUSTED:
      return failure(
        "output_too_large",
        `the tool backend's response exceeds ${maxBytes} bytes: ${error.details}`,
        false,
      );
    case grpc.status.CANCELLED:
      return failure("interrupted", "the call was interrupted", false);
    case grpc.status.INTERNAL:
      if (/parsing|parse|deserializ|decod/i.test(error.details)) {
        return failure(
          "invalid_output",
          `the tool backend sent a response that is not a valid InvokeResponse: ${error.details}`,
          false,
        );
      }
      return failure("backend_error", `the tool backend failed: ${error.details}`, false);
    default:
      return failure(
        "backend_error",
        `the tool backend failed with ${grpc.status[error.code] ?? error.code}: ${error.details}`,
        false,
      );
  }
}

/** A failed attempt. */
export function failure(code: string, message: string, transient: boolean): AttemptResult {
  return { ok: false, error: create(CallErrorSchema, { code, message }), transient };
}
