import { SecretHolderKind, SecretToolKind } from "@toolmesh/proto";
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
