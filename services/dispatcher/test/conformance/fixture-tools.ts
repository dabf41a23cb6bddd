import { createHmac, randomBytes } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import {
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type ServerContext,
} from "@modelcontextprotocol/server";

// The tools the official conformance suite calls (its reference server's names and results),
// served by an ordinary MCP server (fixture-server.ts) that the test imports into toolmesh: the
// suite reaches them through toolmesh's /mcp, the chain and the `mcp` runtime, as any federated
// server. Written for the 2026-07-28 revision (the revision toolmesh speaks to it): a tool that
// needs input answers with an input-required result and reads the answers on the retry.

const IMAGE =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const AUDIO = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";
const CAPABILITIES = "io.modelcontextprotocol/clientCapabilities";
const LOG_LEVEL = "io.modelcontextprotocol/logLevel";
const STATE_KEY = randomBytes(32);

/** One fixture tool: its listing and what a call of it answers. */
export interface FixtureTool {
  name: string;
  description: string;
  inputSchema?: JsonObject;
  taskSupport?: "optional" | "required";
  run(args: JsonObject, ctx: ServerContext): Promise<JsonObject> | JsonObject;
}

const text = (value: string): JsonObject => ({ content: [{ type: "text", text: value }] });
const ask = (inputRequests: JsonObject, requestState?: string): JsonObject => ({
  resultType: "input_required",
  inputRequests,
  ...(requestState ? { requestState } : {}),
});
const elicit = (message: string, properties: JsonObject, required: string[] = []) => ({
  method: "elicitation/create",
  params: { message, requestedSchema: { type: "object", properties, required } },
});
const sample = (prompt: string, maxTokens: number) => ({
  method: "sampling/createMessage",
  params: { messages: [{ role: "user", content: { type: "text", text: prompt } }], maxTokens },
});
const roots = { method: "roots/list", params: {} };
const answers = (ctx: ServerContext) =>
  (ctx.mcpReq.inputResponses ?? {}) as Record<string, JsonObject>;
const field = (answer: JsonObject | undefined, name: string) => {
  const value = (answer?.content as JsonObject | undefined)?.[name];
  return typeof value === "string" ? value : "unknown";
};
const stateOf = (ctx: ServerContext): JsonObject | undefined => {
  const state = ctx.mcpReq.requestState<unknown>();
  return typeof state === "string" ? (JSON.parse(state) as JsonObject) : undefined;
};
const signed = (payload: JsonObject) => {
  const data = JSON.stringify(payload);
  return JSON.stringify({ data, mac: createHmac("sha256", STATE_KEY).update(data).digest("hex") });
};
const verified = (raw: string): JsonObject | undefined => {
  try {
    const { data, mac } = JSON.parse(raw) as { data: string; mac: string };
    return createHmac("sha256", STATE_KEY).update(data).digest("hex") === mac
      ? (JSON.parse(data) as JsonObject)
      : undefined;
  } catch {
    return undefined;
  }
};
const envelope = (ctx: ServerContext) => (ctx.mcpReq.envelope ?? {}) as JsonObject;
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        reject(new Error("cancelled"));
      },
      { once: true },
    );
  });
/** Log messages go to a client whose request asked for them (a level in its envelope). */
const log = (ctx: ServerContext, data: string) =>
  envelope(ctx)[LOG_LEVEL]
    ? ctx.mcpReq.notify({ method: "notifications/message", params: { level: "info", data } })
    : Promise.resolve();

const JSON_SCHEMA_2020_12: JsonObject = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  type: "object",
  $defs: {
    address: {
      $anchor: "addressDef",
      type: "object",
      properties: { street: { type: "string" }, city: { type: "string" } },
    },
  },
  properties: {
    name: { type: "string" },
    address: { $ref: "#/$defs/address" },
    contactMethod: { type: "string", enum: ["phone", "email"] },
    phone: { type: "string" },
    email: { type: "string" },
  },
  allOf: [{ anyOf: [{ required: ["phone"] }, { required: ["email"] }] }],
  if: { properties: { contactMethod: { const: "phone" } }, required: ["contactMethod"] },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then keyword, as the suite sends it
  then: { required: ["phone"] },
  else: { required: ["email"] },
  additionalProperties: false,
};

