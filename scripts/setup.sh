#!/usr/bin/env bash
# npm run setup: everything a fresh machine needs to start, test and regenerate toolmesh.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/tools.sh

say() { printf 'setup: %s\n' "$*"; }

say "installing npm packages"
# npm ci refuses a lock file that lacks optional packages of other platforms (biome, buf and
# rollup binaries for Windows or macOS), which happens when the lock was written against a
# registry that does not serve them; npm install then installs the same versions for this one.
if ! npm ci --no-audit --no-fund; then
  say "npm ci refused the lock file; installing the locked versions with npm install --no-save"
  npm install --no-save --no-audit --no-fund
fi

# The devDependency `node` puts the pinned Node (package.json) at node_modules/.bin/node, which
# npm run and npx put first on PATH: every script and test runs on it, whatever node the machine has.
if ! pinned_node=$(node_modules/.bin/node --version 2>/dev/null); then
  echo "setup: node_modules/.bin/node is missing: the node package's install script did not run." >&2
  echo "setup: allow it (package.json allowScripts) and run npm run setup again." >&2
  exit 1
fi
say "Node $pinned_node (node_modules/.bin/node) runs every npm script and test"

say "nats-server $NATS_SERVER_VERSION into .toolmesh/bin (go install)"
mkdir -p "$TOOLMESH_BIN"
if GOBIN="$TOOLMESH_BIN" go install "github.com/nats-io/nats-server/v2@$NATS_SERVER_VERSION"; then
  say "nats-server $("$TOOLMESH_BIN/nats-server" --version 2>&1 | awk '{print $2}') (.toolmesh/bin/nats-server) runs under npm start and the tests"
else
  # A machine without the Go module proxy still gets a server, but an old one: say so loudly.
  echo "setup: WARNING: go install of nats-server $NATS_SERVER_VERSION failed; falling back to Debian's nats-server package." >&2
  echo "setup: WARNING: Debian ships 2.9.10 (2022): no jetstream sync_interval, so acked writes can be lost on power failure." >&2
  rm -f "$TOOLMESH_BIN/nats-server"
  if ! command -v nats-server >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >/dev/null
    elif command -v sudo >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1; then
      sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nats-server >/dev/null
    else
      echo "setup: cannot install nats-server here (no Go module proxy, no apt-get, or not root and no sudo)." >&2
      echo "setup: install nats-server $NATS_SERVER_VERSION and set NATS_SERVER_BIN, or set NATS_URL to a server with JetStream." >&2
      exit 1
    fi
  fi
  say "WARNING: using $(command -v nats-server) $(nats-server --version 2>&1 | awk '{print $2}') from PATH, not the pinned $NATS_SERVER_VERSION"
fi

say "Go code generators ($PROTOC_GEN_GO_VERSION, grpc $PROTOC_GEN_GO_GRPC_VERSION)"
GOBIN="$TOOLMESH_BIN" go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
GOBIN="$TOOLMESH_BIN" go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"
(cd libs/go && go mod download)
say "grpcurl $GRPCURL_VERSION (the reflection tests use it)"
GOBIN="$TOOLMESH_BIN" go install "github.com/fullstorydev/grpcurl/cmd/grpcurl@$GRPCURL_VERSION"

say "Python environment in .venv (grpcio-tools $GRPCIO_TOOLS_VERSION, the toolmesh package)"
[ -x "$TOOLMESH_VENV/bin/python" ] || python3 -m venv "$TOOLMESH_VENV"
"$TOOLMESH_VENV/bin/pip" install -q --disable-pip-version-check "grpcio-tools==$GRPCIO_TOOLS_VERSION"
"$TOOLMESH_VENV/bin/pip" install -q --disable-pip-version-check -e "libs/python[test]"
say "uv $UV_VERSION into .venv (the CodingAgent's Python tools)"
"$TOOLMESH_VENV/bin/pip" install -q --disable-pip-version-check "uv==$UV_VERSION"

say "the console's web app (services/console/dist/web)"
npx vite build --config services/console/vite.config.ts

say "done: npm start runs the stack, npm test runs every test"
