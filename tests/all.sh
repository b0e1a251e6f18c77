#!/usr/bin/env bash
# Every test, in the order the README gives them: the Rust tests (unit, integration over real
# HTTP, the builder's), the sample importer's tests, the methodology v0.6.0 research harness's
# tests, the checks against a live server (schemathesis, the examples, a
# generated client, the MCP client), the fleet check (Redis, S3, nginx, three replicas), the
# Python SDK's tests, and the pages in a real browser. Stops at the first failure.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s ===\n' "$*"; }

step "cargo test --workspace"
cargo test --workspace --locked

step "sample importer: python3 -m unittest sample/test_import_public_events.py"
python3 -m unittest sample/test_import_public_events.py
step "sample evidence: python3 -m unittest sample/test_evidence.py"
python3 -m unittest sample/test_evidence.py

step "methodology v0.6.0 research harness: python -m unittest tools/test_methodology_v060.py"
if [ ! -x target/research-venv/bin/python ] || ! target/research-venv/bin/python -c "import numpy, scipy" 2>/dev/null; then
  python3 -m venv target/research-venv
  target/research-venv/bin/pip install --quiet --disable-pip-version-check "numpy==2.4.6" "scipy==1.17.1"
fi
target/research-venv/bin/python -m unittest tools/test_methodology_v060.py

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
