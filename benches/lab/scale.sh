#!/usr/bin/env bash
# The universe at scale, in one run: a synthetic dataset of COMPANIES companies (8 events a
# company) built, served and loaded, each figure printed beside its target (docs/performance.md,
# "A universe of 50,000 companies"). Not part of the test suite: at 50,000 companies it needs
# minutes and tens of gigabytes of disk.
#
#   bash benches/lab/scale.sh                     # COMPANIES=50000 DURATION=5 ROUNDS=3
#   COMPANIES=2000 DURATION=2 ROUNDS=1 bash benches/lab/scale.sh   # a quick look
#
# Figures, each against its target:
#   - the build: wall time (<= 300 s), peak resident memory (<= 6 GiB), snapshot bytes (<= 10 GB,
#     200 KB a company), from /usr/bin/time -v;
#   - the load: `marks serve` from start to /readyz ready (<= 60 s), and a live swap to a second
#     copy under load with no failed request (wrk reports every non-2xx answer);
#   - throughput against the bare hyper reference sending the same bytes (one worker on CPU 0,
#     wrk on CPU 1, medians of ROUNDS interleaved rounds): getCompany and listCompanies within 5%
#     of their ratio on the sample measured in the same run, getMarkSeries at 0.8x or better for
#     a gzip client and for an identity client;
#   - the design's build target: 10,000 companies with a million events in <= 60 s (MILLION=0
#     skips it).
# Prints a Markdown table and writes target/bench-scale/results.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

COMPANIES=${COMPANIES:-50000}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-32}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
work=target/bench-scale
source benches/lab/setup.sh
install_missing wrk
command -v /usr/bin/time >/dev/null || install_missing time
prepare_sample

pids=()
cleanup() { for pid in "${pids[@]:-}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

results="$work/results.md"
{
  echo "| figure | measured | target | met |"
  echo "|---|---:|---:|---|"
} >"$results"
row() { # figure measured target met(1/0)
  local met=no
  if [ "$4" = 1 ]; then met=yes; fi
  echo "| $1 | $2 | $3 | $met |" | tee -a "$results"
}
at_most() { awk -v a="$1" -v b="$2" 'BEGIN { print (a <= b) ? 1 : 0 }'; }

# The build.
dataset="$work/synth-$COMPANIES"
snapshot="$work/synth-$COMPANIES.snap"
if [ ! -f "$dataset/events.csv" ]; then
  rm -rf "$dataset"
  "$marks" synth --companies "$COMPANIES" --seed 1 --out "$dataset" >/dev/null
fi
/usr/bin/time -v "$marks" build --source "$dataset" --out "$snapshot" \
  --signing-key sample/demo-signing-key.pem --quiet >"$work/build.out" 2>"$work/build.time"
wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s }' "$work/build.time")
peak_kib=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/build.time")
bytes=$(stat -c %s "$snapshot")
per_company=$((bytes / COMPANIES))
row "build, $COMPANIES companies: wall" "$wall s" "300 s" "$(at_most "$wall" 300)"
row "build: peak resident" "$((peak_kib / 1024)) MiB" "6144 MiB" "$(at_most "$peak_kib" $((6 * 1024 * 1024)))"
row "snapshot bytes" "$bytes ($per_company a company)" "10000000000 (200000 a company)" "$(at_most "$per_company" 200000)"

# The load: from start to ready, then a live swap under load.
live="$work/live.snap"
cp "$snapshot" "$live"
started=$(date +%s.%N)
MARKS_SERVE_TIMEOUT=600 marks_serve --via taskset -c "$SERVER_CPU" -- "$marks" "$work/marks.log" \
  --snapshot "$live" --keys "$work/keys.toml" --threads 1 --no-access-log --log-level warn
pids+=("$marks_pid")
until curl -sf "$marks_url/readyz" >/dev/null; do sleep 0.05; done
ready=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
row "marks serve: start to ready" "$ready s" "60 s" "$(at_most "$ready" 60)"
# Snapshots put in force so far (a swap within the second would not move /readyz's loaded_at).
loads() { curl -s "$marks_url/metrics" | awk '$1 == "marks_snapshot_loads_total" { print $2 }'; }
loaded_before=$(loads)
slug=$(curl -s -H "X-API-Key: $key" "$marks_url/v1/companies?limit=1&sort=-value_usd" \
  | python3 -c 'import json, sys; print(json.load(sys.stdin)["companies"][0]["slug"])')
# Long enough for the install's copy, the server's next look and its own private copy and checks.
swap_seconds=${SWAP_SECONDS:-$((COMPANIES / 500 > 30 ? COMPANIES / 500 : 30))}
taskset -c "$LOAD_CPU" wrk -t1 -c8 -d"${swap_seconds}s" -H "X-API-Key: $key" "$marks_url/v1/companies/$slug" >"$work/wrk-swap.out" 2>&1 &
wrk_pid=$!
sleep 1
"$marks" install --snapshot "$snapshot" --to "$live" >"$work/install.out" 2>&1
swapped=0
for _ in $(seq 1 $(((swap_seconds - 2) * 10))); do
  loaded_now=$(loads)
  if [ "$loaded_now" != "$loaded_before" ]; then swapped=1; break; fi
  sleep 0.1
