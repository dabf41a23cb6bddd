import { create } from "@bufbuild/protobuf";
import type { ServiceImpl } from "@connectrpc/connect";
import { Code, ConnectError } from "@toolmesh/errors";
import {
  type Health,
  type HealthCheckResponse_ServingStatus,
  HealthCheckResponseSchema,
  HealthCheckResponse_ServingStatus as Status,
} from "@toolmesh/proto";

/** Serving status per service name; "" is the whole server. Watchers see every change. */
export class HealthState {
  private readonly statuses = new Map<string, HealthCheckResponse_ServingStatus>();
  private readonly listeners = new Set<() => void>();

  constructor(services: string[]) {
    this.statuses.set("", Status.NOT_SERVING);
    for (const name of services) this.statuses.set(name, Status.NOT_SERVING);
  }

  /** Sets every known service (and the server) to one status. */
  setAll(status: HealthCheckResponse_ServingStatus): void {
    for (const name of this.statuses.keys()) this.statuses.set(name, status);
    for (const listener of this.listeners) listener();
  }

  get(service: string): HealthCheckResponse_ServingStatus | undefined {
    return this.statuses.get(service);
  }

  /** Resolves at the next change, or when the signal aborts. */
  nextChange(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.listeners.delete(done);
        signal.removeEventListener("abort", done);
        resolve();
      };
      this.listeners.add(done);
      signal.addEventListener("abort", done);
    });
  }
}

/** grpc.health.v1.Health over a HealthState; needs no credential. */
export function createHealthService(state: HealthState): ServiceImpl<typeof Health> {
  return {
    check(req) {
      const status = state.get(req.service);
      if (status === undefined)
        throw new ConnectError(`unknown service "${req.service}"`, Code.NotFound);
      return create(HealthCheckResponseSchema, { status });
    },
    async *watch(req, ctx) {
      let last: HealthCheckResponse_ServingStatus | undefined;
      while (!ctx.signal.aborted) {
        const status = state.get(req.service) ?? Status.SERVICE_UNKNOWN;
        if (status !== last) {
          last = status;
          yield create(HealthCheckResponseSchema, { status });
        }
        await state.nextChange(ctx.signal);
      }
    },
  };
}
