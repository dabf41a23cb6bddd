import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  Effect,
  type GrantSpec,
  GrantSpecSchema,
  PrincipalKind,
  ResourceKind,
} from "@toolmesh/proto";

export type SpecInit = MessageInitShape<typeof GrantSpecSchema>;

/** A valid grant spec (agent a1 may read:data on data.query); tests override one field at a time. */
export function grantSpec(overrides: SpecInit = {}): GrantSpec {
  return create(GrantSpecSchema, {
    principal: { kind: PrincipalKind.AGENT, id: "a1" },
    resource: { kind: ResourceKind.TOOL, pattern: "data.query" },
    scopes: ["read:data"],
    effect: Effect.ALLOW,
    enabled: true,
    ...(overrides as object),
  });
}
