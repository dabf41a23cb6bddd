import type { JsonObject } from "@bufbuild/protobuf";
import type { ServerContext } from "@modelcontextprotocol/server";
import type { BackendEvent } from "@toolmesh/proto";
import { LOG_LEVELS } from "../../runtimes/mcp-connection.js";

const LOG_LEVEL_META = "io.modelcontextprotocol/logLevel";

/**
 * What a call's events tell the MCP client that made it: a tool's progress (`PROGRESS` from a
 * toolmesh tool, `MCP_PROGRESS` from an imported one) as progress notifications when the request
 * has a progressToken, and an imported tool's log messages (`MCP_LOG`) as log notifications — to
 * a 2025-11-25 client always (a stateless request does not say its level), to a 2026-07-28
 * client at or above the `logLevel` its request names, and never without one.
 */
export function eventRelay(
  ctx: ServerContext,
  era: "legacy" | "modern",
  progressToken: string | number | undefined,
): ((event: BackendEvent) => void) | undefined {
  const envelope = ctx.mcpReq.envelope as JsonObject | undefined;
  const level = envelope?.[LOG_LEVEL_META];
  const minimum = era === "legacy" ? 0 : typeof level === "string" ? LOG_LEVELS.indexOf(level) : -1;
  if (progressToken === undefined && minimum < 0) return undefined;
  const notify = (method: string, params: JsonObject) =>
    void ctx.mcpReq.notify({ method, params } as never).catch(() => {});
  return (event) => {
    const payload = event.payload ?? {};
    if (event.customKind === "PROGRESS" || event.customKind === "MCP_PROGRESS") {
      if (progressToken === undefined || typeof payload.progress !== "number") return;
      const { progress, total, message } = payload;
      notify("notifications/progress", {
        progressToken,
        progress,
        ...(typeof total === "number" ? { total } : {}),
        ...(typeof message === "string" ? { message } : {}),
      });
    } else if (event.customKind === "MCP_LOG" && minimum >= 0) {
      const at = LOG_LEVELS.indexOf(String(payload.level));
      if (at >= minimum) notify("notifications/message", payload);
    }
  };
}