done
wait "$wrk_pid"
failed=$(awk '/Non-2xx or 3xx/ { print $NF } /Socket errors/ { s = 1 } END { if (s) print "socket-errors" }' "$work/wrk-swap.out")
requests=$(awk '/requests in/ { print $1 }' "$work/wrk-swap.out")
row "live swap under load: swapped, failed of $requests requests" "$swapped, ${failed:-0}" "1, 0" "$([ "$swapped" = 1 ] && [ -z "$failed" ] && echo 1 || echo 0)"
kill "$marks_pid"; wait "$marks_pid" 2>/dev/null || true

# Throughput against the bare reference sending the same bytes. Prints the median ratio.
ratio() { # snapshot path [accept-encoding]
  local encoding=${3:-identity}
  marks_serve --via taskset -c "$SERVER_CPU" -- "$marks" "$work/marks-ratio.log" \
    --snapshot "$1" --keys "$work/keys.toml" --threads 1 --no-access-log --log-level warn
  local pid=$marks_pid url="$marks_url$2"
  pids+=("$pid")
  until curl -sf "$marks_url/readyz" >/dev/null; do sleep 0.05; done
  local body="$work/body.bin"
  curl -s -H "X-API-Key: $key" -H "Accept-Encoding: $encoding" "$url" -o "$body"
  local port
  port=$(free_port)
  taskset -c "$SERVER_CPU" "$reference" --addr "127.0.0.1:$port" --body "$body" --status 200 --threads 1 2>/dev/null &
  local reference_pid=$!
  pids+=("$reference_pid")
  wait_port "$port"
  local ratios=() m r
  for _ in $(seq 1 "$ROUNDS"); do
    taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -H "X-API-Key: $key" -H "Accept-Encoding: $encoding" "$url" >"$work/wrk.out" 2>&1
    refuse_errors "$work/wrk.out" "$url"
    m=$(awk '/Requests\/sec/ { print $2 }' "$work/wrk.out")
    taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -H "X-API-Key: $key" "http://127.0.0.1:$port/" >"$work/wrk.out" 2>&1
    refuse_errors "$work/wrk.out" "reference"
    r=$(awk '/Requests\/sec/ { print $2 }' "$work/wrk.out")
    ratios+=("$(awk -v m="$m" -v r="$r" 'BEGIN { printf "%.3f", m / r }')")
  done
  kill "$pid" "$reference_pid"; wait "$pid" "$reference_pid" 2>/dev/null || true
  printf '%s\n' "${ratios[@]}" | median
}
within_5pct() { awk -v a="$1" -v b="$2" 'BEGIN { d = a / b - 1; if (d < 0) d = -d; print (d <= 0.05) ? 1 : 0 }'; }

sample_slug=openai
company_sample=$(ratio "$work/sample.snap" "/v1/companies/$sample_slug")
company_big=$(ratio "$snapshot" "/v1/companies/$slug")
row "getCompany / bare hyper" "$company_big (sample $company_sample)" "sample's, within 5%" "$(within_5pct "$company_big" "$company_sample")"
list_sample=$(ratio "$work/sample.snap" "/v1/companies?limit=50&sort=-value_usd")
list_big=$(ratio "$snapshot" "/v1/companies?limit=50&sort=-value_usd")
row "listCompanies limit=50 / bare hyper" "$list_big (sample $list_sample)" "sample's, within 5%" "$(within_5pct "$list_big" "$list_sample")"
for encoding in gzip identity; do
  series=$(ratio "$snapshot" "/v1/companies/$slug/marks" "$encoding")
  row "getMarkSeries ($encoding) / bare hyper" "$series" "0.80" "$(awk -v a="$series" 'BEGIN { print (a >= 0.8) ? 1 : 0 }')"
done

# The design's other build target: 10,000 companies with a million events, in 60 s.
if [ "${MILLION:-1}" = 1 ]; then
  million="$work/synth-10000-1m"
  if [ ! -f "$million/events.csv" ]; then
    rm -rf "$million"
    "$marks" synth --companies 10000 --events 1000000 --seed 1 --out "$million" >/dev/null
  fi
  /usr/bin/time -v "$marks" build --source "$million" --out "$work/synth-10000-1m.snap" \
    --signing-key sample/demo-signing-key.pem --quiet >"$work/build-1m.out" 2>"$work/build-1m.time"
  wall_1m=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s }' "$work/build-1m.time")
  peak_1m=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$work/build-1m.time")
  row "build, 10,000 companies and 1M events: wall (peak $((peak_1m / 1024)) MiB, $(stat -c %s "$work/synth-10000-1m.snap") bytes)" "$wall_1m s" "60 s" "$(at_most "$wall_1m" 60)"
  rm -f "$work/synth-10000-1m.snap"
fi

echo
echo "- machine: $(nproc) cores; wrk ${DURATION}s x $ROUNDS rounds (medians), $CONNECTIONS connections; marks on CPU $SERVER_CPU, wrk on CPU $LOAD_CPU" | tee -a "$results"
echo "- $(head -1 "$work/build.out")" | tee -a "$results"
