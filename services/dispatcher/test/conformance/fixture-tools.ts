import type { JsonObject } from "@bufbuild/protobuf";
import {
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
} from "@modelcontextprotocol/server";
import { inputRequiredTools } from "./fixture-input-tools.js";
import {
  AUDIO,
  answers,
  ask,
  CAPABILITIES,
  elicit,
  envelope,
  type FixtureTool,
  field,
  IMAGE,
  log,
  sample,
  sleep,
  text,
} from "./fixture-results.js";

// The tools the official conformance suite calls (its reference server's names and results),
// served by an ordinary MCP server (fixture-server.ts) that the test imports into toolmesh: the
// suite reaches them through toolmesh's /mcp, the chain and the `mcp` runtime, as any federated
// server. Written for the 2026-07-28 revision (the revision toolmesh speaks to it): a tool that
// needs input answers with an input-required result and reads the answers on the retry.

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
  ...inputRequiredTools,
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
