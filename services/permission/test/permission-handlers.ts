import { type Client, createClient, createRouterTransport } from "@connectrpc/connect";
import { Code, type ConnectError } from "@toolmesh/errors";
import { BadFieldSchema, PermissionService } from "@toolmesh/proto";
import { as, type BearerOptions } from "@toolmesh/testkit";
import { expect } from "vitest";
import { createPermissionHandlers } from "../src/handlers.js";
import { grantSpec, type SpecInit } from "./grant-spec.js";
import { type MemoryPermission, memoryPermission } from "./memory-deps.js";

/** PermissionService's handlers over memoryPermission(), and a client of them. */
export interface PermissionHandlers extends MemoryPermission {
  client: Client<typeof PermissionService>;
  admin: BearerOptions;
  /** Adds a grant as the admin, one millisecond after the previous one (ids sort by time). */
  grant(overrides?: SpecInit): Promise<string>;
}

/**
 * PermissionService's handlers over an in-memory store, recorded events and a registry snapshot
 * in memory, behind the real auth interceptor (JWTs and API keys verified as in production),
 * reached through Connect's in-memory router transport.
 */
export async function permissionHandlers(): Promise<PermissionHandlers> {
  const p = await memoryPermission();
  const transport = createRouterTransport(
    (router) => {
      router.service(PermissionService, createPermissionHandlers(p.deps));
    },
    { router: { interceptors: p.interceptors } },
  );
  const client = createClient(PermissionService, transport);
  const admin = as(p.tokens.admin);
  return {
    ...p,
    client,
    admin,
    async grant(overrides = {}) {
      p.clock.ms += 1;
      const res = await client.grant({ grant: grantSpec(overrides) }, admin);
      return res.grant?.id ?? "";
    },
  };
}

/** Asserts INVALID_ARGUMENT with exactly this message and a BadField detail naming the field. */
export function expectBadField(error: ConnectError, message: string): void {
  expect(error.code, message).toBe(Code.InvalidArgument);
  expect(error.rawMessage).toBe(message);
  expect(error.findDetails(BadFieldSchema)[0]?.field).toBe(message.slice(0, message.indexOf(":")));
}
