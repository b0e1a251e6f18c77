#!/usr/bin/env bash
# What the access log costs: marks with its access log written to a file (text, and JSON)
# against marks with --no-access-log, getCompany, keep-alive, interleaved rounds in one run,
# server on CPU 0 with one worker (its log writer thread shares that core), wrk on CPU 1.
#
#   bash benches/lab/access-log.sh        # DURATION=5 ROUNDS=3 CONNECTIONS=32
#
# Prints requests/s per configuration (median of ROUNDS) and each as a ratio of no log.
set -euo pipefail
cd "$(dirname "$0")/../.."

DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-32}
work=target/bench-access-log
source benches/lab/setup.sh
install_missing wrk
prepare_sample

pid=""
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

run() { # name extra-args...
  local name=$1; shift
  rm -f "$work/access.log"
  marks_serve --via taskset -c 0 -- "$marks" "$work/serve-$name.log" --snapshot "$work/sample.snap" \
    --keys "$work/keys.toml" --threads 1 --log-level warn "$@"
  pid=$marks_pid
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -H "X-API-Key: $key" \
    "$marks_url/v1/companies/stripe" >"$work/wrk.out" 2>&1
  refuse_errors "$work/wrk.out" "$name"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  awk '/Requests\/sec/ { printf "%d\n", $2 }' "$work/wrk.out" >>"$work/$name.rps"
}

rm -f "$work"/*.rps
for _ in $(seq 1 "$ROUNDS"); do
  run none --no-access-log
  run text --access-log "$work/access.log"
  run json --access-log "$work/access.log" --log-format json
done
none=$(median "$work/none.rps")
{
  echo "| access log | requests/s (median of $ROUNDS) | vs no access log |"
  echo "|---|---:|---:|"
  for name in none text json; do
    rps=$(median "$work/$name.rps")
    echo "| $name | $rps | $(awk -v a="$rps" -v b="$none" 'BEGIN { printf "%.2f", a / b }') |"
  done
} | tee "$work/results.md"
