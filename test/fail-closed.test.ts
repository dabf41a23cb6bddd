import { randomUUID } from "node:crypto";
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@toolmesh/errors";
import { streamNames, subjects } from "@toolmesh/nats";
import {
  AuditAction,
  AuditRecordSchema,
  CallStatus,
  Health,
  HealthCheckResponse_ServingStatus as Status,
} from "@toolmesh/proto";
import { recordSlices } from "@toolmesh/records";
import { defineTool, type ServedTools, serveTools } from "@toolmesh/sdk";
import {
  chainedEnd,
  chainServices,
  eventually,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readAgentMemory } from "../services/memory-writer/src/layout.js";

// Nothing runs unrecorded: the trust rules of the chain, tried against real processes and a real
// nats-server that is stopped, a record stream filled up while Audit is away, records too large
// for the bus, and a Dispatcher that is killed with calls in flight.
describe("fail closed", () => {
  let stack: TestStack;
  let served: ServedTools;
  let agent: { headers: { authorization: string } };
  let auditor: { headers: { authorization: string } };
  /** Calls of fault.write (and fault.look) that reached the backend. */
  const writes: string[] = [];
  /** Held calls wait here until the test lets them go. */
  let release: () => void = () => {};
  let held = new Promise<void>((resolve) => {
    release = resolve;
  });

  beforeAll(async () => {
    stack = await startStack({
      services: [...chainServices, "callback", "memory-writer"],
      // Audit's sweeper closes a killed Dispatcher's calls a second past their deadline.
      env: {
        TOOLMESH_DISPATCHER_LOST_AFTER_MS: "3000",
        TOOLMESH_SWEEP_INTERVAL_MS: "500",
        TOOLMESH_LEASE_GRACE_MS: "1000",
      },
      serviceEnv: { dispatcher: { TOOLMESH_RECORD_STORE_MARGIN_BYTES: String(64 * 1024) } },
    });
    agent = stack.as(await stack.agentToken("fault-agent"));
    auditor = stack.as(await stack.agentToken("fault-auditor", { roles: ["auditor"] }));
    await stack.grantAll("fault-agent");
    served = await serveTools(
      [
        defineTool({
          name: "fault.write",
          description: "Writes a row; with hold, waits until the test releases it.",
          sideEffects: true,
          // A call left open is closed by the sweeper this long (and the grace) after it started.
          timeoutMs: 10_000,
          inputSchema: {
            type: "object",
            properties: { hold: { type: "boolean" }, pad: { type: "string" } },
          },
          handler: async (args: { hold?: boolean }, ctx) => {
            writes.push(ctx.callId);
            if (args.hold) await held;
            return { written: true };
          },
        }),
        defineTool({
          name: "fault.read",
          description: "Returns a string of the asked size.",
          inputSchema: {
            type: "object",
            properties: { bytes: { type: "integer" }, blob: { type: "string" } },
          },
          handler: (args: { bytes?: number }) => ({ data: "r".repeat(args.bytes ?? 1) }),
        }),
        defineTool({
          name: "fault.look",
          description: "Reads a row (read-only); waits until the test releases it.",
          timeoutMs: 10_000,
          inputSchema: { type: "object", properties: {} },
          handler: async (_args: Record<string, never>, ctx) => {
            writes.push(ctx.callId);
            await held;
            return { seen: true };
          },
        }),
      ],
      { registry: { url: stack.registry.url, token: stack.adminToken } },
    );
  }, 120_000);

  afterAll(async () => {
    release();
    await served?.close();
    await stack?.stop();
  });

  const dispatch = (tool: string, args: Record<string, unknown>, callId = randomUUID()) =>
    stack
      .dispatcherClient()
      .dispatch({ tool, arguments: args as never, context: { callId } }, agent);
  const health = () => stack.client(Health, "dispatcher");
  const codeOf = (call: Promise<unknown>) =>
    call.then(
      () => "ok" as const,
      (error: unknown) => ConnectError.from(error).code,
    );
  const auditOf = async (callId: string) =>
    (await stack.auditClient().queryRecords({ callId }, auditor)).records;
  /** Resolves with a call's end record once Audit has chained its start and end. */
  const endOf = (callId: string, timeoutMs = 20_000) =>
    chainedEnd(stack.auditClient(), auditor, callId, timeoutMs);

  it("refuses new calls before the record stream overflows, and runs none unrecorded", async () => {
    // First in the file: after the NATS restart below, a stream update can outlast the API timeout.
    const jsm = await stack.nc.jetstreamManager({ timeout: 3000 });
    // The record stream holds what Audit has not chained yet: with Audit away it only grows.
    await stack.service("audit").stop();
    const { config, state } = await jsm.streams.info(streamNames.records);
    const maxBytes = state.bytes + 64 * 1024 + 200 * 1024;
    await jsm.streams.update(streamNames.records, { ...config, max_bytes: maxBytes });
    const ran: string[] = [];
    try {
      // The Dispatcher reads the limits on a timer and logs what it found.
      await stack.dispatcher.stdout.waitFor(
        (l) => l.includes('"record stream limits"') && l.includes(`"max_bytes":${maxBytes}`),
        10_000,
        "the Dispatcher to read the new limit",
      );
      const before = writes.length;
      let refusal: ConnectError | undefined;
      for (let i = 0; i < 100 && !refusal; i++) {
        const callId = randomUUID();
        try {
          await dispatch("fault.write", { pad: "p".repeat(16 * 1024) }, callId);
          ran.push(callId);
        } catch (error) {
          refusal = ConnectError.from(error);
        }
      }
      expect(refusal?.code).toBe(Code.ResourceExhausted);
      expect(refusal?.rawMessage).toMatch(/record store is full .*TOOLMESH_RECORDS/);
      // Every call that reached the backend was accepted whole; the refused one never ran.
      expect(ran.length).toBeGreaterThan(0);
      expect(writes.length - before).toBe(ran.length);
    } finally {
      await jsm.streams.update(streamNames.records, config);
      await stack.service("audit").start();
    }
    for (const callId of ran) expect((await endOf(callId))?.status).toBe(CallStatus.SUCCESS);
    const res = await eventually(() => dispatch("fault.write", {}), 20_000, "a call after room");
    expect(res.status).toBe(CallStatus.SUCCESS);
  }, 90_000);

  it("refuses a tool with side effects while NATS is down, before its backend is touched", async () => {
    const before = writes.length;
    await stack.nats.stop();
    try {
      // The Dispatcher notices the lost connection on its own; until then a call still waits for
      // its start record's ack, which never comes. Either way the backend is never reached.
      await eventually(async () => {
        expect(await codeOf(dispatch("fault.write", {}))).toBe(Code.Unavailable);
      }, 20_000);
      expect(await codeOf(dispatch("fault.read", {}))).toBe(Code.Unavailable);
      expect(writes.length).toBe(before);
      // Its health says so, so a load balancer sends calls to a replica that can record them.
      await eventually(async () => {
        expect((await health().check({ service: "" })).status).toBe(Status.NOT_SERVING);
      }, 20_000);
    } finally {
      await stack.nats.start();
    }
    await eventually(async () => {
      expect((await health().check({ service: "" })).status).toBe(Status.SERVING);
    }, 30_000);
    const res = await eventually(
      () => dispatch("fault.write", {}),
      30_000,
      "a call after NATS is back",
    );
    expect(res.status).toBe(CallStatus.SUCCESS);
    expect(writes.length).toBe(before + 1);
  }, 90_000);

  it("refuses arguments too large for the bus with RESOURCE_EXHAUSTED, and records the refusal", async () => {
    const callId = randomUUID();
    const error = await dispatch("fault.read", { blob: "b".repeat(1100 * 1024) }, callId).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    expect(error?.code).toBe(Code.ResourceExhausted);
    expect(error?.rawMessage).toMatch(/max_payload of \d+ bytes/);
    const [record] = await eventually(async () => {
      const records = await auditOf(callId);
      expect(records).toHaveLength(1);
      return records;
    });
    expect(record?.status).toBe(CallStatus.REFUSED);
    expect(record?.reason).toBe("arguments_too_large");
  }, 60_000);

  it("records an output too large for its outcome as FAILURE output_too_large, never loses it", async () => {
    const callId = randomUUID();
    const res = await dispatch("fault.read", { bytes: 2 * 1024 * 1024 }, callId);
    expect(res.status).toBe(CallStatus.FAILURE);
    expect(res.error?.code).toBe("output_too_large");
    const outcome = await eventually(() => stack.callbackClient().getOutcome({ callId }, agent));
    expect(outcome.event?.status).toBe(CallStatus.FAILURE);
    expect(outcome.event?.error?.code).toBe("output_too_large");
    const end = await endOf(callId);
    expect(end).toMatchObject({ status: CallStatus.FAILURE, errorCode: "output_too_large" });
  }, 60_000);

  it("closes the calls of a Dispatcher killed mid-call (read-only ones past the linger too) as INTERRUPTED dispatcher_lost, everywhere", async () => {
    held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const writeIds = Array.from({ length: 5 }, () => randomUUID());
    // Read-only calls too: each start waits TOOLMESH_START_LINGER_MS for its end, and the calls
    // still running then have it written alone — what the sweeper closes them from.
    const lookIds = Array.from({ length: 3 }, () => randomUUID());
    const callIds = [...writeIds, ...lookIds];
    const starts = new Set<string>();
    const sub = stack.nc.subscribe(subjects.records("dispatcher"), {
      callback: (_error, msg) => {
        for (const bytes of recordSlices(msg.data)) {
          const record = fromBinary(AuditRecordSchema, bytes);
          if (record.action === AuditAction.TOOL_START) starts.add(record.callId);
        }
      },
    });
    const before = writes.length;
    const calls = [
      ...writeIds.map((id) => dispatch("fault.write", { hold: true }, id).catch(() => {})),
      ...lookIds.map((id) => dispatch("fault.look", {}, id).catch(() => {})),
    ];
    await eventually(async () => expect(writes.length).toBe(before + callIds.length));
    await eventually(async () => expect(callIds.filter((id) => !starts.has(id))).toEqual([]));
    sub.unsubscribe();
    await stack.dispatcher.kill();
    await Promise.all(calls);
    const killedAt = Date.now();
    await stack.dispatcher.start();
    for (const callId of callIds) {
      const { event } = await eventually(
        () => stack.callbackClient().getOutcome({ callId }, agent),
        30_000,
        `the outcome of ${callId}`,
      );
      expect(event?.status).toBe(CallStatus.INTERRUPTED);
      expect(event?.reason).toBe("dispatcher_lost");
    }
    expect(Date.now() - killedAt).toBeLessThan(30_000);
    for (const callId of callIds) {
      expect(await endOf(callId)).toMatchObject({
        status: CallStatus.INTERRUPTED,
        reason: "dispatcher_lost",
        source: "audit",
      });
    }
    await eventually(async () => {
      const text = await readAgentMemory(stack.dataDir, "fault-agent");
      for (const callId of callIds) expect(text).toContain(callId);
    });
    release();
  }, 90_000);
});
