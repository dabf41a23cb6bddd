import { SecretHolderKind, SecretToolKind } from "@toolmesh/proto";
import type { TestOAuthServer } from "./oauth-server.js";
import type { TestStack } from "./stack.js";

/** Puts secret `name` of one tool for each user given (user → value), as the stack's admin. */
export async function putUsersSecret(
  stack: TestStack,
  name: string,
  tool: string,
  values: Record<string, string>,
): Promise<void> {
  for (const [user, value] of Object.entries(values))
    await stack.permissionClient.putSecret(
      {
        name,
        scope: {
          toolKind: SecretToolKind.TOOL,
          tool,
          holderKind: SecretHolderKind.USER,
          holder: user,
        },
        value,
      },
      stack.as(stack.adminToken),
    );
}

/**
 * Puts OAuth provider `name`: the test authorization server, toolmesh its client (its id and
 * secret), scopes for OpenID, refresh tokens and the tools, access tokens for `resource`.
 */
export async function putTestProvider(
  stack: TestStack,
  name: string,
  as: TestOAuthServer,
  resource: string,
): Promise<void> {
  await stack.permissionClient.putOAuthProvider(
    {
      provider: {
        name,
        issuer: as.issuer,
        clientId: as.clientId,
        scopes: ["openid", "offline_access", "tools"],
        resource,
      },
      clientSecret: as.clientSecret,
    },
    stack.as(stack.adminToken),
  );
}
