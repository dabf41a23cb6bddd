import { create, type JsonObject } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { Code, ConnectError } from "@toolmesh/errors";
import {
  BackendEventSchema,
  CallErrorSchema,
  Health,
  HealthCheckResponse_ServingStatus,
  HealthCheckResponseSchema,
  type InvokeRequest,
  type InvokeResponse,
  InvokeResponseSchema,
  InvokeResultSchema,
  PrincipalSchema,
  RegistryService,
  ToolBackendService,
  type ToolSpec,
  ToolSpecSchema,
  ToolStatus,
  TraceEventKind,
} from "@toolmesh/proto";
import { grpcServiceDefinition } from "@toolmesh/server";
import { Deferred, Reporter, type ReportOptions } from "./deferred.js";
import type { ToolContext, ToolDefinition } from "./define-tool.js";
import { ToolError } from "./tool-error.js";

export interface ServeToolsOptions {
  /** Port to listen on; 0 picks a free one. Defaults to TOOLMESH_TOOL_PORT, else 0. */
  port?: number;
  /** Interface to bind; default 127.0.0.1. */
  host?: string;
  /** Address the Dispatcher dials, when it differs from host:port (containers, NAT). */
  advertiseAddress?: string;
  /** When given, every tool is registered (or updated) in the registry with this backend's address. */
  registry?: { url: string; token: string };
  /**
   * The backend's own credential for reporting deferred calls (`ctx.defer`); its agent id is
   * registered as the tools' reporter. Without it a deferred call fails.
   */
  reports?: ReportOptions;
}

export interface ServedTools {
  readonly port: number;
  /** host:port the Dispatcher dials. */
  readonly address: string;
  close(): Promise<void>;
}

/**
 * Serves the tools as toolmesh.backend.v1.ToolBackendService (plus grpc.health.v1.Health) and,
 * when `registry` is given, registers them with a grpc runtime pointing here. The Dispatcher
 * has already authenticated, validated and authorised every call that reaches a handler.
 */
