#!/usr/bin/env bash
# An API business has many keys: resident memory per key, and what reloading a large keys file
# costs the requests being served meanwhile, with 100,000 and 1,000,000 generated keys
# (benches/lab/gen-keys.py) against the 7 demo keys in the same run.
#
#   bash benches/lab/keys.sh            # COUNTS="100000 1000000" DURATION=8 RELOADS=4
#
# For each keys file: marks serves the sample on CPU 0 (one worker; its reload thread shares
# that core), wrk loads getCompany from CPU 1 with 16 keep-alive connections. It reports the
# server's anonymous resident memory once the file is loaded (the bytes per key are the
# difference from the demo keys, divided by the count), wrk's p99 and requests/s without
# reloads and then with RELOADS reloads of the keys file spread over the run (the file is
# touched, and the watcher, polling every 100 ms, reloads it), and the server's own reload
# times from its log. Installs wrk when missing. Writes target/bench-keys/results.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

COUNTS=${COUNTS:-"100000 1000000"}
DURATION=${DURATION:-8}
RELOADS=${RELOADS:-4}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
work=target/bench-keys
source benches/lab/setup.sh
install_missing wrk
prepare_sample

pid=""
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

anon_mib() { awk '/^RssAnon/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

# wrk's "requests/s p99_ms", refusing a run with error answers or socket errors.
run_wrk() {
  taskset -c "$LOAD_CPU" wrk -t1 -c16 -d"${DURATION}s" --latency -H "X-API-Key: $key" \
    "$marks_url/v1/companies/stripe" >"$work/wrk.out" 2>&1
  refuse_errors "$work/wrk.out" "getCompany"
  awk 'function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
       /Requests\/sec/ { rps = $2 } /^ +99%/ { p99 = ms($2) } END { printf "%d %.3f\n", rps, p99 }' "$work/wrk.out"
}

results="$work/results.md"
{
  echo "| keys in the file | keys file MB | anonymous RSS MiB | bytes per key | reloads | reload ms (median) | req/s | p99 ms | req/s while reloading | p99 ms while reloading | anonymous RSS after reloads MiB |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$results"

baseline=""
for count in 0 $COUNTS; do
  keys="$work/keys-$count.toml"
  cp "$work/keys.toml" "$keys"
  if [ "$count" -gt 0 ]; then python3 benches/lab/gen-keys.py "$count" "$keys"; fi
  log="$work/marks-$count.log"
  marks_serve --via taskset -c "$SERVER_CPU" -- "$marks" "$log" --snapshot "$work/sample.snap" --keys "$keys" \
    --threads 1 --no-access-log --log-format json --watch-interval-ms 100
  pid=$marks_pid
  taskset -c "$LOAD_CPU" wrk -t1 -c16 -d1s -H "X-API-Key: $key" "$marks_url/v1/companies/stripe" >/dev/null
  anon=$(anon_mib "$pid")
  [ -n "$baseline" ] || baseline=$anon
  per_key="-"
  if [ "$count" -gt 0 ]; then per_key=$(awk -v a="$anon" -v b="$baseline" -v n="$count" 'BEGIN { printf "%.0f", (a - b) * 1048576 / n }'); fi
  read -r rps p99 < <(run_wrk)
  # The same run again, with reloads of the whole keys file spread over it.
  (
    gap=$(awk -v d="$DURATION" -v r="$RELOADS" 'BEGIN { printf "%.2f", d / (r + 1) }')
    for _ in $(seq 1 "$RELOADS"); do sleep "$gap"; touch "$keys"; done
  ) &
  reloader=$!
  read -r rps_reload p99_reload < <(run_wrk)
  wait "$reloader"
  # Touches made while a large file is being read coalesce into one more reload; wait until
  # the reloads have stopped (no new one for 15 s) or all of them are logged.
  reloads() { grep '"keys file loaded and in force"' "$log" | grep -c '"load_ms"' || true; }
  seen=-1; still=0
  while [ "$still" -lt 15 ] && [ "$(reloads)" -lt "$RELOADS" ]; do
    now=$(reloads)
    if [ "$now" = "$seen" ]; then still=$((still + 1)); else still=0; seen=$now; fi
    sleep 1
  done
  sleep 1
  anon_after=$(anon_mib "$pid")
  reload_ms=$(grep '"keys file loaded and in force"' "$log" | sed -n 's/.*"load_ms":\([0-9]*\).*/\1/p' | sort -n |
    awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : "-") }')
  mb=$(awk -v b="$(stat -c %s "$keys")" 'BEGIN { printf "%.1f", b / 1e6 }')
  total=$(grep -c "^\[\[key\]\]" "$keys")
  echo "| $total | $mb | $anon | $per_key | $(reloads) | $reload_ms | $rps | $p99 | $rps_reload | $p99_reload | $anon_after |" | tee -a "$results"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
done
echo
cat "$results"
