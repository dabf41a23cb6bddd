import { chmod, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import {
  ADMIN_TOKEN_FILE,
  API_KEY_HASH_ALGORITHM,
  mintApiKey,
  principal,
  Role,
  SERVICE_TOKEN_FILE,
} from "@toolmesh/auth";
import type { Logger } from "@toolmesh/log";
import { ApiKeyRecordSchema, ChangeType } from "@toolmesh/proto";
import type { PermissionEvents } from "./events.js";
import type { PermissionStore } from "./store.js";

/** The agent id of the bootstrap keys' creator, as it appears in created_by and audit records. */
const BOOTSTRAP_AGENT = "toolmesh-bootstrap";

/**
 * On the first start of a fresh bucket, creates an admin key and a service key and writes their
 * tokens to `<dataDir>/admin.token` and `<dataDir>/service.token` (mode 0600). The marker key is
 * created atomically first, so of two replicas starting together exactly one bootstraps. The
 * tokens are never logged; only the file paths are.
 */
export async function bootstrapKeys(deps: {
  store: PermissionStore;
  events: PermissionEvents;
  dataDir: string;
  log: Logger;
}): Promise<void> {
  const { store, dataDir, log } = deps;
  const adminFile = path.resolve(dataDir, ADMIN_TOKEN_FILE);
  const serviceFile = path.resolve(dataDir, SERVICE_TOKEN_FILE);
  if (!(await store.claimBootstrap())) {
    log.info({ admin_token_file: adminFile }, "admin key already bootstrapped");
    return;
  }
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const by = principal(BOOTSTRAP_AGENT, [Role.Admin]);
  // The service key is knowhub-sync's: it reads (service) and stores slugs (knowhub), no more.
  for (const [agentId, roles, file] of [
    ["admin", [Role.Admin], adminFile],
    ["toolmesh-service", [Role.Service, Role.Knowhub], serviceFile],
  ] as const) {
    const role = roles.join(", ");
    const minted = mintApiKey();
    await store.createKey(
      create(ApiKeyRecordSchema, {
        apiKey: {
          id: minted.id,
          agentId,
          roles: [...roles],
          name: `bootstrap ${role} key`,
          createdAt: timestampNow(),
          createdBy: BOOTSTRAP_AGENT,
        },
        salt: minted.salt,
        hash: minted.hash,
        hashAlgorithm: API_KEY_HASH_ALGORITHM,
      }),
    );
    await writeFile(file, `${minted.token}\n`, { mode: 0o600 });
    // writeFile keeps the mode of a file that already exists (an older stack's token).
    await chmod(file, 0o600);
    await deps.events.publish(by, {
      kind: "api_key",
      id: minted.id,
      type: ChangeType.PUT,
      reason: `bootstrapped ${role} API key ${minted.id} for agent "${agentId}"`,
    });
  }
  log.info(
    { admin_token_file: adminFile, service_token_file: serviceFile },
    "bootstrapped the admin and service API keys; their tokens are in these files",
  );
}
