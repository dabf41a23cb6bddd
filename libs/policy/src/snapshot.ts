import type { Logger } from "@toolmesh/log";
import { buckets, FollowedBucket, ReconnectingKvSnapshot, type SnapshotView } from "@toolmesh/nats";
import { type Decision, type Grant, GrantSchema, PrincipalKind } from "@toolmesh/proto";
import type { KV, NatsConnection } from "nats";
import {
  ANY,
  type CompiledGrant,
  compileGrant,
  decideFor,
  type PolicySubject,
  type PolicyTool,
} from "./decide.js";

/** Raised when a decision is asked of a snapshot that has not loaded yet: callers fail closed. */
export class PolicyNotReadyError extends Error {
  override name = "PolicyNotReadyError";
  constructor() {
    super("permission grants are not loaded yet; retry shortly");
  }
}

const EMPTY: readonly CompiledGrant[] = [];

/** What PolicySnapshot reads of its grants: any snapshot of `grants.>` of the permission bucket. */
export type GrantSnapshot = SnapshotView<typeof GrantSchema> & {
  stop(): void;
  /** Set by a followed snapshot: resolves once the first look for the bucket is done. */
  firstAttempt?: Promise<boolean>;
  /** Set by a followed snapshot: true while the bucket does not exist. */
  readonly bucketMissing?: boolean;
};

/**
 * The grants of the `toolmesh-permission` bucket, kept current by a watch, with an index by
 * principal so a decision reads only the grants of the caller, its roles and the wildcards.
 */
export class PolicySnapshot {
  private index = new Map<string, CompiledGrant[]>();
  private indexedVersion = -1;

  /** `grants` is a followed or owned snapshot of `grants.>` (see following() and owned()). */
  constructor(readonly grants: GrantSnapshot) {}

  /**
   * The grants as a service other than Permission sees them: followed from the bucket once the
   * Permission service has created it; not ready (every decision fails closed) until then.
   */
  static following(nc: NatsConnection, log: Logger, meanwhile: string): PolicySnapshot {
    return new PolicySnapshot(
      new FollowedBucket({
        nc,
        bucket: buckets.permission.name,
        prefix: buckets.permission.grantPrefix,
        schema: GrantSchema,
        log,
        meanwhile,
        readyMessage: "grant snapshot loaded",
      }),
    );
  }

  /** The grants of a bucket handle the caller already holds (the Permission service's own). */
  static owned(
    nc: NatsConnection,
    kv: KV,
    log: Logger,
  ): PolicySnapshot & { start(): Promise<void> } {
    const grants = new ReconnectingKvSnapshot(
      nc,
      kv,
      buckets.permission.grantPrefix,
      GrantSchema,
      log,
    );
    return Object.assign(new PolicySnapshot(grants), { start: () => grants.start() });
  }

  get isReady(): boolean {
    return this.grants.isReady;
  }

  /** True while the Permission service has not created its bucket (a followed snapshot only). */
  get noGrantsYet(): boolean {
    return this.grants.bucketMissing === true;
  }

  stop(): void {
    this.grants.stop();
  }

  /** Every grant, in no particular order. */
  values(): IterableIterator<Grant> {
    return this.grants.values();
  }

  /** The decision for a call; throws PolicyNotReadyError until the snapshot is loaded. */
  decide(subject: PolicySubject, tool: PolicyTool, now: Date = new Date()): Decision {
    if (!this.grants.isReady) throw new PolicyNotReadyError();
    const index = this.currentIndex();
    const agentGrants = [
      ...(index.get(`agent:${subject.agentId}`) ?? EMPTY),
      ...(index.get(`agent:${ANY}`) ?? EMPTY),
    ];
    for (const role of subject.roles) {
      const forRole = index.get(`role:${role}`);
      if (forRole) agentGrants.push(...forRole);
    }
    if (subject.roles.length > 0) agentGrants.push(...(index.get(`role:${ANY}`) ?? EMPTY));
    const userGrants =
      subject.userId === ""
        ? EMPTY
        : [
            ...(index.get(`user:${subject.userId}`) ?? EMPTY),
            ...(index.get(`user:${ANY}`) ?? EMPTY),
          ];
    return decideFor(subject, tool, agentGrants, userGrants, now.getTime());
  }

  /** The index, rebuilt only when the watch applied a change since the last build. */
  private currentIndex(): Map<string, CompiledGrant[]> {
    const version = this.grants.version;
    if (version === this.indexedVersion) return this.index;
    const index = new Map<string, CompiledGrant[]>();
    for (const grant of this.grants.values()) {
      const g = compileGrant(grant);
      const kind = kindName[g.principalKind];
      if (!kind) continue;
      const key = `${kind}:${g.principalId}`;
      const list = index.get(key);
      if (list) list.push(g);
      else index.set(key, [g]);
    }
    this.index = index;
    this.indexedVersion = version;
    return index;
  }
}

const kindName: Partial<Record<PrincipalKind, string>> = {
  [PrincipalKind.AGENT]: "agent",
  [PrincipalKind.USER]: "user",
  [PrincipalKind.ROLE]: "role",
};
