import { create } from "@bufbuild/protobuf";
import {
  type Authenticator,
  authInterceptor,
  createApiKeyVerifier,
  isApiKeyToken,
} from "@toolmesh/auth";
import { createLogger } from "@toolmesh/log";
import { buckets, MemorySnapshot } from "@toolmesh/nats";
import { ToolSchema } from "@toolmesh/proto";
import { testSigner } from "@toolmesh/testkit";
import { newVaultKey, parseVaultKey, VaultCipher } from "@toolmesh/vault";
import { RecordedPermissionEvents } from "../src/events.js";
import type { PermissionDeps } from "../src/handlers.js";
import { MemoryPermissionStore } from "../src/memory-store.js";
import { createVaultParts } from "../src/vault-parts.js";
import { MemorySealedBucket, Vault } from "../src/vault-store.js";

/** The Registry's tools as the in-memory snapshot holds them: scopes and groups. */
export const registryTools: { name: string; requiredScopes: string[]; groups: string[] }[] = [
  { name: "data.query", requiredScopes: ["read:data"], groups: ["analytics"] },
  { name: "data.insert", requiredScopes: ["write:data"], groups: ["analytics"] },
  { name: "mail.send", requiredScopes: ["send:mail"], groups: [] },
  { name: "util.clock", requiredScopes: [], groups: [] },
];

/** Everything Permission is built from, in memory, plus a clock and tokens to call it with. */
export interface MemoryPermission {
  deps: PermissionDeps;
  store: MemoryPermissionStore;
  /** The vault's sealed values, as the bucket would hold them. */
  sealed: MemorySealedBucket;
  events: RecordedPermissionEvents;
  tools: MemorySnapshot<typeof ToolSchema>;
  /** The handlers' and the key verifier's clock; a test moves it. */
  clock: { ms: number };
  /** JWTs and API keys, verified as a service verifies them (no NATS). */
  authenticate: Authenticator;
  interceptors: ReturnType<typeof authInterceptor>[];
  /** JWTs of an admin ("ops"), a service ("dispatcher") and an agent ("agent-7"). */
  tokens: { admin: string; service: string; agent: string };
  /** Mints a JWT signed with this setup's secret. */
  jwt(claims: { sub: string; roles?: string[]; onBehalfOf?: string }): Promise<string>;
}

/** In-memory store, recorded events, the registry tools above, real JWT and API key checks. */
export async function memoryPermission(): Promise<MemoryPermission> {
  const signer = testSigner();
  const clock = { ms: Date.now() };
  const now = () => clock.ms;
  const store = new MemoryPermissionStore();
  const events = new RecordedPermissionEvents();
  const tools = new MemorySnapshot(ToolSchema);
  for (const t of registryTools) {
    tools.put(
      buckets.registry.toolKey(t.name),
      create(ToolSchema, {
        spec: { name: t.name, requiredScopes: t.requiredScopes },
        groups: t.groups,
      }),
    );
  }
  const verifyJwt = signer.verifier();
  const verifyKey = createApiKeyVerifier(store.keys, now);
  // The same split a service makes: API keys by their prefix, everything else as a JWT.
  const authenticate: Authenticator = async (token) =>
    isApiKeyToken(token) ? verifyKey(token) : verifyJwt(token);
  const jwt = (claims: { sub: string; roles?: string[]; onBehalfOf?: string }) =>
    signer.token(claims.sub, claims.roles, claims.onBehalfOf);
  const log = createLogger("permission-test", "silent");
  const sealed = new MemorySealedBucket();
  const vault = await Vault.open(
    sealed,
    new VaultCipher(parseVaultKey(newVaultKey(), "a test key")),
    log,
  );
  const vaultParts = createVaultParts(
    store.vaultIndex,
    vault,
    {
      publicUrl: () => "http://permission.test",
      refreshMarginMs: 60_000,
      linkTtlMs: 600_000,
      maxSecrets: 100,
      issuer: "toolmesh",
    },
    log,
    now,
  );
  return {
    sealed,
    deps: {
      store,
      events,
      tools,
      log,
      now,
      vault: vaultParts,
      jwt: {
        issuer: "toolmesh",
        audience: "toolmesh",
        userClaim: "on_behalf_of",
        rolesClaim: "roles",
      },
    },
    store,
    events,
    tools,
    clock,
    authenticate,
    interceptors: [authInterceptor(authenticate)],
    tokens: {
      admin: await jwt({ sub: "ops", roles: ["admin"] }),
      service: await jwt({ sub: "dispatcher", roles: ["service"] }),
      agent: await jwt({ sub: "agent-7", roles: ["agent"] }),
    },
    jwt,
  };
}
