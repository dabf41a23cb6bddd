import { type DescMessage, type MessageShape, toBinary } from "@bufbuild/protobuf";
import type { Logger } from "@toolmesh/log";
import {
  buckets,
  MemorySnapshot,
  ReconnectingKvSnapshot,
  type SnapshotView,
  untilSnapshotShows,
} from "@toolmesh/nats";
import {
  OAuthConnectionSchema,
  OAuthProviderSchema,
  SecretSchema,
  SigningKeySchema,
} from "@toolmesh/proto";
import type { KV, NatsConnection } from "nats";
import type { VaultIndex, VaultIndexKind, VaultIndexValue } from "./store.js";

/** Each kind's key prefix and message, in the permission bucket. */
const KINDS = {
  secrets: { prefix: buckets.permission.secretPrefix, schema: SecretSchema },
  providers: { prefix: buckets.permission.oauthProviderPrefix, schema: OAuthProviderSchema },
  connections: { prefix: buckets.permission.connectionPrefix, schema: OAuthConnectionSchema },
  signingKeys: { prefix: buckets.permission.signingKeyPrefix, schema: SigningKeySchema },
} as const;

/** The vault's index in the `toolmesh-permission` bucket, read from watched snapshots. */
export class KvVaultIndex implements VaultIndex {
  readonly secrets: ReconnectingKvSnapshot<typeof SecretSchema>;
  readonly providers: ReconnectingKvSnapshot<typeof OAuthProviderSchema>;
  readonly connections: ReconnectingKvSnapshot<typeof OAuthConnectionSchema>;
  readonly signingKeys: ReconnectingKvSnapshot<typeof SigningKeySchema>;

  constructor(
    nc: NatsConnection,
    private readonly kv: KV,
    private readonly log: Logger,
  ) {
    const follow = <D extends DescMessage>(prefix: string, schema: D) =>
      new ReconnectingKvSnapshot(nc, kv, prefix, schema, log);
    this.secrets = follow(KINDS.secrets.prefix, SecretSchema);
    this.providers = follow(KINDS.providers.prefix, OAuthProviderSchema);
    this.connections = follow(KINDS.connections.prefix, OAuthConnectionSchema);
    this.signingKeys = follow(KINDS.signingKeys.prefix, SigningKeySchema);
  }

  async start(): Promise<void> {
    await Promise.all([
      this.secrets.start(),
      this.providers.start(),
      this.connections.start(),
      this.signingKeys.start(),
    ]);
  }

  stop(): void {
    this.secrets.stop();
    this.providers.stop();
    this.connections.stop();
    this.signingKeys.stop();
  }

  async put<K extends VaultIndexKind>(
    kind: K,
    key: string,
    value: VaultIndexValue<K>,
  ): Promise<void> {
    const schema = KINDS[kind].schema as DescMessage;
    const bytes = toBinary(schema, value as MessageShape<DescMessage>);
    await this.kv.put(key, bytes);
    const view = this[kind] as SnapshotView<DescMessage>;
    await this.settle(view, () => {
      const seen = view.get(key);
      return seen !== undefined && equalBytes(toBinary(schema, seen), bytes);
    });
  }

  async delete(kind: VaultIndexKind, key: string): Promise<boolean> {
    const entry = await this.kv.get(key);
    if (entry?.operation !== "PUT") return false;
    await this.kv.delete(key);
    const view = this[kind] as SnapshotView<DescMessage>;
    await this.settle(view, () => view.get(key) === undefined);
    return true;
  }

  private settle(view: SnapshotView<DescMessage>, done: () => boolean): Promise<void> {
    return untilSnapshotShows(view, done, this.log);
  }
}

/** The vault's index in memory, for handler tests. */
export class MemoryVaultIndex implements VaultIndex {
  readonly secrets = new MemorySnapshot(SecretSchema);
  readonly providers = new MemorySnapshot(OAuthProviderSchema);
  readonly connections = new MemorySnapshot(OAuthConnectionSchema);
  readonly signingKeys = new MemorySnapshot(SigningKeySchema);

  async put<K extends VaultIndexKind>(
    kind: K,
    key: string,
    value: VaultIndexValue<K>,
  ): Promise<void> {
    (this[kind] as MemorySnapshot<DescMessage>).put(key, value as MessageShape<DescMessage>);
  }

  async delete(kind: VaultIndexKind, key: string): Promise<boolean> {
    return (this[kind] as MemorySnapshot<DescMessage>).delete(key);
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
