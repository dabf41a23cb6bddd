import {
  DiscardPolicy,
  type JetStreamManager,
  nanos,
  RetentionPolicy,
  StorageType,
  type StreamConfig,
} from "nats";
import { JetStreamApiCodes, jetStreamErrorCode } from "./jetstream-errors.js";

/** Subjects, in one place, so publishers and subscribers cannot drift apart. */
export const subjects = {
  trace: (traceId: string) => `toolmesh.trace.${subjectToken(traceId)}`,
  audit: (agentId: string, tool: string) =>
    `toolmesh.audit.${subjectToken(agentId)}.${subjectToken(tool)}`,
  outcome: (callId: string) => `toolmesh.outcome.${subjectToken(callId)}`,
  inflight: (instance: string, callId: string) =>
    `toolmesh.inflight.${subjectToken(instance)}.${subjectToken(callId)}`,
  callback: (status: string, tool: string) =>
    `toolmesh.callback.${subjectToken(status)}.${subjectToken(tool)}`,
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
  /** How long records are kept; 0 keeps them until limits are reached. */
  maxAgeMs: number;
  /** How long a call lease may outlive a lost delete (longer than the longest call). */
  maxLeaseAgeMs?: number;
}

const DAY_MS = 24 * 60 * 60 * 1000;

/** Every stream toolmesh uses; each publisher ensures the ones it writes to exist. */
export function streamDefinitions(
  settings: StreamSettings = { replicas: 1, maxAgeMs: 30 * DAY_MS },
) {
  const base = (
    name: string,
    subjectsOf: string[],
    description: string,
  ): Partial<StreamConfig> => ({
    name,
    subjects: subjectsOf,
    description,
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    num_replicas: settings.replicas,
    max_age: nanos(settings.maxAgeMs),
    duplicate_window: nanos(2 * 60 * 1000),
  });
  return {
    trace: base("TOOLMESH_TRACE", ["toolmesh.trace.>"], "Trace events of every call chain"),
    audit: base(
      "TOOLMESH_AUDIT",
      ["toolmesh.audit.>"],
      "Audit records as published, before chaining",
    ),
    outcome: base(
      "TOOLMESH_OUTCOME",
      ["toolmesh.outcome.>"],
      "Call outcomes from the Dispatcher and Report",
    ),
    callback: base("TOOLMESH_CALLBACK", ["toolmesh.callback.>"], "Normalised callback events"),
    // Leases are deleted when their call ends; the age limit only bounds what a lost delete leaves.
    inflight: {
      ...base("TOOLMESH_INFLIGHT", ["toolmesh.inflight.>"], "Leases of calls that are running"),
      max_age: nanos(settings.maxLeaseAgeMs ?? 2 * 60 * 60 * 1000),
      discard: DiscardPolicy.New,
    },
    changes: base(
      "TOOLMESH_CHANGES",
      ["toolmesh.registry.changed.>", "toolmesh.permission.changed.>"],
      "Registry and permission change events",
    ),
  } as const;
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
