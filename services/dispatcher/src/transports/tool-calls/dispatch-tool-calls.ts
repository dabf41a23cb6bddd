import { create } from "@bufbuild/protobuf";
import { invalidField } from "@toolmesh/errors";
import {
  DispatchBatchRequestSchema,
  type DispatchToolCallsRequest,
  type DispatchToolCallsResponse,
  DispatchToolCallsResponseSchema,
  type Principal,
  ToolCallDialect,
} from "@toolmesh/proto";
import type { ToolCatalog } from "../../catalog/tool-catalog.js";
import type { DispatchChain } from "../../chain/dispatch-chain.js";
import { Refusal } from "../../chain/refusal.js";
import type { DispatchOptions } from "../../chain/types.js";
import { MAX_BATCH_CALLS, runBatch } from "../batch.js";
import { dialectOf, recognise } from "./dialects.js";

/**
 * Runs the tool calls of a model's reply as one batch through the chain and answers with the
 * messages to append, in the reply's dialect. Arguments a model garbled are refused per call
 * (recorded like any refusal), so the model can correct them on its next turn.
 */
export async function dispatchToolCalls(
  chain: DispatchChain,
  catalog: ToolCatalog,
  req: DispatchToolCallsRequest,
  principal: Principal,
  options: DispatchOptions,
): Promise<DispatchToolCallsResponse> {
  const message = req.message;
  if (!message) throw invalidField("message", "is required: the model's reply as JSON");
  const dialect = req.dialect === ToolCallDialect.UNSPECIFIED ? recognise(message) : req.dialect;
  const { calls: readCalls, messages } = dialectOf(dialect);
  const calls = readCalls(message);
  if (calls.length === 0)
    throw invalidField("message", "has no tool calls; only replies that call tools are dispatched");
  if (calls.length > MAX_BATCH_CALLS)
    throw invalidField(
      "message",
      `has ${calls.length} tool calls; at most ${MAX_BATCH_CALLS} run as one batch`,
    );
  const batch = create(DispatchBatchRequestSchema, {
    traceId: req.traceId,
    calls: calls.map((call) => ({
      tool: call.name,
      arguments: call.args.ok ? call.args.value : {},
      timeoutMs: req.timeoutMs,
    })),
  });
  const done = await runBatch(chain, catalog, batch, principal, options, (index) => {
    const args = calls[index]?.args;
    if (!args || args.ok) return {};
    return {
      refusal: new Refusal(
        invalidField(
          "arguments",
          `${args.problem}; send a JSON object that matches the tool's input schema`,
        ),
        "arguments are not JSON",
      ),
    };
  });
  return create(DispatchToolCallsResponseSchema, {
    dialect,
    messages: messages(calls, done.results),
    results: done.results,
    traceId: done.traceId,
  });
}
