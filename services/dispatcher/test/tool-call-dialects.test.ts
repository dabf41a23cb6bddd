import { Code } from "@toolmesh/errors";
import { AuditAction, CallStatus, ToolCallDialect } from "@toolmesh/proto";
import { runToolCalls } from "@toolmesh/sdk";
import { startedForFile } from "@toolmesh/testkit/hooks";
import { describe, expect, it } from "vitest";
import { startSurfaces } from "./surfaces-fixture.js";

// DispatchToolCalls: a model's reply (OpenAI Chat, OpenAI Responses, Anthropic) in, tool-result
// messages out, against real processes (surfaces-fixture.ts).
describe("agent surfaces", () => {
  const s = startedForFile(startSurfaces);

  const replies = {
    openai: {
      id: "chatcmpl-1",
      object: "chat.completion",
      choices: [
        {
          index: 0,
          finish_reason: "tool_calls",
          message: {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: "call_a",
                type: "function",
                function: { name: "data__echo", arguments: '{"text":"oa-1"}' },
              },
              {
                id: "call_b",
                type: "function",
                function: { name: "mail__send", arguments: '{"to":"oa@x"}' },
              },
              {
                id: "call_c",
                type: "function",
                function: { name: "data__echo", arguments: '{"text": "oa-3",' },
              },
            ],
          },
        },
      ],
    },
    responses: {
      id: "resp_1",
      object: "response",
      output: [
        { type: "reasoning", id: "rs_1", summary: [] },
        {
          type: "function_call",
          id: "fc_1",
          call_id: "call_r1",
          name: "data__echo",
          arguments: '{"text":"rs-1"}',
        },
        {
          type: "function_call",
          id: "fc_2",
          call_id: "call_r2",
          name: "data__fail",
          arguments: "{}",
        },
        {
          type: "function_call",
          id: "fc_3",
          call_id: "call_r3",
          name: "data__echo",
          arguments: "[1,2]",
        },
      ],
    },
    anthropic: {
      id: "msg_1",
      type: "message",
      role: "assistant",
      stop_reason: "tool_use",
      content: [
        { type: "text", text: "Let me look." },
        { type: "tool_use", id: "toolu_1", name: "data__echo", input: { text: "an-1" } },
        { type: "tool_use", id: "toolu_2", name: "mail__send", input: { to: "an@x" } },
        { type: "tool_use", id: "toolu_3", name: "data__echo", input: { text: "an-3", limit: 0 } },
      ],
    },
  };

  it("DispatchToolCalls: an OpenAI Chat reply round-trips into tool messages; bad JSON is a per-call error", async () => {
    const res = await s.stack
      .dispatcherClient()
      .dispatchToolCalls({ message: replies.openai as never }, s.stack.as(s.agent));
    expect(res.dialect).toBe(ToolCallDialect.OPENAI_CHAT);
    expect(res.messages).toEqual([
      { role: "tool", tool_call_id: "call_a", content: '{"text":"oa-1"}' },
      { role: "tool", tool_call_id: "call_b", content: '{"sent":"oa@x"}' },
      {
        role: "tool",
        tool_call_id: "call_c",
        content: expect.stringMatching(
          /^error \(INVALID_ARGUMENT\): arguments: are not valid JSON/,
        ),
      },
    ]);
    expect(res.results.map((r) => r.status)).toEqual([
      CallStatus.SUCCESS,
      CallStatus.SUCCESS,
      CallStatus.REFUSED,
    ]);
    expect(new Set(res.results.map((r) => r.traceId))).toEqual(new Set([res.traceId]));
    const garbled = await s.recordsOf((a) => a.callId === res.results[2]?.callId);
    expect(garbled.audit).toMatchObject({
      action: AuditAction.TOOL_REFUSED,
      tool: "data.echo",
      errorCode: "INVALID_ARGUMENT",
    });
    const viaReply = await s.recordsOf(s.byText("oa-1"));
    const viaDispatch = await s.dispatchRecords();
    expect(viaReply).toEqual({
      ...viaDispatch,
      audit: { ...viaDispatch.audit, arguments: { text: "oa-1" } },
      outcome: { ...viaDispatch.outcome, output: { text: "oa-1" } },
    });
  });

  it("DispatchToolCalls: an OpenAI Responses reply gives function_call_output items", async () => {
    const res = await s.stack
      .dispatcherClient()
      .dispatchToolCalls({ message: replies.responses as never }, s.stack.as(s.agent));
    expect(res.dialect).toBe(ToolCallDialect.OPENAI_RESPONSES);
    expect(res.messages).toEqual([
      { type: "function_call_output", call_id: "call_r1", output: '{"text":"rs-1"}' },
      {
        type: "function_call_output",
        call_id: "call_r2",
        output: expect.stringContaining("error ("),
      },
      {
        type: "function_call_output",
        call_id: "call_r3",
        output: expect.stringContaining("must be a JSON object"),
      },
    ]);
    expect(res.results[1]?.status).toBe(CallStatus.FAILURE);
  });

  it("DispatchToolCalls: an Anthropic reply gives one user message of tool_result blocks", async () => {
    const before = s.sideEffects.length;
    const res = await s.stack
      .dispatcherClient()
      .dispatchToolCalls({ message: replies.anthropic as never }, s.stack.as(s.agent));
    expect(res.dialect).toBe(ToolCallDialect.ANTHROPIC);
    expect(res.messages).toEqual([
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_1", content: '{"text":"an-1"}' },
          { type: "tool_result", tool_use_id: "toolu_2", content: '{"sent":"an@x"}' },
          {
            type: "tool_result",
            tool_use_id: "toolu_3",
            content: expect.stringContaining("- /limit: must be >= 1"),
            is_error: true,
          },
        ],
      },
    ]);
    expect(s.sideEffects.slice(before)).toEqual(["an@x"]);
    const appended = await runToolCalls(
      s.stack.dispatcherClient(),
      replies.anthropic,
      s.stack.as(s.agent),
    );
    expect(appended).toHaveLength(1);
    await expect(
      s.stack
        .dispatcherClient()
        .dispatchToolCalls({ message: { role: "assistant" } as never }, s.stack.as(s.agent)),
    ).rejects.toMatchObject({ code: Code.InvalidArgument });
  });
});
