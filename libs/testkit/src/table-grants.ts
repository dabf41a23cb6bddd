import { create } from "@bufbuild/protobuf";
import { timestampFromMs } from "@bufbuild/protobuf/wkt";
import {
  Effect,
  type Grant,
  GrantSchema,
  type GrantSpec,
  GrantSpecSchema,
  PrincipalKind,
  ResourceKind,
} from "@toolmesh/proto";
import type { TableGrant } from "./decision-case.js";

const principalKinds: Record<string, PrincipalKind> = {
  agent: PrincipalKind.AGENT,
  user: PrincipalKind.USER,
  role: PrincipalKind.ROLE,
};
const resourceKinds: Record<string, ResourceKind> = {
  tool: ResourceKind.TOOL,
  glob: ResourceKind.GLOB,
  group: ResourceKind.GROUP,
};

/** The GrantSpec of a table grant, with expiry relative to nowMs. */
export function tableGrantSpec(g: TableGrant, nowMs: number): GrantSpec {
  const [who, whoId] = split(g.who);
  const [on, pattern] = split(g.on);
  return create(GrantSpecSchema, {
    principal: { kind: principalKinds[who], id: whoId },
    resource: { kind: resourceKinds[on], pattern },
    scopes: g.scopes,
    effect: g.effect === "deny" ? Effect.DENY : Effect.ALLOW,
    enabled: g.enabled ?? true,
    ...(g.expiresInMs !== undefined ? { expiresAt: timestampFromMs(nowMs + g.expiresInMs) } : {}),
  });
}

/** A stored Grant of a table grant, with the table id. */
export function tableGrant(g: TableGrant, nowMs: number): Grant {
  return create(GrantSchema, { id: g.id, spec: tableGrantSpec(g, nowMs), createdBy: "table" });
}

/**
 * The spec of an enabled grant, in the decision table's words: `who` is agent:<id>, user:<id>
 * or role:<id>; `on` is tool:<name>, glob:<pattern> or group:<name>.
 */
export function allowSpec(who: string, on: string, scopes: string[]): GrantSpec {
  return tableGrantSpec({ id: "", who, on, scopes }, 0);
}

/** The spec of a grant that lets one agent call every tool with every scope. */
export function allowAllSpec(agentId: string): GrantSpec {
  return allowSpec(`agent:${agentId}`, "glob:**", ["*"]);
}

function split(ref: string): [string, string] {
  const i = ref.indexOf(":");
  return [ref.slice(0, i), ref.slice(i + 1)];
}
