import { randomUUID } from "node:crypto";
import { readdir, readFile, stat } from "node:fs/promises";
import path from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { bucketNames, credentialOptions, inboxPrefix, streamNames, subjects } from "@toolmesh/nats";
import { AuditAction, AuditRecordSchema, CallbackEventSchema, CallStatus } from "@toolmesh/proto";
import { encodeRecords, recordKey } from "@toolmesh/records";
import type { ServedTools } from "@toolmesh/sdk";
import type { TestStack } from "@toolmesh/testkit";
import {
  Collector,
  chainServices,
  echoTool,
  eventually,
  serveOnStack,
  startStack,
} from "@toolmesh/testkit";
import { AckPolicy, connect, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The bus is authenticated: every process has its own nkey and only the permissions of
// libs/nats/src/bus-access.ts. Forgeries here come from real credentials of other processes and
// of agents, and nats-server itself must refuse them, before any service sees them.
const echo = echoTool("bus.echo", { idempotent: true });

/** The key of a call's end record: what its broadcast carries as Nats-Msg-Id. */
const endKey = (callId: string) => recordKey({ id: "", callId, action: AuditAction.TOOL_CALL });

let stack: TestStack;
let backend: ServedTools;
const opened: NatsConnection[] = [];

/** A connection with one bus user's credential, and the permission errors it gets. */
async function connectAs(user: string, options: { defaultInbox?: boolean } = {}) {
  const nc = await connect({
    servers: stack.nats.url,
    name: `forger-as-${user}`,
    ...(options.defaultInbox ? {} : { inboxPrefix: inboxPrefix(user) }),
    ...credentialOptions({ nkeyFile: stack.natsCredentialFile(user) }),
  });
  opened.push(nc);
  const refusals = new Collector<string>();
  void (async () => {
    for await (const status of nc.status()) {
      const denied = status.permissionContext;
      if (denied) refusals.push(`${denied.operation} ${denied.subject}`);
    }
  })();
  return { nc, refusals };
}

/** Resolves once nats-server refused `what` on `subject` to this connection. */
async function refused(
  refusals: Collector<string>,
  what: "publish" | "subscription",
  subject: string,
) {
  const expected = `${what} ${subject}`;
  try {
    await refusals.waitFor((m) => m === expected, 1, 5000);
  } catch {
    throw new Error(
      `nats-server did not refuse: ${expected}; it refused:\n${refusals.items.join("\n")}`,
    );
  }
}

async function dispatch(text: string) {
  const agent = stack.as(await stack.agentToken("bus-agent"));
  return stack.dispatcherClient().dispatch({ tool: "bus.echo", arguments: { text } }, agent);
}

beforeAll(async () => {
  stack = await startStack({
    services: [...chainServices, "callback", "memory-writer", "tool-agent"],
  });
  backend = await serveOnStack(stack, [echo]);
  await stack.grantAll("bus-agent");
}, 120_000);
afterAll(async () => {
  for (const nc of opened) await nc.close().catch(() => {});
  await backend?.close();
  await stack?.stop();
});

describe("the bus's credentials", () => {
  it("are one nkey per process, created under the data directory with mode 0600", async () => {
    const dir = path.join(stack.dataDir, "bus");
    expect((await stat(dir)).mode & 0o777).toBe(0o700);
    const files = (await readdir(dir)).sort();
    expect(files).toEqual(
      expect.arrayContaining([
        "admin.nk",
        "agent.nk",
        "audit.nk",
        "callback.nk",
        "dispatcher.nk",
        "memory-writer.nk",
        "nats-server.conf",
        "permission.nk",
        "registry.nk",
      ]),
    );
    for (const file of files) expect((await stat(path.join(dir, file))).mode & 0o777).toBe(0o600);
    // The server's config names public keys only: no seed is in it.
    const config = await readFile(path.join(dir, "nats-server.conf"), "utf8");
    expect(config).toContain('sync_interval: "always"');
    expect(config).toContain(`max_file_store: ${1024 ** 4}`);
    for (const file of files.filter((f) => f.endsWith(".nk"))) {
      const seed = (await readFile(path.join(dir, file), "utf8")).trim();
      expect(seed).toMatch(/^SU[A-Z2-7]{50,}$/);
      expect(config).not.toContain(seed);
    }
  });

  it("are required: a connection without one is refused", async () => {
    await expect(
      connect({ servers: stack.nats.url, name: "anonymous", maxReconnectAttempts: 0 }),
    ).rejects.toMatchObject({ code: "AUTHORIZATION_VIOLATION" });
  });
});

describe("a forged record", () => {
  it("from another process's or an agent's credential is refused by nats-server, and the audit chain holds none", async () => {
    const before = await dispatch("before");
    expect(before.status).toBe(CallStatus.SUCCESS);
    const auditor = stack.as(await stack.agentToken("bus-auditor", { roles: ["auditor"] }));
    const audit = stack.auditClient();
    await eventually(async () => {
      const res = await audit.queryRecords({ callId: before.callId }, auditor);
      expect(res.records.length).toBeGreaterThan(0);
    });

    // A subscriber that replays the feed from here: the feed keeps broadcasts only for such.
    const feedReader = `bus-test-${randomUUID()}`;
    await (await stack.nc.jetstreamManager()).consumers.add(streamNames.callback, {
      durable_name: feedReader,
      ack_policy: AckPolicy.Explicit,
      filter_subject: subjects.callback("success", "bus.echo"),
    });
    const forgedCall = `forged-${randomUUID()}`;
    const record = create(AuditRecordSchema, {
      id: forgedCall,
      action: AuditAction.TOOL_CALL,
      tool: "bus.echo",
      agentId: "forged-agent",
      callId: forgedCall,
      status: CallStatus.SUCCESS,
      source: "dispatcher",
    });
    const batch = encodeRecords([toBinary(AuditRecordSchema, record)]);
    const forgeries = [
      // Records, as a batch of the Dispatcher's, another service's, or a block of the chain.
      [subjects.records("dispatcher"), batch],
      [subjects.records("registry"), toBinary(AuditRecordSchema, record)],
      [subjects.auditLogBlock, batch],
      [
        subjects.callback("success", "bus.echo"),
        toBinary(
          CallbackEventSchema,
          create(CallbackEventSchema, {
            callId: forgedCall,
            tool: "bus.echo",
            agentId: "forged-agent",
            status: CallStatus.SUCCESS,
          }),
        ),
      ],
      // Asking Audit for a call's records is the Dispatcher's and Callback's, not an agent's.
      [subjects.callLookup, new Uint8Array()],
      [subjects.registryChanged("tool", "bus.echo"), new Uint8Array()],
      [`$KV.${bucketNames.permission}.grants.forged`, new Uint8Array([1])],
      [`$KV.${bucketNames.registry}.tools.bus%2Eecho`, new Uint8Array([1])],
    ] as const;

    for (const user of ["memory-writer", "agent", "knowhub-sync"]) {
      const { nc, refusals } = await connectAs(user);
      for (const [subject, data] of forgeries) {
        nc.publish(subject, data);
        await refused(refusals, "publish", subject);
      }
    }
    // A process may write records only under its own source token: the Dispatcher cannot pose
    // as Callback, Registry, Permission or Audit, append to the chain, write their buckets, nor
    // delete or purge a stream.
    const { nc: asDispatcher, refusals } = await connectAs("dispatcher");
    for (const subject of [
      subjects.callback("success", "bus.echo"),
      subjects.records("callback"),
      subjects.records("permission"),
      subjects.records("audit"),
      subjects.auditLogBlock,
      `$KV.${bucketNames.registry}.tools.forged`,
      `$KV.${bucketNames.permission}.grants.forged`,
      `$JS.API.STREAM.PURGE.${streamNames.records}`,
      `$JS.API.STREAM.DELETE.${streamNames.auditLog}`,
      `$JS.API.STREAM.MSG.DELETE.${streamNames.auditLog}`,
    ]) {
      asDispatcher.publish(subject, new Uint8Array([1]));
      await refused(refusals, "publish", subject);
    }
    // Through JetStream the forgery gets no ack either.
    const { nc: asMemory } = await connectAs("memory-writer");
    await expect(
      asMemory.jetstream().publish(subjects.records("dispatcher"), batch, { timeout: 2000 }),
    ).rejects.toBeDefined();

    const after = await dispatch("after");
    await eventually(async () => {
      const res = await audit.queryRecords({ callId: after.callId }, auditor);
      expect(res.records.length).toBeGreaterThan(0);
    });
    // Nothing forged reached the audit log, the chain, or the views derived from them.
    expect((await audit.queryRecords({ callId: forgedCall }, auditor)).records).toEqual([]);
    const forgedCallbacks = await stack.nc
      .jetstream()
      .consumers.get(streamNames.callback, feedReader);
    const seen: string[] = [];
    for (;;) {
      const msg = await forgedCallbacks.next({ expires: 1000 });
      if (!msg) break;
      seen.push(msg.headers?.get("Nats-Msg-Id") ?? "");
    }
    // A broadcast's message id is the key of the record it announces (libs/records recordKey).
    expect(seen.some((id) => id.startsWith(forgedCall))).toBe(false);
    expect(seen).toContain(endKey(after.callId));
    expect((await audit.queryRecords({ agentId: "forged-agent" }, auditor)).records).toEqual([]);
    expect(await audit.verifyChain({}, auditor)).toMatchObject({ ok: true });
  }, 60_000);
});

describe("an agent's read-only credential", () => {
  it("receives callback events, and reads neither a service's replies nor its durable consumer", async () => {
    // The agent's client keeps the default _INBOX prefix; services' prefixes stay closed to it.
    const { nc, refusals } = await connectAs("agent", { defaultInbox: true });
    const events = new Collector<string>();
    const sub = nc.subscribe("toolmesh.callback.>", {
      callback: (_error, msg) => events.push(msg.headers?.get("Nats-Msg-Id") ?? ""),
    });
    await nc.flush();
    // A durable of its own on the callback feed works: it replays what came after it.
    const jsm = await nc.jetstreamManager();
    await jsm.consumers.add(streamNames.callback, { durable_name: "agent-audit-trail" });
    const res = await dispatch("to the agent");
    await events.waitFor((id) => id === endKey(res.callId));
    sub.unsubscribe();

    // The audit log (every call's arguments) and the memory-writer's durable on it are not its to
    // read or take.
    const mine = await nc.jetstream().consumers.get(streamNames.callback, "agent-audit-trail");
    const first = await mine.next({ expires: 5000 });
    expect(first).not.toBeNull();
    first?.ack();
    for (const subject of [
      `$JS.API.CONSUMER.DELETE.${streamNames.auditLog}.memory-writer`,
      `$JS.API.CONSUMER.CREATE.${streamNames.auditLog}`,
      `$JS.API.STREAM.MSG.GET.${streamNames.auditLog}`,
    ]) {
      nc.publish(subject, new Uint8Array());
      await refused(refusals, "publish", subject);
    }

    nc.subscribe(`${inboxPrefix("dispatcher")}.>`);
    await refused(refusals, "subscription", `${inboxPrefix("dispatcher")}.>`);
    nc.subscribe(`$KV.${bucketNames.permission}.>`);
    await refused(refusals, "subscription", `$KV.${bucketNames.permission}.>`);
  });
});

describe("the services' own permissions", () => {
  it("cover everything they did here: nats-server refused only the forgers", async () => {
    const log = await readFile(path.join(stack.dataDir, "logs", "nats-server.log"), "utf8");
    const violations = log.split("\n").filter((line) => line.includes("Violation"));
    expect(violations.length).toBeGreaterThan(0);
    expect(violations.filter((line) => !line.includes(":forger-as-"))).toEqual([]);
  });
});

describe("the limits of a running stack", () => {
  it("give every stream and bucket a byte limit, and an age to all but state and the audit log", async () => {
    const jsm = await stack.nc.jetstreamManager();
    const limits: Record<string, { maxBytes: number; maxAge: number; discard: string }> = {};
    for await (const info of jsm.streams.list()) {
      const { name, max_bytes, max_age, discard } = info.config;
      limits[name] = { maxBytes: max_bytes, maxAge: max_age, discard };
    }
    expect(Object.keys(limits).sort()).toEqual(
      expect.arrayContaining([
        ...Object.values(streamNames),
        ...Object.values(bucketNames).map((b) => `KV_${b}`),
      ]),
    );
    for (const [name, limit] of Object.entries(limits)) {
      expect(limit.maxBytes, name).toBeGreaterThan(0);
      // Tools, grants and the vault's secrets are state, not history: an age would delete them. The audit log's
      // blocks leave it only once archived; the archive's age limit is the history's. The
      // record stream holds work: what Audit has not chained yet, however old.
      const ageless = [
        `KV_${bucketNames.registry}`,
        `KV_${bucketNames.permission}`,
        `KV_${bucketNames.vault}`,
        streamNames.auditLog,
        streamNames.records,
      ].includes(name);
      if (!ageless) expect(limit.maxAge, name).toBeGreaterThan(0);
    }
    // Records are refused when full, never dropped; the feeds drop their oldest.
    expect(limits[streamNames.records]?.discard).toBe("new");
    expect(limits[streamNames.callback]?.discard).toBe("old");
  });
});
