import { create } from "@bufbuild/protobuf";
import { CallErrorSchema, CallStatus } from "@toolmesh/proto";
import { toViolations } from "@toolmesh/schema";
import type { ToolValidators } from "../catalog/tool-catalog.js";
import type { CallEnd } from "../records/call-end.js";
import type { AttemptResult } from "../runtimes/runtime.js";
import type { InterruptReason } from "./running-calls.js";

/**
 * Classifies the end of a call: INTERRUPTED when it was stopped, PENDING when an asynchronous
 * tool accepted it, FAILURE when the tool failed or its output violates the output schema,
 * SUCCESS otherwise. Tool failures never become errors of the RPC.
 */
export function classify(input: {
  tool: string;
  interrupted: InterruptReason | undefined;
  result: AttemptResult | undefined;
  output: ToolValidators["output"];
  timeoutMs: number;
}): CallEnd {
  const { tool, interrupted, result } = input;
  if (interrupted) {
    return {
      status: CallStatus.INTERRUPTED,
      reason: interrupted,
      error: create(CallErrorSchema, {
        code: interrupted,
        message:
          interrupted === "timeout"
            ? `tool "${tool}" did not finish within ${input.timeoutMs} ms; the call was stopped`
            : interrupted === "shutdown"
              ? "the dispatcher is shutting down; the call was stopped"
              : "the call was cancelled",
      }),
    };
  }
  if (!result) return { status: CallStatus.FAILURE, reason: "" };
  if (!result.ok) return { status: CallStatus.FAILURE, error: result.error, reason: "" };
  if (result.pending) return { status: CallStatus.PENDING, reason: "" };
  if (input.output && !input.output(result.output)) {
    const lines = toViolations(input.output.errors).map((v) => `- ${v.path || "/"}: ${v.message}`);
    return {
      status: CallStatus.FAILURE,
      reason: "",
      error: create(CallErrorSchema, {
        code: "invalid_output",
        message: `tool "${tool}" returned output that violates its output schema:\n${lines.join("\n")}`,
      }),
    };
  }
  return { status: CallStatus.SUCCESS, output: result.output, reason: "" };
}
