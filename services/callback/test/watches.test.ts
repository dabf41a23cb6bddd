import { randomBytes } from "node:crypto";
import { type Client, createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { Code, ConnectError } from "@toolmesh/errors";
import { type AuditRecord, CallbackService, CallStatus } from "@toolmesh/proto";
import {
  endRecord,
  metricSum,
  type ServiceProcess,
  startAudit,
  startNats,
  startService,
  type TestNats,
  writeRecords,
} from "@toolmesh/testkit";
import { SignJWT } from "jose";
import { connect, type JetStreamManager, type NatsConnection } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const JWT_SECRET = randomBytes(32).toString("hex");
const MAX_WATCHES = 5;

const bearer = async (sub: string, roles = ["agent"]) => ({
  headers: {
    authorization: `Bearer ${await new SignJWT({ roles })
      .setProtectedHeader({ alg: "HS256" })
      .setIssuer("toolmesh")
      .setAudience("toolmesh")
      .setSubject(sub)
      .setExpirationTime("1h")
      .sign(new TextEncoder().encode(JWT_SECRET))}`,
  },
});

/** A call's end record: a success of watched.tool. */
const ended = (callId: string, agentId: string): AuditRecord =>
  endRecord(callId, CallStatus.SUCCESS, {
    tool: "watched.tool",
    agentId,
    output: { call: callId },
  });

/** Polls until check returns a value (state another process changes on its own schedule). */
async function until<T>(check: () => Promise<T | undefined>, what: string, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe("callback watches", () => {
  let nats: TestNats;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  let audit: ServiceProcess;
  let callback: ServiceProcess;
  let client: Client<typeof CallbackService>;

  const publish = (...records: AuditRecord[]) => writeRecords(nc, records);
  /** Watches the service holds open, from its /metrics. */
  const openWatches = () => metricSum(callback.url, "toolmesh_callback_watches");
  /** Every consumer on the server, read from JetStream. */
  const consumers = async () => (await jsm.getAccountInfo()).consumers;

  beforeAll(async () => {
    nats = await startNats();
    nc = await connect({ servers: nats.url });
    jsm = await nc.jetstreamManager();
    audit = await startAudit(nats.url, JWT_SECRET);
    callback = await startService("callback", {
      NATS_URL: nats.url,
      TOOLMESH_CALLBACK_PORT: "0",
      TOOLMESH_JWT_SECRET: JWT_SECRET,
      TOOLMESH_CALLBACK_MAX_WATCHES_PER_AGENT: String(MAX_WATCHES),
    });
    client = createClient(CallbackService, createGrpcTransport({ baseUrl: callback.url }));
  });

  afterAll(async () => {
    await callback?.stop();
    await audit?.stop();
    await nc?.close();
    await nats?.destroy();
  });

  it("shares subscriptions across many watches, limits each agent and gives the slots back", async () => {
    const before = await consumers();
    const agents = 40;
    const rounds = 3;
    for (let round = 0; round < rounds; round++) {
      const abort = new AbortController();
      const opened: Promise<unknown>[] = [];
      const delivered: Promise<string>[] = [];
      for (let a = 0; a < agents; a++) {
        const auth = { ...(await bearer(`agent-${a}`)), signal: abort.signal };
        // Per agent: watches by call id (one of which will finish) and by tool.
        for (let w = 0; w < MAX_WATCHES; w++) {
          const stream =
            w % 2 === 0
              ? client.watch({ callId: `r${round}-a${a}-w${w}` }, auth)
              : client.watch({ tool: "watched.tool" }, auth);
          const first = (async () => {
            for await (const res of stream) return res.event?.callId ?? "";
            return "";
          })();
          first.catch(() => {});
          (w === 0 ? delivered : opened).push(first);
        }
      }
      // The limit holds while they are open: once the service holds every one of them.
      await until(
        async () => ((await openWatches()) === agents * MAX_WATCHES ? true : undefined),
        "every watch to be open",
        60_000,
      );
      const extra = await bearer("agent-0");
      const refused = (async () => {
        for await (const _ of client.watch({ tool: "watched.tool" }, extra)) break;
      })();
      await expect(refused).rejects.toSatisfy(
        (e) =>
          e instanceof ConnectError &&
          e.code === Code.ResourceExhausted &&
          e.rawMessage.includes(`TOOLMESH_CALLBACK_MAX_WATCHES_PER_AGENT=${MAX_WATCHES}`),
      );
      // Every call watch gets its call's outcome.
      await publish(
        ...Array.from({ length: agents }, (_, a) => ended(`r${round}-a${a}-w0`, `agent-${a}`)),
      );
      expect((await Promise.all(delivered)).sort()).toEqual(
        Array.from({ length: agents }, (_, a) => `r${round}-a${a}-w0`).sort(),
      );
      // No watch made a JetStream consumer.
      expect(await consumers()).toBe(before);
      abort.abort();
      await Promise.allSettled(opened);
      await until(
        async () => ((await openWatches()) === 0 ? true : undefined),
        "every watch to be closed on the service",
      );
    }
    // Closed watches gave their slots back: an agent may open its full share again.
    const auth = await bearer("agent-0");
    const abort = new AbortController();
    const again = Array.from({ length: MAX_WATCHES }, (_, w) =>
      (async () => {
        for await (const res of client.watch(
          { callId: `again-${w}` },
          { ...auth, signal: abort.signal },
        ))
          return res.event?.callId;
        return undefined;
      })(),
    );
    await publish(...Array.from({ length: MAX_WATCHES }, (_, w) => ended(`again-${w}`, "agent-0")));
    expect(await Promise.all(again)).toEqual(
      Array.from({ length: MAX_WATCHES }, (_, w) => `again-${w}`),
    );
    expect(await consumers()).toBe(before);
  }, 120_000);
});
