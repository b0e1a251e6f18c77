#!/usr/bin/env bash
# Loopback load benchmark: marks against a bare hyper server answering the same bytes
# (benches/lab/reference_server.rs) and nginx serving the same bytes from a file, in one run.
#
#   bash benches/lab/load.sh            # DURATION=5 ROUNDS=3 CONNECTIONS=32 by default
#
# The servers under test (marks, the bare and the same-headers reference, nginx) get CPU 0 and
# one worker each; wrk gets CPU 1, so on a 2-core machine load and server never share a core.
# Every server sees the same request with keep-alive. Each operation runs ROUNDS interleaved
# rounds and reports medians. getCompany is also run side by side with the bare reference (both
# servers on CPU 0 at once; see side_by_side), which this shared machine's drift disturbs far
# less. Prints Markdown tables and writes target/bench-load/results.md. Installs wrk and nginx
# from Debian's packages when they are missing.
set -euo pipefail
cd "$(dirname "$0")/../.."

DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-32}
SERVER_CPU=${SERVER_CPU:-0}
LOAD_CPU=${LOAD_CPU:-1}
work=target/bench-load
source benches/lab/setup.sh
install_missing wrk nginx
prepare_sample

# The second dataset, a synthetic 10,000-company universe (built once, cached).
if [ ! -f "$work/synth10k.snap" ]; then
  echo "building the 10,000-company synthetic snapshot (about a minute)"
  rm -rf "$work/synth10k"
  "$marks" synth --companies 10000 --seed 42 --out "$work/synth10k" >/dev/null
  "$marks" build --source "$work/synth10k" --out "$work/synth10k.snap" \
    --signing-key sample/demo-signing-key.pem --quiet >/dev/null
fi

pids=()
cleanup() {
  for pid in "${pids[@]:-}"; do kill "$pid" 2>/dev/null || true; done
  nginx -p "$work/nginx" -c nginx.conf -s stop 2>/dev/null || true
}
trap cleanup EXIT

start_marks() { # snapshot row; sets marks_url and marks_pid
  marks_serve --via taskset -c "$SERVER_CPU" -- "$marks" "$work/marks-$2.log" --snapshot "$1" \
    --keys "$work/keys.toml" --threads 1 --no-access-log --log-level warn
  pids+=("$marks_pid")
}

start_reference() { # body-file port(free_port) status [headers-file] [runtime]
  local extra=()
  if [ -n "${4:-}" ]; then extra=(--headers "$4"); fi
  if [ -n "${5:-}" ]; then extra+=(--runtime "$5"); fi
  taskset -c "$SERVER_CPU" "$reference" --addr "127.0.0.1:$2" --body "$1" --status "$3" --threads 1 "${extra[@]}" 2>/dev/null &
  pids+=($!); reference_pid=$!
  wait_port "$2"
}

mkdir -p "$work/nginx/www" "$work/nginx/logs"
affinity=1  # nginx's CPU mask: the rightmost digit is CPU 0
for _ in $(seq 1 "$SERVER_CPU"); do affinity="${affinity}0"; done
nginx_port=$(free_port)
cat >"$work/nginx/nginx.conf" <<EOF
worker_processes 1;
worker_cpu_affinity $affinity;
daemon on;
pid nginx.pid;
error_log logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nodelay on;
  keepalive_requests 1000000;
  keepalive_timeout 60s;
  default_type application/json;
  server {
    listen 127.0.0.1:$nginx_port reuseport;
    root www;
  }
}
EOF
nginx -p "$work/nginx" -c nginx.conf
wait_port "$nginx_port"

# Prints wrk's last run as "requests/s p50_ms p99_ms".
wrk_summary() {
  awk '
    function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; if (v ~ /s$/) return v * 1000; return v }
    /Requests\/sec/ { rps = $2 }
    /^ +50%/ { p50 = ms($2) }
    /^ +99%/ { p99 = ms($2) }
    END { printf "%d %.3f %.3f\n", rps, p50, p99 }' "$work/wrk.out"
}

# wrk on the other core. Prints "requests/s p50_ms p99_ms".
run_wrk() { # url [header...]
  local url=$1; shift
  local args=()
  for header in "$@"; do args+=(-H "$header"); done
  taskset -c "$LOAD_CPU" wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" --latency "${args[@]}" "$url" >"$work/wrk.out" 2>&1
  refuse_errors "$work/wrk.out" "$url"
  wrk_summary
}

