import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import type { Logger } from "@toolmesh/log";
import { buckets } from "@toolmesh/nats";
import {
  DeleteRateLimitResponseSchema,
  ListRateLimitsResponseSchema,
  type PermissionService,
  PutRateLimitResponseSchema,
  type RateLimit,
  RateLimitSchema,
  type RateLimitSpec,
  RateLimitSubject,
} from "@toolmesh/proto";
import { adminEntryRpcs } from "./admin-entries.js";
import type { PermissionEvents } from "./events.js";
import {
  checkRateLimitId,
  limitIdOf,
  rateLimitBounds,
  validateRateLimitSpec,
} from "./rate-limits.js";
import type { PermissionStore } from "./store.js";

type RateLimitRpcs = Pick<
  ServiceImpl<typeof PermissionService>,
  "putRateLimit" | "deleteRateLimit" | "listRateLimits"
>;

/** One sentence for the audit record. */
export function describeRateLimit(spec: RateLimitSpec): string {
  const parts: string[] = [];
  if (spec.requestsPerSecond > 0)
    parts.push(
      `${spec.requestsPerSecond}/s (burst ${spec.burst || Math.max(1, Math.ceil(spec.requestsPerSecond))})`,
    );
  if (spec.callsPerDay > 0) parts.push(`${spec.callsPerDay} calls a day`);
  const subject = RateLimitSubject[spec.subject].toLowerCase();
  return `${parts.join(" and ")} for ${subject} "${spec.target}"`;
}

/** What the rate-limit RPCs need of the Permission service's dependencies. */
export interface RateLimitDeps {
  store: PermissionStore;
  events: PermissionEvents;
  log: Logger;
  /** The clock; tests may pin it. */
  now?: () => number;
}

/** PutRateLimit, DeleteRateLimit and ListRateLimits: admin only, like grants. */
export function createRateLimitHandlers(deps: RateLimitDeps): RateLimitRpcs {
  const { store } = deps;
  const now = deps.now ?? Date.now;
  const limits = adminEntryRpcs<RateLimit>(
    {
      kind: "rate_limit",
      noun: "rate limit",
      listRpc: "ListRateLimits",
      max: rateLimitBounds.maxLimits,
      idPattern: new RegExp(`^[a-z]+\\.[A-Za-z0-9_=-]{1,${rateLimitBounds.maxIdLength}}$`),
      maxIdLength: rateLimitBounds.maxIdLength,
      entries: store.rateLimits,
      key: buckets.permission.rateLimitKey,
      put: (limit) => store.putRateLimit(limit),
      remove: (id) => store.deleteRateLimit(id),
      checkId: checkRateLimitId,
    },
    deps,
  );

  return {
    async putRateLimit(req, ctx) {
      const caller = limits.admin(ctx);
      const spec = validateRateLimitSpec(req.limit);
      const limit = create(RateLimitSchema, {
        id: limitIdOf(spec),
        spec,
        updatedBy: caller.agentId,
        updatedAt: timestampFromMs(now()),
      });
      await limits.put(caller, limit, describeRateLimit(spec));
      return create(PutRateLimitResponseSchema, { limit });
    },

    async deleteRateLimit(req, ctx) {
      await limits.remove(ctx, req.id);
      return create(DeleteRateLimitResponseSchema, {});
    },

    listRateLimits(req, ctx) {
      const { page, nextPageToken } = limits.list(ctx, req);
      return create(ListRateLimitsResponseSchema, { limits: page, nextPageToken });
    },
  };
}
