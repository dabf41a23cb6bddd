// A test stack for tests in any language: `node --import tsx scripts/stack.ts --json` starts
// nats-server and every service on free ports and a temp data dir, prints one JSON line (addresses,
// tokens and the JWT secret — test credentials only), and stops everything when its stdin closes
// or it gets SIGTERM/SIGINT. Python and Go tests start their stack through this.
import { availableServices } from "@toolmesh/launcher";
import { repoRoot, startStack } from "@toolmesh/testkit";

if (!process.argv.includes("--json")) {
  process.stderr.write(
    "usage: node --import tsx scripts/stack.ts --json [--services a,b,…] [--dispatchers n]\n",
  );
  process.exit(2);
}
const only = process.argv[process.argv.indexOf("--services") + 1];
// --dispatchers 2: a second Dispatcher (dispatcher-2), for clients that balance and fail over.
const dispatchers = process.argv.includes("--dispatchers")
  ? Number(process.argv[process.argv.indexOf("--dispatchers") + 1])
  : 1;
const services = process.argv.includes("--services")
  ? (only ?? "").split(",").filter(Boolean)
  : availableServices(repoRoot).map((s) => s.name);

const stack = await startStack({
  services,
  replicas: { dispatcher: dispatchers },
  ...(process.env.TOOLMESH_JWT_SECRET ? { jwtSecret: process.env.TOOLMESH_JWT_SECRET } : {}),
});
let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await stack.stop();
  process.exit(0);
};
process.on("SIGTERM", () => void stop());
process.on("SIGINT", () => void stop());
process.stdin.on("end", () => void stop());
process.stdin.on("close", () => void stop());
process.stdin.resume();

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
    jwtSecret: stack.jwtSecret,
  })}\n`,
);