# Fixed-rate latency: each connection waits 1 ms between requests (wrk's delay()), so one
# connection offers a little under 1000 req/s; 1.3 ms per request is budgeted for the wait
# plus the answer. The served rate is reported beside the target.
run_wrk_rate() { # url rate [header...]
  local url=$1 rate=$2; shift 2
  local connections=$(( (rate * 13 + 9999) / 10000 ))
  local args=()
  for header in "$@"; do args+=(-H "$header"); done
  echo 'function delay() return 1 end' >"$work/delay.lua"
  taskset -c "$LOAD_CPU" wrk -t1 -c"$connections" -d"${DURATION}s" --latency -s "$work/delay.lua" "${args[@]}" "$url" >"$work/wrk.out" 2>&1
  refuse_errors "$work/wrk.out" "$url"
  wrk_summary
}

# Side by side: marks and a reference on the same core at the same time, each loaded by its own
# wrk (half the connections each) on the other core. The scheduler shares the core between
# them, so the machine's drift falls on both alike. Prints the throughput ratio and the ratio
# of CPU time per request (user + system, from /proc), then each server's user and system
# microseconds per request.
clock_ticks=$(getconf CLK_TCK)
cpu_ticks() { awk '{print $14, $15}' "/proc/$1/stat"; }
side_by_side() { # marks-pid marks-url reference-pid reference-url header
  local half=$(( (CONNECTIONS + 1) / 2 )) mu0 ms0 ru0 rs0 mu1 ms1 ru1 rs1 wrk_pid
  read -r mu0 ms0 < <(cpu_ticks "$1"); read -r ru0 rs0 < <(cpu_ticks "$3")
  taskset -c "$LOAD_CPU" wrk -t1 -c"$half" -d"${DURATION}s" -H "$5" "$2" >"$work/wrk-side.out" 2>&1 &
  wrk_pid=$!
  taskset -c "$LOAD_CPU" wrk -t1 -c"$half" -d"${DURATION}s" -H "$5" "$4" >"$work/wrk.out" 2>&1
  wait "$wrk_pid"
  read -r mu1 ms1 < <(cpu_ticks "$1"); read -r ru1 rs1 < <(cpu_ticks "$3")
  refuse_errors "$work/wrk-side.out" "$2"
  refuse_errors "$work/wrk.out" "$4"
  local m_n r_n
  m_n=$(awk '/requests in/ {print $1}' "$work/wrk-side.out"); r_n=$(awk '/requests in/ {print $1}' "$work/wrk.out")
  awk -v mn="$m_n" -v rn="$r_n" -v mu=$((mu1 - mu0)) -v ms=$((ms1 - ms0)) -v ru=$((ru1 - ru0)) -v rs=$((rs1 - rs0)) -v hz="$clock_ticks" \
    'BEGIN { us = 1e6 / hz; printf "%.3f %.3f %.2f %.2f %.2f %.2f\n", mn / rn, ((ru + rs) / rn) / ((mu + ms) / mn), mu * us / mn, ms * us / mn, ru * us / rn, rs * us / rn }'
}

rss() { # pid -> "rss_mib anon_mib file_mib"
  awk '/^VmRSS/ {r=$2} /^RssAnon/ {a=$2} /^RssFile/ {f=$2} END {printf "%.1f %.1f %.1f\n", r/1024, a/1024, f/1024}' "/proc/$1/status"
}

