import { randomUUID } from "node:crypto";
import type { Client } from "@connectrpc/connect";
import { createLogger } from "@toolmesh/log";
import {
  AuditAction,
  type AuditService,
  type CallbackEvent,
  type CallbackService,
  CallStatus,
  ToolBackendService,
  TraceEventKind,
} from "@toolmesh/proto";
import { endsCall, startsCall } from "@toolmesh/records";
import { defineTool, type ServedTools } from "@toolmesh/sdk";
import { createToolmeshServer, type ListeningServer } from "@toolmesh/server";
import {
  chainServices,
  eventually,
  mintJwt,
  numberTool,
  type ServiceProcess,
  serveOnStack,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { AckPolicy } from "nats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readAgentMemory } from "../services/memory-writer/src/layout.js";

const SECRET = `s3cr3t-${randomUUID()}`;
const BULK = 2000;

// The end of every chain with real processes: dispatcher, registry, permission, an SDK backend,
// an asynchronous backend, and the audit, callback and memory-writer services.
describe("outcomes end to end", () => {
  let stack: TestStack;
  let served: ServedTools;
  let asyncBackend: ListeningServer;
  let memoryDir: string;
  let audit: ServiceProcess;
  let callback: ServiceProcess;
  let memory: ServiceProcess;
  let auditClient: Client<typeof AuditService>;
  let callbackClient: Client<typeof CallbackService>;
  let agent: string;
  let auditor: string;

  const memoryEntries = async (agentId: string) => {
    const text = await readAgentMemory(memoryDir, agentId);
    return {
      text,
      entries: text
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
    };
  };

  beforeAll(async () => {
    stack = await startStack({
      services: [...chainServices, "callback", "memory-writer"],
    });
    memoryDir = stack.dataDir;
    [audit, callback, memory] = ["audit", "callback", "memory-writer"].map(stack.service);
    auditClient = stack.auditClient();
    callbackClient = stack.callbackClient();
    agent = await stack.agentToken("e2e-agent", { onBehalfOf: "" });
    auditor = await stack.agentToken("reviewer", { roles: ["auditor"] });
    await stack.grantAll("e2e-agent");
    await stack.grantAll("bulk-agent");
    served = await serveOnStack(stack, [
      defineTool({
        name: "e2e.lookup",
        description: "Looks a word up.",
        inputSchema: {
          type: "object",
          required: ["q"],
          properties: { q: { type: "string" }, password: { type: "string" } },
        },
        handler: (args: { q: string }, ctx) => {
          ctx.trace("DATA_QUERY", { query: `lookup ${args.q}` });
          return { answer: args.q.toUpperCase() };
        },
      }),
      numberTool("e2e.count"),
    ]);
    // An asynchronous tool: accepts every job and reports later through CallbackService.Report.
    asyncBackend = await createToolmeshServer({
      services: [ToolBackendService],
      log: createLogger("async-backend", "silent"),
      readMaxBytes: 1 << 20,
      routes(router) {
        router.service(ToolBackendService, {
          async *invoke() {
            yield { message: { case: "result", value: { pending: true } } };
          },
        });
      },
    }).listen(0, "127.0.0.1");
    await stack.registryClient.registerTool(
      {
        tool: {
          name: "e2e.async",
          description: "Accepts a job and reports later.",
          inputSchema: { type: "object" },
          runtime: { kind: { case: "grpc", value: { address: `127.0.0.1:${asyncBackend.port}` } } },
          reporters: ["async-backend"],
        },
      },
      stack.as(stack.adminToken),
    );
  }, 120_000);

  afterAll(async () => {
    await asyncBackend?.close(100);
    await served?.close();
    await stack?.stop();
  });

  it("a batch call leaves the whole chain: trace, audit records, callbacks and memory", async () => {
    const dispatcher = stack.dispatcherClient();
    const batch = await dispatcher.dispatchBatch(
      {
        calls: [
          { tool: "e2e.lookup", arguments: { q: "alpha", password: SECRET } },
          { tool: "e2e.lookup", arguments: { q: "beta", password: SECRET } },
        ],
      },
      stack.as(agent),
    );
    expect(batch.results.map((r) => r.status)).toEqual([CallStatus.SUCCESS, CallStatus.SUCCESS]);
    const callIds = batch.results.map((r) => r.callId);

    const trace = await eventually(
      async () => {
        const res = await auditClient.getTrace({ traceId: batch.traceId }, stack.as(auditor));
        expect(res.events.filter((e) => e.kind === TraceEventKind.CALLBACK_SUCCESS)).toHaveLength(
          2,
        );
        return res;
      },
      20_000,
      "the callbacks in the trace",
    );
    for (const callId of callIds) {
      const kinds = trace.events.filter((e) => e.callId === callId).map((e) => e.kind);
      const at = (k: TraceEventKind) => kinds.indexOf(k);
      expect(at(TraceEventKind.TOOL_EXECUTE)).toBeGreaterThanOrEqual(0);
      expect(at(TraceEventKind.DATA_QUERY)).toBeGreaterThan(at(TraceEventKind.TOOL_EXECUTE));
      expect(at(TraceEventKind.TOOL_RESULT)).toBeGreaterThan(at(TraceEventKind.DATA_QUERY));
      expect(at(TraceEventKind.CALLBACK_SUCCESS)).toBeGreaterThan(at(TraceEventKind.TOOL_RESULT));
    }

    // Each call is written once: its start with its arguments and its end with its result — one
    // record when it ended soon after it started (Audit chains the two together), else two.
    const records = await eventually(
      async () => {
        const res = await auditClient.queryRecords({ traceId: batch.traceId }, stack.as(auditor));
        expect(res.records.filter(endsCall)).toHaveLength(2);
        return res.records;
      },
      20_000,
      "a start and an end of each call",
    );
    const starts = records.filter(startsCall);
    const ends = records.filter(endsCall);
    expect(starts.map((r) => r.callId).sort()).toEqual([...callIds].sort());
    expect(ends.map((r) => r.callId).sort()).toEqual([...callIds].sort());
    for (const r of starts) {
      expect(r).toMatchObject({ agentId: "e2e-agent", tool: "e2e.lookup" });
      expect(r.arguments?.password).toBe("[redacted]");
    }
    for (const r of ends) {
      expect(r).toMatchObject({
        agentId: "e2e-agent",
        tool: "e2e.lookup",
        status: CallStatus.SUCCESS,
      });
    }

    const memoryFile = await eventually(
      async () => {
        const m = await memoryEntries("e2e-agent");
        expect(m.entries.filter((e) => e.type === "tool_result")).toHaveLength(2);
        return m;
      },
      20_000,
      "the memory file",
    );
    const result = memoryFile.entries.find((e) => e.id === `${callIds[0]}/result`);
    expect(result).toMatchObject({
      parent_id: callIds[0],
      content: { status: "success", output: { answer: "ALPHA" } },
    });
    expect(memoryFile.text.includes(SECRET)).toBe(false);
    expect(await stack.logText()).not.toContain(SECRET);
  });

  it("an asynchronous call is PENDING until its backend reports, then broadcast once", async () => {
    const res = await stack
      .dispatcherClient()
      .dispatch({ tool: "e2e.async", arguments: {} }, stack.as(agent));
    expect(res.status).toBe(CallStatus.PENDING);
    await eventually(
      async () => {
        const got = await callbackClient.getOutcome({ callId: res.callId }, stack.as(agent));
        expect(got.event?.status).toBe(CallStatus.PENDING);
      },
      20_000,
      "the pending call",
    );
    const watched = (async () => {
      const seen: CallbackEvent[] = [];
      for await (const m of callbackClient.watch({ callId: res.callId }, stack.as(agent)))
        seen.push(m.event as CallbackEvent);
      return seen;
    })();
    const backend = await mintJwt(stack.jwtSecret, {
      sub: "async-backend",
      roles: ["tool-backend"],
    });
    const report = { callId: res.callId, status: CallStatus.SUCCESS, output: { done: true } };
    expect((await callbackClient.report(report, stack.as(backend))).duplicate).toBe(false);
    expect((await callbackClient.report(report, stack.as(backend))).duplicate).toBe(true);
    // Watch shows the call waiting, then its end.
    expect((await watched).map((e) => e.status)).toEqual([CallStatus.PENDING, CallStatus.SUCCESS]);
    await eventually(
      async () => {
        const trace = await auditClient.getTrace({ traceId: res.traceId }, stack.as(auditor));
        expect(trace.events.filter((e) => e.kind === TraceEventKind.CALLBACK_SUCCESS)).toHaveLength(
          1,
        );
        const m = await memoryEntries("e2e-agent");
        expect(m.entries.find((e) => e.id === `${res.callId}/result`)?.content.output).toEqual({
          done: true,
        });
      },
      20_000,
      "the reported outcome in trace and memory",
    );
  });

  it(`${BULK} calls while audit, callback and memory-writer are SIGKILLed and restarted`, async () => {
    const bulk = await stack.agentToken("bulk-agent");
    const dispatcher = stack.dispatcherClient();
    const jsm = await stack.nc.jetstreamManager();
    const subject = "toolmesh.callback.success.e2e%2Ecount";
    // A subscriber replaying the feed: the feed keeps every broadcast until it has read them.
    await jsm.consumers.add("TOOLMESH_CALLBACK", {
      durable_name: "e2e-feed",
      ack_policy: AckPolicy.Explicit,
      filter_subject: subject,
    });
    let next = 0;
    let done = 0;
    const worker = async () => {
      while (next < BULK) {
        const n = next++;
        const r = await dispatcher.dispatch(
          { tool: "e2e.count", arguments: { n } },
          stack.as(bulk),
        );
        expect(r.status).toBe(CallStatus.SUCCESS);
        done++;
        if (done === Math.floor(BULK / 4)) {
          await Promise.all([audit.kill(), callback.kill(), memory.kill()]);
        }
        if (done === Math.floor(BULK / 2))
          await Promise.all([audit.start(), callback.start(), memory.start()]);
      }
    };
    const started = Date.now();
    await Promise.all(Array.from({ length: 32 }, worker));
    console.info(`${BULK} dispatches took ${Date.now() - started} ms`);

    const countRecords = async () => {
      const ids = new Set<string>();
      let pageToken = "";
      let ends = 0;
      do {
        const page = await auditClient.queryRecords(
          { agentId: "bulk-agent", tool: "e2e.count", pageSize: 1000, pageToken },
          stack.as(auditor),
        );
        for (const r of page.records) {
          ids.add(r.callId);
          if (r.action === AuditAction.TOOL_CALL) ends++;
        }
        pageToken = page.nextPageToken;
      } while (pageToken);
      return { ids: ids.size, ends };
    };
    await eventually(
      async () => expect(await countRecords()).toEqual({ ids: BULK, ends: BULK }),
      60_000,
      "every audit record",
    );
    expect((await auditClient.verifyChain({}, stack.as(auditor))).ok).toBe(true);

    await eventually(
      async () => {
        const info = await jsm.streams.info("TOOLMESH_CALLBACK", { subjects_filter: subject });
        expect(info.state.subjects?.[subject]).toBe(BULK);
      },
      60_000,
      "every callback broadcast",
    );
    await eventually(
      async () => {
        const { entries } = await memoryEntries("bulk-agent");
        const calls = entries.filter((e) => e.type === "tool_call").map((e) => e.id);
        expect(calls).toHaveLength(BULK);
        expect(new Set(calls).size).toBe(BULK);
      },
      60_000,
      "every call in memory",
    );
    // Nothing more arrives later: the counts are final once every consumer is drained.
    const info = await jsm.streams.info("TOOLMESH_CALLBACK", { subjects_filter: subject });
    expect(info.state.subjects?.[subject]).toBe(BULK);
  }, 180_000);
});
