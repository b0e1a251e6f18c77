# The set-up shared by benches/load.sh and benches/instructions.sh, sourced by both from the
# repository root with $work set: tools installed, release binaries built, the sample snapshot
# built, and a bench key issued.

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

# Sets $marks, $reference and $key; leaves $work/sample.snap and $work/keys.toml.
prepare_sample() {
  mkdir -p "$work"
  cargo build --release --quiet --bin marks --example reference_server
  marks=target/release/marks
  reference=target/release/examples/reference_server
  "$marks" build --source snapshots/sample --out "$work/sample.snap" \
    --signing-key snapshots/sample/demo-signing-key.pem --quiet >/dev/null
  # A bench-only key: an enterprise key with its own budget (the documented per-key
  # override), so the rate limiter is exercised on every request but never refuses one.
  cp snapshots/sample/demo-keys.toml "$work/keys.toml"
  key=$("$marks" keys issue --keys "$work/keys.toml" --tier enterprise --tenant bench --rate-per-min 2000000000 2>/dev/null)
}
