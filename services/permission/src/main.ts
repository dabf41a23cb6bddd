import { followRegistryTools } from "@toolmesh/nats";
import { runService } from "@toolmesh/service";
import { answerSecretRequests } from "@toolmesh/vault";
import { bootstrapKeys } from "./bootstrap.js";
import { permissionConfig } from "./config.js";
import { NatsPermissionEvents } from "./events.js";
import { KvPermissionStore } from "./kv-store.js";
import { sweepPendingEvery } from "./oauth-pending.js";
import { createPermissionServer } from "./server.js";
import { loadVaultCipher } from "./vault-key.js";
import { createVaultParts } from "./vault-parts.js";
import { openVaultBucket, Vault } from "./vault-store.js";

await runService({
  name: "permission",
  config: permissionConfig,
  streams: ["changes", "records"],
  async start({ config, log, nc, js, authenticatedRpc }) {
    // A wrong vault key stops the start here, with the message saying which key to give.
    const cipher = await loadVaultCipher(config, log);
    const vault = await Vault.open(
      await openVaultBucket(nc, config.jetstreamReplicas),
      cipher,
      log,
    );
    const store = await KvPermissionStore.open(nc, config.jetstreamReplicas, log);
    const events = new NatsPermissionEvents(js, log);
    await bootstrapKeys({ store, events, dataDir: config.dataDir, log });
    // The Registry owns its bucket; until it exists, Check fails closed with UNAVAILABLE.
    const tools = followRegistryTools(
      nc,
      log,
      "Check answers UNAVAILABLE until the Registry creates it",
    );
    await tools.firstAttempt;
    let publicUrl = config.publicUrl?.replace(/\/+$/, "") ?? "";
    const parts = createVaultParts(
      store.vaultIndex,
      vault,
      {
        publicUrl: () => publicUrl,
        refreshMarginMs: config.oauthRefreshMarginMs,
        linkTtlMs: config.connectLinkTtlMs,
        maxSecrets: config.vaultMaxSecrets,
        issuer: config.jwtIssuer,
      },
      log,
    );
    // Authorizations nobody came back for are removed once expired (every replica sweeps).
    const sweeper = sweepPendingEvery(
      parts.connections.pending,
      Math.min(60_000, Math.max(1_000, config.connectLinkTtlMs / 2)),
      log,
    );
    const answers = answerSecretRequests(
      nc,
      {
        resolve: (request) => parts.resolver.resolve(request),
        link: async (provider, user) => parts.connections.connectLink(provider, user).url,
      },
      (error) =>
        log.warn(
          { err_name: (error as Error)?.name, err_code: (error as { code?: unknown })?.code },
          "a secret request failed",
        ),
    );
    const server = createPermissionServer({
      store,
      events,
      tools,
      vault: parts,
      jwt: {
        issuer: config.jwtIssuer,
        audience: config.jwtAudience,
        userClaim: config.jwtUserClaim,
        rolesClaim: config.jwtRolesClaim,
      },
      ...(await authenticatedRpc()),
    });
    return {
      server,
      async listening(listening) {
        // Without TOOLMESH_PERMISSION_PUBLIC_URL, links name the address this process listens on.
        if (!publicUrl) publicUrl = listening.url.replace("//0.0.0.0:", "//127.0.0.1:");
      },
      stop() {
        sweeper.stop();
        answers.stop();
        tools.stop();
        store.stop();
      },
    };
  },
});