results="$work/results.md"
{
  echo "| operation | dataset | marks req/s | bare reference req/s | same-headers reference req/s | nginx req/s | marks / bare | marks / same-headers | marks / nginx | marks p50 ms | marks p99 ms | body bytes |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$results"


row=0  # names each row's files
side_rows=()
bench() { # name dataset-snapshot path [304]
  local name=$1 snapshot=$2 path=$3 mode=${4:-}
  row=$((row + 1))
  start_marks "$snapshot" "$row"
  local url="$marks_url$path"
  local file="$work/nginx/www/body-$row.json"
  curl -s -H "X-API-Key: $key" "$url" -o "$file"
  local bytes
  bytes=$(stat -c %s "$file")
  local marks_headers=("X-API-Key: $key") status=200 nginx_headers=()
  if [ "$mode" = "304" ]; then
    local etag nginx_etag
    etag=$(curl -s -D - -o /dev/null -H "X-API-Key: $key" "$url" | awk 'tolower($1)=="etag:" {print $2}' | tr -d '\r')
    marks_headers+=("If-None-Match: $etag")
    nginx_etag=$(curl -s -D - -o /dev/null "http://127.0.0.1:$nginx_port/body-$row.json" | awk 'tolower($1)=="etag:" {print $2}' | tr -d '\r')
    nginx_headers+=("If-None-Match: $nginx_etag")
    status=304
    bytes=0
  fi
  # The header block marks sends (Date and Content-Length are added by every server anyway),
  # for the same-headers reference.
  local curl_headers=()
  for header in "${marks_headers[@]}"; do curl_headers+=(-H "$header"); done
  curl -s -D - -o /dev/null "${curl_headers[@]}" "$url" | tr -d '\r' | tail -n +2 \
    | grep -viE '^(date|content-length):' | grep ':' >"$work/headers-$row.txt"
  local body_file="$file"
  if [ "$mode" = "304" ]; then body_file=/dev/null; fi
  local bare_port same_port
  bare_port=$(free_port)
  start_reference "$body_file" "$bare_port" "$status"
  local bare_pid=$reference_pid
  same_port=$(free_port)
  start_reference "$body_file" "$same_port" "$status" "$work/headers-$row.txt"
  local same_pid=$reference_pid

  # Interleaved rounds, medians reported: this machine's throughput drifts between runs.
  local m=() r=() s=() n=() p50=() p99=()
  for _ in $(seq 1 "$ROUNDS"); do
    read -r rps l50 l99 < <(run_wrk "$url" "${marks_headers[@]}")
    m+=("$rps"); p50+=("$l50"); p99+=("$l99")
    read -r rps _ _ < <(run_wrk "http://127.0.0.1:$bare_port/" "${marks_headers[0]}")
    r+=("$rps")
    read -r rps _ _ < <(run_wrk "http://127.0.0.1:$same_port/" "${marks_headers[0]}")
    s+=("$rps")
    read -r rps _ _ < <(run_wrk "http://127.0.0.1:$nginx_port/body-$row.json" "${marks_headers[0]}" "${nginx_headers[@]}")
    n+=("$rps")
  done
  local m_rps r_rps s_rps n_rps m_p50 m_p99
  m_rps=$(printf '%s\n' "${m[@]}" | median); r_rps=$(printf '%s\n' "${r[@]}" | median)
  s_rps=$(printf '%s\n' "${s[@]}" | median); n_rps=$(printf '%s\n' "${n[@]}" | median)
  m_p50=$(printf '%s\n' "${p50[@]}" | median); m_p99=$(printf '%s\n' "${p99[@]}" | median)

  if [ "$name" = "getCompany" ]; then
    local rps_ratios=() cpu_ratios=() mu=() ms=() ru=() rs=() a b c d e f
    for _ in $(seq 1 "$ROUNDS"); do
      read -r a b c d e f < <(side_by_side "$marks_pid" "$url" "$bare_pid" "http://127.0.0.1:$bare_port/" "${marks_headers[0]}")
      rps_ratios+=("$a"); cpu_ratios+=("$b"); mu+=("$c"); ms+=("$d"); ru+=("$e"); rs+=("$f")
    done
    side_rows+=("| getCompany | $(basename "$snapshot" .snap) | $(printf '%s\n' "${rps_ratios[@]}" | median) | $(printf '%s\n' "${cpu_ratios[@]}" | median) | $(printf '%s\n' "${rps_ratios[@]}" | sort -n | tr '\n' ' ')| $(printf '%s\n' "${mu[@]}" | median) + $(printf '%s\n' "${ms[@]}" | median) | $(printf '%s\n' "${ru[@]}" | median) + $(printf '%s\n' "${rs[@]}" | median) |")
  fi

  if [ "$name" = "getCompany" ] && [ "$snapshot" = "$work/sample.snap" ]; then
    # docs/design.md asks for one current-thread runtime per core against the multi-thread runtime:
    # the bare reference both ways, side by side, one thread each.
    local current_port
    current_port=$(free_port)
    start_reference "$body_file" "$current_port" "$status" "" current-thread
    local current_pid=$reference_pid runtime_rps=() runtime_cpu=()
    for _ in $(seq 1 "$ROUNDS"); do
      read -r a b _ < <(side_by_side "$current_pid" "http://127.0.0.1:$current_port/" "$bare_pid" "http://127.0.0.1:$bare_port/" "${marks_headers[0]}")
      runtime_rps+=("$a"); runtime_cpu+=("$b")
    done
    kill "$current_pid"; wait "$current_pid" 2>/dev/null || true
    runtime="bare reference, a current-thread runtime against the multi-thread runtime (one worker), side by side: $(printf '%s\n' "${runtime_rps[@]}" | median)x req/s, $(printf '%s\n' "${runtime_cpu[@]}" | median)x CPU per request (rounds: $(printf '%s\n' "${runtime_cpu[@]}" | sort -n | tr '\n' ' '| sed 's/ $//'))"

    # Latency at half the peak rate, two ways. Closed loop: the fewest keep-alive connections
    # that carry half the peak, each sending its next request when the last is answered.
    local half=$((m_rps / 2)) c
    for c in 1 2 3 4 6 8 12 16 24; do
      read -r h_rps h_p50 h_p99 < <(CONNECTIONS=$c run_wrk "$url" "${marks_headers[@]}")
      if [ "$h_rps" -ge "$half" ]; then break; fi
    done
    half_rate="getCompany at half the peak rate, closed loop ($c connections, $h_rps req/s for a target of $half): p50 $h_p50 ms, p99 $h_p99 ms"
    # Paced: wrk's delay() holds each connection 1 ms between requests. Its timers fire on
    # 1 ms ticks, so requests leave in bursts of about rate/1000 and wait for each other; the
    # bare reference is run at the same rate to show what that alone costs.
    read -r p_rps p_p50 p_p99 < <(run_wrk_rate "$url" "$half" "${marks_headers[@]}")
    read -r b_rps b_p50 b_p99 < <(run_wrk_rate "http://127.0.0.1:$bare_port/" "$half" "${marks_headers[0]}")
    paced="getCompany paced at half the peak rate (1 ms wrk timers): marks $p_rps req/s, p50 $p_p50 ms, p99 $p_p99 ms; bare reference $b_rps req/s, p50 $b_p50 ms, p99 $b_p99 ms"
    read -r rss_total rss_anon rss_file < <(rss "$marks_pid")
    memory="marks resident after the getCompany runs: $rss_total MiB ($rss_anon MiB anonymous, $rss_file MiB file-backed snapshot pages)"
  fi
  if [ "$snapshot" = "$work/synth10k.snap" ] && [ -z "${memory_10k:-}" ]; then
    read -r rss_total rss_anon rss_file < <(rss "$marks_pid")
    memory_10k="marks resident on the 10,000-company snapshot: $rss_total MiB ($rss_anon MiB anonymous, $rss_file MiB file-backed)"
  fi
  kill "$marks_pid" "$bare_pid" "$same_pid"
  wait "$marks_pid" "$bare_pid" "$same_pid" 2>/dev/null || true

  local dataset
  dataset=$(basename "$snapshot" .snap)
  awk -v name="$name" -v ds="$dataset" -v m="$m_rps" -v r="$r_rps" -v s="$s_rps" -v n="$n_rps" -v p50="$m_p50" -v p99="$m_p99" -v b="$bytes" \
    'BEGIN { printf "| %s | %s | %d | %d | %d | %d | %.2f | %.2f | %.2f | %.3f | %.3f | %d |\n", name, ds, m, r, s, n, m / r, m / s, m / n, p50, p99, b }' | tee -a "$results"
}

echo "wrk: ${DURATION}s, $CONNECTIONS connections, keep-alive; server on CPU $SERVER_CPU, wrk on CPU $LOAD_CPU"
bench getCompany "$work/sample.snap" /v1/companies/openai
bench "getCompany (304)" "$work/sample.snap" /v1/companies/openai 304
bench "listCompanies limit=50" "$work/sample.snap" "/v1/companies?limit=50"
bench "getMarkSeries" "$work/sample.snap" /v1/companies/openai/marks
bench getCompany "$work/synth10k.snap" /v1/companies/synth-004242
bench "listCompanies limit=50" "$work/synth10k.snap" "/v1/companies?limit=50&sort=-value_usd"
bench "listCompanies limit=200" "$work/synth10k.snap" "/v1/companies?limit=200&sort=-value_usd"
bench "getMarkSeries" "$work/synth10k.snap" /v1/companies/synth-004242/marks

{
  echo
  echo "Side by side (marks and the bare reference sharing CPU 0 at once, $(( (CONNECTIONS + 1) / 2 )) connections each; medians of $ROUNDS rounds):"
  echo
  echo "| operation | dataset | marks / bare, req/s | bare / marks, CPU per request | each round, req/s ratio | marks user + system us/request | bare user + system us/request |"
  echo "|---|---|---:|---:|---|---:|---:|"
  printf '%s\n' "${side_rows[@]}"
  echo
  echo "- $runtime"
  echo "- $half_rate"
  echo "- $paced"
  echo "- $memory"
  echo "- $memory_10k"
  echo "- machine: $(nproc) cores, $(awk -F: '/model name/ {print $2; exit}' /proc/cpuinfo | sed 's/^ *//'); wrk ${DURATION}s x $ROUNDS interleaved rounds (medians), $CONNECTIONS connections"
} | tee -a "$results"

# The production configuration (TLS, HTTP/1.1 and HTTP/2, access logs on) against nginx and the
# bare reference, in the same run; PRODUCTION=0 skips it.
if [ "${PRODUCTION:-1}" = 1 ]; then
  echo
  echo "production configuration:"
  bash benches/lab/production.sh
fi
