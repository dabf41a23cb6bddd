import { create } from "@bufbuild/protobuf";
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import { Code, ConnectError } from "@toolmesh/errors";
import { type Principal, PrincipalSchema } from "@toolmesh/proto";

export type { Principal } from "@toolmesh/proto";

/** Role names with a meaning of their own. */
export const Role = {
  /** May change tools, groups, grants and keys. */
  Admin: "admin",
  /** May call tools and read the tools it is allowed to use. */
  Agent: "agent",
  /** Another toolmesh service: reads every tool and outcome, checks any agent; changes nothing. */
  Service: "service",
  /** knowhub-sync: may store tools' knowledge-hub slugs (SetToolSlugs) and nothing else. */
  Knowhub: "knowhub",
  /** An asynchronous tool backend: may Report outcomes of the tools that list it as a reporter. */
  ToolBackend: "tool-backend",
  /** May read the audit log. */
  Auditor: "auditor",
  /**
   * The tool agent: may register its own tools (`coding.*`, served over grpc) and tools it built,
   * these only disabled (an operator enables them); nothing else.
   */
  ToolAgent: "tool-agent",
} as const;

/** Where the auth interceptor leaves the caller for handlers. */
export const principalKey = createContextKey<Principal | undefined>(undefined, {
  description: "the authenticated toolmesh principal",
});

/** Builds a principal. */
export function principal(agentId: string, roles: string[], userId = "", keyId = ""): Principal {
  return create(PrincipalSchema, { agentId, userId, roles, keyId });
}

/** The caller of this RPC; UNAUTHENTICATED if the server runs no auth interceptor. */
export function principalOf(ctx: HandlerContext): Principal {
  const p = ctx.values.get(principalKey);
  if (!p) throw new ConnectError("this RPC needs a bearer token", Code.Unauthenticated);
  return p;
}

/** True when the principal holds any of the roles. */
export function hasRole(p: Principal, ...roles: string[]): boolean {
  return p.roles.some((r) => roles.includes(r));
}

/** The caller, if it holds one of the roles; PERMISSION_DENIED naming the roles otherwise. */
export function requireRole(ctx: HandlerContext, ...roles: string[]): Principal {
  const p = principalOf(ctx);
  if (!hasRole(p, ...roles)) {
    throw new ConnectError(
      `${ctx.method.name} needs the role ${roles.join(" or ")}; your token has ${
        p.roles.length ? `the roles ${p.roles.join(", ")}` : "no roles"
      }`,
      Code.PermissionDenied,
    );
  }
  return p;
}
