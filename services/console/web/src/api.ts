import type { DescService } from "@bufbuild/protobuf";
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { ConnectError } from "@toolmesh/errors";
import { type CallbackEvent, CallbackService, finalStatuses } from "@toolmesh/proto";

/** The console's origin forwards each service's RPCs, so one transport reaches them all. */
const transport = createConnectTransport({ baseUrl: window.location.origin });

const TOKEN_KEY = "toolmesh.token";

/**
 * The signed-in token lives in this tab's sessionStorage only: never in the URL, never in
 * localStorage, gone when the tab closes.
 */
export const session = {
  get token(): string | null {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  signIn(token: string): void {
    sessionStorage.setItem(TOKEN_KEY, token);
  },
  signOut(): void {
    sessionStorage.removeItem(TOKEN_KEY);
  },
};

/** A client of one service that sends the session's token on every call. */
export function client<S extends DescService>(service: S): Client<S> {
  return createClient(service, transport);
}

/** Call options with the session's bearer token. */
export function auth(signal?: AbortSignal) {
  return {
    headers: { authorization: `Bearer ${session.token ?? ""}` },
    ...(signal ? { signal } : {}),
  };
}

/**
 * Follows every final outcome the session may see (CallbackService.Watch) until `signal` aborts;
 * a stream that fails reports its error, described, to `onError`.
 */
export function watchOutcomes(
  signal: AbortSignal,
  onEvent: (event: CallbackEvent) => void,
  onError: (message: string) => void,
): void {
  // CallbackService.Watch needs a filter, so one stream per final status.
  for (const status of finalStatuses) {
    (async () => {
      try {
        for await (const res of client(CallbackService).watch({ status }, auth(signal)))
          if (res.event) onEvent(res.event);
      } catch (error) {
        if (!signal.aborted) onError(describeError(error));
      }
    })();
  }
}

/** What a failed RPC tells a person: its code and message. */
export function describeError(error: unknown): string {
  const e = ConnectError.from(error);
  return `${e.code === undefined ? "error" : codeLabel(e.code)}: ${e.rawMessage}`;
}

function codeLabel(code: number): string {
  const names = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
  ];
  return names[code] ?? String(code);
}

/** A Timestamp as a local time string. */
export function when(ts: { seconds: bigint; nanos: number } | undefined): string {
  if (!ts) return "-";
  return new Date(Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6)).toLocaleString();
}

/** Epoch ms of a Timestamp. */
export function ms(ts: { seconds: bigint; nanos: number } | undefined): number {
  return ts ? Number(ts.seconds) * 1000 + Math.floor(ts.nanos / 1e6) : 0;
}
