#!/usr/bin/env bash
# Every test, in the order the README gives them: the Rust tests (unit, integration over real
# HTTP, the builder's), the sample importer's tests, the checks against a live server (schemathesis, the examples, a
# generated client, the MCP client), the fleet check (Redis, S3, nginx, three replicas), the
# Python SDK's tests, and the pages in a real browser. Stops at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s ===\n' "$*"; }

step "cargo test --workspace"
cargo test --workspace --locked

step "sample importer: python3 -m unittest sample/test_import_public_events.py"
python3 -m unittest sample/test_import_public_events.py

step "tests/live/api-checks.sh"
bash tests/live/api-checks.sh

step "tests/live/fleet-check.sh"
bash tests/live/fleet-check.sh

step "clients/python/run-tests.sh"
MARKS_BIN="$PWD/target/debug/marks" bash clients/python/run-tests.sh

step "tests/browser/run.sh"
MARKS_BIN="$PWD/target/debug/marks" bash tests/browser/run.sh

echo
echo "every test passed"
