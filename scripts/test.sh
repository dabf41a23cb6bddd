#!/usr/bin/env bash
# npm test: every check and every test, in the order a failure is cheapest to find.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/tools.sh

# npm test puts node_modules/.bin first on PATH, so this is the pinned Node, not the machine's.
echo "== node $(node --version) ($(command -v node))"
if ! node -e 'const [a, b] = process.versions.node.split(".").map(Number); process.exit(a > 22 || (a === 22 && b >= 13) ? 0 : 1)'; then
  echo "test: toolmesh needs Node 22.13 or newer; run it through npm test after npm run setup" >&2
  exit 1
fi

echo "== buf lint"
npx buf lint
echo "== biome"
npx biome check .
echo "== layers (dependency-cruiser: no loops, services apart, the Dispatcher's layers)"
npx tsx scripts/lint-layers.ts
echo "== tsc"
npx tsc --noEmit -p .
npx tsc --noEmit -p services/console/web
echo "== Go module builds and vets"
(cd libs/go && go build ./... && go vet ./...)
echo "== Python stubs import"
"$TOOLMESH_VENV/bin/python" -c "import toolmesh.registry.v1.registry_pb2_grpc, toolmesh.dispatcher.v1.dispatcher_pb2_grpc, toolmesh.events.v1.events_pb2; print('python stubs import')"
echo "== vitest"
npx vitest run
echo "== faults (npm run test:faults: kill -9, full and stopped streams, nats-server killed under calls)"
npm run -s test:faults
echo "== docker runtime (vitest against dockerd; skips with one line where there is none)"
npm run -s test:docker
echo "== console in chromium (npm run test:browser; screenshots in test-artifacts/console)"
npm run test:browser
echo "== Python client and tool SDK (pytest, real stack)"
libs/python/run-tests.sh
echo "== Go client (go test, real stack)"
libs/go/run-tests.sh
echo "== three-node cluster under faults (npm run test:cluster; CLUSTER_CALLS, 5000 by default)"
npm run -s test:cluster
