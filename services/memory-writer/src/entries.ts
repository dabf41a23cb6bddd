import { timestampDate } from "@bufbuild/protobuf/wkt";
import { type CallbackEvent, statusWord } from "@toolmesh/proto";

/** One line of an agent's memory file. */
export interface MemoryEntry {
  id: string;
  parent_id: string;
  timestamp: string;
  type: "tool_call" | "tool_result";
  content: Record<string, unknown>;
}

/** The id of the result entry of a call; the call entry's id is the call_id itself. */
export const resultId = (callId: string) => `${callId}/result`;

/**
 * The two entries a finished call leaves in memory: the call (what was used, for whom, in which
 * trace) and its result (status and output, error or reason), the result a child of the call.
 * The call id is each entry's id (the result's with `/result`), not repeated in its content.
 */
export function entriesOf(
  event: CallbackEvent,
  redact: (value: unknown) => unknown,
): [MemoryEntry, MemoryEntry] {
  const timestamp = (event.time ? timestampDate(event.time) : new Date()).toISOString();
  const status = statusWord(event.status);
  return [
    {
      id: event.callId,
      parent_id: event.parentId,
      timestamp,
      type: "tool_call",
      content: {
        trace_id: event.traceId,
        tool: event.tool,
        user_id: event.userId,
      },
    },
    {
      id: resultId(event.callId),
      parent_id: event.callId,
      timestamp,
      type: "tool_result",
      content: {
        status,
        ...(event.output ? { output: redact(event.output) } : {}),
        ...(event.error
          ? {
              error: {
                code: event.error.code,
                message: event.error.message,
                ...(event.error.details ? { details: redact(event.error.details) } : {}),
              },
            }
          : {}),
        ...(event.reason ? { reason: event.reason } : {}),
        duration_ms: event.durationMs,
        attempts: event.attempts,
      },
    },
  ];
}
