import { describe, expect, it } from "vitest";
import { boundHistory } from "../src/chat/service-agent.js";
import type { ChatMessage } from "../src/model/chat-model.js";

const turn = (n: number, size = 10): ChatMessage[] => [
  { role: "user", content: `question ${n}` },
  {
    role: "assistant",
    content: null,
    tool_calls: [
      { id: `c${n}`, type: "function", function: { name: "list_tools", arguments: "{}" } },
    ],
  },
  { role: "tool", tool_call_id: `c${n}`, content: "x".repeat(size) },
  { role: "assistant", content: `answer ${n}` },
];

// A window's history as it is stored: the last messages, whole turns, each message and the whole
// bounded in size, so one window always fits one KV value.
describe("a window's history", () => {
  it("keeps the last messages, starting at a user message", () => {
    const history = [...turn(1), ...turn(2), ...turn(3)];
    expect(boundHistory(history, 6).map((m) => m.content)).toEqual([
      "question 3",
      null,
      "x".repeat(10),
      "answer 3",
    ]);
    expect(boundHistory(history, 12)).toEqual(history);
  });

  it("cuts a long message and drops whole turns until the rest fits one value", () => {
    const history = Array.from({ length: 40 }, (_, i) => turn(i + 1, 20_000)).flat();
    const kept = boundHistory(history, 400);
    expect(kept[0]?.role).toBe("user");
    expect(JSON.stringify(kept).length).toBeLessThanOrEqual(512 * 1024);
    const questions = kept.filter((m) => m.role === "user").map((m) => m.content);
    expect(questions.at(-1)).toBe("question 40");
    expect(questions.length).toBeGreaterThan(25);
    expect(questions.length).toBeLessThan(40);
    expect(kept[2]?.content).toMatch(/^x{16000}… \(cut\)$/);
  });

  it("keeps a single turn longer than the limits from its user message", () => {
    const long = [
      ...turn(1),
      { role: "user", content: "again" } as ChatMessage,
      ...turn(2).slice(1),
    ];
    expect(boundHistory(long, 2)[0]).toEqual({ role: "user", content: "again" });
  });
});
