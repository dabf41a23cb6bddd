import { randomBytes } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code, ConnectError } from "@toolmesh/errors";
import { buckets, ensureStream, publishEvent, streamDefinitions, subjects } from "@toolmesh/nats";
import {
  CallbackService,
  CallStatus,
  type Outcome,
  OutcomeSchema,
  ToolSchema,
} from "@toolmesh/proto";
import {
  eventually,
  mintJwt,
  type ServiceProcess,
  startNats,
  startService,
  TEST_JS_OPTIONS,
  type TestNats,
} from "@toolmesh/testkit";
import { connect, type JetStreamManager, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CALLBACK_CONSUMER } from "../src/broadcaster.js";
import { CALLBACK_BUCKET, callKey } from "../src/call-store.js";
import { BROADCAST_STREAM } from "../src/outcome-history.js";

const JWT_SECRET = randomBytes(32).toString("hex");
const TOOL = "history.tool";
const bearer = async (sub: string, roles: string[]) => ({
  headers: { authorization: `Bearer ${await mintJwt(JWT_SECRET, { sub, roles })}` },
});

const outcome = (callId: string, status: CallStatus, agentId = "history-agent"): Outcome =>
  create(OutcomeSchema, {
    callId,
    traceId: randomBytes(16).toString("hex"),
    tool: TOOL,
    agentId,
    status,
    ...(status === CallStatus.SUCCESS ? { output: { call: callId } } : {}),
    ...(status === CallStatus.FAILURE ? { error: { code: "backend_error" } } : {}),
    durationMs: 3,
    attempts: 1,
    finishedAt: timestampFromMs(Date.now()),
    source: "dispatcher",
  });

/**
 * A finished call's key lives only the live window (1 s here); the call is then answered from the
 * outcome history, which reads the broadcast stream into an SQLite file and continues it after a
 * restart. nats-server keeps every live key in memory, so this is what bounds its memory.
 */
