// A test stack for tests in any language: `node --import tsx scripts/stack.ts --json` starts
// nats-server and every service on free ports and a temp data dir, prints one JSON line (addresses
// and test tokens), and stops everything when its stdin closes or it gets SIGTERM/SIGINT. Python
// and Go tests start their stack through this, so their ports, JWT secret and tokens are chosen
// here, the way every TypeScript test's are (@toolmesh/testkit), never by copies of their own.
import { parseArgs } from "node:util";
import { availableServices, freePort } from "@toolmesh/launcher";
import {
  mintJwt,
  repoRoot,
  startScriptedModel,
  startStack,
  type TestClaims,
} from "@toolmesh/testkit";

const usage =
  "usage: node --import tsx scripts/stack.ts --json [--services a,b,…] [--dispatchers n]\n" +
  '  [--tokens \'{"name": {"sub": "agent-1", "roles": ["agent"], "onBehalfOf": "user-1"}}\']\n' +
  "  [--free-ports n] [--model-echo]\n";

const fail = (message: string): never => {
  process.stderr.write(`scripts/stack.ts: ${message}\n${usage}`);
  process.exit(2);
};

const options = {
  json: { type: "boolean" },
  services: { type: "string" },
  // A second Dispatcher (dispatcher-2) and more, for clients that balance and fail over.
  dispatchers: { type: "string", default: "1" },
  // JWTs to mint with the stack's (random) secret, by a name the test picks.
  tokens: { type: "string", default: "{}" },
  // Ports with nothing listening, chosen like the services' own (for "nobody answers" tests).
  "free-ports": { type: "string", default: "0" },
  // A scripted model for the tool agent that answers every message with `you said: <message>
  // (<n> user messages)`, so a client's chat() can be checked in any language.
  "model-echo": { type: "boolean", default: false },
} as const;
const { values } = (() => {
  try {
    return parseArgs({ options });
  } catch (error) {
    return fail((error as Error).message);
  }
})();
if (!values.json) fail("--json is required");
const dispatchers = Number(values.dispatchers);
const freePortCount = Number(values["free-ports"]);
if (!Number.isInteger(dispatchers) || dispatchers < 1) fail("--dispatchers must be 1 or more");
if (!Number.isInteger(freePortCount) || freePortCount < 0 || freePortCount > 16)
  fail("--free-ports must be a whole number from 0 to 16");
const principals = tokenClaims(values.tokens);
const services = values.services
  ? values.services.split(",").filter(Boolean)
  : availableServices(repoRoot).map((s) => s.name);

const model = values["model-echo"]
  ? await startScriptedModel([{ match: "", turns: [{ echo: true, count: true }] }])
  : undefined;
const stack = await startStack({
  services,
  replicas: { dispatcher: dispatchers },
  ...(model ? { serviceEnv: { "tool-agent": { TOOLMESH_MODEL_URL: model.url } } } : {}),
});
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await stack.stop();
  await model?.close();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
process.stdin.on("end", () => void stop());
process.stdin.on("close", () => void stop());
process.stdin.resume();

const tokens: Record<string, string> = {};
for (const [name, claims] of Object.entries(principals))
  tokens[name] = await mintJwt(stack.jwtSecret, claims);
const freePorts: number[] = [];
for (let i = 0; i < freePortCount; i++) freePorts.push(await freePort());

process.stdout.write(
  `${JSON.stringify({
    natsUrl: stack.nats.url,
    // The read-only credential agents subscribe to callback events with (a file path, 0600).
    natsAgentNkeyFile: stack.natsCredentialFile("agent"),
    dataDir: stack.dataDir,
    services: Object.fromEntries(
      stack.processes.map((name) => {
        const s = stack.service(name);
        return [name, { url: s.url, port: s.port, pid: s.pid }];
      }),
    ),
    dispatcherGrpcPort: stack.dispatcherGrpcPort,
    adminToken: stack.adminToken,
    serviceToken: stack.serviceToken,
    tokens,
    freePorts,
    modelUrl: model?.url ?? "",
  })}\n`,
);

/** The --tokens JSON: a name for each principal and its claims; a usage error otherwise. */
function tokenClaims(text: string): Record<string, TestClaims> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    return fail(`--tokens is not JSON: ${(error as Error).message}`);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed))
    return fail("--tokens must be a JSON object of names to claims");
  const claims: Record<string, TestClaims> = {};
  for (const [name, value] of Object.entries(parsed)) {
    const { sub, roles, onBehalfOf } = (value ?? {}) as Record<string, unknown>;
    const rolesOk =
      roles === undefined || (Array.isArray(roles) && roles.every((r) => typeof r === "string"));
    if (typeof sub !== "string" || sub === "" || !rolesOk)
      fail(`--tokens.${name} needs "sub" (a string) and, optionally, "roles" (strings)`);
    if (onBehalfOf !== undefined && typeof onBehalfOf !== "string")
      fail(`--tokens.${name}.onBehalfOf must be a string`);
    claims[name] = {
      sub: sub as string,
      ...(roles ? { roles: roles as string[] } : {}),
      ...(onBehalfOf ? { onBehalfOf: onBehalfOf as string } : {}),
    };
  }
  return claims;
}
