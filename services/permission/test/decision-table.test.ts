import { randomBytes } from "node:crypto";
import { create, toBinary } from "@bufbuild/protobuf";
import { buckets } from "@toolmesh/nats";
import { GrantSchema } from "@toolmesh/proto";
import { allowSpec, decisionTable, type TableGrant, tableGrantSpec } from "@toolmesh/testkit";
import { startedForFile } from "@toolmesh/testkit/hooks";
import { describe, expect, it } from "vitest";
import { startPermissionStack } from "./harness.js";

// The same table as libs/policy/test/decide.test.ts, answered by the live Check RPC.
describe("decision table against the live Check RPC", () => {
  const stack = startedForFile(startPermissionStack);

  /** Grants the Grant RPC refuses (expired, disabled) are written as a stale grant would be. */
  const needsDirectWrite = (g: TableGrant) =>
    g.enabled === false || (g.expiresInMs !== undefined && g.expiresInMs <= 0);

  for (const c of decisionTable) {
    it(c.name, async () => {
      const admin = stack.as(stack.adminToken);
      const ids = new Map<string, string>();
      const nowMs = Date.now();
      for (const g of c.grants.filter(needsDirectWrite)) {
        const id = randomBytes(10).toString("hex");
        ids.set(g.id, id);
        await stack.permissionKv.put(
          buckets.permission.grantKey(id),
          toBinary(
            GrantSchema,
            create(GrantSchema, { id, spec: tableGrantSpec(g, nowMs), createdBy: "test" }),
          ),
        );
      }
      for (const g of c.grants.filter((g) => !needsDirectWrite(g))) {
        const res = await stack.client.grant({ grant: tableGrantSpec(g, nowMs) }, admin);
        ids.set(g.id, res.grant?.id ?? "");
      }
      // The service applies its watch in order, so once it shows this grant it shows all above.
      const sentinel = await stack.client.grant(
        { grant: allowSpec("agent:sentinel", "tool:sentinel.tool", ["*"]) },
        admin,
      );
      try {
        const { decision } = await stack.client.check(
          { agentId: c.agent, userId: c.user ?? "", roles: c.roles ?? [], tool: c.tool },
          admin,
        );
        expect(decision?.allowed, decision?.reason).toBe(c.allowed);
        const real = (tableId: string) => ids.get(tableId) ?? `unmapped ${tableId}`;
        if (c.missing) expect(decision?.missingScopes).toEqual(c.missing);
        if (c.deny) expect(decision?.denyGrantId).toBe(real(c.deny));
        if (c.denied) expect(decision?.deniedPrincipal).toBe(c.denied);
        if (c.matched)
          expect([...(decision?.matchedGrantIds ?? [])].sort()).toEqual(c.matched.map(real).sort());
        if (c.reason) expect(decision?.reason).toContain(c.reason);
      } finally {
        for (const id of [...ids.values(), sentinel.grant?.id ?? ""])
          await stack.client.revoke({ grantId: id }, admin);
      }
    });
  }
});