export async function serveTools(
  tools: ToolDefinition<never>[],
  options: ServeToolsOptions = {},
): Promise<ServedTools> {
  const byName = new Map<string, ToolDefinition<never>>();
  for (const tool of tools) {
    if (byName.has(tool.name)) throw new Error(`tool "${tool.name}" is defined twice`);
    byName.set(tool.name, tool);
  }
  const server = new grpc.Server({ "grpc.max_receive_message_length": 4 * 1024 * 1024 });
  const stopping = new AbortController();
  const reporter = options.reports
    ? new Reporter(options.reports, (callId, error) =>
        process.stderr.write(
          `toolmesh sdk: could not report the outcome of call ${callId}: ${String(error)}\n`,
        ),
      )
    : undefined;
  server.addService(grpcServiceDefinition(ToolBackendService), {
    invoke: (call: grpc.ServerWritableStream<InvokeRequest, InvokeResponse>) => {
      void invoke(byName, call, stopping.signal, reporter);
    },
  });
  server.addService(grpcServiceDefinition(Health), {
    check: (
      _call: grpc.ServerUnaryCall<unknown, unknown>,
      callback: grpc.sendUnaryData<unknown>,
    ) => {
      callback(
        null,
        create(HealthCheckResponseSchema, { status: HealthCheckResponse_ServingStatus.SERVING }),
      );
    },
  });
  const host = options.host ?? "127.0.0.1";
  const wanted = options.port ?? Number(process.env.TOOLMESH_TOOL_PORT ?? 0);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      `${host.includes(":") ? `[${host}]` : host}:${wanted}`,
      grpc.ServerCredentials.createInsecure(),
      (error, bound) => (error ? reject(error) : resolve(bound)),
    );
  });
  const address = options.advertiseAddress ?? `${host}:${port}`;
  if (options.registry) {
    const reporters = options.reports ? [options.reports.agentId] : [];
    await registerTools(tools, address, options.registry, reporters);
  }
  return {
    port,
    address,
    close: () =>
      new Promise<void>((resolve) => {
        stopping.abort();
        const timer = setTimeout(() => server.forceShutdown(), 2000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}

async function invoke(
  byName: Map<string, ToolDefinition<never>>,
  call: grpc.ServerWritableStream<InvokeRequest, InvokeResponse>,
  stopping: AbortSignal,
  reporter: Reporter | undefined,
): Promise<void> {
  const req = call.request;
  const tool = byName.get(req.tool);
  if (!tool) {
    call.emit("error", {
      code: grpc.status.NOT_FOUND,
      details: `tool "${req.tool}" is not served here; served: ${[...byName.keys()].join(", ")}`,
    });
    return;
  }
  const abort = new AbortController();
  const onStop = () => abort.abort(new Error("the tool server is stopping"));
  stopping.addEventListener("abort", onStop, { once: true });
  // grpc-js emits "cancelled" after every call; only a call still running is really abandoned.
  let finished = false;
  call.once("cancelled", () => {
    if (!finished) abort.abort(new Error("the Dispatcher cancelled the call"));
  });
  let costMicros = 0n;
  const ctx: ToolContext = {
    traceId: req.context?.traceId ?? "",
    callId: req.context?.callId ?? "",
    principal: req.principal ?? create(PrincipalSchema),
    attempt: req.attempt,
    deadlineMs: req.deadlineMs,
    signal: abort.signal,
    trace(kind, payload) {
      if (abort.signal.aborted) return;
      call.write(
        create(InvokeResponseSchema, {
          message: { case: "event", value: backendEvent(kind, payload) },
        }),
      );
    },
    defer: (work) => new Deferred(work),
    reportCost(micros) {
      if (typeof micros === "number" && !Number.isFinite(micros)) return;
      const whole = typeof micros === "bigint" ? micros : BigInt(Math.round(micros));
      if (whole > 0n) costMicros += whole;
    },
  };
  let result: InvokeResponse;
  try {
    const output = await tool.handler((req.arguments ?? {}) as never, ctx);
    if (output instanceof Deferred) {
      if (!reporter) {
        throw new ToolError(
          "tool_misconfigured",
          `tool "${tool.name}" deferred its call, but its server has no credential to report with (serveTools' reports option)`,
        );
      }
      // The work runs on after this reply; its outcome arrives through Report.
      void reporter.finish(ctx.callId, output);
      result = create(InvokeResponseSchema, {
        message: { case: "result", value: create(InvokeResultSchema, { pending: true }) },
      });
    } else {
      result = create(InvokeResponseSchema, {
        message: { case: "result", value: create(InvokeResultSchema, { output, costMicros }) },
      });
    }
  } catch (error) {
    const callError =
      error instanceof ToolError
        ? create(CallErrorSchema, {
            code: error.code,
            message: error.message,
            ...(error.details ? { details: error.details } : {}),
          })
        : create(CallErrorSchema, {
            code: "tool_error",
            message: error instanceof Error ? error.message : String(error),
          });
    result = create(InvokeResponseSchema, {
      message: {
        case: "result",
        value: create(InvokeResultSchema, { error: callError, costMicros }),
      },
    });
  } finally {
    stopping.removeEventListener("abort", onStop);
  }
  if (abort.signal.aborted) return;
  finished = true;
  call.write(result);
  call.end();
}

const knownKinds = new Set(
  Object.keys(TraceEventKind).filter((k) => Number.isNaN(Number(k)) && k !== "UNSPECIFIED"),
);

function backendEvent(kind: string, payload: JsonObject | undefined) {
  const upper = kind.toUpperCase();
  const known = knownKinds.has(upper) && upper !== "CUSTOM";
  return create(BackendEventSchema, {
    kind: known ? TraceEventKind[upper as keyof typeof TraceEventKind] : TraceEventKind.CUSTOM,
    customKind: known ? "" : upper,
    payload: payload ?? {},
    time: timestampNow(),
  });
}

/** The registry spec of a tool served at address, reported by `reporters` when it defers. */
export function toolSpec(
  tool: ToolDefinition<never>,
  address: string,
  reporters: string[] = [],
): ToolSpec {
  return create(ToolSpecSchema, {
    reporters,
    name: tool.name,
    version: tool.version ?? "",
    description: tool.description,
    category: tool.category ?? "",
    inputSchema: tool.inputSchema,
    ...(tool.outputSchema ? { outputSchema: tool.outputSchema } : {}),
    requiredScopes: tool.requiredScopes ?? [],
    timeoutMs: tool.timeoutMs ?? 0,
    ...(tool.retryPolicy
      ? {
          retryPolicy: {
            maxAttempts: tool.retryPolicy.maxAttempts,
            initialBackoffMs: tool.retryPolicy.initialBackoffMs ?? 0,
            maxBackoffMs: tool.retryPolicy.maxBackoffMs ?? 0,
          },
        }
      : {}),
    idempotent: tool.idempotent ?? false,
    sideEffects: tool.sideEffects ?? false,
    status: ToolStatus.ACTIVE,
    runtime: { kind: { case: "grpc", value: { address } } },
  });
}

/** Registers each tool, or updates it when the name is taken. */
export async function registerTools(
  tools: ToolDefinition<never>[],
  address: string,
  registry: { url: string; token: string },
  reporters: string[] = [],
): Promise<void> {
  const client = createClient(RegistryService, createGrpcTransport({ baseUrl: registry.url }));
  const headers = { authorization: `Bearer ${registry.token}` };
  for (const tool of tools) {
    const spec = toolSpec(tool, address, reporters);
    try {
      await client.registerTool({ tool: spec }, { headers });
    } catch (error) {
      if (ConnectError.from(error).code !== Code.AlreadyExists) throw error;
      await client.updateTool({ tool: spec }, { headers });
    }
  }
}
