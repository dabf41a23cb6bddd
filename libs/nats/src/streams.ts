import type { Logger } from "@toolmesh/log";
import {
  DiscardPolicy,
  type JetStreamManager,
  nanos,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from "nats";
import { type BusAccess, busAccess, isBusUser, streamNames } from "./bus-access.js";
import { JetStreamApiCodes, jetStreamErrorCode, retryBetweenLeaders } from "./jetstream-errors.js";
import { idShard } from "./window-read.js";

/** The processes that publish call records, each under its own subject token (bus-access.ts). */
export type RecordSource = "dispatcher" | "callback" | "registry" | "permission";

/**
 * Subjects, in one place, so publishers and subscribers cannot drift apart. Records carry their
 * publisher as a token after the kind, so nats-server can let each publish only its own; readers
 * take every source with `*`.
 */
export const subjects = {
  /** A trace event, filed under its trace id's shard (window-read.ts says why), not the id. */
  trace: (source: RecordSource, traceId: string) => `toolmesh.trace.${source}.${idShard(traceId)}`,
  /** The events of one trace's shard, whoever published them (a filter, not a publish subject). */
  traceEvents: (traceId: string) => `toolmesh.trace.*.${idShard(traceId)}`,
  audit: (source: RecordSource, agentId: string, tool: string) =>
    `toolmesh.audit.${source}.${subjectToken(agentId)}.${subjectToken(tool)}`,
  /** A call's outcome, filed under its call id's shard, not the id. */
  outcome: (source: RecordSource, callId: string) =>
    `toolmesh.outcome.${source}.${idShard(callId)}`,
  /** Every source's outcomes in a call id's shard. */
  outcomes: (callId: string) => `toolmesh.outcome.*.${idShard(callId)}`,
  /** A running call's lease; only Dispatchers write (and delete) them. */
  inflight: (instance: string, callId: string) =>
    `toolmesh.inflight.${subjectToken(instance)}.${subjectToken(callId)}`,
  /** Every lease of one Dispatcher instance (a filter, not a publish subject). */
  inflightOf: (instance: string) => `toolmesh.inflight.${subjectToken(instance)}.*`,
  callback: (status: string, tool: string) =>
    `toolmesh.callback.${subjectToken(status)}.${subjectToken(tool)}`,
  /** Every broadcast callback event (a filter, and the callback stream's subjects). */
  callbacks: "toolmesh.callback.>",
  /** Where Audit appends a block of chained records, of any agent and tool. */
  auditLogBlock: "toolmesh.auditlog.block",
  /**
   * Where a chained record was stored when each log message held one (before blocks); such
   * messages stay in the log and are read as blocks of one.
   */
  auditLogRecord: (agentId: string, tool: string) =>
    `toolmesh.auditlog.${subjectToken(agentId)}.${subjectToken(tool)}`,
  /** Every message of the audit log (its stream's subjects). */
  auditLog: "toolmesh.auditlog.>",
  registryChanged: (kind: string, name: string) =>
    `toolmesh.registry.changed.${subjectToken(kind)}.${subjectToken(name)}`,
  permissionChanged: (kind: string, id: string) =>
    `toolmesh.permission.changed.${subjectToken(kind)}.${subjectToken(id)}`,
} as const;

/**
 * Escapes user data for use as one subject token: a dot, wildcard or space in a name must not
 * widen or split a subscription. Characters outside [A-Za-z0-9_-] become %XX (UTF-8), so the
 * mapping is reversible and unambiguous.
 */
export function subjectToken(value: string): string {
  if (value === "") return "%00";
  let out = "";
  for (const byte of new TextEncoder().encode(value)) {
    const c = String.fromCharCode(byte);
    out += /[A-Za-z0-9_-]/.test(c) ? c : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** Reverses subjectToken. */
export function subjectTokenDecode(token: string): string {
  if (token === "%00") return "";
  const bytes: number[] = [];
  for (let i = 0; i < token.length; i++) {
    if (token[i] === "%") {
      bytes.push(Number.parseInt(token.slice(i + 1, i + 3), 16));
      i += 2;
    } else {
      bytes.push(token.charCodeAt(i));
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** Settings shared by every stream definition. */
export interface StreamSettings {
  replicas: number;
  /** How long records are kept; 0 keeps them until a byte limit is reached. */
  maxAgeMs: number;
  /** How long a call lease may outlive a lost delete (longer than the longest call). */
  maxLeaseAgeMs?: number;
  /** The most bytes each stream keeps (docs/configuration.md, retention and limits). */
  maxBytes: StreamBytes;
}

/** Byte limits of the event streams, by stream. */
export interface StreamBytes {
  trace: number;
  audit: number;
  outcome: number;
  callback: number;
  inflight: number;
  changes: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const MiB = 1024 * 1024;
/** How long a repeated Nats-Msg-Id is recognised (the Dispatcher's outcomes, Callback's broadcasts). */
const DUPLICATE_WINDOW_MS = 2 * 60 * 1000;

/** The limits a stream gets when nothing is configured (libs/config has the same defaults). */
export const defaultStreamSettings: StreamSettings = {
  replicas: 1,
  maxAgeMs: 30 * DAY_MS,
  maxBytes: {
    trace: 1024 * MiB,
    audit: 1024 * MiB,
    outcome: 512 * MiB,
    callback: 512 * MiB,
    inflight: 64 * MiB,
    changes: 128 * MiB,
  },
};

/**
 * Every stream toolmesh uses; each writer ensures the ones it publishes to exist. A stream of
 * call records refuses new messages when full (discard new) rather than drop accepted ones: the
 * publisher then sees the refusal and the Dispatcher can refuse the call it cannot record. Only
 * the change stream, whose events are notifications of state kept in the buckets, drops its
 * oldest.
 */
export function streamDefinitions(settings: StreamSettings = defaultStreamSettings) {
  const base = (
    name: string,
    subjectsOf: string[],
    description: string,
    maxBytes: number,
    discard: DiscardPolicy,
    maxAgeMs = settings.maxAgeMs,
    // Read by time and shard with batched direct gets (window-read.ts), not consumers.
    allowDirect = false,
  ): Partial<StreamConfig> => ({
    name,
    subjects: subjectsOf,
    description,
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard,
    num_replicas: settings.replicas,
    max_age: nanos(maxAgeMs),
    max_bytes: maxBytes,
    // nats-server refuses a duplicate window longer than the stream keeps messages.
    duplicate_window: nanos(
      maxAgeMs > 0 ? Math.min(DUPLICATE_WINDOW_MS, maxAgeMs) : DUPLICATE_WINDOW_MS,
    ),
    ...(allowDirect ? { allow_direct: true } : {}),
  });
  const { maxBytes } = settings;
  return {
    trace: base(
      streamNames.trace,
      ["toolmesh.trace.>"],
      "Trace events of every call chain",
      maxBytes.trace,
      DiscardPolicy.New,
      settings.maxAgeMs,
      true,
    ),
    audit: base(
      streamNames.audit,
      ["toolmesh.audit.>"],
      "Audit records as published, before chaining",
      maxBytes.audit,
      DiscardPolicy.New,
    ),
    outcome: base(
      streamNames.outcome,
      ["toolmesh.outcome.>"],
      "Call outcomes from the Dispatcher and Report",
      maxBytes.outcome,
      DiscardPolicy.New,
      settings.maxAgeMs,
      true,
    ),
    callback: base(
      streamNames.callback,
      [subjects.callbacks],
      "Normalised callback events",
      maxBytes.callback,
      DiscardPolicy.New,
    ),
    // Leases are deleted when their call ends; the age limit only bounds what a lost delete leaves.
    inflight: base(
      streamNames.inflight,
      ["toolmesh.inflight.>"],
      "Leases of calls that are running",
      maxBytes.inflight,
      DiscardPolicy.New,
      settings.maxLeaseAgeMs ?? 2 * 60 * 60 * 1000,
    ),
    changes: base(
      streamNames.changes,
      ["toolmesh.registry.changed.>", "toolmesh.permission.changed.>"],
      "Registry and permission change events",
      maxBytes.changes,
      DiscardPolicy.Old,
    ),
  } as const;
}

/** The streams runService knows by name. */
export type StreamKey = keyof ReturnType<typeof streamDefinitions>;

/**
 * Makes a process's streams ready: those it writes (bus-access.ts) are created or updated to
 * their definitions; those it only reads are waited for, since creating or changing them is the
 * writers' right. A stream the table does not give the process is a programming error.
 */
export async function prepareStreams(options: {
  jsm: JetStreamManager;
  user: string;
  streams: readonly StreamKey[];
  definitions: ReturnType<typeof streamDefinitions>;
  log: Logger;
  retryMs?: number;
}): Promise<void> {
  const { jsm, user, definitions, log } = options;
  const access = isBusUser(user) ? (busAccess[user] as BusAccess) : undefined;
  for (const key of options.streams) {
    if (!access || (access.writesStreams as string[]).includes(key)) {
      // A cluster that has just started may not have elected the stream's leader yet.
      await retryBetweenLeaders(() => ensureStream(jsm, definitions[key]), 15_000);
      continue;
    }
    if (!(access.readsStreams as string[]).includes(key)) {
      throw new Error(
        `${user} uses stream ${key} but libs/nats/src/bus-access.ts gives it no access; add it there`,
      );
    }
    await waitForStream(jsm, streamNames[key], log, options.retryMs ?? 500);
  }
}

/** Resolves once the stream exists; says once that it is waiting. */
async function waitForStream(
  jsm: JetStreamManager,
  name: string,
  log: Logger,
  retryMs: number,
): Promise<void> {
  for (let tries = 0; ; tries++) {
    try {
      await jsm.streams.info(name);
      if (tries > 0) log.info({ stream: name }, "stream created by its writer; going on");
      return;
    } catch (error) {
      if (jetStreamErrorCode(error) !== JetStreamApiCodes.StreamNotFound) throw error;
    }
    if (tries === 0) log.info({ stream: name }, "waiting for the stream's writer to create it");
    await new Promise((resolve) => setTimeout(resolve, retryMs));
  }
}

/** Creates a stream, or updates it when its definition changed; safe to call from many processes. */
export async function ensureStream(
  jsm: JetStreamManager,
  config: Partial<StreamConfig>,
): Promise<void> {
  const name = config.name;
  if (!name) throw new Error("ensureStream needs a stream name");
  try {
    const info = await jsm.streams.info(name);
    const current = info.config;
    const differs = (Object.keys(config) as (keyof StreamConfig)[]).some(
      (key) => JSON.stringify(current[key]) !== JSON.stringify(config[key]),
    );
    if (differs) await jsm.streams.update(name, { ...current, ...config } as StreamConfig);
  } catch (error) {
    if (jetStreamErrorCode(error) !== JetStreamApiCodes.StreamNotFound) throw error;
    try {
      await jsm.streams.add(config);
    } catch (addError) {
      // Another process created it between our info and add; that is the goal reached.
      if (jetStreamErrorCode(addError) !== JetStreamApiCodes.StreamNameInUse) throw addError;
    }
  }
}