describe("callback outcome history", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let callback: ServiceProcess;
  let client: Client<typeof CallbackService>;

  const publish = (o: Outcome, msgId = o.callId) =>
    publishEvent(
      nc.jetstream(TEST_JS_OPTIONS),
      subjects.outcome("dispatcher", o.callId),
      OutcomeSchema,
      o,
      { msgId },
    );
  /** The subjects (keys) the bucket's stream holds for a call: 0 once its key expired. */
  const keysOf = async (callId: string) => {
    const info = await jsm.streams.info(`KV_${CALLBACK_BUCKET}`, {
      subjects_filter: `$KV.${CALLBACK_BUCKET}.${callKey(callId)}`,
    });
    return Object.keys(info.state.subjects ?? {}).length;
  };
  /** The broadcasts the stream holds for a call. */
  const broadcastsOf = async (callId: string) => {
    const consumer = await nc.jetstream().consumers.get(BROADCAST_STREAM);
    const { state } = await jsm.streams.info(BROADCAST_STREAM);
    let found = 0;
    const batch = await consumer.fetch({ max_messages: state.messages, expires: 5000 });
    for await (const msg of batch) {
      if (msg.headers?.get("Nats-Msg-Id") === callId) found++;
      if (msg.seq >= state.last_seq) break;
    }
    return found;
  };
  /** Resolves once the service has acked every outcome published so far. */
  const drained = () =>
    eventually(
      async () => {
        const { state } = await jsm.streams.info("TOOLMESH_OUTCOME");
        const info = await jsm.consumers.info("TOOLMESH_OUTCOME", CALLBACK_CONSUMER);
        expect(info.ack_floor.stream_seq).toBeGreaterThanOrEqual(state.last_seq);
        expect(info.num_ack_pending).toBe(0);
      },
      20_000,
      "the outcomes to be acked",
    );
  /** Calls the usage counter has counted for the agent. */
  const usageCalls = async (agentId: string, admin: { headers: { authorization: string } }) => {
    const { usage } = await client.getUsage({ agentId }, admin);
    return usage.reduce((sum, u) => sum + Number(u.calls), 0);
  };

  beforeAll(async () => {
    nats = await startNats();
    nc = await connect({ servers: nats.url });
    jsm = await nc.jetstreamManager();
    const streams = streamDefinitions();
    for (const s of [streams.outcome, streams.trace, streams.callback]) await ensureStream(jsm, s);
    const registry = await nc
      .jetstream(TEST_JS_OPTIONS)
      .views.kv(buckets.registry.name, { history: 1 });
    await registry.put(
      buckets.registry.toolKey(TOOL),
      toBinary(
        ToolSchema,
        create(ToolSchema, { spec: { name: TOOL, reporters: ["history-backend"] }, revision: 1n }),
      ),
    );
    callback = await startService("callback", {
      NATS_URL: nats.url,
      TOOLMESH_CALLBACK_PORT: "0",
      TOOLMESH_JWT_SECRET: JWT_SECRET,
      TOOLMESH_CALLBACK_LIVE_SECONDS: "1",
    });
    client = createClient(CallbackService, createGrpcTransport({ baseUrl: callback.url }));
  });

  afterAll(async () => {
    await callback?.stop();
    await nc?.close();
    await nats?.destroy();
  });

  it("answers GetOutcome, Watch and Report from the history once the key has gone", async () => {
    const agent = await bearer("history-agent", ["agent"]);
    const admin = await bearer("history-admin", ["admin"]);
    await publish(outcome("done-1", CallStatus.SUCCESS));
    const live = await eventually(
      () => client.getOutcome({ callId: "done-1" }, agent),
      20_000,
      "the outcome",
    );
    await eventually(async () => expect(await keysOf("done-1")).toBe(0), 20_000, "key expiry");

    const later = await client.getOutcome({ callId: "done-1" }, agent);
    expect(later.event).toEqual(live.event);
    for await (const watched of client.watch({ callId: "done-1" }, agent)) {
      expect(watched.event).toEqual(live.event);
      break;
    }
    // Another agent still may not see it.
    const other = await client
      .getOutcome({ callId: "done-1" }, await bearer("someone-else", ["agent"]))
      .catch((e: unknown) => e);
    expect((other as ConnectError).code).toBe(Code.PermissionDenied);

    // A backend reporting the same result again is answered as a duplicate; another is refused.
    const backend = await bearer("history-backend", ["tool-backend"]);
    const again = await client.report(
      { callId: "done-1", status: CallStatus.SUCCESS, output: { call: "done-1" } },
      backend,
    );
    expect(again.duplicate).toBe(true);
    const changed = await client
      .report({ callId: "done-1", status: CallStatus.FAILURE, error: { code: "x" } }, backend)
      .catch((e: unknown) => e);
    expect(changed).toBeInstanceOf(ConnectError);
    expect((changed as ConnectError).code).toBe(Code.FailedPrecondition);

    // A second final outcome of the call, past the stream's duplicate ids: nothing broadcast or
    // counted again, and no key comes back.
    await eventually(
      async () => expect(await usageCalls("history-agent", admin)).toBe(1),
      20_000,
      "usage",
    );
    await publish(outcome("done-1", CallStatus.FAILURE), "done-1:late");
    await drained();
    expect(await broadcastsOf("done-1")).toBe(1);
    expect(await keysOf("done-1")).toBe(0);
    expect((await client.getOutcome({ callId: "done-1" }, agent)).event?.status).toBe(
      CallStatus.SUCCESS,
    );
    expect(await usageCalls("history-agent", admin)).toBe(1);

    const missing = await client.getOutcome({ callId: "never-made" }, agent).catch((e) => e);
    expect((missing as ConnectError).code).toBe(Code.NotFound);
  }, 60_000);

  it("continues the history from its checkpoint after a restart", async () => {
    const agent = await bearer("history-agent", ["agent"]);
    await Promise.all(
      Array.from({ length: 50 }, (_, i) => publish(outcome(`batch-${i}`, CallStatus.SUCCESS))),
    );
    await drained();
    await eventually(async () => expect(await keysOf("batch-49")).toBe(0), 20_000, "key expiry");
    const { state } = await jsm.streams.info(BROADCAST_STREAM);

    await callback.restart();
    const line = await callback.stdout.waitFor(
      (l) => l.includes("outcome history open"),
      20_000,
      "the history to open",
    );
    const opened = JSON.parse(line) as { from_seq: number; target_seq: number; rebuilt: string };
    expect(opened.rebuilt).toBe("");
    // Continued past what it had read, not read again from the stream's start.
    expect(opened.from_seq).toBe(state.last_seq + 1);
    for (const i of [0, 25, 49]) {
      const got = await client.getOutcome({ callId: `batch-${i}` }, agent);
      expect(got.event?.output).toEqual({ call: `batch-${i}` });
    }
  }, 60_000);
});
