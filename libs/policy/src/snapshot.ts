import type { Logger } from "@toolmesh/log";
import { buckets, KvSnapshot, ReconnectingKvSnapshot } from "@toolmesh/nats";
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

/** What PolicySnapshot reads of its watched grants (a KvSnapshot or a ReconnectingKvSnapshot). */
export type GrantSnapshot = Pick<
  ReconnectingKvSnapshot<typeof GrantSchema>,
  "isReady" | "version" | "get" | "values" | "size" | "onChange" | "start" | "stop"
>;

/**
 * The grants of the `toolmesh-permission` bucket, kept current by a watch, with an index by
 * principal so a decision reads only the grants of the caller, its roles and the wildcards.
 * The watch is rebuilt after every NATS reconnect (a server restart ends a KV watch), using
 * `nc` or, when not given, the connection the KV handle was opened on.
 */
export class PolicySnapshot {
  /** The watched grants, keyed `grants.<id>`. */
  readonly grants: GrantSnapshot;
  private index = new Map<string, CompiledGrant[]>();
  private indexedVersion = -1;

  constructor(kv: KV, log: Logger, nc?: NatsConnection) {
    const connection = nc ?? (kv as unknown as { js?: { nc?: NatsConnection } }).js?.nc;
    const prefix = buckets.permission.grantPrefix;
    this.grants = connection
      ? new ReconnectingKvSnapshot(connection, kv, prefix, GrantSchema, log)
      : new KvSnapshot(kv, prefix, GrantSchema, log);
  }

  /** Starts the watch; resolves once every stored grant is loaded. */
  start(): Promise<void> {
    return this.grants.start();
  }

  get isReady(): boolean {
    return this.grants.isReady;
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
