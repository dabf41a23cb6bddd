#!/usr/bin/env bash
# Runs the Go client tests (go vet, go test) against a real stack TestMain starts, and prints a
# summary line. Needs Go, node with the npm packages (npm run setup) and nats-server on PATH.
set -euo pipefail
cd "$(dirname "$0")"
go vet ./...
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
go test -count=1 -v "$@" ./... >"$log" 2>&1
status=$?
set -e
grep -E -- '^(--- FAIL|FAIL|ok|panic)|^\s+--- FAIL|^\s+\S+_test\.go:[0-9]+:|--- SKIP' "$log" || true
passed=$(grep -cE -- '^\s*--- PASS' "$log" || true)
failed=$(grep -cE -- '^\s*--- FAIL' "$log" || true)
skipped=$(grep -cE -- '^\s*--- SKIP' "$log" || true)
echo "go-test: $passed passed, $failed failed, $skipped skipped"
exit "$status"
