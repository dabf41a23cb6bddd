import { create } from "@bufbuild/protobuf";
import { timestampMs } from "@bufbuild/protobuf/wkt";
import { hasRole, type Principal, Role } from "@toolmesh/auth";
import { Code, ConnectError, invalidField } from "@toolmesh/errors";
import { checkLength } from "@toolmesh/names";
import {
  type GetUsageRequest,
  type GetUsageResponse,
  GetUsageResponseSchema,
  type Usage,
} from "@toolmesh/proto";
import { hourOf, type UsageStore } from "./usage-store.js";

const MAX_PAGE = 1000;

/** Admins and auditors see everyone's usage; anyone else only their own agent's. */
const seesAllUsage = (p: Principal) => hasRole(p, Role.Admin, Role.Auditor);

/**
 * GetUsage: hourly aggregates matching the filter, oldest hour first, a page at a time. The page
 * token is the last key of the page, bound to the filter by a prefix of it.
 */
export async function getUsage(
  store: UsageStore,
  p: Principal,
  req: GetUsageRequest,
): Promise<GetUsageResponse> {
  if (req.agentId) checkLength("agent_id", "principalId", req.agentId);
  if (req.userId) checkLength("user_id", "principalId", req.userId);
  if (req.tool) checkLength("tool", "toolName", req.tool);
  if (req.pageSize > MAX_PAGE)
    throw invalidField("page_size", `is ${req.pageSize}; at most ${MAX_PAGE}`);
  if (!seesAllUsage(p) && req.agentId !== "" && req.agentId !== p.agentId)
    throw new ConnectError(
      `you may read only your own usage (agent_id "${p.agentId}"), not that of "${req.agentId}"; admins and auditors read everyone's`,
      Code.PermissionDenied,
    );
  const fromMs = req.startHour ? hourOf(timestampMs(req.startHour)) : undefined;
  const toMs = req.endHour ? hourOf(timestampMs(req.endHour)) : undefined;
  if (fromMs !== undefined && toMs !== undefined && toMs <= fromMs)
    throw invalidField(
      "end_hour",
      "must be at least one hour after start_hour (it is the first hour not included)",
    );
  const filter = {
    agentId: seesAllUsage(p) ? req.agentId : p.agentId,
    userId: req.userId,
    tool: req.tool,
    ...(fromMs !== undefined ? { fromMs } : {}),
    ...(toMs !== undefined ? { toMs } : {}),
  };
  const scope = JSON.stringify([filter.agentId, filter.userId, filter.tool, fromMs, toMs]);
  const after = req.pageToken ? decodeToken(req.pageToken, scope) : "";
  const keys = (await store.keys(filter)).filter((key) => key > after);
  const size = req.pageSize || 100;
  const page = keys.slice(0, size);
  const usage = (await Promise.all(page.map((key) => store.get(key)))).filter(
    (u): u is Usage => u !== undefined,
  );
  const last = page.at(-1);
  return create(GetUsageResponseSchema, {
    usage,
    nextPageToken: keys.length > size && last ? encodeToken(last, scope) : "",
  });
}

function encodeToken(key: string, scope: string): string {
  return Buffer.from(JSON.stringify([scope, key]), "utf8").toString("base64url");
}

function decodeToken(token: string, scope: string): string {
  try {
    const value: unknown = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    if (Array.isArray(value) && value[0] === scope && typeof value[1] === "string") return value[1];
  } catch {
    // Falls through to the error below.
  }
  throw invalidField(
    "page_token",
    "is not a token GetUsage returned for this filter; omit it for the first page",
  );
}
