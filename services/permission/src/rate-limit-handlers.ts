import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { Role, requireRole } from "@toolmesh/auth";
import { Code, ConnectError, notFound } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { buckets } from "@toolmesh/nats";
import {
  ChangeType,
  DeleteRateLimitResponseSchema,
  ListRateLimitsResponseSchema,
  type PermissionService,
  PutRateLimitResponseSchema,
  type RateLimit,
  RateLimitSchema,
  type RateLimitSpec,
  RateLimitSubject,
} from "@toolmesh/proto";
import { pageTokens } from "@toolmesh/server";
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

const pages = pageTokens({
  defaultSize: 100,
  maxSize: 1000,
  position: new RegExp(`^[a-z]+\\.[A-Za-z0-9_=-]{1,${rateLimitBounds.maxIdLength}}$`),
  maxPositionLength: rateLimitBounds.maxIdLength,
});

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
  const { store, events } = deps;
  const now = deps.now ?? Date.now;
  const admin = (ctx: HandlerContext) => requireRole(ctx, Role.Admin);

  return {
    async putRateLimit(req, ctx) {
      const caller = admin(ctx);
      const spec = validateRateLimitSpec(req.limit);
      const id = limitIdOf(spec);
      const existing = store.rateLimits.get(buckets.permission.rateLimitKey(id));
      if (!existing && store.rateLimits.size >= rateLimitBounds.maxLimits)
        throw new ConnectError(
          `there are already ${rateLimitBounds.maxLimits} rate limits; delete unused ones first`,
          Code.ResourceExhausted,
        );
      const limit = create(RateLimitSchema, {
        id,
        spec,
        updatedBy: caller.agentId,
        updatedAt: timestampFromMs(now()),
      });
      await store.putRateLimit(limit);
      deps.log.info({ rate_limit: id, by: caller.agentId }, "rate limit written");
      await events.publish(caller, {
        kind: "rate_limit",
        id,
        type: ChangeType.PUT,
        reason: `${existing ? "replaced" : "created"} rate limit ${id}: ${describeRateLimit(spec)}`,
      });
      return create(PutRateLimitResponseSchema, { limit });
    },

    async deleteRateLimit(req, ctx) {
      const caller = admin(ctx);
      checkRateLimitId("id", req.id);
      if (!(await store.deleteRateLimit(req.id)))
        throw notFound("rate limit", req.id, "list rate limits with ListRateLimits");
      deps.log.info({ rate_limit: req.id, by: caller.agentId }, "rate limit deleted");
      await events.publish(caller, {
        kind: "rate_limit",
        id: req.id,
        type: ChangeType.DELETE,
        reason: `deleted rate limit ${req.id}`,
      });
      return create(DeleteRateLimitResponseSchema, {});
    },

    listRateLimits(req, ctx) {
      admin(ctx);
      const size = pages.pageSize(req.pageSize);
      const fingerprint = pages.fingerprint([]);
      const after = pages.decode(req.pageToken, fingerprint);
      const matches: RateLimit[] = [];
      for (const limit of store.rateLimits.values()) if (limit.id > after) matches.push(limit);
      matches.sort((a, b) => (a.id < b.id ? -1 : 1));
      const page = matches.slice(0, size);
      const last = page.at(-1);
      return create(ListRateLimitsResponseSchema, {
        limits: page,
        nextPageToken: matches.length > size && last ? pages.encode(last.id, fingerprint) : "",
      });
    },
  };
}
