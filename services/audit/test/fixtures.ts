import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { type ChainHead, chainedAfter } from "@toolmesh/archive";
import { ensureStream, streamDefinitions, subjects, TYPE_HEADER } from "@toolmesh/nats";
import {
  AuditAction,
  type AuditRecord,
  AuditRecordSchema,
  AuditService,
  CallStatus,
} from "@toolmesh/proto";
import {
  mintJwt,
  type ServiceProcess,
  startNats,
  startService,
  type TestNats,
  writeRecords,
} from "@toolmesh/testkit";
import {
  connect,
  type JetStreamClient,
  type JetStreamManager,
  type NatsConnection,
  headers as natsHeaders,
} from "nats";
import { AUDIT_LOG_STREAM } from "../src/audit-log.js";
import type { IndexStart } from "../src/index-follower.js";
import { readChainEnds } from "../src/log-ends.js";

export type { ChainHead };

/** A nats-server with the streams Audit reads, a client on it and a data directory. */
export interface AuditBus {
  nats: TestNats;
  nc: NatsConnection;
  dataDir: string;
  /** Closes the client, stops the server and deletes the store and the data directory. */
  destroy(): Promise<void>;
}

/** Starts a nats-server with the record stream Audit chains from, and makes a data directory. */
export async function startAuditBus(): Promise<AuditBus> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "toolmesh-audit-"));
  const nats = await startNats();
  const nc = await connect({ servers: nats.url });
  const jsm = await nc.jetstreamManager();
  const streams = streamDefinitions();
  await ensureStream(jsm, streams.records);
  return {
    nats,
    nc,
    dataDir,
    async destroy() {
      await nc.close();
      await nats.destroy();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

/** An Audit service on the bus, a client of it, and what its index did at start. */
export interface StartedAudit {
  audit: ServiceProcess;
  client: Client<typeof AuditService>;
  opened: IndexStart;
}

/** Starts Audit on the bus's data directory (and `env`) and reads its "audit index" line. */
export async function startAudit(
  bus: AuditBus,
  jwtSecret: string,
  env: Record<string, string> = {},
): Promise<StartedAudit> {
  const audit = await startService(
    "audit",
    {
      NATS_URL: bus.nats.url,
      TOOLMESH_DATA_DIR: bus.dataDir,
      TOOLMESH_AUDIT_PORT: "0",
      TOOLMESH_JWT_SECRET: jwtSecret,
      ...env,
    },
    { timeoutMs: 120_000 },
  );
  const client = createClient(AuditService, createGrpcTransport({ baseUrl: audit.url }));
  const line = await audit.stdout.waitFor(
    (l) => /"msg":"audit index (opened|rebuilt)"/.test(l),
    1000,
    "the audit index line",
  );
  return { audit, client, opened: JSON.parse(line) as IndexStart };
}

/** Call options with a JWT for `sub` with these roles, signed with the HS256 secret. */
export async function bearer(
  secret: string,
  sub: string,
  roles: string[],
): Promise<{ headers: { authorization: string } }> {
  return { headers: { authorization: `Bearer ${await mintJwt(secret, { sub, roles })}` } };
}

export const AGENTS = 5;
export const TOOLS = ["data.query", "files.read"] as const;

/** The i-th record of a test history: agent i % 5, tool i % 2, one second apart from `t0`. */
export function historyRecord(i: number, t0: number): AuditRecord {
  return create(AuditRecordSchema, {
    id: `hist-${i}`,
    time: timestampFromMs(t0 + i * 1000),
    action: AuditAction.TOOL_CALL,
    tool: TOOLS[i % 2],
    agentId: `agent-${i % AGENTS}`,
    userId: "user-1",
    callId: `call-${i}`,
    traceId: (i + 1).toString(16).padStart(32, "0"),
    arguments: { query: `select ${i}` },
    status: CallStatus.SUCCESS,
    durationMs: 1,
    attempts: 1,
    source: "history",
  });
}

/**
 * Appends records `from` to `to` (exclusive) straight into the log stream, chained after `head`
 * the way the Audit service chains them, as a long-running Audit service would have left them.
 * Returns the new head.
 */
export async function appendHistory(
  js: JetStreamClient,
  head: ChainHead,
  from: number,
  to: number,
  t0: number,
): Promise<ChainHead> {
  let tip = head;
  const window: Promise<unknown>[] = [];
  for (let i = from; i < to; i++) {
    const record = chainedAfter(historyRecord(i, t0), tip);
    const h = natsHeaders();
    h.set(TYPE_HEADER, AuditRecordSchema.typeName);
    window.push(
      js.publish(
        subjects.auditLogRecord(record.agentId, record.tool),
        toBinary(AuditRecordSchema, record),
        // A loaded machine with fsync on every write may take seconds for a window of 1,000.
        { headers: h, msgID: record.id, timeout: 120_000 },
      ),
    );
    if (window.length >= 1000) await Promise.all(window.splice(0));
    tip = { sequence: record.sequence, hash: record.hash };
  }
  await Promise.all(window);
  return tip;
}

/**
 * Writes records `from` to `to` (exclusive) of a test history, stamped from `t0`, to the record
 * stream as the Dispatcher does: batches of `window` records, each one stored write.
 */
export async function publishHistory(
  nc: NatsConnection,
  from: number,
  to: number,
  t0 = Date.now(),
  window = 100,
): Promise<void> {
  for (let start = from; start < to; start += window) {
    const batch: AuditRecord[] = [];
    for (let i = start; i < Math.min(start + window, to); i++) batch.push(historyRecord(i, t0));
    await writeRecords(nc, batch, { msgId: `hist-${start}-${batch.length}` });
  }
}

/** Every record QueryRecords returns for `filter`, page after page, newest first. */
export async function queryAll(
  client: Client<typeof AuditService>,
  auth: { headers: { authorization: string } },
  filter: { agentId?: string; tool?: string; traceId?: string } = {},
  pageSize = 1000,
): Promise<AuditRecord[]> {
  const out: AuditRecord[] = [];
  let pageToken = "";
  do {
    const res = await client.queryRecords({ pageSize, pageToken, ...filter }, auth);
    out.push(...res.records);
    pageToken = res.nextPageToken;
  } while (pageToken);
  return out;
}

/** The chain sequence of the newest record in the log stream; 0 while it is empty. */
export async function lastChained(jsm: JetStreamManager): Promise<number> {
  const { state } = await jsm.streams.info(AUDIT_LOG_STREAM);
  return Number((await readChainEnds(jsm, state)).last?.sequence ?? 0);
}
