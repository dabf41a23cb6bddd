import { create } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import {
  Health,
  type HealthCheckRequest,
  HealthCheckRequestSchema,
  type HealthCheckResponse,
  HealthCheckResponse_ServingStatus,
  LocalProtocol,
} from "@toolmesh/proto";
import { grpcServiceDefinition } from "@toolmesh/server";
import { ToolStartError } from "./supervised-backend.js";

const healthCheck = grpcServiceDefinition(Health).check as grpc.MethodDefinition<
  HealthCheckRequest,
  HealthCheckResponse
>;

/**
 * One health check of a tool on a port: GET /healthz answering 2xx (HTTP tools), or
 * grpc.health.v1 Health/Check answering SERVING (gRPC tools) — the check a start waits for.
 * Resolves with undefined when healthy, else with why not.
 */
export async function checkHealth(
  port: number,
  protocol: LocalProtocol,
  timeoutMs: number,
): Promise<string | undefined> {
  try {
    if (protocol === LocalProtocol.HTTP) {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`, {
        signal: AbortSignal.timeout(timeoutMs),
      });
      await res.body?.cancel();
      return res.ok ? undefined : `GET /healthz answered ${res.status}`;
    }
    const status = await grpcHealth(port, timeoutMs);
    return status === HealthCheckResponse_ServingStatus.SERVING
      ? undefined
      : `grpc.health.v1 answered ${HealthCheckResponse_ServingStatus[status] ?? status}`;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** Checks a freshly started tool until it is healthy or `timeoutMs` have passed. */
export async function waitHealthy(
  port: number,
  protocol: LocalProtocol,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: string | undefined = "";
  while (Date.now() < deadline) {
    last = await checkHealth(port, protocol, 1000);
    if (last === undefined) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new ToolStartError(`not healthy within ${timeoutMs} ms${last ? ` (${last})` : ""}`);
}

function grpcHealth(port: number, timeoutMs: number): Promise<HealthCheckResponse_ServingStatus> {
  const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return new Promise((resolve, reject) => {
    client.makeUnaryRequest(
      healthCheck.path,
      healthCheck.requestSerialize,
      healthCheck.responseDeserialize,
      create(HealthCheckRequestSchema, { service: "" }),
      new grpc.Metadata(),
      { deadline: Date.now() + timeoutMs },
      (error, response) => {
        client.close();
        if (error) reject(new Error(error.details || error.message));
        else resolve(response?.status ?? HealthCheckResponse_ServingStatus.UNKNOWN);
      },
    );
  });
}
