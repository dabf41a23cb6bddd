import { readFileSync } from "node:fs";
import type { Logger } from "@toolmesh/log";
import {
  type Authenticator,
  type ConnectionOptions,
  connect,
  createInbox,
  credsAuthenticator,
  type NatsConnection,
  nkeyAuthenticator,
} from "nats";
import { inboxPrefix } from "./bus-access.js";

/**
 * How a process proves who it is to nats-server; at most one way is set. The launcher gives each
 * process an nkey seed file; user/password and .creds files are for a NATS the operator runs.
 */
export interface BusCredentials {
  /** A file holding an nkey seed (`SU…`), TOOLMESH_NATS_NKEY_FILE. */
  nkeyFile?: string | undefined;
  /** A NATS .creds file (JWT and seed), TOOLMESH_NATS_CREDS. */
  credsFile?: string | undefined;
  /** TOOLMESH_NATS_USER and TOOLMESH_NATS_PASSWORD. */
  user?: string | undefined;
  password?: string | undefined;
}

/** Raised when a credential file cannot be read; the message names the variable and the file. */
export class BusCredentialError extends Error {
  override name = "BusCredentialError";
}

/** The connect options that authenticate with the given credentials (none: no options). */
export function credentialOptions(credentials: BusCredentials = {}): Partial<ConnectionOptions> {
  const read = (file: string, variable: string): Uint8Array => {
    try {
      return new Uint8Array(readFileSync(file));
    } catch (error) {
      throw new BusCredentialError(
        `${variable}=${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}); the launcher writes it at first start under the data directory`,
        { cause: error },
      );
    }
  };
  let authenticator: Authenticator | undefined;
  if (credentials.nkeyFile) {
    const seed = new TextDecoder().decode(read(credentials.nkeyFile, "TOOLMESH_NATS_NKEY_FILE"));
    authenticator = nkeyAuthenticator(new TextEncoder().encode(seed.trim()));
  } else if (credentials.credsFile) {
    authenticator = credsAuthenticator(read(credentials.credsFile, "TOOLMESH_NATS_CREDS"));
  }
  if (authenticator) return { authenticator };
  if (credentials.user) return { user: credentials.user, pass: credentials.password ?? "" };
  return {};
}

const prefixes = new WeakMap<NatsConnection, string>();

/**
 * A fresh inbox under the connection's own prefix (`_INBOX.<user>.…`): nats-server lets only
 * that user subscribe there, so no other process reads its replies or JetStream acks.
 */
export function newInbox(nc: NatsConnection): string {
  return createInbox(prefixes.get(nc));
}

/**
 * Connects to NATS as one bus user, waiting for the server on first connect and reconnecting
 * forever after (a restarted nats-server is ridden through).
 */
export async function connectNats(options: {
  url: string;
  /** The bus user (bus-access.ts), such as `dispatcher`; the connection is named toolmesh-<user>. */
  user: string;
  credentials?: BusCredentials;
  log: Logger;
  /** Ping interval; two pings unanswered and it reconnects, to another node of a cluster. */
  pingIntervalMs?: number;
}): Promise<NatsConnection> {
  const { url, user, log } = options;
  const prefix = inboxPrefix(user);
  const nc = await connect({
    servers: url.split(",").map((s) => s.trim()),
    name: `toolmesh-${user}`,
    inboxPrefix: prefix,
    waitOnFirstConnect: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    pingInterval: options.pingIntervalMs ?? 10_000,
    maxPingOut: 2,
    noAsyncTraces: true,
    ...credentialOptions(options.credentials),
  });
  prefixes.set(nc, prefix);
  log.info({ nats: nc.getServer() }, "connected to NATS");
  void (async () => {
    for await (const status of nc.status()) {
      if (status.type === "disconnect" || status.type === "error") {
        log.warn(
          { nats_status: status.type, data: String(status.data) },
          "NATS connection trouble",
        );
      } else if (status.type === "reconnect") {
        log.info({ nats_status: status.type }, "reconnected to NATS");
      }
    }
  })();
  return nc;
}
