#!/usr/bin/env bash
# What shared budgets cost one replica: marks with --budgets (Redis on this machine) against
# marks with its own buckets, getCompany, keep-alive, interleaved rounds in one run. The
# server runs on CPU 0 with one worker; wrk and redis-server share CPU 1. Then the publication
# latency over 10 publishes, from tests/live/fleet-check.sh.
#
#   bash benches/lab/fleet.sh        # DURATION=5 ROUNDS=3 CONNECTIONS=32 PUBLISHES=10
#
# Prints requests/s (median of ROUNDS), CPU time of the server per request, Redis CPU per
# request and Redis round trips per request.
set -euo pipefail
cd "$(dirname "$0")/../.."

DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-32}
PUBLISHES=${PUBLISHES:-10}
work=target/bench-fleet
source benches/lab/setup.sh
install_missing wrk redis-server
prepare_sample

pid=""
redis_pid=""
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

taskset -c 1 redis-server --port 9711 --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
redis_pid=$!
wait_port 9711

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
metric() { curl -s http://127.0.0.1:9710/metrics | awk -v n="$1" '$1 == n { print $2 }'; }

run() { # name extra-args...
  local name=$1; shift
  taskset -c 0 "$marks" serve --addr 127.0.0.1:9710 --snapshot "$work/sample.snap" --keys "$work/keys.toml" \
    --threads 1 --no-access-log --log-level warn "$@" >"$work/serve-$name.log" 2>&1 &
  pid=$!
  wait_port 9710
  local calls_before ticks_before redis_before
  calls_before=$(metric marks_budget_store_calls_total); calls_before=${calls_before:-0}
  ticks_before=$(cpu_ticks "$pid")
  redis_before=$(cpu_ticks "$redis_pid")
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -H "X-API-Key: $key" \
    http://127.0.0.1:9710/v1/companies/stripe >"$work/wrk.out" 2>&1
  refuse_errors "$work/wrk.out" "$name"
  local requests calls ticks redis_ticks
  requests=$(awk '/requests in/ { print $1 }' "$work/wrk.out")
  calls=$(metric marks_budget_store_calls_total); calls=${calls:-0}
  ticks=$(( $(cpu_ticks "$pid") - ticks_before ))
  redis_ticks=$(( $(cpu_ticks "$redis_pid") - redis_before ))
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  awk '/Requests\/sec/ { printf "%d\n", $2 }' "$work/wrk.out" >>"$work/$name.rps"
  local hz; hz=$(getconf CLK_TCK)
  awk -v t="$ticks" -v r="$requests" -v hz="$hz" 'BEGIN { printf "%.2f\n", t / hz / r * 1e6 }' >>"$work/$name.cpu"
  awk -v t="$redis_ticks" -v r="$requests" -v hz="$hz" 'BEGIN { printf "%.2f\n", t / hz / r * 1e6 }' >>"$work/$name.redis"
  awk -v c="$(( calls - calls_before ))" -v r="$requests" 'BEGIN { printf "%.3f\n", c / r }' >>"$work/$name.trips"
}

rm -f "$work"/*.rps "$work"/*.cpu "$work"/*.redis "$work"/*.trips
for _ in $(seq 1 "$ROUNDS"); do
  run local
  run shared --budgets redis://127.0.0.1:9711
done
base=$(median "$work/local.rps")
{
  echo "| budgets | requests/s (median of $ROUNDS) | vs local | server CPU µs/request | Redis CPU µs/request | Redis round trips/request |"
  echo "|---|---:|---:|---:|---:|---:|"
  for name in local shared; do
    rps=$(median "$work/$name.rps")
    echo "| $name | $rps | $(awk -v a="$rps" -v b="$base" 'BEGIN { printf "%.2f", a / b }') | $(median "$work/$name.cpu") | $(median "$work/$name.redis") | $(median "$work/$name.trips") |"
  done
} | tee "$work/results.md"

kill "$redis_pid"; wait "$redis_pid" 2>/dev/null || true; redis_pid=""
echo
echo "publication latency over $PUBLISHES publishes (tests/live/fleet-check.sh):"
bash tests/live/fleet-check.sh --publishes "$PUBLISHES" | grep "publishes reached" | tee -a "$work/results.md"
