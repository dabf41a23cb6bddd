import { create } from "@bufbuild/protobuf";
import { principal } from "@toolmesh/auth";
import { Code, ConnectError } from "@toolmesh/errors";
import { createLogger } from "@toolmesh/log";
import { RecordWriteError } from "@toolmesh/nats";
import { decide } from "@toolmesh/policy";
import {
  AuditAction,
  CallStatus,
  DispatchRequestSchema,
  Effect,
  type Grant,
  GrantSchema,
  PrincipalKind,
  ResourceKind,
  ToolNotFoundSchema,
  ToolSchema,
  TraceEventKind,
} from "@toolmesh/proto";
import { traceEvents } from "@toolmesh/records";
import { beforeEach, describe, expect, it } from "vitest";
import type { PermissionGate } from "../src/catalog/permission-gate.js";
import { MemoryToolSource, ToolCatalog } from "../src/catalog/tool-catalog.js";
import { DispatchChain } from "../src/chain/dispatch-chain.js";
import { RunningCalls } from "../src/chain/running-calls.js";
import { CallRecorder } from "../src/records/call-recorder.js";
import { MemoryCallIdOwners, MemoryIdempotencyStore } from "../src/records/idempotency.js";
import { MemoryRecords } from "../src/records/record-sink.js";
import { failure } from "../src/runtimes/grpc-runtime.js";
import type { Attempt, AttemptResult, ToolRuntime } from "../src/runtimes/runtime.js";

// The chain with in-memory dependencies: a map of tools, grants in an array, a publisher that
// keeps what it is given, and a runtime the test scripts.
class ScriptedRuntime implements ToolRuntime {
  script: ((attempt: Attempt) => Promise<AttemptResult>)[] = [];
  calls = 0;
  invoke(attempt: Attempt): Promise<AttemptResult> {
    const step = this.script[Math.min(this.calls, this.script.length - 1)];
    this.calls++;
    return step ? step(attempt) : Promise.resolve({ ok: true, output: {} });
  }
}

const agent = principal("agent-1", ["agent"]);

