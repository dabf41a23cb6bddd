/**
 * Who may do what on the bus: the one table nats-server's per-user permissions are generated
 * from (libs/launcher writes them into its config) and runService follows (a process creates
 * only the streams it writes and waits for those it only reads). docs/security.md shows it.
 *
 * Publishing is by subject: each publisher has its own source token (`toolmesh.trace.<source>.…`),
 * so "only the Dispatcher publishes outcomes of calls" is one exact permission, not a convention.
 */

/** The streams of the bus, by JetStream name. */
export const streamNames = {
  /** Record batches until Audit chains them (and trims them). */
  records: "TOOLMESH_RECORDS",
  /** The broadcast feed of outcomes. */
  callback: "TOOLMESH_CALLBACK",
  changes: "TOOLMESH_CHANGES",
  /** The hash-chained audit log: the store of record. */
  auditLog: "TOOLMESH_AUDIT_LOG",
} as const;

/**
 * Streams of earlier versions that Audit takes over once at an upgrade and then deletes
 * (services/audit/src/legacy-upgrade.ts): the record input, and the leases of running calls.
 */
export const legacyStreamNames = {
  auditInput: "TOOLMESH_AUDIT",
  inflight: "TOOLMESH_INFLIGHT",
} as const;

/** The KV buckets of the bus, by bucket name (their stream is KV_<name>). */
export const bucketNames = {
  registry: "toolmesh-registry",
  permission: "toolmesh-permission",
  /** Secret values, OAuth tokens and signing keys, sealed; only Permission reads it. */
  vault: "toolmesh-vault",
  /** Idempotency keys. */
  dispatcher: "toolmesh-dispatcher",
  /** Which agent owns a caller-chosen call id. */
  callIds: "toolmesh-call-ids",
  /** Dispatcher heartbeats and sweep claims. */
  dispatchers: "toolmesh-dispatchers",
  /** Calls held for approval, until decided or expired. */
  approvals: "toolmesh-approvals",
  /** Which calls are MCP tasks of which caller (tasks/list), as long as outcomes are kept. */
  mcpTasks: "toolmesh-mcp-tasks",
  /** Hourly usage aggregates per agent, user and tool. */
  usage: "toolmesh-usage",
  /** One key per service whose work runs in one replica at a time (lease.ts). */
  leases: "toolmesh-leases",
  /** The Audit service's state others read: what holds its log (`log.hold`). */
  audit: "toolmesh-audit",
  /** The ServiceAgent's chat windows and their histories (the tool agent's). */
  agentSessions: "toolmesh-agent-sessions",
  /** Task specs and their builds, queued by the tool agent's Router. */
  agentTasks: "toolmesh-agent-tasks",
} as const;

type Stream = keyof typeof streamNames;
type Bucket = keyof typeof bucketNames;

/** What one bus user may do. */
export interface BusAccess {
  /** Subjects it publishes (wildcards allowed), each inside a stream it writes. */
  publishes: string[];
  /** Streams it publishes to: it may create them and update their limits. */
  writesStreams: Stream[];
  /** Streams it consumes; one it does not also write is waited for until a writer creates it. */
  readsStreams: Stream[];
  /** Streams it deletes or purges messages from (its own, such as leases of finished calls). */
  deletesFrom?: Stream[];
  /** Streams of earlier versions it reads once (acking as the durable named) and deletes. */
  upgrades?: { stream: string; durable?: string }[];
  /** Durable consumers it owns, by stream; only it may ack, change or delete them. */
  durables?: Partial<Record<Stream, string>>;
  /** Buckets it owns: the only writer. */
  ownsBuckets: Bucket[];
  /** Buckets it keeps a read-only snapshot of. */
  readsBuckets: Bucket[];
  /** Its work runs in one replica at a time: it writes its own key of the leases bucket only. */
  holdsLease?: boolean;
  /** Plain (non-JetStream) subscriptions besides its own inbox. */
  subscribes: string[];
  /**
   * Subjects it answers requests on: it subscribes to them and may reply to each request it
   * receives (nats-server's allow_responses), and to nothing else of another user's inbox.
   */
  answers?: string[];
}

