#!/usr/bin/env bash
# The fleet on one machine, with real processes: redis-server, an S3-compatible store
# (moto_server), nginx with deploy/nginx.conf and three replicas; then a six-node Redis Cluster
# made with redis-cli --cluster create. tests/live/fleet_check.py asserts the shared budgets,
# publication, refusals, a Redis outage, a replica killed mid-load, and on the cluster exact and
# leased budgets and a master killed under load. Installs what it needs: redis-server and nginx from Debian's packages, moto[server]
# into target/fleet-venv. Every process it starts is stopped by its PID, even on failure.
#   bash tests/live/fleet-check.sh [--publishes N]
set -euo pipefail
cd "$(dirname "$0")/../.."

missing=()
command -v redis-server >/dev/null || missing+=(redis-server)
command -v nginx >/dev/null || missing+=(nginx)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  # A fresh machine's package lists may be empty: read them once if the install cannot.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null ||
    { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null; }
fi
venv=target/fleet-venv
if [ ! -x "$venv/bin/moto_server" ]; then
  python3 -m venv "$venv"
  # Pinned: the versions the check is known to pass with; raised deliberately, not by a release.
  "$venv/bin/pip" install --quiet --disable-pip-version-check "moto[server]==5.2.5" "boto3==1.44.8"
fi

cargo build --quiet --bin marks
work=$(mktemp -d)
cleanup() {
  # The driver stops what it started; this catches what a killed driver left.
  if [ -f "$work/pids" ]; then
    while read -r pid; do kill "$pid" 2>/dev/null || true; done <"$work/pids"
  fi
  rm -rf "$work"
}
trap cleanup EXIT

"$venv/bin/python" tests/live/fleet_check.py --marks target/debug/marks --work "$work" \
  --moto-server "$venv/bin/moto_server" "$@"
