import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { AgentService } from "@toolmesh/proto";
import {
  eventually,
  type ImContact,
  type ImFrame,
  type ImServer,
  mintJwt,
  type ScriptedModel,
  startImServer,
  startScriptedModel,
  startStack,
  type TestStack,
} from "@toolmesh/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The IM client against the reference IM server: the tool agent is contact tool_agent, each of
// its chat windows a ServiceAgent window of the IM's principal.
describe("IM windows", () => {
  let stack: TestStack;
  let model: ScriptedModel;
  let im: ImServer;
  let alice: ImContact;
  let dir: string;
  const status = () =>
    createClient(
      AgentService,
      createGrpcTransport({ baseUrl: stack.dispatcher.url }),
    ).getSystemStatus({}, stack.as(stack.adminToken));
  /** The tool agent's next reply to alice from one of its windows. */
  const replyFrom = (window: string) =>
    alice.next(
      (f: ImFrame) => f.type === "message" && f.from === "tool_agent" && f.chat_id === window,
    );

  beforeAll(async () => {
    const jwtSecret = randomBytes(32).toString("hex");
    dir = await mkdtemp(path.join(tmpdir(), "toolmesh-im-"));
    await writeFile(
      path.join(dir, "im.token"),
      await mintJwt(jwtSecret, { sub: "im-bridge", roles: ["agent"] }),
    );
    im = await startImServer();
    model = await startScriptedModel([{ match: "IM", turns: [{ echo: true }] }]);
    stack = await startStack({
      jwtSecret,
      services: ["permission", "registry", "dispatcher", "tool-agent"],
      serviceEnv: {
        "tool-agent": {
          TOOLMESH_MODEL_URL: model.url,
          TOOLMESH_IM_URL: im.url,
          TOOLMESH_IM_TOKEN_FILE: path.join(dir, "im.token"),
          TOOLMESH_IM_MAX_BACKOFF_MS: "500",
        },
      },
    });
    await im.connected("tool_agent");
    alice = await im.connect("alice");
  }, 120_000);

  afterAll(async () => {
    alice?.close();
    await stack?.stop();
    await im?.stop();
    await model?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("routes a message to the window it names and answers to the sender's chat id", async () => {
    for (const window of ["win-a", "win-b"]) {
      alice.send({
        type: "message",
        to: "tool_agent",
        chat_id: "alice-1",
        receiver_chat_id: window,
        text: `IM hello ${window}`,
      });
      expect(await replyFrom(window)).toMatchObject({
        type: "message",
        from: "tool_agent",
        to: "alice",
        chat_id: window,
        receiver_chat_id: "alice-1",
        text: `you said: IM hello ${window}`,
        task_ids: [],
      });
    }
    const windows = await eventually(async () => {
      const s = await status();
      const ims = s.windows.filter((w) => w.imWindow).map((w) => [w.chatId, w.owner?.agentId]);
      if (ims.length < 2) throw new Error(`${ims.length} IM windows`);
      return ims;
    });
    expect(windows.sort()).toEqual([
      ["win-a", "im-bridge"],
      ["win-b", "im-bridge"],
    ]);
  });

  it("sends a message without a receiver to every IM window, each answering on its own", async () => {
    alice.send({ type: "message", to: "tool_agent", chat_id: "alice-2", text: "IM to everyone" });
    const replies = await Promise.all([replyFrom("win-a"), replyFrom("win-b")]);
    for (const reply of replies)
      expect(reply).toMatchObject({
        receiver_chat_id: "alice-2",
        text: "you said: IM to everyone",
      });
    // A window keeps its own history: win-a's model saw its own two messages only.
    const lastOfA = model.requests
      .filter((r) => r.body.messages?.some((m) => m.content === "IM hello win-a"))
      .at(-1);
    expect(lastOfA?.body.messages?.filter((m) => m.role === "user").map((m) => m.content)).toEqual([
      "IM hello win-a",
      "IM to everyone",
    ]);
  });

  it("answers a bad message with an error to the sender", async () => {
    alice.send({
      type: "message",
      to: "tool_agent",
      chat_id: "alice-3",
      receiver_chat_id: "not a window!",
      text: "IM hello",
    });
    const reply = await alice.next(
      (f) => f.type === "message" && f.from === "tool_agent" && f.receiver_chat_id === "alice-3",
    );
    expect(reply).toMatchObject({
      text: "error: receiver_chat_id: must be 1-128 characters of A-Z a-z 0-9 _ . : -",
      error: { code: "INVALID_ARGUMENT" },
    });
  });

  it("shows a lost connection in the status and reconnects after the IM server restarts", async () => {
    expect((await status()).im).toMatchObject({
      configured: true,
      connected: true,
      url: `${im.url}/`,
      contact: "tool_agent",
      reconnects: 0,
    });
    alice.close();
    await im.stop();
    const lost = await eventually(async () => {
      const s = await status();
      if (s.im?.connected) throw new Error("still connected");
      return s.im;
    });
    expect(lost?.lastError).toMatch(/^connection closed \(1006/);
    await im.start();
    await im.connected("tool_agent");
    const back = await eventually(async () => {
      const s = await status();
      if (!s.im?.connected) throw new Error("not connected yet");
      return s.im;
    });
    expect(back?.reconnects).toBe(1);
    alice = await im.connect("alice");
    alice.send({
      type: "message",
      to: "tool_agent",
      chat_id: "alice-4",
      receiver_chat_id: "win-a",
      text: "IM after the restart",
    });
    expect((await replyFrom("win-a")).text).toBe("you said: IM after the restart");
  });
});
