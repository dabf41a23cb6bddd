import { chmodSync, renameSync, writeFileSync } from "node:fs";
import type { NatsPermissions } from "@toolmesh/nats";

/** A user in nats-server's authorization block: an nkey, or a name and password (tests only). */
export type NatsServerUser =
  | { name: string; nkey: string; permissions?: NatsPermissions }
  | { name: string; password: string; permissions?: NatsPermissions };

/** What goes into the nats-server config file. */
export interface NatsConfig {
  host: string;
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
    "jetstream {",
    `  store_dir: ${q(config.storeDir)}`,
    ...(config.syncInterval ? [`  sync_interval: ${q(config.syncInterval)}`] : []),
    ...(config.maxFileStore ? [`  max_file_store: ${config.maxFileStore}`] : []),
    "}",
  ];
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
