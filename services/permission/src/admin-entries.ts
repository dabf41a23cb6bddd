import type { HandlerContext } from "@connectrpc/connect";
import { type Principal, Role, requireRole } from "@toolmesh/auth";
import { Code, ConnectError, notFound } from "@toolmesh/errors";
import type { Logger } from "@toolmesh/log";
import { ChangeType } from "@toolmesh/proto";
import { pageTokens } from "@toolmesh/server";
import type { PermissionChange, PermissionEvents } from "./events.js";

/** An entry an admin writes by id (a rate limit, a budget), kept under one prefix of the bucket. */
export interface AdminEntryKind<T extends { id: string }> {
  /** The kind PermissionChanged and the audit record name. */
  kind: PermissionChange["kind"];
  /** How messages name it: "rate limit", "budget". */
  noun: string;
  /** The RPC that lists them, for a NOT_FOUND to point at. */
  listRpc: string;
  /** How many the bucket holds at most. */
  max: number;
  /** An id's shape, for page tokens, and its longest length. */
  idPattern: RegExp;
  maxIdLength: number;
  /** The stored entries (a snapshot keyed as in the bucket). */
  entries: { readonly size: number; get(key: string): T | undefined; values(): Iterable<T> };
  key(id: string): string;
  put(entry: T): Promise<void>;
  /** False when there is none with the id. */
  remove(id: string): Promise<boolean>;
  /** INVALID_ARGUMENT when `id` is not one of its ids. */
  checkId(field: string, id: string): void;
}

/** What the entries' RPCs need of the Permission service's dependencies. */
export interface AdminEntryDeps {
  events: PermissionEvents;
  log: Logger;
}

/**
 * Put, delete and list of one kind of admin entry: admin only, audited (an ADMIN record and a
 * PermissionChanged for each write), paged by id. Rate limits and budgets share it.
 */
export function adminEntryRpcs<T extends { id: string }>(
  entry: AdminEntryKind<T>,
  deps: AdminEntryDeps,
) {
  const pages = pageTokens({
    defaultSize: 100,
    maxSize: 1000,
    position: entry.idPattern,
    maxPositionLength: entry.maxIdLength,
  });
  const admin = (ctx: HandlerContext) => requireRole(ctx, Role.Admin);
  const publish = (caller: Principal, id: string, type: ChangeType, reason: string) =>
    deps.events.publish(caller, { kind: entry.kind, id, type, reason });

  return {
    /** Who calls (refused unless admin). */
    admin,
    /** Stores an entry the caller made from a validated spec; `describe` is one sentence. */
    async put(caller: Principal, value: T, describe: string): Promise<T> {
      const existing = entry.entries.get(entry.key(value.id));
      if (!existing && entry.entries.size >= entry.max)
        throw new ConnectError(
          `there are already ${entry.max} ${entry.noun}s; delete unused ones first`,
          Code.ResourceExhausted,
        );
      await entry.put(value);
      deps.log.info({ [entry.kind]: value.id, by: caller.agentId }, `${entry.noun} written`);
      await publish(
        caller,
        value.id,
        ChangeType.PUT,
        `${existing ? "replaced" : "created"} ${entry.noun} ${value.id}: ${describe}`,
      );
      return value;
    },

    async remove(ctx: HandlerContext, id: string): Promise<void> {
      const caller = admin(ctx);
      entry.checkId("id", id);
      if (!(await entry.remove(id)))
        throw notFound(entry.noun, id, `list ${entry.noun}s with ${entry.listRpc}`);
      deps.log.info({ [entry.kind]: id, by: caller.agentId }, `${entry.noun} deleted`);
      await publish(caller, id, ChangeType.DELETE, `deleted ${entry.noun} ${id}`);
    },

    list(ctx: HandlerContext, req: { pageSize: number; pageToken: string }) {
      admin(ctx);
      const size = pages.pageSize(req.pageSize);
      const fingerprint = pages.fingerprint([]);
      const after = pages.decode(req.pageToken, fingerprint);
      const matches: T[] = [];
      for (const value of entry.entries.values()) if (value.id > after) matches.push(value);
      matches.sort((a, b) => (a.id < b.id ? -1 : 1));
      const page = matches.slice(0, size);
      const last = page.at(-1);
      return {
        page,
        nextPageToken: matches.length > size && last ? pages.encode(last.id, fingerprint) : "",
      };
    },
  };
}
