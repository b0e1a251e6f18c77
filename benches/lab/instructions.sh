#!/usr/bin/env bash
# User-space instructions per request, counted by callgrind: marks against the bare and the
# same-headers reference server, on the same request, in one run.
#
#   bash benches/lab/instructions.sh        # REQUEST_SECONDS=6 by default
#   ONLY=HTTP/2 bash benches/lab/instructions.sh   # only the rows whose operation names this
#
# Throughput on a shared 2-core machine drifts by 10-20% from minute to minute; an instruction
# count does not, so this is the instrument for telling whether a change to the request path
# made it cheaper. Each server runs under valgrind with counting switched off while it starts
# (opening and checksumming the snapshot), on for REQUEST_SECONDS of keep-alive requests from
# wrk, off again. The references answer any path with the same bytes and are asked marks' path,
# so that the request each server parses and (over HTTP/2) HPACK-decodes is the same. Kernel work (the socket calls, the same for every server) is not counted.
# The HTTP/2 rows do the same over cleartext HTTP/2 (prior knowledge) with h2load, several
# streams per connection, so HPACK and h2's stream work are counted too; TLS is left out because
# its cost is the same bytes' encryption for every server.
# Installs valgrind, wrk and h2load from Debian's packages when they are missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

REQUEST_SECONDS=${REQUEST_SECONDS:-6}
work=target/bench-instructions
source benches/lab/setup.sh
install_missing valgrind wrk
# h2load comes in Debian's nghttp2-client.
command -v h2load >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q nghttp2-client >/dev/null
prepare_sample

server_pid=
cleanup() { if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi; }
trap cleanup EXIT

# Prints "requests instructions instructions-per-request" for one server under callgrind.
# "requests" for `seconds` of keep-alive load on `url` with `headers`: wrk over HTTP/1.1, or
# h2load (4 connections x 16 streams) over HTTP/2 when PROTOCOL is h2.
load() { # seconds url headers...
  local seconds=$1 url=$2; shift 2
  if [ "$PROTOCOL" = h2 ]; then
    local out
    out=$(h2load -t1 -c4 -m16 -D"$seconds" "$@" "$url")
    if ! grep -q ' 0 failed, 0 errored' <<<"$out" || grep -qE '[1-9][0-9]* 4xx|[1-9][0-9]* 5xx' <<<"$out"; then
      echo "h2load saw failed or error responses from $url" >&2; exit 1
    fi
    awk '/^requests:/ {print $8}' <<<"$out"
  else
    local out
    out=$(wrk -t1 -c4 -d"${seconds}s" "$@" "$url")
    if grep -q "Non-2xx or 3xx" <<<"$out"; then echo "wrk saw error responses from $url" >&2; exit 1; fi
    awk '/requests in/ {print $1}' <<<"$out"
  fi
}

# marks is started through the harness (port 0, its ready file; valgrind is slow to start it, so
# it is given two minutes); a reference on a port free now, asked until it answers.
count() { # name path header-args -- marks ARGS... | -- reference ARGS...
  local name=$1 path=$2; shift 2
  local headers=()
  while [ "$1" != "--" ]; do headers+=(-H "$1"); shift; done
  shift
  local server=$1 url; shift
  local callgrind=(valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$work/$name.callgrind")
  rm -f "$work/$name.callgrind"*
  if [ "$server" = marks ]; then
    MARKS_SERVE_TIMEOUT=120 marks_serve --via "${callgrind[@]}" -- "$marks" "$work/$name.log" "$@"
    server_pid=$marks_pid
    url=$marks_url$path
  else
    local port
    port=$(free_port)
    url=http://127.0.0.1:$port$path
    "${callgrind[@]}" "$reference" --addr "127.0.0.1:$port" "$@" >"$work/$name.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 600); do
      if curl -s -o /dev/null "${headers[@]}" "$url"; then break; fi
      sleep 0.2
    done
  fi
  # Warm the code paths before counting.
  load 1 "$url" "${headers[@]}" >/dev/null
  callgrind_control -i on "$server_pid" >/dev/null 2>&1
  local requests instructions
  requests=$(load "$REQUEST_SECONDS" "$url" "${headers[@]}")
  callgrind_control -i off "$server_pid" >/dev/null 2>&1
  callgrind_control -d "$server_pid" >/dev/null 2>&1
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
  server_pid=
  instructions=$(cat "$work/$name.callgrind"* | awk '/^totals:/ {s += $2} END {print s}')
  echo "$requests $instructions $((instructions / requests))"
}

row=0  # names each row's files
row() { # protocol(h1|h2) operation path [marks log flags, default --no-access-log]
  PROTOCOL=$1
  local operation=$2 path=$3
  shift 3
  local log=("$@")
  if [ ${#log[@]} -eq 0 ]; then log=(--no-access-log); fi
  local http2=() reference_http2=off
  if [ "$PROTOCOL" = h2 ]; then http2=(--http2); reference_http2=on; fi
  row=$((row + 1))
  # Skipped rows keep their number, so each row's profiles keep their names.
  if [[ "$operation" != *"${ONLY:-}"* ]]; then return; fi
  local body="$work/body-$row.json" headers="$work/headers-$row.txt"
  marks_serve "$marks" "$work/serve.log" --snapshot "$work/sample.snap" --keys "$work/keys.toml" \
    "${http2[@]}" --threads 1 --no-access-log --log-level warn
  server_pid=$marks_pid
  curl -s -o "$body" -H "X-API-Key: $key" "$marks_url$path"
  curl -s -D - -o /dev/null -H "X-API-Key: $key" "$marks_url$path" | tr -d '\r' | tail -n +2 \
    | grep -viE '^(date|content-length):' | grep ':' >"$headers"
  kill "$server_pid"; wait "$server_pid" 2>/dev/null || true
  server_pid=

  local m b s
  # Each server's profile kept per row (target/bench-instructions/NAME-ROW.callgrind*), for
  # callgrind_annotate.
  read -r _ _ m < <(count "marks-$row" "$path" "X-API-Key: $key" -- \
    marks --snapshot "$work/sample.snap" --keys "$work/keys.toml" \
    "${http2[@]}" --threads 1 "${log[@]}" --log-level warn)
  read -r _ _ b < <(count "bare-$row" "$path" "X-API-Key: $key" -- \
    reference --body "$body" --threads 1 --http2 "$reference_http2")
  read -r _ _ s < <(count "same-headers-$row" "$path" "X-API-Key: $key" -- \
    reference --body "$body" --headers "$headers" --threads 1 \
    --http2 "$reference_http2" --h2-streams first-poll-inline)
  printf '| %s | %d | %d | %d | %d | %d |\n' "$operation" "$m" "$b" "$s" $((m - b)) $((m - s)) | tee -a "$work/results.md"
}

{
  echo "| operation (sample) | marks | bare reference | same-headers reference | marks - bare | marks - same-headers |"
  echo "|---|---:|---:|---:|---:|---:|"
} | tee "$work/results.md"
row h1 getCompany /v1/companies/openai
row h1 "listCompanies limit=50" "/v1/companies?limit=50"
row h2 "getCompany, HTTP/2 (h2c)" /v1/companies/openai
# The access log as production runs it: text lines to a file (its writer thread counted too).
row h1 "getCompany, access log to a file" /v1/companies/openai --access-log "$work/access.log"
echo "instructions per request (user space, callgrind); written to $work/results.md"
