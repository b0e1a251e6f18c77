# The set-up shared by the bench scripts (load.sh, instructions.sh, keys.sh, production.sh and
# the rest), sourced by each from the repository root with $work set: tools installed, release
# binaries built, the sample snapshot built, a bench key issued, and the helpers that wait for
# a server and refuse a load run with errors. marks is started as every harness starts it
# (tests/harness/marks-server.sh: on port 0, its address read from its ready file); the other
# servers (the references, nginx, Redis) on ports found free at run time.

# Installs each named tool from Debian's packages when it is missing (the package names are
# the command names).
install_missing() {
  local missing=() tool
  for tool in "$@"; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null
  fi
}

. tests/harness/marks-server.sh

# A TCP port of 127.0.0.1 that nothing listens on now, for a server without a ready file.
free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits until something listens on 127.0.0.1:PORT (the servers other than marks); allows a
# minute.
wait_port() { # port
  for _ in $(seq 1 1200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "nothing listening on $1"; exit 1
}

# Stops the run when a load generator's output (wrk or h2load) shows error answers or socket
# errors (connections cut, reset or timed out): figures over failed requests mean nothing.
refuse_errors() { # output-file what
  if grep -q "Non-2xx or 3xx\|Socket errors\|[1-9][0-9]* failed\|[1-9][0-9]* errored" "$1"; then
    echo "errors in the load run against $2:" >&2; cat "$1" >&2; exit 1
  fi
}

# The median of numbers, one per line, read from the named files or from stdin.
median() { sort -n "$@" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# Sets $marks, $reference and $key; leaves $work/sample.snap and $work/keys.toml.
prepare_sample() {
  mkdir -p "$work"
  cargo build --release --quiet --bin marks --example reference_server
  marks=target/release/marks
  reference=target/release/examples/reference_server
  "$marks" build --source sample --out "$work/sample.snap" \
    --signing-key sample/demo-signing-key.pem --quiet >/dev/null
  # A bench-only key: an enterprise key with its own budget (the documented per-key
  # override), so the rate limiter is exercised on every request but never refuses one.
  cp sample/demo-keys.toml "$work/keys.toml"
  key=$("$marks" keys issue --keys "$work/keys.toml" --tier enterprise --tenant bench --rate-per-min 2000000000 2>/dev/null)
}
