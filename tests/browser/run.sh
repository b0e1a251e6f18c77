#!/usr/bin/env bash
# Browser tests of the web front (/, /explore, /explore/{slug}, /compare, /indices, /scorecard,
# /docs): Playwright (Python, from PyPI) driving Debian's chromium against the real `marks` server, which the
# tests start themselves. Nothing is downloaded by Playwright: `playwright install` is never run.
#
#   tests/browser/run.sh [pytest arguments]        e.g. tests/browser/run.sh -k docs -x
#
# MARKS_BIN   the server binary (default target/debug/marks; build it first with cargo build)
# CHROMIUM    the browser (default /usr/bin/chromium; installed with apt-get when missing)
# MARKS_WEB_DIR  optional: the server the tests start reads the pages from this folder (e.g.
#             $PWD/web) instead of the copy compiled into MARKS_BIN, to try edits without a rebuild
#
# Made here: target/browser-venv (Python venv), target/browser-vendor (axe-core, test-only,
# never served), target/browser-screenshots (each page at 1280x800 and 390x844).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

PLAYWRIGHT_VERSION=1.65.2
PYTEST_VERSION=9.2.0
# Signs the forged records the tests serve to the explorer.
CRYPTOGRAPHY_VERSION=50.0.2
AXE_VERSION=4.14.1

export MARKS_BIN="${MARKS_BIN:-target/debug/marks}"
export CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"

if [[ ! -x "$MARKS_BIN" ]]; then
  echo "run.sh: no server binary at $MARKS_BIN (cargo build, or set MARKS_BIN)" >&2
  exit 2
fi

# Debian's packages this script installs when they are missing (chromium, npm).
SUDO=""
if [[ "$(id -u)" -ne 0 ]]; then SUDO="sudo"; fi

if [[ ! -x "$CHROMIUM" ]]; then
  if [[ "$CHROMIUM" != /usr/bin/chromium ]]; then
    echo "run.sh: CHROMIUM=$CHROMIUM is not an executable" >&2
    exit 2
  fi
  if ! apt-cache show chromium >/dev/null 2>&1; then
    $SUDO apt-get update
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y chromium
fi

VENV=target/browser-venv
if [[ ! -x "$VENV/bin/python" ]]; then
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; \
sys.exit(m.version('playwright') != '$PLAYWRIGHT_VERSION' or m.version('pytest') != '$PYTEST_VERSION' \
or m.version('cryptography') != '$CRYPTOGRAPHY_VERSION')" 2>/dev/null; then
  "$VENV/bin/pip" install --quiet --disable-pip-version-check \
    "playwright==$PLAYWRIGHT_VERSION" "pytest==$PYTEST_VERSION" "cryptography==$CRYPTOGRAPHY_VERSION"
fi

VENDOR=target/browser-vendor
export AXE_JS="$ROOT/$VENDOR/axe-core-$AXE_VERSION/package/axe.min.js"
if [[ ! -f "$AXE_JS" ]]; then
  if ! command -v npm >/dev/null; then
    echo "installing Debian's npm (to fetch axe-core from the npm registry)"
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q npm >/dev/null ||
      { $SUDO apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q npm >/dev/null; }
  fi
  mkdir -p "$VENDOR/axe-core-$AXE_VERSION"
  (cd "$VENDOR" && npm pack --silent "axe-core@$AXE_VERSION" >/dev/null)
  tar -xzf "$VENDOR/axe-core-$AXE_VERSION.tgz" -C "$VENDOR/axe-core-$AXE_VERSION"
fi

mkdir -p target/browser-screenshots
exec "$VENV/bin/python" -m pytest -c tests/browser/pytest.ini -o cache_dir="$ROOT/target/browser-pytest-cache" tests/browser "$@"