/**
 * Every bus user: one per process, plus `agent`, the read-only credential for agents that
 * subscribe to callback events. A process's user name is its runService name.
 */
export const busAccess = {
  dispatcher: {
    // Its calls' start and end records, in batches; everything else is derived from them.
    // It asks Audit for a call's records (MCP tasks, the approval sweep): toolmesh.lookup.calls.
    // Replicas ask each other about the calls each runs (an MCP caller's answer, a task's cancel):
    // toolmesh.dispatchers.<instance>. It asks Permission for the secrets a call needs:
    // toolmesh.vault.resolve (and .link).
    publishes: [
      "toolmesh.records.dispatcher",
      "toolmesh.lookup.calls",
      "toolmesh.dispatchers.>",
      "toolmesh.vault.resolve",
      "toolmesh.vault.link",
    ],
    writesStreams: ["records"],
    readsStreams: [],
    ownsBuckets: ["dispatcher", "callIds", "dispatchers", "approvals", "mcpTasks"],
    // The audit bucket says what holds the audit log, for a refusal to name it; the usage bucket
    // what was spent against budgets.
    readsBuckets: ["registry", "permission", "audit", "usage"],
    // MCP tasks wait for a call's broadcast outcome.
    subscribes: ["toolmesh.callback.>"],
    answers: ["toolmesh.dispatchers.>"],
  },
  callback: {
    publishes: [
      "toolmesh.callback.>",
      // Report writes an asynchronous tool's result as a record of its call.
      "toolmesh.records.callback",
      // GetOutcome, Watch and Report ask Audit for a call's records.
      "toolmesh.lookup.calls",
    ],
    writesStreams: ["callback", "records"],
    // Outcomes, broadcasts and usage are derived from the audit log, read in order.
    readsStreams: ["auditLog"],
    durables: { auditLog: "callback" },
    ownsBuckets: ["usage"],
    // Report checks which tools a service-role caller serves.
    readsBuckets: ["permission", "registry"],
    // Watch streams live broadcasts to its callers.
    subscribes: ["toolmesh.callback.>"],
  },
  audit: {
    // Its sweeper closes a call left open with an end record, written like any other.
    publishes: ["toolmesh.auditlog.>", "toolmesh.records.audit"],
    writesStreams: ["auditLog", "records"],
    readsStreams: ["records", "auditLog"],
    durables: { records: "audit" },
    // It trims the record stream below what it has chained (records-trim.ts).
    deletesFrom: ["records"],
    ownsBuckets: ["audit"],
    // The sweeper asks whether the Dispatcher that started a call is still alive.
    readsBuckets: ["permission", "dispatchers"],
    // A consumer made on the log is noticed at once: the blocks it has not read must stay.
    subscribes: ["$JS.EVENT.ADVISORY.CONSUMER.CREATED.TOOLMESH_AUDIT_LOG.>"],
    // The Dispatcher's and Callback's lookups of a call's records.
    answers: ["toolmesh.lookup.calls"],
    // What an earlier version left unchained or running (legacy-upgrade.ts).
    upgrades: [
      { stream: legacyStreamNames.auditInput, durable: "audit" },
      { stream: legacyStreamNames.inflight },
    ],
    // One chain writer at a time; a standby replica serves queries and takes over.
    holdsLease: true,
  },
  registry: {
    publishes: ["toolmesh.records.registry", "toolmesh.registry.changed.>"],
    writesStreams: ["records", "changes"],
    readsStreams: [],
    ownsBuckets: ["registry"],
    readsBuckets: ["permission"],
    subscribes: [],
  },
  permission: {
    publishes: ["toolmesh.records.permission", "toolmesh.permission.changed.>"],
    writesStreams: ["records", "changes"],
    readsStreams: [],
    // The vault is its own: no other user reads it, and its values are stored only sealed.
    ownsBuckets: ["permission", "vault"],
    readsBuckets: ["registry"],
    subscribes: [],
    // The Dispatcher's requests for a call's secret values and for a connect link.
    answers: ["toolmesh.vault.resolve", "toolmesh.vault.link"],
  },
  "memory-writer": {
    publishes: [],
    writesStreams: [],
    readsStreams: ["auditLog"],
    durables: { auditLog: "memory-writer" },
    ownsBuckets: [],
    readsBuckets: [],
    subscribes: [],
    // One writer of the memory files at a time; a standby takes over.
    holdsLease: true,
  },
  "knowhub-sync": {
    publishes: [],
    writesStreams: [],
    readsStreams: [],
    ownsBuckets: [],
    readsBuckets: ["registry"],
    subscribes: [],
  },
  "tool-agent": {
    publishes: [],
    writesStreams: [],
    readsStreams: [],
    ownsBuckets: ["agentSessions", "agentTasks"],
    // API keys are verified against the permission bucket, as in every service with RPCs.
    readsBuckets: ["permission"],
    subscribes: [],
    // The Router (task queue and CodingAgent) runs in one replica at a time; every replica chats.
    holdsLease: true,
  },
  agent: {
    publishes: [],
    writesStreams: [],
    readsStreams: ["callback"],
    ownsBuckets: [],
    readsBuckets: [],
    subscribes: ["toolmesh.callback.>"],
  },
} as const satisfies Record<string, BusAccess>;

