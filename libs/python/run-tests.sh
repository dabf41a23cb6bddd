#!/usr/bin/env bash
# Runs the Python client and tool SDK tests (pytest) against a real stack the fixture starts.
# Needs `npm run setup` (the .venv with the toolmesh package) and nats-server on PATH.
set -euo pipefail
cd "$(dirname "$0")/../.."
venv="${TOOLMESH_VENV:-$PWD/.venv}"
if [ ! -x "$venv/bin/python" ]; then
  echo "libs/python: $venv is missing; run npm run setup" >&2
  exit 1
fi
exec "$venv/bin/python" -m pytest libs/python/tests -q -rs "$@"