describe("dispatch chain (in memory)", () => {
  let tools: MemoryToolSource;
  let grants: Grant[];
  let sink: MemoryRecords;
  let runtime: ScriptedRuntime;
  let chain: DispatchChain;
  let gate: PermissionGate & { isReady: boolean };

  const addTool = (name: string, extra: Record<string, unknown> = {}) =>
    tools.put(
      create(ToolSchema, {
        spec: {
          name,
          inputSchema: { type: "object" },
          runtime: { kind: { case: "grpc", value: { address: "unused" } } },
          ...extra,
        },
        schemaHash: name,
      }),
    );

  beforeEach(() => {
    tools = new MemoryToolSource();
    grants = [
      create(GrantSchema, {
        id: "g1",
        spec: {
          principal: { kind: PrincipalKind.AGENT, id: "agent-1" },
          resource: { kind: ResourceKind.GLOB, pattern: "**" },
          scopes: ["*"],
          effect: Effect.ALLOW,
          enabled: true,
        },
      }),
    ];
    gate = {
      isReady: true,
      decide: (subject, tool, now) => decide(subject, tool, grants, now ?? new Date()),
    };
    sink = new MemoryRecords();
    runtime = new ScriptedRuntime();
    chain = chainWith(new CallRecorder(sink, ["password"], "instance-1"));
  });

  /** The chain over this test's tools, grants, sink and runtime, with this recorder. */
  const chainWith = (recorder: CallRecorder) =>
    new DispatchChain({
      catalog: new ToolCatalog(tools),
      policy: gate,
      recorder,
      runtimes: { grpc: runtime, local: runtime, remote: runtime, docker: runtime },
      idempotency: new MemoryIdempotencyStore(),
      callIds: new MemoryCallIdOwners(),
      running: new RunningCalls(),
      // Generous, so that a loaded machine cannot turn a retry's backoff into a timeout.
      settings: { defaultTimeoutMs: 10_000, maxTimeoutMs: 30_000 },
      log: createLogger("test", "silent"),
    });

  const dispatch = (tool: string, extra: Record<string, unknown> = {}) =>
    chain.dispatch(create(DispatchRequestSchema, { tool, arguments: {}, ...extra }), agent);

  it("fails closed with UNAVAILABLE while the grant snapshot is not loaded, and audits it", async () => {
    addTool("a.tool");
    gate.isReady = false;
    await expect(dispatch("a.tool")).rejects.toMatchObject({
      code: Code.Unavailable,
      rawMessage: expect.stringContaining("permission grants"),
    });
    expect(sink.records[0]?.errorCode).toBe("UNAVAILABLE");
    expect(runtime.calls).toBe(0);
  });

  it("lists the tools the caller may use, nearest names first", async () => {
    for (const name of ["data.query", "data.write", "mail.send", "data.quer"]) addTool(name);
    grants.push(
      create(GrantSchema, {
        id: "g2",
        spec: {
          principal: { kind: PrincipalKind.AGENT, id: "agent-1" },
          resource: { kind: ResourceKind.TOOL, pattern: "mail.send" },
          scopes: ["*"],
          effect: Effect.DENY,
          enabled: true,
        },
      }),
    );
    const error = ConnectError.from(await dispatch("data.qury").catch((e: unknown) => e));
    expect(error.findDetails(ToolNotFoundSchema)[0]?.availableTools).toEqual([
      "data.query",
      "data.quer",
      "data.write",
    ]);
  });

  it("retries transient failures of idempotent tools, tracing each attempt", async () => {
    addTool("flaky", {
      idempotent: true,
      retryPolicy: { maxAttempts: 4, initialBackoffMs: 1, maxBackoffMs: 2 },
    });
    runtime.script = [
      async () => failure("backend_unavailable", "down", true),
      async () => failure("backend_unavailable", "down", true),
      async () => ({ ok: true, output: { fine: true } }),
    ];
    const res = await dispatch("flaky");
    expect(res).toMatchObject({ status: CallStatus.SUCCESS, attempts: 3, output: { fine: true } });
    const kinds = traceEvents(sink.records).map((e) => TraceEventKind[e.kind]);
    expect(kinds).toEqual([
      "TOOL_EXECUTE",
      "TOOL_ATTEMPT",
      "TOOL_ATTEMPT",
      "TOOL_ATTEMPT",
      "TOOL_RESULT",
      "CALLBACK_SUCCESS",
    ]);
  });

  it("does not retry a permanent failure, nor a tool that is not idempotent", async () => {
    addTool("permanent", { idempotent: true, retryPolicy: { maxAttempts: 4 } });
    addTool("once", { idempotent: false, retryPolicy: { maxAttempts: 4 } });
    runtime.script = [async () => failure("backend_error", "broken", false)];
    expect((await dispatch("permanent")).attempts).toBe(1);
    runtime.script = [async () => failure("backend_unavailable", "down", true)];
    expect(await dispatch("once")).toMatchObject({ status: CallStatus.FAILURE, attempts: 1 });
  });

  it("interrupts at the request's timeout and tells the runtime to stop", async () => {
    addTool("hangs", { timeoutMs: 5000 });
    let aborted = false;
    runtime.script = [
      (attempt) =>
        new Promise((resolve) =>
          attempt.signal.addEventListener("abort", () => {
            aborted = true;
            resolve(failure("interrupted", "stopped", false));
          }),
        ),
    ];
    const res = await dispatch("hangs", { timeoutMs: 30 });
    expect(res.status).toBe(CallStatus.INTERRUPTED);
    expect(res.error?.code).toBe("timeout");
    expect(aborted).toBe(true);
  });

  describe("nothing runs unrecorded", () => {
    it("does not run a tool with side effects whose start record is not acked", async () => {
      addTool("mail.send", { sideEffects: true });
      sink.failure = new RecordWriteError("unknown", "no ack for the record batch within 30000 ms");
      const error = await chain
        .dispatch(create(DispatchRequestSchema, { tool: "mail.send" }), agent)
        .then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      expect(error?.code).toBe(Code.Unavailable);
      expect(error?.rawMessage).toMatch(/could not record the start .* the tool did not run/);
      expect(runtime.calls).toBe(0);
    });

    it("refuses with RESOURCE_EXHAUSTED when the record store is full", async () => {
      addTool("mail.send", { sideEffects: true });
      sink.failure = new RecordWriteError("full", "the record stream is full");
      await expect(dispatch("mail.send")).rejects.toMatchObject({ code: Code.ResourceExhausted });
      expect(runtime.calls).toBe(0);
    });

    it("withholds a read-only tool's output when its records cannot be written", async () => {
      addTool("data.read");
      runtime.script = [async () => ({ ok: true, output: { secret: "rows" } })];
      sink.failure = new RecordWriteError("unknown", "no ack for the record batch within 30000 ms");
      const error = await dispatch("data.read").then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(error?.code).toBe(Code.Unavailable);
      expect(error?.rawMessage).toMatch(/its output is withheld/);
      expect(JSON.stringify(error)).not.toContain("rows");
      // Its start record never stored, so no end record was written: the call tells one story.
      expect(sink.records).toEqual([]);
    });

    it("tells the caller of a read-only call written as one record exactly what was kept", async () => {
      // Its start waits for its end and goes with it (TOOLMESH_START_LINGER_MS): one write.
      chain = chainWith(new CallRecorder(sink, ["password"], "instance-1", 10_000));
      addTool("data.read");
      const answer = (failure: RecordWriteError) => {
        runtime.script = [async () => ({ ok: true, output: { secret: "rows" } })];
        sink.failure = failure;
        return dispatch("data.read").then(
          () => undefined,
          (e: unknown) => ConnectError.from(e),
        );
      };
      const full = await answer(new RecordWriteError("full", "the record stream is full"));
      expect(full?.code).toBe(Code.ResourceExhausted);
      expect(full?.rawMessage).toMatch(
        /ran, but toolmesh could not record the call \(the record stream is full\), so none of it is stored and it has no outcome; its output is withheld\. The tool is read-only/,
      );
      const lost = await answer(new RecordWriteError("unknown", "no ack within 30000 ms"));
      expect(lost?.code).toBe(Code.Unavailable);
      expect(lost?.rawMessage).toMatch(
        /whether its record was stored is not known yet \(toolmesh goes on sending it\): GetOutcome tells/,
      );
      expect(JSON.stringify([full, lost])).not.toContain("rows");
      expect(sink.records).toEqual([]);
      // Stored, it is one record that opens and closes the call.
      sink.failure = undefined;
      runtime.script = [async () => ({ ok: true, output: { secret: "rows" } })];
      await dispatch("data.read", { arguments: { password: "hunter2" } });
      expect(sink.records.map((r) => [AuditAction[r.action], r.instance, r.arguments])).toEqual([
        ["TOOL_CALL", "instance-1", { password: "[redacted]" }],
      ]);
    });

    it("refuses every call while NATS is unreachable, before anything runs", async () => {
      addTool("data.read");
      sink.writable = false;
      await expect(dispatch("data.read")).rejects.toMatchObject({ code: Code.Unavailable });
      expect(runtime.calls).toBe(0);
    });

    it("refuses arguments too large for the records, naming the limit", async () => {
      addTool("data.read");
      sink.maxPayload = 64 * 1024;
      const error = await dispatch("data.read", {
        arguments: { blob: "x".repeat(60 * 1024) },
      }).then(
        () => undefined,
        (e: unknown) => ConnectError.from(e),
      );
      expect(error?.code).toBe(Code.ResourceExhausted);
      expect(error?.rawMessage).toMatch(/max_payload of 65536 bytes/);
      expect(runtime.calls).toBe(0);
      // The refusal is recorded, with the arguments' size in place of the arguments.
      const [audit] = sink.records;
      expect(audit?.reason).toBe("arguments_too_large");
      expect(audit?.arguments).toEqual({ omitted_bytes: expect.any(Number) });
    });

    it("records an output too large for its outcome as FAILURE output_too_large", async () => {
      addTool("data.read");
      sink.maxPayload = 64 * 1024;
      runtime.script = [async () => ({ ok: true, output: { rows: "y".repeat(70 * 1024) } })];
      const res = await dispatch("data.read");
      expect(res.status).toBe(CallStatus.FAILURE);
      expect(res.error?.code).toBe("output_too_large");
      expect(res.output).toBeUndefined();
      const end = sink.records.find((r) => r.action === AuditAction.TOOL_CALL);
      expect(end?.errorCode).toBe("output_too_large");
    });

    it("writes the start record (arguments redacted) before the end record, once each", async () => {
      addTool("data.read");
      let during: AuditAction[] = [];
      runtime.script = [
        async () => {
          during = sink.records.map((r) => r.action);
          return { ok: true, output: {} };
        },
      ];
      await dispatch("data.read", { arguments: { password: "hunter2" } });
      expect(during).toEqual([AuditAction.TOOL_START]);
      expect(sink.records.map((r) => r.action)).toEqual([
        AuditAction.TOOL_START,
        AuditAction.TOOL_CALL,
      ]);
      expect(sink.records[0]?.arguments).toEqual({ password: "[redacted]" });
      expect(sink.records[0]?.instance).toBe("instance-1");
    });
  });
});
