import { randomBytes } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { ProtocolError, ProtocolErrorCode } from "@modelcontextprotocol/server";
import {
  answers,
  ask,
  CAPABILITIES,
  elicit,
  envelope,
  type FixtureTool,
  field,
  roots,
  sample,
  signed,
  stateOf,
  text,
  verified,
} from "./fixture-results.js";

// The conformance suite's input-required (multi-round) tools: each answers with an
// input-required result and reads the answers, and its request state, on the retry.
export const inputRequiredTools: FixtureTool[] = [
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
];
