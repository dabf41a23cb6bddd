import type { Interceptor } from "@connectrpc/connect";
import { Code, ConnectError, codeName } from "@toolmesh/errors";
import { counter, histogram } from "./metrics.js";

/**
 * Records how one RPC ended: counted by service, method and gRPC code (undefined: OK), timed when
 * `seconds` is given (unary), and an UNAUTHENTICATED one counted as an authentication failure.
 */
export type RpcObserver = (
  service: string,
  method: string,
  code: Code | undefined,
  seconds?: number,
) => void;

/** The observer behind the RPC metrics, for a server path that bypasses the interceptors. */
export function rpcObserver(): RpcObserver {
  const handled = counter(
    "toolmesh_rpc_server_handled_total",
    "RPCs answered, by service, method and gRPC code",
    ["service", "method", "code"],
  );
  const timed = histogram(
    "toolmesh_rpc_server_handling_seconds",
    "Time to answer a unary RPC, in seconds",
    ["service", "method"],
  );
  const authFailures = counter(
    "toolmesh_auth_failures_total",
    "RPCs refused because their credential was missing, malformed or not valid",
    ["service"],
  );
  return (service, method, code, seconds) => {
    handled.inc({ service, method, code: code === undefined ? "OK" : codeName(code) });
    if (code === undefined && seconds !== undefined) timed.observe({ service, method }, seconds);
    if (code === Code.Unauthenticated) authFailures.inc({ service });
  };
}

/**
 * Counts every RPC a server answers by service, method and gRPC code, times unary ones, and
 * counts authentication failures. It must run outside the auth interceptor to see those.
 */
export function rpcMetricsInterceptor(): Interceptor {
  const observe = rpcObserver();
  return (next) => async (req) => {
    const service = req.service.typeName;
    const method = req.method.name;
    const started = performance.now();
    try {
      const res = await next(req);
      observe(
        service,
        method,
        undefined,
        res.stream ? undefined : (performance.now() - started) / 1000,
      );
      return res;
    } catch (error) {
      observe(service, method, ConnectError.from(error).code);
      throw error;
    }
  };
}