/** A bus user's name. */
export type BusUser = keyof typeof busAccess;

/** The bus users that are toolmesh processes (every one but `agent`). */
export const processUsers = Object.keys(busAccess).filter((u) => u !== "agent") as BusUser[];

/** True when `name` is a user of the table. */
export function isBusUser(name: string): name is BusUser {
  return Object.hasOwn(busAccess, name);
}

/** The inbox prefix of a user: its replies arrive under `_INBOX.<user>.`, which only it reads. */
export function inboxPrefix(user: string): string {
  return `_INBOX.${user}`;
}

/** nats-server's `permissions` block of one user. */
export interface NatsPermissions {
  publish: { allow: string[]; deny?: string[] };
  subscribe: { allow: string[]; deny?: string[] };
  /** May reply once to each request it receives, whatever its publish permissions say. */
  allow_responses?: boolean;
}

const API = "$JS.API";

/** What reading a stream with JetStream takes: info, consumers, direct gets, acks, flow control. */
function readStream(stream: string, durables: readonly string[]): string[] {
  return [
    `${API}.STREAM.INFO.${stream}`,
    `${API}.STREAM.MSG.GET.${stream}`,
    `${API}.DIRECT.GET.${stream}`,
    `${API}.DIRECT.GET.${stream}.>`,
    // Ephemeral (ordered) consumers: created, read and deleted under random names.
    `${API}.CONSUMER.CREATE.${stream}`,
    `${API}.CONSUMER.CREATE.${stream}.>`,
    `${API}.CONSUMER.INFO.${stream}.>`,
    `${API}.CONSUMER.DELETE.${stream}.>`,
    `${API}.CONSUMER.MSG.NEXT.${stream}.>`,
    `${API}.CONSUMER.LIST.${stream}`,
    `${API}.CONSUMER.NAMES.${stream}`,
    `$JS.FC.${stream}.>`,
    ...durables.map((durable) => `$JS.ACK.${stream}.${durable}.>`),
  ];
}

/** What creating a stream and updating its limits takes (never delete or purge). */
function writeStream(stream: string): string[] {
  return [
    `${API}.STREAM.INFO.${stream}`,
    // Its consumers' lag, for /metrics.
    `${API}.CONSUMER.LIST.${stream}`,
    `${API}.CONSUMER.NAMES.${stream}`,
    `${API}.STREAM.CREATE.${stream}`,
    `${API}.STREAM.UPDATE.${stream}`,
  ];
}

