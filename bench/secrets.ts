import { create } from "@bufbuild/protobuf";
import { createLogger } from "@toolmesh/log";
import { credentialOptions, inboxPrefix } from "@toolmesh/nats";
import { PrincipalSchema, SecretHolderKind, SecretToolKind, ToolSchema } from "@toolmesh/proto";
import { startStack } from "@toolmesh/testkit";
import { requestConnectLink, requestSecrets } from "@toolmesh/vault";
import { connect } from "nats";
import { followVault } from "../services/dispatcher/src/catalog/snapshots.js";
import { CallSecrets, type VaultLink } from "../services/dispatcher/src/runtimes/call-secrets.js";
import type { AttemptResult, ToolRuntime } from "../services/dispatcher/src/runtimes/runtime.js";
import { withSecrets } from "../services/dispatcher/src/runtimes/secret-injection.js";

// npm run bench:secrets: what resolving a tool's secrets costs the Dispatcher on the call path,
// in µs a call, on a real Permission (its vault on nats-server) reached over the bus as the
// Dispatcher reaches it: a tool without secrets (the wrapper's pass-through), a tool with one
// secret whose value is cached (the refusal check and the resolution of every call), and one
// whose cache misses (Permission asked over the bus: once per put, refresh or revocation).
const CALLS = Number(process.env.BENCH_SECRET_CALLS ?? 200_000);
const MISSES = Number(process.env.BENCH_SECRET_MISSES ?? 2_000);

const stack = await startStack({ services: ["permission", "registry"] });
try {
  await stack.permissionClient.putSecret(
    {
      name: "api-key",
      scope: {
        toolKind: SecretToolKind.GLOB,
        tool: "bench.*",
        holderKind: SecretHolderKind.EVERYONE,
      },
      value: "bench-secret-value",
    },
    stack.as(stack.adminToken),
  );
  const nc = await connect({
    servers: stack.natsUrl.split(","),
    ...credentialOptions({ nkeyFile: stack.natsCredentialFile("dispatcher") }),
    // The Dispatcher's bus user reads replies only under its own inbox prefix.
    inboxPrefix: inboxPrefix("dispatcher"),
  });
  const log = createLogger("bench-secrets", "silent");
  const view = followVault(nc, log);
  await Promise.all([view.secrets.loaded, view.providers.loaded, view.connections.loaded]);
  const link: VaultLink = {
    resolve: (request) => requestSecrets(nc, request, 5000),
    link: (provider, user) => requestConnectLink(nc, provider, user, 5000),
  };
  const principal = create(PrincipalSchema, { agentId: "bench", userId: "u1", roles: ["agent"] });
  const plain = create(ToolSchema, {
    spec: {
      name: "bench.plain",
      runtime: { kind: { case: "remote", value: { url: "http://x" } } },
    },
  });
  const secret = create(ToolSchema, {
    spec: {
      name: "bench.secret",
      runtime: { kind: { case: "remote", value: { url: "http://x" } } },
      secrets: [{ secret: "api-key", target: { case: "header", value: "x-api-key" } }],
    },
  });
  const ok: AttemptResult = { ok: true, output: { done: true } };
  const noop: ToolRuntime = { invoke: async () => ok };
  const secrets = new CallSecrets(view, link, 60_000);
  const wrapped = withSecrets(noop, secrets);
  const attempt = (tool: typeof plain) => ({
    tool,
    request: { principal } as never,
    signal: new AbortController().signal,
    onEvent: () => {},
  });

  const time = async (label: string, n: number, run: () => Promise<unknown>) => {
    for (let i = 0; i < Math.min(n, 5_000); i++) await run();
    const started = process.hrtime.bigint();
    for (let i = 0; i < n; i++) await run();
    const us = Number(process.hrtime.bigint() - started) / 1000 / n;
    return { label, us };
  };
  const rows = [
    await time("bare runtime (no wrapper)", CALLS, () => noop.invoke(attempt(plain))),
    await time("tool without secrets, through withSecrets", CALLS, () =>
      wrapped.invoke(attempt(plain)),
    ),
    await time("tool with a secret: refusal check + cached resolution", CALLS, async () => {
      await secrets.check(secret, principal);
      return wrapped.invoke(attempt(secret));
    }),
    await time("tool with a secret, cache miss (Permission over the bus)", MISSES, () =>
      new CallSecrets(view, link, 60_000).resolve(secret, principal),
    ),
  ];
  const base = rows[0]?.us ?? 0;
  process.stdout.write(
    "\nsecret resolution on the call path (µs a call; cost = beyond the bare runtime)\n",
  );
  for (const row of rows)
    process.stdout.write(
      `  ${row.label.padEnd(58)} ${row.us.toFixed(2).padStart(8)} µs   cost ${(row.us - base).toFixed(2).padStart(8)} µs\n`,
    );
  for (const v of Object.values(view)) v.stop();
  await nc.close();
} finally {
  await stack.stop();
}
