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
import { pageTokens } from "@toolmesh/server";
import { hourOf, MAX_USAGE_KEY_LENGTH, USAGE_KEY, type UsageStore } from "./usage-store.js";

/** GetUsage's pages: a position is the last usage key of a page. */
const usagePages = pageTokens({
  defaultSize: 100,
  maxSize: 1000,
  position: USAGE_KEY,
  maxPositionLength: MAX_USAGE_KEY_LENGTH,
});

/** Admins and auditors see everyone's usage; anyone else only their own agent's. */
const seesAllUsage = (p: Principal) => hasRole(p, Role.Admin, Role.Auditor);

/**
 * GetUsage: hourly aggregates matching the filter, oldest hour first, a page at a time. The page
 * token is the last key of the page, bound to the filter.
 */
export async function getUsage(
  store: UsageStore,
  p: Principal,
  req: GetUsageRequest,
): Promise<GetUsageResponse> {
  if (req.agentId) checkLength("agent_id", "principalId", req.agentId);
  if (req.userId) checkLength("user_id", "principalId", req.userId);
  if (req.tool) checkLength("tool", "toolName", req.tool);
  const size = usagePages.pageSize(req.pageSize);
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
  const fingerprint = usagePages.fingerprint([
    filter.agentId,
    filter.userId,
    filter.tool,
    fromMs ?? null,
    toMs ?? null,
  ]);
  const after = usagePages.decode(req.pageToken, fingerprint);
  const keys = (await store.keys(filter)).filter((key) => key > after);
  const page = keys.slice(0, size);
  const usage = (await Promise.all(page.map((key) => store.get(key)))).filter(
    (u): u is Usage => u !== undefined,
  );
  const last = page.at(-1);
  return create(GetUsageResponseSchema, {
    usage,
    nextPageToken: keys.length > size && last ? usagePages.encode(last, fingerprint) : "",
  });
}
