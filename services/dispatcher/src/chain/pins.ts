import { Code, ConnectError, invalidField } from "@toolmesh/errors";
import type { Tool } from "@toolmesh/proto";
import { pinBroken } from "@toolmesh/schema";
import { Refusal } from "./refusal.js";

/** A pin is a SHA-256 in hex, as the Registry gives it. */
const PIN = /^[0-9a-f]{64}$/;

/**
 * Refuses a call pinned (context.tool_pin) to a definition its tool no longer has, with
 * FAILED_PRECONDITION naming what changed, so a tool cannot be swapped under an agent.
 */
export function checkPin(tool: Tool, pin: string | undefined): void {
  if (!pin) return;
  if (!PIN.test(pin))
    throw new Refusal(
      invalidField(
        "context.tool_pin",
        "must be the definition_hash or schema_hash (64 lowercase hex characters) the Registry gave you, or empty",
      ),
      "bad tool_pin",
    );
  const broken = pinBroken(tool, pin);
  if (broken === undefined) return;
  const name = tool.spec?.name ?? "";
  throw new Refusal(
    new ConnectError(
      `tool "${name}" is not the definition you pinned: ${broken}; review the tool (GetTool) and pin its new definition_hash`,
      Code.FailedPrecondition,
    ),
    `tool changed since pinned: ${broken}`,
  );
}
