import { create } from "@bufbuild/protobuf";
import type { Client as RpcClient } from "@connectrpc/connect";
import type { Principal } from "@toolmesh/auth";
import { Code, ConnectError } from "@toolmesh/errors";
import {
  type McpRuntime as McpRuntimeSpec,
  type PermissionService,
  type SecretInjection,
  SecretInjectionSchema,
  type Tool,
  ToolSchema,
} from "@toolmesh/proto";
import { discoverProtectedResource, UPSTREAM_TIMEOUT_MS } from "@toolmesh/vault";
import type { CallSecrets, CallSecretValues } from "../../runtimes/call-secrets.js";

/** What an import of a server protected by OAuth needs of the Dispatcher. */
export interface ImportOAuthDeps {
  /** Permission, called with the importing admin's own credential. */
  permission: RpcClient<typeof PermissionService>;
  secrets: CallSecrets;
}

/** How an imported tool of an OAuth-protected server gets its caller's token. */
export interface ImportAuth {
  /** What each imported tool names: the provider's token in its Authorization. */
  injection: SecretInjection;
  /** The importing user's token, for listing the server's tools now. */
  values: CallSecretValues;
}

/** The MCP version the probe's initialize names; a server answers 401 before reading it. */
const PROBE_PROTOCOL = "2025-06-18";

/**
 * For a server over HTTP that refused to list its tools: whether it is protected by OAuth (it
 * answers 401 with protected-resource metadata, RFC 9728). Undefined when it is not. When it is,
 * the OAuth provider `<prefix>` is registered for it once (its authorization server's metadata
 * discovered, RFC 8414 or OpenID, and toolmesh registered as its client, RFC 7591, where it
 * offers that — Permission's PutOAuthProvider does both), and the importing user's token is
 * resolved as a call's would be: FAILED_PRECONDITION with the connect link while that user has
 * not connected, so the admin connects and imports again.
 */
export async function oauthForImport(
  deps: ImportOAuthDeps,
  prefix: string,
  runtime: McpRuntimeSpec,
  caller: Principal,
  authorization: string,
): Promise<ImportAuth | undefined> {
  const metadata = await discoverProtectedResource(runtime.url, await probe(runtime));
  if (!metadata) return undefined;
  const headers = { headers: { authorization } };
  const { providers } = await deps.permission.listOAuthProviders({}, headers);
  if (!providers.some((p) => p.spec?.name === prefix))
    await deps.permission.putOAuthProvider(
      {
        provider: {
          name: prefix,
          issuer: metadata.authorizationServers[0] ?? "",
          // Empty: Permission registers toolmesh as a client of the issuer (RFC 7591).
          clientId: "",
          scopes: metadata.scopes,
          resource: metadata.resource,
          description: `the authorization server of the MCP server at ${runtime.url}`,
        },
      },
      headers,
    );
  const injection = create(SecretInjectionSchema, {
    oauthProvider: prefix,
    target: { case: "header", value: "authorization" },
  });
  const tool: Tool = create(ToolSchema, {
    spec: {
      name: `${prefix}.import`,
      runtime: { kind: { case: "mcp", value: runtime } },
      secrets: [injection],
    },
  });
  if (caller.userId === "")
    throw new ConnectError(
      `the MCP server at ${runtime.url} is protected by OAuth provider "${prefix}" (registered for it): its tools are listed with a user's account, and this call acts for no user; import again with a token that acts for a user who has connected an account of "${prefix}"`,
      Code.FailedPrecondition,
    );
  await deps.secrets.check(tool, caller);
  return { injection, values: await deps.secrets.resolve(tool, caller) };
}

/** The server's answer to an initialize without a token (its static headers only). */
async function probe(runtime: McpRuntimeSpec): Promise<Response> {
  let response: Response;
  try {
    response = await fetch(runtime.url, {
      method: "POST",
      headers: {
        ...runtime.headers,
        "content-type": "application/json",
        accept: "application/json, text/event-stream",
      },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: {
          protocolVersion: PROBE_PROTOCOL,
          capabilities: {},
          clientInfo: { name: "toolmesh", version: "1" },
        },
      }),
      signal: AbortSignal.timeout(UPSTREAM_TIMEOUT_MS),
    });
  } catch {
    return new Response(null, { status: 599 });
  }
  await response.body?.cancel();
  return response;
}