export const fixtureTools: FixtureTool[] = [
  {
    name: "test_simple_text",
    description: "Tests simple text content response",
    run: () => text("This is a simple text response for testing."),
  },
  {
    name: "test_image_content",
    description: "Tests image content response",
    run: () => ({ content: [{ type: "image", data: IMAGE, mimeType: "image/png" }] }),
  },
  {
    name: "test_audio_content",
    description: "Tests audio content response",
    run: () => ({ content: [{ type: "audio", data: AUDIO, mimeType: "audio/wav" }] }),
  },
  {
    name: "test_embedded_resource",
    description: "Tests embedded resource content response",
    run: () => ({
      content: [
        {
          type: "resource",
          resource: {
            uri: "test://embedded-resource",
            mimeType: "text/plain",
            text: "This is an embedded resource content.",
          },
        },
      ],
    }),
  },
  {
    name: "test_multiple_content_types",
    description: "Tests response with multiple content types (text, image, resource)",
    run: (): JsonObject => ({
      content: [
        { type: "text", text: "Multiple content types test:" },
        { type: "image", data: IMAGE, mimeType: "image/png" },
        {
          type: "resource",
          resource: {
            uri: "test://mixed-content-resource",
            mimeType: "application/json",
            text: JSON.stringify({ test: "data", value: 123 }),
          },
        },
      ],
    }),
  },
  {
    name: "test_tool_with_logging",
    description: "Tests tool that emits log messages during execution",
    async run(_args, ctx) {
      for (const line of [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
      ]) {
        await log(ctx, line);
        await sleep(50, ctx.mcpReq.signal);
      }
      return text("Tool with logging executed successfully");
    },
  },
  {
    name: "test_tool_with_progress",
    description: "Tests tool that reports progress notifications",
    async run(_args, ctx) {
      const progressToken = ctx.mcpReq._meta?.progressToken;
      for (const progress of [0, 50, 100]) {
        if (progressToken !== undefined)
          await ctx.mcpReq.notify({
            method: "notifications/progress",
            params: {
              progressToken,
              progress,
              total: 100,
              message: `Completed step ${progress} of 100`,
            },
          });
        await sleep(50, ctx.mcpReq.signal);
      }
      return text("progress reported");
    },
  },
  {
    name: "test_error_handling",
    description: "Tests error response handling",
    run: () => ({ ...text("This tool intentionally returns an error for testing"), isError: true }),
  },
  {
    name: "test_sampling",
    description: "Tests server-initiated sampling (LLM completion request)",
    inputSchema: {
      type: "object",
      properties: { prompt: { type: "string", description: "The prompt to send to the LLM" } },
      required: ["prompt"],
    },
    run(args, ctx) {
      const answer = answers(ctx).llm;
      if (!answer) return ask({ llm: sample(String(args.prompt), 100) });
      const content = answer.content as JsonObject | undefined;
      return text(
        `LLM response: ${typeof content?.text === "string" ? content.text : "No response"}`,
      );
    },
  },
  {
    name: "test_elicitation",
    description: "Tests server-initiated elicitation (user input request)",
    inputSchema: {
      type: "object",
      properties: { message: { type: "string", description: "The message to show the user" } },
      required: ["message"],
    },
    run(args, ctx) {
      const answer = answers(ctx).user;
      if (!answer)
        return ask({
          user: elicit(
            String(args.message),
            { response: { type: "string", description: "User's response" } },
            ["response"],
          ),
        });
      return text(
        `User response: action=${String(answer.action)}, content=${JSON.stringify(answer.content ?? {})}`,
      );
    },
  },
  {
    name: "test_elicitation_sep1034_defaults",
    description: "Tests elicitation with default values per SEP-1034",
    run(_args, ctx) {
      const answer = answers(ctx).form;
      if (!answer)
        return ask({
          form: elicit("Please review and update the form fields with defaults", {
            name: { type: "string", description: "User name", default: "John Doe" },
            age: { type: "integer", description: "User age", default: 30 },
            score: { type: "number", description: "User score", default: 95.5 },
            status: {
              type: "string",
              description: "User status",
              enum: ["active", "inactive", "pending"],
              default: "active",
            },
            verified: { type: "boolean", description: "Verification status", default: true },
          }),
        });
      return text(
        `Elicitation completed: action=${String(answer.action)}, content=${JSON.stringify(answer.content ?? {})}`,
      );
    },
  },
  {
    name: "test_elicitation_sep1330_enums",
    description: "Tests elicitation with enum schema improvements per SEP-1330",
    run(_args, ctx) {
      const answer = answers(ctx).choices;
      if (!answer)
        return ask({
          choices: elicit("Please select options from the enum fields", {
            untitledSingle: {
              type: "string",
              description: "Select one option",
              enum: ["option1", "option2", "option3"],
            },
            titledSingle: {
              type: "string",
              description: "Select one option with titles",
              oneOf: [
                { const: "value1", title: "First Option" },
                { const: "value2", title: "Second Option" },
                { const: "value3", title: "Third Option" },
              ],
            },
            legacyEnum: {
              type: "string",
              description: "Select one option (legacy)",
              enum: ["opt1", "opt2", "opt3"],
              enumNames: ["Option One", "Option Two", "Option Three"],
            },
            untitledMulti: {
              type: "array",
              description: "Select multiple options",
              minItems: 1,
              maxItems: 3,
              items: { type: "string", enum: ["option1", "option2", "option3"] },
            },
            titledMulti: {
              type: "array",
              description: "Select multiple options with titles",
              minItems: 1,
              maxItems: 3,
              items: {
                anyOf: [
                  { const: "value1", title: "First Choice" },
                  { const: "value2", title: "Second Choice" },
                  { const: "value3", title: "Third Choice" },
                ],
              },
            },
          }),
        });
      return text(
        `Elicitation completed: action=${String(answer.action)}, content=${JSON.stringify(answer.content ?? {})}`,
      );
    },
  },
  {
    name: "json_schema_2020_12_tool",
    description: "Tool with JSON Schema 2020-12 features for conformance testing (SEP-1613)",
    inputSchema: JSON_SCHEMA_2020_12,
    run: (args) => text(`JSON Schema 2020-12 tool called with: ${JSON.stringify(args)}`),
  },
  {
    name: "test_header_param",
    description: "Echoes a region its client mirrors in the Mcp-Param-Region header (SEP-2243)",
    inputSchema: {
      type: "object",
      properties: { region: { type: "string", "x-mcp-header": "Region" } },
      required: ["region"],
    },
    run: (args) => text(`region ${String(args.region)}`),
  },
  {
    name: "test_missing_capability",
    description: "Test tool requiring sampling",
    run(_args, ctx) {
      const capabilities = envelope(ctx)[CAPABILITIES] as JsonObject | undefined;
      if (!capabilities?.sampling)
        throw new MissingRequiredClientCapabilityError({ requiredCapabilities: { sampling: {} } });
      return text("Success");
    },
  },
  {
    name: "test_input_required_result_elicitation",
    description: "MRTR: returns InputRequiredResult with elicitation request",
    run(_args, ctx) {
      const answer = answers(ctx).user_name;
      if (answer) return text(`Hello, ${field(answer, "name")}!`);
      return ask({
        user_name: elicit("What is your name?", { name: { type: "string" } }, ["name"]),
      });
    },
  },
  {
    name: "test_input_required_result_sampling",
    description: "MRTR: returns InputRequiredResult with sampling request",
    run(_args, ctx) {
      const answer = answers(ctx).capital_question;
      if (!answer) return ask({ capital_question: sample("What is the capital of France?", 100) });
      const content = answer.content as JsonObject | undefined;
      return text(
        `Sampling result: ${typeof content?.text === "string" ? content.text : "no response"}`,
      );
    },
  },
  {
    name: "test_input_required_result_list_roots",
    description: "MRTR: returns InputRequiredResult with roots/list request",
    run(_args, ctx) {
      const answer = answers(ctx).client_roots;
      if (!answer) return ask({ client_roots: roots });
      const found = Array.isArray(answer.roots) ? answer.roots : [];
      return text(`Found ${found.length} root(s): ${JSON.stringify(found)}`);
    },
  },
  {
    name: "test_input_required_result_request_state",
    description: "MRTR: returns InputRequiredResult with requestState",
    run(_args, ctx) {
      const state = stateOf(ctx);
      const ok = (answers(ctx).confirm?.content as JsonObject | undefined)?.ok;
      if (state?.kind === "request-state" && ok === true)
        return text("state-ok: requestState validated");
      return ask(
        { confirm: elicit("Please confirm", { ok: { type: "boolean" } }, ["ok"]) },
        JSON.stringify({ kind: "request-state", nonce: randomBytes(8).toString("hex") }),
      );
    },
  },
  {
    name: "test_input_required_result_multiple_inputs",
    description: "MRTR: returns InputRequiredResult with multiple input requests",
    run(_args, ctx) {
      const given = answers(ctx);
      if (
        stateOf(ctx)?.kind === "multiple-inputs" &&
        given.user_name &&
        given.greeting &&
        given.client_roots
      ) {
        const greeting = (given.greeting.content as JsonObject | undefined)?.text;
        const listed = Array.isArray(given.client_roots.roots) ? given.client_roots.roots : [];
        return text(
          `Name: ${field(given.user_name, "name")}; Greeting: ${String(greeting)}; Roots: ${listed.length}`,
        );
      }
      return ask(
        {
          user_name: elicit("What is your name?", { name: { type: "string" } }, ["name"]),
          greeting: sample("Generate a greeting", 50),
          client_roots: roots,
        },
        JSON.stringify({ kind: "multiple-inputs" }),
      );
    },
  },
  {
    name: "test_input_required_result_multi_round",
    description: "MRTR: multi-round InputRequiredResult workflow",
    run(_args, ctx) {
      const state = stateOf(ctx);
      const given = answers(ctx);
      if (state?.round === 1 && given.step1)
        return ask(
          {
            step2: elicit("Step 2: What is your favorite color?", { color: { type: "string" } }, [
              "color",
            ]),
          },
          JSON.stringify({ round: 2, name: field(given.step1, "name") }),
        );
      if (state?.round === 2 && given.step2)
        return text(
          `Multi-round complete for ${String(state.name)} who likes ${field(given.step2, "color")}`,
        );
      return ask(
        { step1: elicit("Step 1: What is your name?", { name: { type: "string" } }, ["name"]) },
        JSON.stringify({ round: 1 }),
      );
    },
  },
  {
    name: "test_input_required_result_tampered_state",
    description: "MRTR: HMAC-signed requestState integrity test",
    run(_args, ctx) {
      const raw = ctx.mcpReq.requestState<unknown>();
      if (typeof raw === "string") {
        const state = verified(raw);
        if (!state)
          throw new ProtocolError(
            ProtocolErrorCode.InvalidParams,
            "requestState integrity check failed",
          );
        if (state.kind === "tamper-test" && answers(ctx).confirm)
          return text("integrity-ok: state verified");
      }
      return ask(
        { confirm: elicit("Please confirm", { ok: { type: "boolean" } }, ["ok"]) },
        signed({ kind: "tamper-test", nonce: randomBytes(8).toString("hex") }),
      );
    },
  },
  {
    name: "test_input_required_result_capabilities",
    description: "MRTR: respects client capabilities in inputRequests",
    run(_args, ctx) {
      const given = answers(ctx);
      if (Object.keys(given).length > 0) return text(`Answered: ${Object.keys(given).join(", ")}`);
      const capabilities = (envelope(ctx)[CAPABILITIES] ?? {}) as JsonObject;
      const requests: JsonObject = {};
      if (capabilities.elicitation)
        requests.elicit_input = elicit("Elicitation input", { value: { type: "string" } }, [
          "value",
        ]);
      if (capabilities.sampling) requests.sample_input = sample("Sample request", 50);
      return Object.keys(requests).length > 0 ? ask(requests) : text("nothing to ask");
    },
  },
  {
    name: "test_streaming_elicitation",
    description: "Diagnostic tool validating response progress streams",
    run(_args, ctx) {
      const answer = answers(ctx).stream_input;
      if (answer) return text(`streamed: ${field(answer, "value")}`);
      return ask({
        stream_input: elicit("Streaming input", { value: { type: "string" } }, ["value"]),
      });
    },
  },
  {
    name: "test_logging_tool",
    description: "Diagnostic logging validator tool",
    async run(_args, ctx) {
      await log(ctx, "diagnostic log line");
      return text("logged only if the request asked for a level");
    },
  },
  ...(["tool", "prompt"] as const).map(
    (kind): FixtureTool => ({
      name: `test_trigger_${kind}_change`,
      description: `Changes this server's ${kind} list (and says so)`,
      async run(_args, ctx) {
        await ctx.mcpReq
          .notify({ method: `notifications/${kind}s/list_changed`, params: {} })
          .catch(() => {});
        return text(`${kind} list changed`);
      },
    }),
  ),
  // The Tasks extension's fixtures. toolmesh makes the tasks; these tools only take their time.
  {
    name: "greet",
    description: "Greets someone at once",
    inputSchema: { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
    run: (args) => text(`Hello, ${String(args.name)}!`),
  },
  {
    name: "slow_compute",
    description: "Sleeps `seconds`, then answers",
    taskSupport: "optional",
    inputSchema: {
      type: "object",
      properties: { seconds: { type: "number" }, label: { type: "string" } },
    },
    async run(args, ctx) {
      await sleep(Number(args.seconds ?? 1) * 1000, ctx.mcpReq.signal);
      return text(`computed ${String(args.label ?? "")} after ${String(args.seconds ?? 1)} s`);
    },
  },
  {
    name: "failing_job",
    description: "Works two seconds, then reports a tool error",
    taskSupport: "required",
    async run(_args, ctx) {
      await sleep(2000, ctx.mcpReq.signal);
      return { ...text("the job failed, as it always does"), isError: true };
    },
  },
  {
    name: "protocol_error_job",
    description: "Works a while, then fails with a protocol error",
    taskSupport: "optional",
    async run(_args, ctx) {
      await sleep(1500, ctx.mcpReq.signal);
      throw new ProtocolError(ProtocolErrorCode.InternalError, "the job crashed");
    },
  },
  {
    name: "confirm_delete",
    description: "Looks the file up, asks whether to delete it, then does",
    taskSupport: "optional",
    inputSchema: { type: "object", properties: { filename: { type: "string" } } },
    async run(args, ctx) {
      const answer = answers(ctx).confirm_delete;
      if (answer)
        return text(`${answer.action === "accept" ? "deleted" : "kept"} ${String(args.filename)}`);
      await sleep(1500, ctx.mcpReq.signal);
      return ask({
        confirm_delete: elicit(
          `Delete ${String(args.filename)}?`,
          { confirm: { type: "boolean" } },
          ["confirm"],
        ),
      });
    },
  },
  {
    name: "multi_input",
    description: "Works a while, then asks two questions at once",
    taskSupport: "optional",
    async run(_args, ctx) {
      const given = answers(ctx);
      if (given.first && given.second)
        return text(`first ${field(given.first, "value")}, second ${field(given.second, "value")}`);
      await sleep(1500, ctx.mcpReq.signal);
      return ask({
        first: elicit("First?", { value: { type: "string" } }, ["value"]),
        second: elicit("Second?", { value: { type: "string" } }, ["value"]),
      });
    },
  },
  {
    name: "test_tool_with_task",
    description: "Asks for a name first, then works long enough to become a task",
    taskSupport: "required",
    async run(_args, ctx) {
      const answer = answers(ctx).user_name;
      if (!answer)
        return ask({
          user_name: elicit("What is your name?", { name: { type: "string" } }, ["name"]),
        });
      await sleep(2000, ctx.mcpReq.signal);
      return text(`task finished for ${field(answer, "name")}`);
    },
  },
];
