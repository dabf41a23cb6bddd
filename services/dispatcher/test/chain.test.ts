import { create, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { principal } from "@toolmesh/auth";
import { Code, ConnectError } from "@toolmesh/errors";
import { createLogger } from "@toolmesh/log";
import { decide } from "@toolmesh/policy";
import {
  AuditRecordSchema,
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
  TraceEventSchema,
} from "@toolmesh/proto";
import { beforeEach, describe, expect, it } from "vitest";
import { CallRecorder } from "../src/call-recorder.js";
import { DispatchChain, type PermissionGate } from "../src/dispatch-chain.js";
import type { EventPublisher } from "../src/event-publisher.js";
import { MemoryCallIdOwners, MemoryIdempotencyStore } from "../src/idempotency.js";
import { RunningCalls } from "../src/running-calls.js";
import { failure } from "../src/runtimes/grpc-runtime.js";
import type { Attempt, AttemptResult, ToolRuntime } from "../src/runtimes/runtime.js";
import { MemoryToolSource, ToolCatalog } from "../src/tool-catalog.js";

// The chain with in-memory dependencies: a map of tools, grants in an array, a publisher that
// keeps what it is given, and a runtime the test scripts.
class MemoryPublisher implements EventPublisher {
  readonly published: { subject: string; type: string; value: unknown }[] = [];
  async publish<Desc extends DescMessage>(
    subject: string,
    schema: Desc,
    value: MessageShape<Desc>,
  ) {
    this.published.push({ subject, type: schema.typeName, value });
  }
  of<Desc extends DescMessage>(schema: Desc): MessageShape<Desc>[] {
    return this.published
      .filter((p) => p.type === schema.typeName)
      .map((p) => p.value as MessageShape<Desc>);
  }
}

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
  let publisher: MemoryPublisher;
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
    publisher = new MemoryPublisher();
    runtime = new ScriptedRuntime();
    chain = new DispatchChain({
      catalog: new ToolCatalog(tools),
      policy: gate,
      recorder: new CallRecorder(publisher, ["password"]),
      runtimes: { grpc: runtime, local: runtime, remote: runtime },
      idempotency: new MemoryIdempotencyStore(),
      callIds: new MemoryCallIdOwners(),
      running: new RunningCalls(),
      settings: { defaultTimeoutMs: 1000, maxTimeoutMs: 5000 },
      log: createLogger("test", "silent"),
    });
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
    expect(publisher.of(AuditRecordSchema)[0]?.errorCode).toBe("UNAVAILABLE");
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
    const kinds = publisher.of(TraceEventSchema).map((e) => TraceEventKind[e.kind]);
    expect(kinds).toEqual([
      "TOOL_EXECUTE",
      "TOOL_ATTEMPT",
      "TOOL_ATTEMPT",
      "TOOL_ATTEMPT",
      "TOOL_RESULT",
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
});
