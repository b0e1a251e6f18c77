#!/usr/bin/env bash
# The production configuration measured against nginx doing the same, and against the bare
# hyper reference (benches/lab/reference_server.rs with TLS: the same body, no work) in one run: TLS with
# HTTP/1.1 (wrk) and HTTP/2 over TLS (h2load, several streams per connection), each server with
# its access log on and written to a file (nginx: buffered `access_log`), the same certificate
# and the same getCompany body; and against that reference sending marks' exact headers with
# fixed values (what the headers alone cost). Pinned as load.sh pins: the server (one worker) on CPU 0, the
# load generator on CPU 1; rounds interleaved, medians reported, with CPU time per request.
#
#   bash benches/lab/production.sh      # DURATION=5 ROUNDS=3 CONNECTIONS=32 H2_CONNECTIONS=8 H2_STREAMS=16
#
# Installs wrk, nginx and h2load (Debian's nghttp2-client) when missing. Writes
# target/bench-production/results.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-32}
H2_CONNECTIONS=${H2_CONNECTIONS:-8}
H2_STREAMS=${H2_STREAMS:-16}
work=target/bench-production
source benches/lab/setup.sh
install_missing wrk nginx
# h2load comes in Debian's nghttp2-client.
command -v h2load >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q nghttp2-client >/dev/null
prepare_sample

pids=()
cleanup() {
  for pid in "${pids[@]:-}"; do kill "$pid" 2>/dev/null || true; done
  nginx -p "$work/nginx" -c nginx.conf -s stop 2>/dev/null || true
}
trap cleanup EXIT

# One certificate for both servers.
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj /CN=localhost \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

marks_serve --via taskset -c 0 -- "$marks" "$work/marks.log" --snapshot "$work/sample.snap" \
  --keys "$work/keys.toml" --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" --http2 --threads 1 \
  --access-log "$work/marks-access.log" --log-level warn
pids+=("$marks_pid")
marks_port=${marks_addr##*:}
# The other servers on ports free now.
nginx_port=$(free_port)
bare_port=$(free_port)
same_port=$(free_port)

# nginx serves the very bytes marks answers, from a file.
mkdir -p "$work/nginx/www/v1/companies" "$work/nginx/logs"
curl -sk -H "X-API-Key: $key" "https://127.0.0.1:$marks_port/v1/companies/stripe" >"$work/nginx/www/v1/companies/stripe"
cat >"$work/nginx/nginx.conf" <<CONF
worker_processes 1;
worker_cpu_affinity 1;
daemon on;
pid nginx.pid;
error_log logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log logs/access.log combined buffer=64k flush=1s;
  sendfile on;
  tcp_nodelay on;
  keepalive_requests 1000000;
  keepalive_timeout 60s;
  default_type application/json;
  server {
    listen 127.0.0.1:$nginx_port ssl http2 reuseport;
    ssl_certificate $PWD/$work/cert.pem;
    ssl_certificate_key $PWD/$work/key.pem;
    root www;
  }
}
CONF
nginx -p "$work/nginx" -c nginx.conf
wait_port "$nginx_port"
nginx_pid=$(pgrep -P "$(cat "$work/nginx/nginx.pid")" | head -n 1)

taskset -c 0 "$reference" --addr "127.0.0.1:$bare_port" --body "$work/nginx/www/v1/companies/stripe" --threads 1 \
  --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" 2>/dev/null &
reference_pid=$!; pids+=("$reference_pid")
wait_port "$bare_port"

# The same reference sending marks' exact header block (fixed values), its HTTP/2 streams run as
# marks runs them (first poll inline): what these fourteen headers cost a server built like
# marks, through hyper and h2, with no work per request.
curl -sk -D - -o /dev/null -H "X-API-Key: $key" "https://127.0.0.1:$marks_port/v1/companies/stripe" | tr -d '\r' | tail -n +2 \
  | grep -viE '^(date|content-length):' | grep ':' >"$work/headers.txt"
taskset -c 0 "$reference" --addr "127.0.0.1:$same_port" --body "$work/nginx/www/v1/companies/stripe" --threads 1 \
  --headers "$work/headers.txt" --h2-streams first-poll-inline --tls-cert "$work/cert.pem" --tls-key "$work/key.pem" \
  2>/dev/null &
same_headers_pid=$!; pids+=("$same_headers_pid")
wait_port "$same_port"

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)

# "requests/s cpu_us_per_request" for one load run against one server.
measure() { # kind(h1|h2) port pid
  local before after n
  before=$(ticks "$3")
  if [ "$1" = h1 ]; then
    taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" -H "X-API-Key: $key" \
      "https://127.0.0.1:$2/v1/companies/stripe" >"$work/out" 2>&1
    refuse_errors "$work/out" "port $2"
    n=$(awk '/requests in/ {print $1}' "$work/out")
  else
    taskset -c 1 h2load -t1 -c"$H2_CONNECTIONS" -m"$H2_STREAMS" -D"$DURATION" -H "X-API-Key: $key" \
      "https://127.0.0.1:$2/v1/companies/stripe" >"$work/out" 2>&1
    refuse_errors "$work/out" "port $2"
    n=$(awk '/^requests:/ {print $8}' "$work/out")
  fi
  after=$(ticks "$3")
  awk -v n="$n" -v d="$DURATION" -v t=$((after - before)) -v hz="$hz" \
    'BEGIN { printf "%d %.2f\n", n / d, t * 1e6 / hz / n }'
}

for kind in h1 h2; do
  : >"$work/$kind-marks"; : >"$work/$kind-nginx"; : >"$work/$kind-bare"; : >"$work/$kind-same"
  for _ in $(seq 1 "$ROUNDS"); do
    measure "$kind" "$marks_port" "$marks_pid" >>"$work/$kind-marks"
    measure "$kind" "$nginx_port" "$nginx_pid" >>"$work/$kind-nginx"
    measure "$kind" "$bare_port" "$reference_pid" >>"$work/$kind-bare"
    measure "$kind" "$same_port" "$same_headers_pid" >>"$work/$kind-same"
  done
done

{
  echo "| protocol (TLS, access log on) | marks req/s | nginx req/s | bare hyper req/s | same-headers hyper req/s | marks / nginx | marks / bare | same headers / bare | marks CPU us/req | nginx CPU us/req | bare CPU us/req | same-headers CPU us/req |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
  for kind in h1 h2; do
    m=$(cut -d' ' -f1 "$work/$kind-marks" | median); n=$(cut -d' ' -f1 "$work/$kind-nginx" | median)
    b=$(cut -d' ' -f1 "$work/$kind-bare" | median)
    mc=$(cut -d' ' -f2 "$work/$kind-marks" | median); nc=$(cut -d' ' -f2 "$work/$kind-nginx" | median)
    bc=$(cut -d' ' -f2 "$work/$kind-bare" | median)
    sh=$(cut -d' ' -f1 "$work/$kind-same" | median); sc=$(cut -d' ' -f2 "$work/$kind-same" | median)
    label=$([ "$kind" = h1 ] && echo "HTTP/1.1, wrk -c$CONNECTIONS" || echo "HTTP/2, h2load -c$H2_CONNECTIONS -m$H2_STREAMS")
    ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
    echo "| $label | $m | $n | $b | $sh | $(ratio "$m" "$n") | $(ratio "$m" "$b") | $(ratio "$sh" "$b") | $mc | $nc | $bc | $sc |"
  done
} | tee "$work/results.md"
