#!/usr/bin/env bash
# Stalled HTTP/2 streams: a client (benches/lab/stalled_streams.rs) opens CONNECTIONS x STREAMS
# streams for /v1/openapi.json with a zero flow-control window, never reads them, pings every
# connection every second and asks for one more stalled response a second on each, so its
# connections never go idle: only the per-stream deadline (--h2-stream-timeout) and the
# server's stream budget (--max-h2-streams) stand between it and the server's memory.
# Two runs: with the budget raised above the streams asked for (what the stream deadline alone
# does), then with the default budget. Each records the server's resident memory before, at
# its peak while the streams are held, when the client stops, and after the server's next
# sweep (when freed memory is handed back); the server's own counts of streams reset, answered
# 503 and reset unstarted; and how long a valid request on another connection takes at the peak.
#
#   bash benches/lab/stalled-streams.sh      # CONNECTIONS=1000 STREAMS=100 STALL=10 HOLD=40
#
# One address opens all the connections, so the runs raise --max-connections-per-address to
# let them in: the bounds measured here are the stream deadline's and the budget's.
# Writes target/bench-stalled/results.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

CONNECTIONS=${CONNECTIONS:-1000}
STREAMS=${STREAMS:-100}
STALL=${STALL:-10}
HOLD=${HOLD:-40}
work=target/bench-stalled
source benches/lab/setup.sh
prepare_sample
install_missing curl
cargo build --release --quiet --example stalled_streams

pid=""
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

rss_mib() { awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "/proc/$1/status"; }
counter() { curl -s "$marks_url/metrics" | awk -v name="$1" '$1 == name { print $2 }'; }

run() { # label max-h2-streams
  marks_serve "$marks" "$work/serve.log" --snapshot "$work/sample.snap" --keys "$work/keys.toml" --http2 \
    --h2-stream-timeout "$STALL" --max-h2-streams "$2" \
    --max-connections-per-address $((CONNECTIONS + 10)) --no-access-log --log-level warn
  pid=$marks_pid
  local before peak now at_peak valid client
  before=$(rss_mib "$pid")
  target/release/examples/stalled_streams "$marks_addr" "$CONNECTIONS" "$STREAMS" "$HOLD" busy >"$work/client.out" &
  client=$!
  # The peak while the streams are held, sampled every half second; a valid request (HTTP/1.1,
  # its own connection) is timed at the peak.
  peak=$before; valid="-"
  while kill -0 "$client" 2>/dev/null; do
    now=$(rss_mib "$pid")
    if awk -v a="$now" -v b="$peak" 'BEGIN { exit !(a > b) }'; then
      peak=$now
      valid=$(curl -s -o /dev/null -w '%{http_code} in %{time_total}s' -H "X-API-Key: $key" \
        "$marks_url/v1/companies/openai")
    fi
    sleep 0.5
  done
  wait "$client"
  at_stop=$(rss_mib "$pid")
  # The server hands freed memory back at its next sweep (every 30 s).
  sleep 32
  after=$(rss_mib "$pid")
  echo "| $1 | $((CONNECTIONS * STREAMS)) | $before | $peak | $at_stop | $after | $(counter marks_h2_streams_stalled_total) | $(counter marks_h2_streams_refused_total) | $(counter marks_h2_streams_dropped_total) | $valid | $(cat "$work/client.out") |" >>"$work/results.md"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
}

{
  echo "| budget | streams asked at once | RSS before MiB | peak while held MiB | when the client stops MiB | after the next sweep MiB | reset at the stream deadline | refused by the budget (503s made) | reset unstarted | a valid request at the peak | client |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
} >"$work/results.md"
run "raised ($((CONNECTIONS * STREAMS * 2)))" $((CONNECTIONS * STREAMS * 2))
run "default (20000)" 20000
cat "$work/results.md"
