#!/usr/bin/env bash
# Writes docs/flags.md, the flag reference of `marks serve`, from `marks serve --help`: the help
# is the reference, and tests/cli.rs fails when the two differ.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --bin marks
{
  echo '# `marks serve` flags'
  echo
  echo 'Generated from `marks serve --help` by `bash tools/flags-doc.sh`; a test fails when this page'
  echo 'and the help differ. Why the limits have the values they have: [operations.md](operations.md).'
  echo
  echo '```text'
  target/debug/marks serve --help
  echo '```'
} >docs/flags.md
echo "wrote docs/flags.md"
