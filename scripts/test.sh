#!/usr/bin/env bash
# The project's whole test suite: every Rust test in the workspace, then the checks that need
# a live server and Python (schemathesis, the Python client example, the signature test vector).
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --locked
bash scripts/api-checks.sh
