import type { Interceptor } from "@connectrpc/connect";
import { Code, ConnectError, codeName } from "@toolmesh/errors";
import { counter, histogram } from "./metrics.js";

/**
 * Counts every RPC a server answers by service, method and gRPC code, times unary ones, and
 * counts authentication failures. It must run outside the auth interceptor to see those.
 */
export function rpcMetricsInterceptor(): Interceptor {
  const handled = counter(
    "toolmesh_rpc_server_handled_total",
    "RPCs answered, by service, method and gRPC code",
    ["service", "method", "code"],
  );
  const seconds = histogram(
    "toolmesh_rpc_server_handling_seconds",
    "Time to answer a unary RPC, in seconds",
    ["service", "method"],
  );
  const authFailures = counter(
    "toolmesh_auth_failures_total",
    "RPCs refused because their credential was missing, malformed or not valid",
    ["service"],
  );
  return (next) => async (req) => {
    const service = req.service.typeName;
    const method = req.method.name;
    const started = performance.now();
    try {
      const res = await next(req);
      handled.inc({ service, method, code: "OK" });
      if (!res.stream) seconds.observe({ service, method }, (performance.now() - started) / 1000);
      return res;
    } catch (error) {
      const code = ConnectError.from(error).code;
      handled.inc({ service, method, code: codeName(code) });
      if (code === Code.Unauthenticated) authFailures.inc({ service });
      throw error;
    }
  };
}
