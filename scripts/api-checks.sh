#!/usr/bin/env bash
# Checks that need a live server and Python: schemathesis against the served OpenAPI document
# (all checks, all phases), then the Python client example and the signature test vector.
# Installs what it needs into target/ci-venv. Uses the binary `cargo test` already built.
set -euo pipefail
cd "$(dirname "$0")/.."

venv=target/ci-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r examples/python/requirements.txt schemathesis

cargo build --quiet --bin marks
marks=target/debug/marks
work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# A key with a budget large enough that schemathesis measures the API, not the rate limiter.
cp snapshots/sample/demo-keys.toml "$work/keys.toml"
ci_key=$("$marks" keys issue --keys "$work/keys.toml" --tier enterprise --tenant ci --rate-per-min 1000000 2>/dev/null)
"$marks" build --source snapshots/sample --out "$work/sample.snap" \
  --signing-key snapshots/sample/demo-signing-key.pem --quiet >/dev/null

"$marks" serve --addr 127.0.0.1:0 --snapshot "$work/sample.snap" --keys "$work/keys.toml" \
  --auth-failures-per-min 1000000 --no-access-log >"$work/serve.log" 2>"$work/serve.err" &
server_pid=$!
for _ in $(seq 1 100); do
  base=$(sed -n 's/^Valuation Marks listening on //p' "$work/serve.err")
  [ -n "$base" ] && break
  sleep 0.1
done
if [ -z "${base:-}" ]; then
  echo "server did not start:"; cat "$work/serve.err"; exit 1
fi
echo "server at $base"

echo "--- schemathesis: every check, every phase"
"$venv/bin/schemathesis" --config-file .ci/schemathesis.toml run "$base/v1/openapi.json" \
  --url "$base" --checks all -H "X-API-Key: $ci_key" --workers 2 --seed 1

echo "--- Python client example against the live server"
"$venv/bin/python" examples/python/client.py --base-url "$base" --api-key "$ci_key"
"$venv/bin/python" examples/python/client.py --base-url "$base" --api-key vmk_demo_free --expect-tier free

echo "--- signature test vector, offline"
"$venv/bin/python" examples/python/verify_test_vector.py examples/python/test_vector.json

echo "api checks passed"
