import type { JsonObject } from "@bufbuild/protobuf";
import { ConnectError, codeName } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import type { Principal } from "@toolmesh/proto";
import { compileSchema, toViolations, type ValidateFunction } from "@toolmesh/schema";
import type { FunctionTool, ToolCall } from "../model/chat-model.js";

/** Who a tool runs for: the chatting principal, its own credential, and the window. */
export interface Caller {
  principal: Principal;
  /** The caller's Authorization header, so Registry reads see exactly what the caller may see. */
  authorization: string;
  chatId: string;
  /** Told of each task the turn files, so the answer can name them. */
  filed(taskId: string): void;
}

/** One tool the model may call; `run` returns the JSON the model reads. */
export interface AgentTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  run(args: JsonObject, caller: Caller, signal: AbortSignal): Promise<unknown>;
}

/** The largest tool result handed back to the model; the rest is cut with a note. */
const MAX_RESULT_CHARS = 16_000;

/**
 * A set of tools the model is offered, with their arguments checked against their schemas
 * (compiled once, when the toolbox is made) before they run. A call the model garbled (unknown name, arguments that are not JSON or do not
 * fit) becomes an error result the model reads and can correct on its next turn, never a failed
 * turn; so does a refusal of what the tool asked (NOT_FOUND, PERMISSION_DENIED …).
 */
export class AgentToolbox {
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(
    private readonly tools: AgentTool[],
    private readonly log: Logger,
  ) {
    for (const tool of tools) this.validators.set(tool.name, compileSchema(tool.parameters));
  }

  /** The definitions the model is offered. */
  definitions(): FunctionTool[] {
    return this.tools.map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
  }

  /** Runs one call; resolves with the content of its `tool` message (JSON). */
  async run(call: ToolCall, caller: Caller, signal: AbortSignal): Promise<string> {
    const tool = this.tools.find((t) => t.name === call.function.name);
    if (!tool)
      return error(
        "NOT_FOUND",
        `there is no tool "${call.function.name}"; use one of ${this.tools.map((t) => t.name).join(", ")}`,
      );
    let args: unknown;
    try {
      args = call.function.arguments.trim() === "" ? {} : JSON.parse(call.function.arguments);
    } catch {
      return error(
        "INVALID_ARGUMENT",
        `the arguments of ${tool.name} are not JSON; send a JSON object that matches its parameters`,
      );
    }
    const validate = this.validators.get(tool.name);
    if (validate && !validate(args)) {
      const lines = toViolations(validate.errors).map((v) => `${v.path || "/"}: ${v.message}`);
      return error(
        "INVALID_ARGUMENT",
        `the arguments of ${tool.name} do not fit: ${lines.join("; ")}`,
      );
    }
    try {
      const result = JSON.stringify(await tool.run(args as JsonObject, caller, signal));
      return result.length > MAX_RESULT_CHARS
        ? JSON.stringify({
            truncated: true,
            note: `the result had ${result.length} characters; narrow the request (a keyword, a group)`,
            start: result.slice(0, MAX_RESULT_CHARS),
          })
        : result;
    } catch (e) {
      if (e instanceof ConnectError) return error(codeName(e.code), e.rawMessage);
      this.log.error({ err: e, tool: tool.name }, "a ServiceAgent tool failed");
      return error("INTERNAL", `${tool.name} failed inside the tool agent; try again later`);
    }
  }
}

function error(code: string, message: string): string {
  return JSON.stringify({ error: { code, message } });
}
