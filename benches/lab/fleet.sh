#!/usr/bin/env bash
# What shared budgets cost one replica: marks with --budget-store (one Redis on this machine,
# with leased tokens and without, and a six-node Redis Cluster) against marks with its own
# buckets, getCompany, keep-alive, interleaved rounds in one run. The server runs on CPU 0 with
# one worker; wrk and the Redis processes share CPU 1. Then the publication latency over 10
# publishes, from tests/live/fleet-check.sh (PUBLISHES=0 skips it).
#
#   bash benches/lab/fleet.sh        # DURATION=5 ROUNDS=3 CONNECTIONS=32 PUBLISHES=10
#
# Prints requests/s (median of ROUNDS), CPU time of the server per request, Redis CPU per
# request (every Redis process) and Redis round trips per request. The bench key's budget is
# so large that a lease holds 100 ms of it: a key of 6,000/min leases 10 tokens a round trip,
# one under 600/min one (docs/fleet.md).
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
cluster_pids=()
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi
  if [ -n "$redis_pid" ]; then kill "$redis_pid" 2>/dev/null || true; fi
  for p in "${cluster_pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

redis_port=$(free_port)
taskset -c 1 redis-server --port "$redis_port" --bind 127.0.0.1 --save '' --appendonly no >"$work/redis.log" 2>&1 &
redis_pid=$!
wait_port "$redis_port"
# Three masters and three replicas, as tests/live/fleet-check.sh makes them, on six ports free
# now whose cluster bus ports (port + 10000) are free too.
read -r -a cluster_ports < <(python3 -c '
import socket

def bindable(port):
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True

ports = []
while len(ports) < 6:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    if port + 10000 < 65536 and port not in ports and bindable(port + 10000):
        ports.append(port)
print(*ports)
')
for port in "${cluster_ports[@]}"; do
  rm -rf "$work/cluster-$port"; mkdir -p "$work/cluster-$port"
  taskset -c 1 redis-server --port "$port" --bind 127.0.0.1 --dir "$work/cluster-$port" --cluster-enabled yes \
    --cluster-config-file nodes.conf --cluster-node-timeout 1000 --save '' --appendonly no \
    >"$work/cluster-$port.log" 2>&1 &
  cluster_pids+=($!)
  wait_port "$port"
done
redis-cli --cluster create "${cluster_ports[@]/#/127.0.0.1:}" --cluster-replicas 1 --cluster-yes >/dev/null
until redis-cli -p "${cluster_ports[0]}" cluster info | grep -q cluster_state:ok; do sleep 0.2; done
cluster_ticks() { local t=0 p; for p in "${cluster_pids[@]}"; do t=$((t + $(cpu_ticks "$p"))); done; echo "$t"; }

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
metric() { curl -s "$marks_url/metrics" | awk -v n="$1" '$1 == n { print $2 }'; }

run() { # name extra-args...
  local name=$1; shift
  marks_serve --via taskset -c 0 -- "$marks" "$work/serve-$name.log" --snapshot "$work/sample.snap" \
    --keys "$work/keys.toml" --threads 1 --no-access-log --log-level warn "$@"
  pid=$marks_pid
  local calls_before ticks_before redis_before
  calls_before=$(metric marks_budget_store_calls_total); calls_before=${calls_before:-0}
  ticks_before=$(cpu_ticks "$pid")
  redis_before=$(( $(cpu_ticks "$redis_pid") + $(cluster_ticks) ))
  taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -H "X-API-Key: $key" \
    "$marks_url/v1/companies/stripe" >"$work/wrk.out" 2>&1
  refuse_errors "$work/wrk.out" "$name"
  local requests calls ticks redis_ticks
  requests=$(awk '/requests in/ { print $1 }' "$work/wrk.out")
  calls=$(metric marks_budget_store_calls_total); calls=${calls:-0}
  ticks=$(( $(cpu_ticks "$pid") - ticks_before ))
  redis_ticks=$(( $(cpu_ticks "$redis_pid") + $(cluster_ticks) - redis_before ))
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
  run shared --budget-store "redis://127.0.0.1:$redis_port"
  run shared-unleased --budget-store "redis://127.0.0.1:$redis_port" --budget-lease-window 0
  run cluster --budget-store "redis-cluster://127.0.0.1:${cluster_ports[0]},127.0.0.1:${cluster_ports[1]}"
done
base=$(median "$work/local.rps")
{
  echo "| budgets | requests/s (median of $ROUNDS) | vs local | server CPU µs/request | Redis CPU µs/request | Redis round trips/request |"
  echo "|---|---:|---:|---:|---:|---:|"
  for name in local shared shared-unleased cluster; do
    rps=$(median "$work/$name.rps")
    echo "| $name | $rps | $(awk -v a="$rps" -v b="$base" 'BEGIN { printf "%.2f", a / b }') | $(median "$work/$name.cpu") | $(median "$work/$name.redis") | $(median "$work/$name.trips") |"
  done
} | tee "$work/results.md"

kill "$redis_pid"; wait "$redis_pid" 2>/dev/null || true; redis_pid=""
for p in "${cluster_pids[@]}"; do kill "$p" 2>/dev/null || true; done
cluster_pids=()
if [ "$PUBLISHES" = 0 ]; then exit 0; fi
echo
echo "publication latency over $PUBLISHES publishes (tests/live/fleet-check.sh):"
bash tests/live/fleet-check.sh --publishes "$PUBLISHES" | grep "publishes reached" | tee -a "$work/results.md"
