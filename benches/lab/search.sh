#!/usr/bin/env bash
# What a name search costs against a plain list page, on 10,000 synthetic companies: marks on
# CPU 0 with one worker, wrk on CPU 1, keep-alive, interleaved rounds in one run. Each search
# is listCompanies with q (and limit=50), whose matches come from the snapshot's word index and
# are then filtered, ordered and paged per request; the plain page is a slice of a precomputed
# list. The synthetic companies are named "Synthetic Company 000123", so the queries below
# match 1, 100, 1,000 and all 10,000 companies.
#
#   bash benches/lab/search.sh        # DURATION=5 ROUNDS=3 CONNECTIONS=16
set -euo pipefail
cd "$(dirname "$0")/../.."

DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-16}
work=target/bench-search
source benches/lab/setup.sh
install_missing wrk
prepare_sample

if [ ! -f "$work/synth10k.snap" ]; then
  echo "building the 10,000-company synthetic snapshot"
  rm -rf "$work/synth10k"
  "$marks" synth --companies 10000 --seed 42 --out "$work/synth10k" >/dev/null
  "$marks" build --source "$work/synth10k" --out "$work/synth10k.snap" \
    --signing-key sample/demo-signing-key.pem --quiet >/dev/null
fi

pid=""
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi; }
trap cleanup EXIT
marks_serve --via taskset -c 0 -- "$marks" "$work/serve.log" --snapshot "$work/synth10k.snap" \
  --keys "$work/keys.toml" --threads 1 --no-access-log --log-level warn
pid=$marks_pid

cases=(
  "plain|/v1/companies?limit=50"
  "q=000123 (1 match)|/v1/companies?limit=50&q=000123"
  "q=0001 (100 matches)|/v1/companies?limit=50&q=0001"
  "q=001 (1,000 matches)|/v1/companies?limit=50&q=001"
  "q=synthetic (10,000 matches)|/v1/companies?limit=50&q=synthetic"
  "q=0001, sort=-value_usd|/v1/companies?limit=50&q=0001&sort=-value_usd"
)
rm -f "$work"/*.rps
for _ in $(seq 1 "$ROUNDS"); do
  for i in "${!cases[@]}"; do
    path=${cases[$i]#*|}
    taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -H "X-API-Key: $key" "$marks_url$path" \
      >"$work/wrk.out" 2>&1
    refuse_errors "$work/wrk.out" "$path"
    awk '/Requests\/sec/ { printf "%d\n", $2 }' "$work/wrk.out" >>"$work/case-$i.rps"
  done
done
base=$(median "$work/case-0.rps")
{
  echo "| listCompanies on synth10k | requests/s (median of $ROUNDS) | vs the plain page |"
  echo "|---|---:|---:|"
  for i in "${!cases[@]}"; do
    rps=$(median "$work/case-$i.rps")
    echo "| ${cases[$i]%%|*} | $rps | $(awk -v a="$rps" -v b="$base" 'BEGIN { printf "%.2f", a / b }') |"
  done
} | tee "$work/results.md"
