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
import { JetStreamApiCodes, jetStreamErrorCode, retrySetup } from "./jetstream-errors.js";
import { escapeToken } from "./token-escape.js";

/** The processes that publish call records, each under its own subject token (bus-access.ts). */
export type RecordSource = "dispatcher" | "callback" | "registry" | "permission" | "audit";

/**
 * Subjects, in one place, so publishers and subscribers cannot drift apart. Records carry their
 * publisher as a token after the kind, so nats-server can let each publish only its own; readers
 * take every source with `*`.
 */
export const subjects = {
  /**
   * Where a source writes its record batches (RecordBatch): the Dispatcher its calls' start and
   * end records, Callback an asynchronous tool's report, Registry and Permission their admin
   * records.
   */
  records: (source: RecordSource) => `toolmesh.records.${source}`,
  /** Every record batch (the record stream's subjects). */
  allRecords: "toolmesh.records.>",
  /**
   * Where the Dispatcher and Callback ask Audit for a call's records (request and reply); no
   * stream of any version captures it, so a reply always comes from Audit.
   */
  callLookup: "toolmesh.lookup.calls",
  /**
   * Where the Dispatcher asks Permission for the secret values a call needs (request and reply);
   * never captured by a stream, so a value is never stored on the bus.
   */
  vaultResolve: "toolmesh.vault.resolve",
  /** Where the Dispatcher asks Permission for the link that connects a user's account. */
  vaultConnectLink: "toolmesh.vault.link",
  callback: (status: string, tool: string) =>
    `toolmesh.callback.${subjectToken(status)}.${subjectToken(tool)}`,
  /** Every broadcast of one tool's calls, whatever their status (a filter). */
  callbacksOf: (tool: string) => `toolmesh.callback.*.${subjectToken(tool)}`,
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
  /** Where one Dispatcher instance answers the others about the calls it runs (request, reply). */
  dispatcherInstance: (instance: string) => `toolmesh.dispatchers.${subjectToken(instance)}`,
} as const;

/**
 * Escapes user data for use as one subject token: a dot, wildcard or space in a name must not
 * widen or split a subscription. Characters outside [A-Za-z0-9_-] become %XX (UTF-8), so the
 * mapping is reversible and unambiguous.
 */
export function subjectToken(value: string): string {
  return value === "" ? "%00" : escapeToken(value, "%");
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

/**
 * A stream's configuration as toolmesh writes it: nats.js's, plus what nats.js 2.29 does not
 * know of nats-server 2.12 and later (atomic batch publishing).
 */
export type StreamDefinition = Partial<StreamConfig> & { allow_atomic?: boolean };

/** Settings shared by every stream definition. */
export interface StreamSettings {
  replicas: number;
  /** How long the callback feed keeps broadcasts; 0 keeps them until its byte limit. */
  maxAgeMs: number;
  /** The most bytes each stream keeps (docs/configuration.md, retention and limits). */
  maxBytes: StreamBytes;
}

/** Byte limits of the streams, by stream. */
export interface StreamBytes {
  records: number;
  callback: number;
  changes: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;
const MiB = 1024 * 1024;
/** How long a repeated Nats-Msg-Id is recognised (a record batch sent again, a broadcast). */
const DUPLICATE_WINDOW_MS = 2 * 60 * 1000;

/** The limits a stream gets when nothing is configured (libs/config has the same defaults). */
export const defaultStreamSettings: StreamSettings = {
  replicas: 1,
  maxAgeMs: 7 * DAY_MS,
  maxBytes: {
    records: 1024 * MiB,
    callback: 512 * MiB,
    changes: 128 * MiB,
  },
};

/**
 * Every stream toolmesh writes; each writer ensures the ones it publishes to exist.
 *
 * The record stream holds work, not history: a batch stays until Audit's chain writer took it
 * into the log and Audit's next trim removed it (within a second: records-trim.ts in Audit), so
 * its size is Audit's lag, and when full it refuses new batches (discard new) — the Dispatcher
 * then refuses the calls it cannot record, naming what is behind. Trimmed in bulk rather than by
 * work-queue retention: a work queue deletes each acked message on its own, one more stored write
 * (fsync) a batch. The hash-chained audit log (Audit's own stream, audit-log.ts) is the store of record;
 * everything else is derived from it. The callback feed and the change stream are notifications
 * of state kept elsewhere, so they drop their oldest; the feed keeps a broadcast only until every
 * durable consumer on it has read it (interest retention).
 */
export function streamDefinitions(settings: StreamSettings = defaultStreamSettings) {
  const { maxBytes } = settings;
  const duplicateWindow = (maxAgeMs: number) =>
    nanos(maxAgeMs > 0 ? Math.min(DUPLICATE_WINDOW_MS, maxAgeMs) : DUPLICATE_WINDOW_MS);
  return {
    records: {
      name: streamNames.records,
      subjects: [subjects.allRecords],
      description: "Record batches of calls and admin changes, until Audit chains them",
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      discard: DiscardPolicy.New,
      num_replicas: settings.replicas,
      max_age: 0,
      max_bytes: maxBytes.records,
      duplicate_window: nanos(DUPLICATE_WINDOW_MS),
    },
    callback: {
      name: streamNames.callback,
      subjects: [subjects.callbacks],
      description: "Broadcast outcomes of calls, for subscribers to replay (a feed, not a record)",
      // Kept only for the durable consumers that have not read it yet: the outcomes themselves are
      // in the audit log, so a feed nobody replays stores nothing.
      retention: RetentionPolicy.Interest,
      // Callback stores a large group of broadcasts in one commit (broadcast-publisher.ts).
      allow_atomic: true,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      num_replicas: settings.replicas,
      max_age: nanos(settings.maxAgeMs),
      max_bytes: maxBytes.callback,
      duplicate_window: duplicateWindow(settings.maxAgeMs),
    },
    changes: {
      name: streamNames.changes,
      subjects: ["toolmesh.registry.changed.>", "toolmesh.permission.changed.>"],
      description: "Registry and permission change events",
      retention: RetentionPolicy.Limits,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      num_replicas: settings.replicas,
      max_age: nanos(settings.maxAgeMs),
      max_bytes: maxBytes.changes,
      duplicate_window: duplicateWindow(settings.maxAgeMs),
    },
  } as const satisfies Record<string, StreamDefinition>;
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
      await retrySetup(() => ensureStream(jsm, definitions[key]));
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
