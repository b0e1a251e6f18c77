#!/usr/bin/env bash
# Tests the Python SDK as a user gets it: a fresh venv, `pip install './clients/python[pandas,test]'`
# from PyPI, then ruff (lint and format), mypy --strict and pytest against a live server that the
# tests start themselves.
#
#   MARKS_BIN=target/release/marks clients/python/run-tests.sh [pytest arguments]
#
# Needs Python 3.9+ (python3, or $PYTHON) and the server binary: $MARKS_BIN, else
# target/release/marks, else target/debug/marks. The dataset is $MARKS_SAMPLE_DIR, else sample/,
# else snapshots/sample/. The venv is made under $TMPDIR (else target/) and removed afterwards
# (KEEP_VENV=1 keeps it). Exits non-zero if any step fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
python="${PYTHON:-python3}"

if [ -z "${MARKS_BIN:-}" ]; then
  for candidate in "$repo/target/release/marks" "$repo/target/debug/marks"; do
    if [ -x "$candidate" ]; then
      export MARKS_BIN="$candidate"
      break
    fi
  done
fi
if [ -z "${MARKS_BIN:-}" ] || [ ! -x "$MARKS_BIN" ]; then
  echo "run-tests.sh: no server binary: set MARKS_BIN (or build target/release/marks)" >&2
  exit 2
fi
export MARKS_BIN="$(cd "$(dirname "$MARKS_BIN")" && pwd)/$(basename "$MARKS_BIN")"

venv_parent="${TMPDIR:-$repo/target}"
mkdir -p "$venv_parent"
venv="$(mktemp -d "${venv_parent%/}/valuation-marks-venv.XXXXXX")"
log="$venv.pytest.log"
cleanup() {
  if [ "${KEEP_VENV:-0}" = 1 ]; then echo "venv kept at $venv"; else rm -rf "$venv"; fi
  rm -f "$log"
}
trap cleanup EXIT

echo "--- venv at $venv ($("$python" --version 2>&1)), server $MARKS_BIN"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$here[pandas,test]"
"$venv/bin/python" -c 'import valuation_marks as vm; print("installed valuation-marks", vm.__version__)'

cd "$here"
echo "--- ruff check"
"$venv/bin/ruff" check .
echo "--- ruff format --check"
"$venv/bin/ruff" format --check .
echo "--- mypy --strict"
"$venv/bin/mypy" --strict
echo "--- pytest"
"$venv/bin/python" -m pytest -p no:cacheprovider "$@" | tee "$log"
echo "pytest: $(tail -n 1 "$log" | sed -e 's/^=* *//' -e 's/ *=*$//')"
