import { chmod, mkdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { create } from "@bufbuild/protobuf";
import { timestampNow } from "@bufbuild/protobuf/wkt";
import {
  ADMIN_TOKEN_FILE,
  API_KEY_HASH_ALGORITHM,
  mintApiKey,
  type Principal,
  principal,
  Role,
  SERVICE_TOKEN_FILE,
  toolAgentIdentity,
} from "@toolmesh/auth";
import type { Logger } from "@toolmesh/log";
import {
  ApiKeyRecordSchema,
  ChangeType,
  Effect,
  GrantSchema,
  PrincipalKind,
  ResourceKind,
} from "@toolmesh/proto";
import type { PermissionEvents } from "./events.js";
import { newGrantId } from "./handlers.js";
import type { PermissionStore } from "./store.js";

/** The agent id of the bootstrap keys' creator, as it appears in created_by and audit records. */
const BOOTSTRAP_AGENT = "toolmesh-bootstrap";

interface BootstrapDeps {
  store: PermissionStore;
  events: PermissionEvents;
  dataDir: string;
  log: Logger;
}

/**
 * On the first start of a fresh bucket, creates an admin key and a service key and writes their
 * tokens to `<dataDir>/admin.token` and `<dataDir>/service.token` (mode 0600); then, once per
 * bucket too (so a stack made before the tool agent gets them at its next start), the tool
 * agent's keys and the CodingAgent's grant. Each step's marker key is created atomically first,
 * so of two replicas starting together exactly one does it. Tokens are never logged; only the file
 * paths are.
 */
export async function bootstrapKeys(deps: BootstrapDeps): Promise<void> {
  await bootstrapAdmin(deps);
  await bootstrapToolAgent(deps);
}

async function bootstrapAdmin(deps: BootstrapDeps): Promise<void> {
  const { store, dataDir, log } = deps;
  const adminFile = path.resolve(dataDir, ADMIN_TOKEN_FILE);
  const serviceFile = path.resolve(dataDir, SERVICE_TOKEN_FILE);
  if (!(await store.claimBootstrap("admin"))) {
    log.info({ admin_token_file: adminFile }, "admin key already bootstrapped");
    return;
  }
  // The service key is knowhub-sync's: it reads (service) and stores slugs (knowhub), no more.
  await mintKey(deps, "admin", [Role.Admin], adminFile);
  await mintKey(deps, "toolmesh-service", [Role.Service, Role.Knowhub], serviceFile);
  log.info(
    { admin_token_file: adminFile, service_token_file: serviceFile },
    "bootstrapped the admin and service API keys; their tokens are in these files",
  );
}

/**
 * The tool agent's key (role tool-agent: it registers its own tools and, disabled, those it
 * builds) and the CodingAgent's (role agent), with one grant: the coding tools, nothing else.
 */
async function bootstrapToolAgent(deps: BootstrapDeps): Promise<void> {
  const { store, dataDir, log } = deps;
  const id = toolAgentIdentity;
  if (!(await store.claimBootstrap("tool_agent"))) return;
  const agentFile = path.resolve(dataDir, id.tokenFile);
  const codingFile = path.resolve(dataDir, id.codingTokenFile);
  await mintKey(deps, id.agentId, [Role.ToolAgent], agentFile);
  await mintKey(deps, id.codingAgentId, [Role.Agent], codingFile);
  const grant = create(GrantSchema, {
    id: newGrantId(Date.now()),
    spec: {
      principal: { kind: PrincipalKind.AGENT, id: id.codingAgentId },
      resource: { kind: ResourceKind.GLOB, pattern: `${id.toolPrefix}*` },
      scopes: [id.scope],
      effect: Effect.ALLOW,
      enabled: true,
      description: "the CodingAgent calls its own tools through the chain, and nothing else",
    },
    createdBy: BOOTSTRAP_AGENT,
    createdAt: timestampNow(),
    revision: 1n,
  });
  await store.createGrant(grant);
  await deps.events.publish(bootstrapper(), {
    kind: "grant",
    id: grant.id,
    type: ChangeType.PUT,
    reason: `bootstrapped grant ${grant.id}: allow agent "${id.codingAgentId}" scope ${id.scope} on ${id.toolPrefix}*`,
  });
  log.info(
    { tool_agent_token_file: agentFile, coding_agent_token_file: codingFile },
    "bootstrapped the tool agent's and the CodingAgent's API keys; their tokens are in these files",
  );
}

function bootstrapper(): Principal {
  return principal(BOOTSTRAP_AGENT, [Role.Admin]);
}

/** Creates one API key and writes its token to `file` (mode 0600). */
async function mintKey(
  deps: BootstrapDeps,
  agentId: string,
  roles: string[],
  file: string,
): Promise<void> {
  const role = roles.join(", ");
  const minted = mintApiKey();
  await deps.store.createKey(
    create(ApiKeyRecordSchema, {
      apiKey: {
        id: minted.id,
        agentId,
        roles,
        name: `bootstrap ${role} key`,
        createdAt: timestampNow(),
        createdBy: BOOTSTRAP_AGENT,
      },
      salt: minted.salt,
      hash: minted.hash,
      hashAlgorithm: API_KEY_HASH_ALGORITHM,
    }),
  );
  await mkdir(deps.dataDir, { recursive: true, mode: 0o700 });
  await writeFile(file, `${minted.token}\n`, { mode: 0o600 });
  // writeFile keeps the mode of a file that already exists (an older stack's token).
  await chmod(file, 0o600);
  await deps.events.publish(bootstrapper(), {
    kind: "api_key",
    id: minted.id,
    type: ChangeType.PUT,
    reason: `bootstrapped ${role} API key ${minted.id} for agent "${agentId}"`,
  });
}
