#!/usr/bin/env bash
# What the pages cost against the API: requests/s of `/`, `/scorecard`, `/explore` and a
# fingerprinted asset against getCompany, on one server with --no-access-log, keep-alive,
# interleaved rounds in one run; server on CPU 0 with one worker, wrk on CPU 1. Pages are sent
# as a browser asks for them (Accept-Encoding: gzip); getCompany with the bench key.
#
#   bash benches/lab/pages.sh        # DURATION=5 ROUNDS=3 CONNECTIONS=32
#
# Prints requests/s per path (median of ROUNDS) and each as a ratio of getCompany, and the
# bytes on the wire of each page (gzip).
set -euo pipefail
cd "$(dirname "$0")/../.."

DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-32}
work=target/bench-pages
source benches/lab/setup.sh
install_missing wrk
prepare_sample

pid=""
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

marks_serve --via taskset -c 0 -- "$marks" "$work/serve.log" --snapshot "$work/sample.snap" \
  --keys "$work/keys.toml" --threads 1 --no-access-log --log-level warn
pid=$marks_pid
base=$marks_url
asset=$(curl -s "$base/explore" | grep -o '/assets/[0-9a-f]*/explore.js' | head -1)
[ -n "$asset" ] || { echo "no fingerprinted explore.js in /explore"; exit 1; }

run() { # name path header
  local name=$1 path=$2 header=$3
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -H "$header" "$base$path" >"$work/wrk.out" 2>&1
  refuse_errors "$work/wrk.out" "$name"
  awk '/Requests\/sec/ { printf "%d\n", $2 }' "$work/wrk.out" >>"$work/$name.rps"
}

rm -f "$work"/*.rps
for _ in $(seq 1 "$ROUNDS"); do
  run getCompany /v1/companies/stripe "X-API-Key: $key"
  run home / "Accept-Encoding: gzip"
  run scorecard /scorecard "Accept-Encoding: gzip"
  run explore /explore "Accept-Encoding: gzip"
  run asset "$asset" "Accept-Encoding: gzip"
done

reference=$(median "$work/getCompany.rps")
{
  echo "| path | requests/s (median of $ROUNDS) | vs getCompany | bytes on the wire (gzip) |"
  echo "|---|---:|---:|---:|"
  for row in "getCompany /v1/companies/stripe" "home /" "scorecard /scorecard" "explore /explore" "asset $asset"; do
    set -- $row
    rps=$(median "$work/$1.rps")
    if [ "$1" = getCompany ]; then
      bytes=$(curl -s -o /dev/null -w '%{size_download}' -H "X-API-Key: $key" -H 'Accept-Encoding: gzip' "$base$2")
    else
      bytes=$(curl -s -o /dev/null -w '%{size_download}' -H 'Accept-Encoding: gzip' "$base$2")
    fi
    awk -v n="$1" -v r="$rps" -v ref="$reference" -v b="$bytes" 'BEGIN { printf "| %s | %d | %.2f | %d |\n", n, r, r / ref, b }'
  done
} | tee "$work/results.md"
