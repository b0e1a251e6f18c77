#!/usr/bin/env bash
# An index's constituents under a research key's whole minute at once: what it costs the other
# keys (docs/performance.md, "An index's constituents"). For the bundled sample and a synthetic
# universe of SYNTH companies, the server (one worker on CPU 0, the load on CPU 1) answers:
#   - a pro key's getCompany under wrk for DURATION seconds, alone, then again while a research
#     key sends its whole minute's budget (60) of constituents at once: of the latest day
#     (stored, no pass: the reference, what the burst itself costs) and of a past day, over
#     HTTP/1.1 (60 connections of one h2load), of a past day one after another (passes back to
#     back), and of a past day over HTTP/2 with a zero flow-control window (h2load -w 0: the
#     streams read nothing); its p50 and p99 in each case;
#   - the latest day's constituents (stored by the builder), and a past day's, one at a time:
#     median and largest time of REPEAT requests.
# Figures only, never a pass or fail. Prints a Markdown table and writes
# target/bench-constituents/results.md.
#
#   bash benches/lab/constituents.sh            # SYNTH=2000 DURATION=10 REPEAT=50
set -euo pipefail
cd "$(dirname "$0")/../.."

SYNTH=${SYNTH:-2000}
DURATION=${DURATION:-10}
REPEAT=${REPEAT:-50}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
work=target/bench-constituents
source benches/lab/setup.sh
install_missing wrk curl
command -v h2load >/dev/null || install_missing nghttp2-client
prepare_sample

pids=()
cleanup() { for pid in "${pids[@]:-}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

results="$work/results.md"
{
  echo "| dataset | figure | p50 | p99 or largest |"
  echo "|---|---|---:|---:|"
} >"$results"

synth="$work/synth-$SYNTH"
if [ ! -f "$work/synth-$SYNTH.snap" ]; then
  rm -rf "$synth"
  "$marks" synth --companies "$SYNTH" --seed 1 --out "$synth" >/dev/null
  "$marks" build --source "$synth" --out "$work/synth-$SYNTH.snap" \
    --signing-key sample/demo-signing-key.pem --quiet >/dev/null
fi

# wrk's p50 and p99 of a pro key's getCompany, as "p50 p99".
company_latency() { # url slug
  taskset -c "$LOAD_CPU" wrk -t1 -c4 -d"${DURATION}s" --latency -H "X-API-Key: $pro" "$1/v1/companies/$2" >"$work/wrk.out" 2>&1
  refuse_errors "$work/wrk.out" getCompany
  awk '$1 == "50%" { p50 = $2 } $1 == "99%" { p99 = $2 } END { print p50, p99 }' "$work/wrk.out"
}

# A pro key's getCompany p50 and p99 under wrk while h2load sends a key's 60 requests for a path
# over HTTP/1.1 on CONNECTIONS connections; prints the table's row, with the status codes.
http1_burst() { # label key path connections
  (sleep 1; timeout 60 taskset -c "$LOAD_CPU" h2load --h1 -n60 -c"$4" -m1 -H "X-API-Key: $2" "$url$3" \
    >"$work/burst-h1.txt" 2>&1 || true) &
  local burst=$! p50 p99 codes
  read -r p50 p99 <<<"$(company_latency "$url" "$slug")"
  wait "$burst"
  codes=$(awk '/^status codes:/ { print $3, $4, $7, $8 }' "$work/burst-h1.txt")
  echo "| $dataset | pro getCompany, research key's 60 constituents of the $1 (HTTP/1.1: $codes) | $p50 | $p99 |" |
    tee -a "$results"
}

# The median and largest time in ms of REPEAT sequential requests for a path.
times_ms() { # url path key
  for _ in $(seq 1 "$REPEAT"); do
    curl -s -o /dev/null -w '%{time_total}\n' -H "X-API-Key: $3" "$1$2"
  done | awk '{ print $1 * 1000 }' >"$work/times.txt"
  echo "$(median "$work/times.txt") $(sort -n "$work/times.txt" | tail -1)"
}

for dataset in sample "synth-$SYNTH"; do
  snapshot="$work/$dataset.snap"
  cp "$work/keys.toml" "$work/keys-$dataset.toml"
  research=$("$marks" keys issue --keys "$work/keys-$dataset.toml" --tier research --tenant bench-research 2>/dev/null)
  # A second research key with its own minute, for the passes one after another.
  research_sequential=$("$marks" keys issue --keys "$work/keys-$dataset.toml" --tier research --tenant bench-research-2 2>/dev/null)
  pro=$("$marks" keys issue --keys "$work/keys-$dataset.toml" --tier pro --tenant bench-pro --rate-per-min 2000000000 2>/dev/null)
  marks_serve --via taskset -c "$SERVER_CPU" -- "$marks" "$work/serve-$dataset.log" --snapshot "$snapshot" \
    --keys "$work/keys-$dataset.toml" --threads 1 --http2 --no-access-log --log-level warn
  pids+=("$marks_pid")
  url=$marks_url
  slug=$(curl -s -H "X-API-Key: $pro" "$url/v1/companies?limit=1&sort=-value_usd" |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["companies"][0]["slug"])')
  # A past day of "all": a year before its last.
  last=$(curl -s -H "X-API-Key: $pro" "$url/v1/indices" |
    python3 -c 'import json, sys; print(next(i for i in json.load(sys.stdin)["indices"] if i["index"] == "all")["last_date"])')
  past=$(python3 -c "import datetime as d; print(d.date.fromisoformat('$last') - d.timedelta(days=365))")
  past_path="/v1/indices/all/constituents?date=$past"

  read -r p50 p99 <<<"$(company_latency "$url" "$slug")"
  echo "| $dataset | pro getCompany, alone | $p50 | $p99 |" | tee -a "$results"

  # HTTP/1.1: the research key's 60 at once, on 60 connections of one h2load process (60 curl
  # processes would load wrk's own CPU and be measured as the server's latency), while wrk
  # measures; first the latest day's (stored: no pass), the same burst as a reference, then a
  # past day's; then a second research key's 60 of a past day one after another on one
  # connection: each is served, so passes run back to back (the most one key's budget makes).
  http1_burst "latest day at once" "$research" /v1/indices/all/constituents 60
  http1_burst "past day at once" "$research" "$past_path" 60
  http1_burst "past day one after another" "$research_sequential" "$past_path" 1

  # HTTP/2, one connection, 60 streams with a zero window: nothing is read.
  (sleep 1; timeout 20 taskset -c "$LOAD_CPU" h2load -n60 -c1 -m60 -w0 -H "X-API-Key: $research" "$url$past_path" \
    >"$work/burst-h2.txt" 2>&1 || true) &
  burst=$!
  read -r p50 p99 <<<"$(company_latency "$url" "$slug")"
  wait "$burst"
  echo "| $dataset | pro getCompany, research key's 60 constituents at once (HTTP/2, zero window) | $p50 | $p99 |" | tee -a "$results"

  read -r median largest <<<"$(times_ms "$url" /v1/indices/all/constituents "$pro")"
  echo "| $dataset | latest day's constituents of all (stored), ms | $median | $largest |" | tee -a "$results"
  read -r median largest <<<"$(times_ms "$url" "$past_path" "$pro")"
  echo "| $dataset | a past day's constituents of all (made), ms | $median | $largest |" | tee -a "$results"
  kill "$marks_pid" 2>/dev/null || true
done
echo
cat "$results"
