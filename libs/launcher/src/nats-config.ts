import { chmodSync, renameSync, writeFileSync } from "node:fs";
import type { NatsPermissions } from "@toolmesh/nats";

/** A user in nats-server's authorization block: an nkey, or a name and password (tests only). */
export type NatsServerUser =
  | { name: string; nkey: string; permissions?: NatsPermissions }
  | { name: string; password: string; permissions?: NatsPermissions };

/** A node's place in a cluster: routes to its peers on loopback (or a private network). */
export interface NatsClusterConfig {
  /** The cluster's name, the same on every node. */
  name: string;
  /** The port this node takes routes on. */
  port: number;
  /** Every node's route address (host:port), this one's included (nats-server skips itself). */
  routes: string[];
  /** The credential routes authenticate with, so no other process can join the cluster. */
  user: string;
  password: string;
}

/** What goes into the nats-server config file. */
export interface NatsConfig {
  host: string;
  /** The server's name, unique in a cluster (JetStream's peers and the meta leader are named by it). */
  serverName?: string | undefined;
  /** The HTTP monitoring port (/healthz, /jsz), on the same host; undefined: none. */
  monitorPort?: number | undefined;
  /** Set for a node of a cluster. */
  cluster?: NatsClusterConfig | undefined;
  /** -1: any free port. */
  port: number;
  storeDir: string;
  /** `always`, a duration, or undefined to leave nats-server's default (two minutes). */
  syncInterval: string | undefined;
  /** JetStream's file store limit in bytes: what streams' byte limits may reserve in total. */
  maxFileStore?: number | undefined;
  /** No users: no authorization block (anyone may connect and do anything). */
  users: NatsServerUser[];
  /** A user clients without credentials are taken for (tests' own connections). */
  noAuthUser?: string | undefined;
}

/**
 * Renders a nats-server config. Values are JSON, which nats-server's config parser reads, so a
 * path or key cannot break out of its string.
 */
export function renderNatsConfig(config: NatsConfig): string {
  const q = (value: unknown) => JSON.stringify(value);
  const lines = [
    "# Written by the toolmesh launcher at every start of nats-server; edits are overwritten.",
    `host: ${q(config.host)}`,
    `port: ${config.port}`,
    ...(config.serverName ? [`server_name: ${q(config.serverName)}`] : []),
    ...(config.monitorPort !== undefined
      ? [`http: ${q(`${config.host}:${config.monitorPort}`)}`]
      : []),
    "jetstream {",
    `  store_dir: ${q(config.storeDir)}`,
    ...(config.syncInterval ? [`  sync_interval: ${q(config.syncInterval)}`] : []),
    ...(config.maxFileStore ? [`  max_file_store: ${config.maxFileStore}`] : []),
    "}",
  ];
  if (config.cluster) {
    const { cluster } = config;
    const auth = `${encodeURIComponent(cluster.user)}:${encodeURIComponent(cluster.password)}`;
    lines.push(
      "cluster {",
      `  name: ${q(cluster.name)}`,
      `  listen: ${q(`${config.host}:${cluster.port}`)}`,
      `  authorization: ${q({ user: cluster.user, password: cluster.password })}`,
      `  routes: ${q(cluster.routes.map((r) => `nats-route://${auth}@${r}`))}`,
      "}",
    );
  }
  if (config.users.length > 0) {
    lines.push("authorization {", "  users: [");
    for (const user of config.users) {
      const entry: Record<string, unknown> =
        "nkey" in user ? { nkey: user.nkey } : { user: user.name, password: user.password };
      if (user.permissions) entry.permissions = user.permissions;
      lines.push(`    # ${user.name}`, `    ${q(entry)}`);
    }
    lines.push("  ]", "}");
    if (config.noAuthUser) lines.push(`no_auth_user: ${q(config.noAuthUser)}`);
  }
  return `${lines.join("\n")}\n`;
}

/** Writes the config atomically with mode 0600 (it names every user's permissions). */
export function writeNatsConfig(file: string, config: NatsConfig): void {
  writeFileSync(`${file}.tmp`, renderNatsConfig(config), { mode: 0o600 });
  chmodSync(`${file}.tmp`, 0o600);
  renameSync(`${file}.tmp`, file);
}
