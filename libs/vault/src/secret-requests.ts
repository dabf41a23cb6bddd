import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import { answerOverBus, requestOverBus, subjects } from "@toolmesh/nats";
import {
  ConnectLinkRequestSchema,
  type ResolvedSecret,
  type ResolveSecretsRequest,
  ResolveSecretsRequestSchema,
  ResolveSecretsResponseSchema,
} from "@toolmesh/proto";
import type { Msg, NatsConnection } from "nats";

/**
 * Asks Permission (over the bus: only the Dispatcher may ask, only Permission answers, only the
 * Dispatcher reads the reply) for the values a call needs, in the order of its needs. A missing
 * one comes back as the FAILED_PRECONDITION Permission names it with.
 */
export async function requestSecrets(
  nc: NatsConnection,
  request: ResolveSecretsRequest,
  timeoutMs: number,
): Promise<ResolvedSecret[]> {
  const data = await requestOverBus(
    nc,
    subjects.vaultResolve,
    toBinary(ResolveSecretsRequestSchema, request),
    { timeoutMs, what: "the vault (Permission)" },
  );
  return fromBinary(ResolveSecretsResponseSchema, data).secrets;
}

/** Asks Permission for the link that connects a user's account of an OAuth provider. */
export async function requestConnectLink(
  nc: NatsConnection,
  provider: string,
  userId: string,
  timeoutMs: number,
): Promise<string> {
  const data = await requestOverBus(
    nc,
    subjects.vaultConnectLink,
    toBinary(ConnectLinkRequestSchema, create(ConnectLinkRequestSchema, { provider, userId })),
    { timeoutMs, what: "the vault (Permission) for a connect link" },
  );
  return new TextDecoder().decode(data);
}

/** Permission's side: answers every request on the two subjects until the subscriptions end. */
export function answerSecretRequests(
  nc: NatsConnection,
  handlers: {
    resolve(request: ResolveSecretsRequest): Promise<ResolvedSecret[]>;
    link(provider: string, userId: string): Promise<string>;
  },
  onError: (error: unknown) => void,
): { stop(): void } {
  const queue = "permission";
  const answer = (msg: Msg, work: () => Promise<Uint8Array>) => {
    work().then(
      (bytes) => answerOverBus(msg, bytes),
      (error: unknown) => {
        onError(error);
        answerOverBus(msg, asConnectError(error));
      },
    );
  };
  const resolve = nc.subscribe(subjects.vaultResolve, {
    queue,
    callback: (error, msg) => {
      if (error) return onError(error);
      answer(msg, async () => {
        const request = fromBinary(ResolveSecretsRequestSchema, msg.data);
        const secrets = await handlers.resolve(request);
        return toBinary(
          ResolveSecretsResponseSchema,
          create(ResolveSecretsResponseSchema, { secrets }),
        );
      });
    },
  });
  const link = nc.subscribe(subjects.vaultConnectLink, {
    queue,
    callback: (error, msg) => {
      if (error) return onError(error);
      answer(msg, async () => {
        const request = fromBinary(ConnectLinkRequestSchema, msg.data);
        return new TextEncoder().encode(await handlers.link(request.provider, request.userId));
      });
    },
  });
  return {
    stop() {
      resolve.unsubscribe();
      link.unsubscribe();
    },
  };
}

function asConnectError(error: unknown): ConnectError {
  if (error instanceof ConnectError) return error;
  // Never the error's own text: it may come from a library that saw a value.
  return new ConnectError(
    "the vault could not resolve the call's secrets; see Permission's log",
    Code.Internal,
  );
}
