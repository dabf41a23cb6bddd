import http from "node:http";
import type { AddressInfo } from "node:net";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { SecretHolderKind, SecretToolKind, type ToolSpecSchema } from "@toolmesh/proto";
import {
  allowSpec,
  chainServices,
  type ProtectedTool,
  putTestProvider,
  startOAuthServer,
  startProtectedTool,
  startStack,
  type TestOAuthServer,
  type TestStack,
} from "@toolmesh/testkit";

/** Access tokens live this long at the authorization server; toolmesh refreshes 2 s before. */
export const ACCESS_TTL_S = 4;
/** toolmesh refreshes an access token this long before it expires. */
export const REFRESH_MARGIN_MS = 2000;

/** The stack of the vault tests, with an upstream, a tool it protects and a tool that echoes. */
export interface VaultStack {
  stack: TestStack;
  as: TestOAuthServer;
  /** `acme.whoami`'s backend: says whose token it was called with. */
  tool: ProtectedTool;
  register(spec: MessageInitShape<typeof ToolSpecSchema> & { name: string }): Promise<void>;
  /** A call of agent `bot` acting for `user`. */
  call(
    tool: string,
    user: string,
  ): ReturnType<ReturnType<TestStack["dispatcherClient"]>["dispatch"]>;
  /** Puts `echo-key` for every caller of `echo.*`; its id. */
  putEchoKey(value: string): Promise<string>;
  /** Waits until `user`'s last access token seen by the tool is past the refresh margin. */
  untilRefreshDue(user: string): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The call chain with Callback and the memory writer; oidc-provider as the upstream `acme`
 * (toolmesh its client, access tokens of ACCESS_TTL_S); `acme.whoami` (a user's token of acme in
 * its Authorization); `echo.ok` and `echo.fail`, which send back the `echo-key` secret they get in
 * `x-api-key` in their output and in their error; agent `bot` and every user allowed every tool.
 */
export async function startVaultStack(
  options: {
    oauth?: Pick<Parameters<typeof startOAuthServer>[0], "rotateRefreshTokens" | "refreshDelayMs">;
    serviceEnv?: Record<string, Record<string, string>>;
  } = {},
): Promise<VaultStack> {
  const stack = await startStack({
    services: [...chainServices, "callback", "memory-writer"],
    env: { TOOLMESH_OAUTH_REFRESH_MARGIN_MS: String(REFRESH_MARGIN_MS) },
    ...(options.serviceEnv ? { serviceEnv: options.serviceEnv } : {}),
  });
  const admin = stack.as(stack.adminToken);
  const permissionUrl = stack.stackFile().services.permission?.url;
  let as: TestOAuthServer | undefined;
  const tool = await startProtectedTool(() => as?.issuer ?? "");
  as = await startOAuthServer({
    redirectUri: `${permissionUrl}/oauth/callback`,
    resource: tool.url,
    accessTokenTtlS: ACCESS_TTL_S,
    ...options.oauth,
  });
  const echo = http.createServer((req, res) => {
    req.resume();
    const key = String(req.headers["x-api-key"] ?? "");
    const fail = (req.url ?? "").includes("fail");
    res.writeHead(fail ? 400 : 200, { "content-type": "application/json" });
    res.end(JSON.stringify(fail ? { error: `bad key ${key}` } : { key, [key]: "as a key" }));
  });
  await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
  const echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}`;

  const register: VaultStack["register"] = async (spec) => {
    await stack.registryClient.registerTool(
      {
        tool: {
          description: "a tool of the vault tests",
          inputSchema: { type: "object" },
          ...spec,
        },
      },
      admin,
    );
  };
  await putTestProvider(stack, "acme", as, tool.url);
  await register({
    name: "acme.whoami",
    runtime: { kind: { case: "remote", value: { url: tool.url, headers: {} } } },
    secrets: [{ oauthProvider: "acme", target: { case: "header", value: "authorization" } }],
  });
  for (const name of ["ok", "fail"])
    await register({
      name: `echo.${name}`,
      runtime: { kind: { case: "remote", value: { url: `${echoUrl}/${name}`, headers: {} } } },
      secrets: [{ secret: "echo-key", target: { case: "header", value: "x-api-key" } }],
    });
  await stack.grantAll("bot");
  // The users the agent acts for may use every tool too.
  await stack.permissionClient.grant({ grant: allowSpec("user:*", "glob:**", ["*"]) }, admin);

  const upstream = as;
  return {
    stack,
    as: upstream,
    tool,
    register,
    async call(name, user) {
      const token = await stack.agentToken("bot", { onBehalfOf: user });
      return stack.dispatcherClient().dispatch({ tool: name, arguments: {} }, stack.as(token));
    },
    async putEchoKey(value) {
      const { secret } = await stack.permissionClient.putSecret(
        {
          name: "echo-key",
          scope: {
            toolKind: SecretToolKind.GLOB,
            tool: "echo.*",
            holderKind: SecretHolderKind.EVERYONE,
          },
          value,
        },
        admin,
      );
      return secret?.id ?? "";
    },
    async untilRefreshDue(user) {
      const exp = tool.seen.filter((s) => s.sub === user).at(-1)?.exp ?? 0;
      // Past the margin by more than the second toolmesh may count past the token's `exp`
      // (expires_in is whole seconds), still before the token expires.
      const due = exp * 1000 - REFRESH_MARGIN_MS + 1100;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - Date.now())));
    },
    async stop() {
      await stack.stop();
      await upstream.stop();
      await tool.stop();
      echo.close();
    },
  };
}
