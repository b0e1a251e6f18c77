#!/usr/bin/env bash
# Stalled HTTP/2 streams: a client opens CONNECTIONS x STREAMS streams for /v1/openapi.json with
# a zero flow-control window, never reads them and pings every second
# (examples/stalled_streams.rs). Records the server's resident memory before, while they are
# held, just after the server has closed them at its idle deadline (with the time that took),
# and after its next sweep, when the freed memory has been handed back.
#
#   bash benches/stalled-streams.sh      # CONNECTIONS=1000 STREAMS=100 IDLE=10
#
# One address opens all the connections, so the run raises --max-connections-per-address to
# let them in: the bound measured here is the idle deadline's, not the per-address cap's.
# Writes target/bench-stalled/results.md.
set -euo pipefail
cd "$(dirname "$0")/.."

CONNECTIONS=${CONNECTIONS:-1000}
STREAMS=${STREAMS:-100}
IDLE=${IDLE:-10}
work=target/bench-stalled
source benches/setup.sh
prepare_sample
cargo build --release --quiet --example stalled_streams

pid=""
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

rss_mib() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }

"$marks" serve --addr 127.0.0.1:9600 --snapshot "$work/sample.snap" --keys "$work/keys.toml" --http2 \
  --idle-timeout "$IDLE" --max-connections-per-address $((CONNECTIONS + 10)) --no-access-log \
  --log-level warn >"$work/serve.log" 2>&1 &
pid=$!
wait_port 9600
before=$(rss_mib "$pid")
hold=$((IDLE * 4))
target/release/examples/stalled_streams 127.0.0.1:9600 "$CONNECTIONS" "$STREAMS" "$hold" >"$work/client.out" &
client=$!
# The peak while the streams are held: sampled every half second until the client is done.
peak=$before
while kill -0 "$client" 2>/dev/null; do
  now=$(rss_mib "$pid"); peak=$(awk -v a="$now" -v b="$peak" 'BEGIN { print (a > b) ? a : b }')
  sleep 0.5
done
wait "$client"
sleep 2
closed=$(rss_mib "$pid")
# The server hands freed memory back at its next sweep (every 30 s).
sleep 32
after=$(rss_mib "$pid")
# A valid request still answered.
status=$(curl -s -o /dev/null -w '%{http_code}' -H "X-API-Key: $key" http://127.0.0.1:9600/v1/companies/openai)
{
  echo "| streams | idle deadline s | RSS before MiB | peak while held MiB | just after MiB | after the next sweep MiB | valid request after | client |"
  echo "|---:|---:|---:|---:|---:|---:|---:|---|"
  echo "| $((CONNECTIONS * STREAMS)) | $IDLE | $before | $peak | $closed | $after | $status | $(cat "$work/client.out") |"
} | tee "$work/results.md"
