# Starting `marks serve` from a shell script, the one way every script here does it (the
# Python harnesses use tests/harness/marks_server.py, the Rust tests tests/util/mod.rs, all
# reading the same ready file). Source it, then:
#
#   marks_serve BINARY LOG ARGS...    # on 127.0.0.1:0; sets marks_url and marks_pid
#   ...
#   kill "$marks_pid"
#
# The server writes its URL to a ready file (`--ready-file`, JSON) once it listens; this waits
# for that file (60 s at most) and fails, printing the server's log, if the server exits first.

marks_serve() {
  local binary=$1 log=$2
  shift 2
  local ready
  ready=$(mktemp -u "${TMPDIR:-/tmp}/marks-ready.XXXXXX")
  "$binary" serve --addr 127.0.0.1:0 --ready-file "$ready" "$@" 2>"$log" &
  marks_pid=$!
  local waited=0
  while [ ! -s "$ready" ]; do
    if ! kill -0 "$marks_pid" 2>/dev/null; then
      echo "marks serve exited before listening:" >&2
      cat "$log" >&2
      return 1
    fi
    if [ "$waited" -ge 3000 ]; then
      echo "marks serve did not listen within 60 s:" >&2
      cat "$log" >&2
      return 1
    fi
    sleep 0.02
    waited=$((waited + 1))
  done
  marks_url=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["url"])' "$ready")
  rm -f "$ready"
}