/** Durable names owned by another user on a stream: nobody else may ack, change or delete them. */
function othersDurables(user: BusUser, stream: Stream): string[] {
  const names: string[] = [];
  for (const [other, access] of Object.entries(busAccess) as [BusUser, BusAccess][]) {
    const durable = access.durables?.[stream];
    if (other !== user && durable) names.push(durable);
  }
  return names;
}

/**
 * The nats-server permissions of one user, from the table. Nobody may publish to an inbox
 * (a forged JetStream ack would make a publisher believe a record was stored), delete or purge
 * a stream, or touch another user's durable consumer.
 */
export function natsPermissions(user: BusUser): NatsPermissions {
  const access: BusAccess = busAccess[user];
  const publish = new Set<string>([`${API}.INFO`, ...access.publishes]);
  const deny = new Set<string>();
  for (const key of access.writesStreams) {
    for (const s of writeStream(streamNames[key])) publish.add(s);
  }
  for (const key of access.readsStreams) {
    const stream = streamNames[key];
    const own = access.durables?.[key];
    // An agent names its own durables, so it may ack any consumer but the services' ones.
    const durables = user === "agent" ? ["*"] : own ? [own] : [];
    for (const s of readStream(stream, durables)) publish.add(s);
    if (own) publish.add(`${API}.CONSUMER.DURABLE.CREATE.${stream}.${own}`);
    for (const other of othersDurables(user, key)) {
      for (const verb of ["CREATE", "DELETE", "INFO", "MSG.NEXT", "DURABLE.CREATE"]) {
        deny.add(`${API}.CONSUMER.${verb}.${stream}.${other}`);
        deny.add(`${API}.CONSUMER.${verb}.${stream}.${other}.>`);
      }
      deny.add(`$JS.ACK.${stream}.${other}.>`);
    }
  }
  for (const { stream, durable } of access.upgrades ?? []) {
    for (const s of readStream(stream, durable ? [durable] : [])) publish.add(s);
    publish.add(`${API}.STREAM.DELETE.${stream}`);
  }
  for (const key of access.deletesFrom ?? []) {
    publish.add(`${API}.STREAM.MSG.DELETE.${streamNames[key]}`);
    publish.add(`${API}.STREAM.PURGE.${streamNames[key]}`);
  }
  for (const key of access.ownsBuckets) {
    const name = bucketNames[key];
    publish.add(`$KV.${name}.>`);
    for (const s of writeStream(`KV_${name}`)) publish.add(s);
  }
  if (access.holdsLease) {
    const stream = `KV_${bucketNames.leases}`;
    publish.add(`$KV.${bucketNames.leases}.${user}`);
    for (const s of [...writeStream(stream), ...readStream(stream, [])]) publish.add(s);
  }
  for (const key of [...access.ownsBuckets, ...access.readsBuckets]) {
    for (const s of readStream(`KV_${bucketNames[key]}`, [])) publish.add(s);
  }
  const subscribe = [
    `${inboxPrefix(user)}.>`,
    ...access.subscribes,
    ...(access.answers ?? []),
    // An owner may follow its own bucket's writes as they happen (Callback's watches do).
    ...access.ownsBuckets.map((key) => `$KV.${bucketNames[key]}.>`),
  ];
  // An agent's client may keep the default `_INBOX.` prefix, but never read a service's replies.
  const subscribeDeny = user === "agent" ? processUsers.map((p) => `${inboxPrefix(p)}.>`) : [];
  if (user === "agent") subscribe.push("_INBOX.>");
  return {
    publish: { allow: [...publish], ...(deny.size > 0 ? { deny: [...deny] } : {}) },
    subscribe: { allow: subscribe, ...(subscribeDeny.length > 0 ? { deny: subscribeDeny } : {}) },
    ...(access.answers?.length ? { allow_responses: true } : {}),
  };
}
