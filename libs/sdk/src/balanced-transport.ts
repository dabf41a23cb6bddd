import type { DescMessage, DescMethodStreaming, DescMethodUnary } from "@bufbuild/protobuf";
import type { Transport } from "@connectrpc/connect";
import { createGrpcTransport, type GrpcTransportOptions } from "@connectrpc/connect-node";
import { Code, ConnectError } from "@toolmesh/errors";

/** How a balanced transport spreads calls and treats an address it could not reach. */
export interface BalancedTransportOptions extends Omit<GrpcTransportOptions, "baseUrl"> {
  /** Every replica's base URL (http://host:port): several Dispatchers, Callbacks … */
  baseUrls: string[];
  /** How long an address that refused a connection is skipped (default 1 s, doubling to 10 s). */
  downForMs?: number;
}

/** System errors that mean the request never reached a server, so another may take it. */
const NOT_SENT: ReadonlySet<string> = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

/** True when the call failed before any byte of it reached a server (nothing can have run). */
export function neverSent(error: unknown): boolean {
  for (let e: unknown = error; e instanceof Error; e = e.cause) {
    const code = (e as NodeJS.ErrnoException).code;
    if (typeof code === "string" && NOT_SENT.has(code)) return true;
  }
  return false;
}

interface Address {
  url: string;
  transport: Transport;
  /** Skipped until then (epoch ms) after a refused connection. */
  downUntil: number;
  failures: number;
}

/**
 * A gRPC transport over several replicas of a service: calls go round robin to the addresses
 * that are up, and a call whose connection is refused goes on to the next address, which is
 * always safe because nothing of it was sent. An address that refused is skipped for a while
 * (backing off while it keeps refusing). Any other failure — a connection lost mid-call, an
 * UNAVAILABLE the server answered — is the caller's to retry, as a retry may run a tool twice
 * without an idempotency key.
 */
export function createBalancedTransport(options: BalancedTransportOptions): Transport {
  const { baseUrls, downForMs = 1000, ...grpc } = options;
  if (baseUrls.length === 0) {
    throw new ConnectError("a balanced transport needs at least one address", Code.InvalidArgument);
  }
  const addresses: Address[] = baseUrls.map((url) => ({
    url,
    transport: createGrpcTransport({ ...grpc, baseUrl: url }),
    downUntil: 0,
    failures: 0,
  }));
  let next = 0;

  /** The addresses in the order this call tries them: those up first, from the next in turn. */
  const order = (): Address[] => {
    const start = next++ % addresses.length;
    const turn = [...addresses.slice(start), ...addresses.slice(0, start)];
    const now = Date.now();
    return [...turn.filter((a) => a.downUntil <= now), ...turn.filter((a) => a.downUntil > now)];
  };

  const attempt = async <T>(call: (transport: Transport) => Promise<T>): Promise<T> => {
    let last: unknown;
    for (const address of order()) {
      try {
        const result = await call(address.transport);
        address.failures = 0;
        address.downUntil = 0;
        return result;
      } catch (error) {
        if (!neverSent(error)) throw error;
        address.failures++;
        address.downUntil = Date.now() + Math.min(downForMs * 2 ** (address.failures - 1), 10_000);
        last = error;
      }
    }
    throw ConnectError.from(last, Code.Unavailable);
  };

  return {
    unary<I extends DescMessage, O extends DescMessage>(
      method: DescMethodUnary<I, O>,
      ...rest: Parameters<Transport["unary"]> extends [unknown, ...infer R] ? R : never
    ) {
      return attempt((t) => t.unary(method, ...(rest as [never, never, never, never, never])));
    },
    stream<I extends DescMessage, O extends DescMessage>(
      method: DescMethodStreaming<I, O>,
      ...rest: Parameters<Transport["stream"]> extends [unknown, ...infer R] ? R : never
    ) {
      // A stream's first request is consumed on the first attempt, so a stream is not moved.
      const [address] = order();
      return (address as Address).transport.stream(
        method,
        ...(rest as [never, never, never, never, never]),
      );
    },
  };
}
