# Starting `marks serve` from a shell script, the one way every script here does it (the
# Python harnesses use tests/harness/marks_server.py, the Rust tests tests/util/mod.rs, all
# reading the same ready file). Source it, then:
#
#   marks_serve BINARY LOG ARGS...    # on 127.0.0.1:0; sets marks_url, marks_addr and marks_pid
#   marks_serve --via COMMAND... -- BINARY LOG ARGS...   # run through COMMAND (taskset, valgrind)
#   ...
#   kill "$marks_pid"
#
# The server writes its URL to a ready file (`--ready-file`, JSON) once it listens; this waits
# for that file (MARKS_SERVE_TIMEOUT seconds, 60 by default) and fails, printing the server's
# log, if the server exits first. The server's output (stdout and stderr) goes to LOG. A
# COMMAND given with --via must exec the server (as taskset and valgrind do), so that marks_pid
# is the server's.

marks_serve() {
  local via=()
  if [ "$1" = --via ]; then
    shift
    while [ "$1" != -- ]; do via+=("$1"); shift; done
    shift
  fi
  local binary=$1 log=$2
  shift 2
  local ready
  ready=$(mktemp -u "${TMPDIR:-/tmp}/marks-ready.XXXXXX")
  "${via[@]}" "$binary" serve --addr 127.0.0.1:0 --ready-file "$ready" "$@" >"$log" 2>&1 &
  marks_pid=$!
  local waited=0 limit=$((${MARKS_SERVE_TIMEOUT:-60} * 50))
  while [ ! -s "$ready" ]; do
    if ! kill -0 "$marks_pid" 2>/dev/null; then
      echo "marks serve exited before listening:" >&2
      cat "$log" >&2
      return 1
    fi
    if [ "$waited" -ge "$limit" ]; then
      echo "marks serve did not listen within ${MARKS_SERVE_TIMEOUT:-60} s:" >&2
      cat "$log" >&2
      kill "$marks_pid" 2>/dev/null || true
      return 1
    fi
    sleep 0.02
    waited=$((waited + 1))
  done
  read -r marks_url marks_addr < <(python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["url"], r["addr"])' "$ready")
  rm -f "$ready"
}
