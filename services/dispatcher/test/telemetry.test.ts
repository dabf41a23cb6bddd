import http from "node:http";
import type { AddressInfo } from "node:net";
import type { JsonObject } from "@bufbuild/protobuf";
import { ToolStatus } from "@toolmesh/proto";
import { eventually, startStack, type TestStack } from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ReceivedSpan, startOtlpReceiver } from "./otlp-receiver.js";

const STEPS = ["auth", "resolve", "validate", "authorise", "execute", "record"];

// A real dispatcher exporting to a real OTLP/HTTP receiver; a remote tool records the traceparent
// it was called with.
describe("dispatcher telemetry", () => {
  let stack: TestStack;
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>>;
  let backend: http.Server;
  const seenTraceparents: string[] = [];
  let agent: string;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    backend = http.createServer((req, res) => {
      seenTraceparents.push(String(req.headers.traceparent ?? ""));
      req.resume();
      req.on("end", () => res.writeHead(200, { "content-type": "application/json" }).end("{}"));
    });
    await new Promise<void>((resolve) => backend.listen(0, "127.0.0.1", resolve));
    stack = await startStack({
      serviceEnv: {
        dispatcher: {
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_BSP_SCHEDULE_DELAY: "50",
          OTEL_SERVICE_NAME: "dispatcher-under-test",
        },
      },
    });
    await stack.registryClient.registerTool(
      {
        tool: {
          name: "otel.echo",
          description: "a remote tool that answers {}",
          inputSchema: { type: "object", properties: { n: { type: "integer" } } },
          status: ToolStatus.ACTIVE,
          runtime: {
            kind: {
              case: "remote",
              value: { url: `http://127.0.0.1:${(backend.address() as AddressInfo).port}/` },
            },
          },
        } as never,
      },
      stack.as(stack.adminToken),
    );
    await stack.grantAll("otel-agent");
    agent = await stack.agentToken("otel-agent");
    // Once the Dispatcher knows the tool and the grant, so no test's trace holds a refusal of
    // a call made too early.
    await eventually(
      () =>
        stack.dispatcherClient().dispatch({ tool: "otel.echo", arguments: {} }, stack.as(agent)),
      10_000,
      "the dispatcher to see the tool and the grant",
    );
  });
  afterAll(async () => {
    await stack?.stop();
    backend?.close();
    await receiver?.close();
  });

  const dispatch = (headers: Record<string, string>, args: JsonObject = {}) =>
    eventually(
      () =>
        stack
          .dispatcherClient()
          .dispatch(
            { tool: "otel.echo", arguments: args },
            { headers: { authorization: `Bearer ${agent}`, ...headers } },
          ),
      10_000,
      "the dispatcher to see the tool and the grant",
    );

  const spansOf = async (traceId: string, count: number) =>
    receiver.spans.waitFor((s) => s.traceId === traceId, count, 15_000);

  it("honours the caller's traceparent: one trace id, each chain step a span, propagated to the backend", async () => {
    const callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736";
    const callerSpan = "00f067aa0ba902b7";
    const res = await dispatch({ traceparent: `00-${callerTrace}-${callerSpan}-01` });
    expect(res.traceId).toBe(callerTrace);

    const spans = await spansOf(callerTrace, STEPS.length + 2);
    const root = spans.find((s) => s.name === "toolmesh.dispatch") as ReceivedSpan;
    expect(root.parentSpanId).toBe(callerSpan);
    expect(root.service).toBe("dispatcher-under-test");
    expect(root.attributes).toMatchObject({
      "toolmesh.trace_id": callerTrace,
      "toolmesh.call_id": res.callId,
      "toolmesh.tool": "otel.echo",
      "toolmesh.agent_id": "otel-agent",
      "toolmesh.status": "SUCCESS",
    });
    const steps = spans.filter((s) => s.parentSpanId === root.spanId).map((s) => s.name);
    expect(steps.sort()).toEqual([...STEPS].sort());
    const execute = spans.find((s) => s.name === "execute") as ReceivedSpan;
    const attempt = spans.find((s) => s.name === "attempt") as ReceivedSpan;
    expect(attempt.parentSpanId).toBe(execute.spanId);
    expect(attempt.attributes["toolmesh.attempt"]).toBe(1);
    // The backend was called as a child of the attempt span, in the caller's trace.
    expect(seenTraceparents).toContain(`00-${callerTrace}-${attempt.spanId}-01`);
  });

  it("starts a trace whose id is the toolmesh trace id when the caller sends no traceparent", async () => {
    const res = await dispatch({});
    const spans = await spansOf(res.traceId, STEPS.length + 2);
    const root = spans.find((s) => s.name === "toolmesh.dispatch") as ReceivedSpan;
    expect(root.parentSpanId).toBe("");
  });

  it("ignores a malformed traceparent and marks a refused call's failing step as an error", async () => {
    const refused = await stack
      .dispatcherClient()
      .dispatch(
        { tool: "otel.echo", arguments: { n: "not a number" } },
        { headers: { authorization: `Bearer ${agent}`, traceparent: "00-zz-00-01" } },
      )
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(String(refused)).toContain("/n: must be integer");
    const root = (
      await receiver.spans.waitFor(
        (s) =>
          s.name === "toolmesh.dispatch" &&
          s.attributes["toolmesh.refusal_code"] === "INVALID_ARGUMENT",
        1,
        15_000,
      )
    )[0] as ReceivedSpan;
    expect(root.parentSpanId).toBe("");
    expect(root.attributes["toolmesh.refusal_code"]).toBe("INVALID_ARGUMENT");
    expect(root.status.code).toBe(2);
    const validate = (await spansOf(root.traceId, 4)).find((s) => s.name === "validate");
    expect(validate?.status.code).toBe(2);
  });

  it("honours a traceparent on the plain HTTP facade (POST /run_tool) too", async () => {
    const callerTrace = "5bf92f3577b34da6a3ce929d0e0e4737";
    const res = await fetch(`${stack.dispatcher.url}/run_tool`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${agent}`,
        "content-type": "application/json",
        traceparent: `00-${callerTrace}-00f067aa0ba902b8-01`,
      },
      body: JSON.stringify({ tool_id: "otel.echo", params: { n: 1 } }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { trace_id: string }).trace_id).toBe(callerTrace);
    // The facade authenticates before the chain, so its trace starts at resolve (no auth span).
    const spans = await spansOf(callerTrace, STEPS.length + 1);
    const root = spans.find((s) => s.name === "toolmesh.dispatch") as ReceivedSpan;
    expect(root.parentSpanId).toBe("00f067aa0ba902b8");
  });

  it("counts calls, latency and refusals on GET /metrics of the dispatcher's port", async () => {
    const text = await (await fetch(`${stack.dispatcher.url}/metrics`)).text();
    expect(text).toMatch(
      /toolmesh_dispatcher_calls_total\{tool="otel.echo",status="SUCCESS"\} [2-9]/,
    );
    expect(text).toMatch(
      /toolmesh_dispatcher_call_duration_seconds_count\{tool="otel.echo",status="SUCCESS"\} [2-9]/,
    );
    expect(text).toMatch(/toolmesh_dispatcher_refusals_total\{code="INVALID_ARGUMENT"\} [1-9]/);
    expect(text).toMatch(/toolmesh_dispatcher_snapshot_ready\{snapshot="registry"\} 1/);
    expect(text).toMatch(/toolmesh_dispatcher_snapshot_age_seconds\{snapshot="permission"\} /);
    expect(text).toMatch(
      /toolmesh_stream_consumer_pending_messages|# TYPE toolmesh_stream_consumer/,
    );
    expect(text).toContain("process_cpu_seconds_total");
  });
});
