#!/usr/bin/env bash
# What loading a snapshot costs now that the server never maps the operator's file: a private
# copy (copy_file_range into an unnamed file beside it), then the checks (XXH3-128 over every
# byte, archive validation, consistency) on the mapped copy. For a ~1 GiB and a ~5 GiB
# synthetic snapshot, each measured in the same run against `cp` of the same file (the floor
# of any copy) and `cat` to /dev/null (the floor of reading it once):
#
#   bash benches/lab/snapshot-load.sh          # RUNS=3; the 5 GiB build takes about a minute
#
# Reports wall times (median of RUNS, warm page cache), the server's resident memory once the
# snapshot is in force (anonymous, and file-backed pages of the mapped copy), and the disk and
# page cache the copy takes. Writes target/bench-snapshot-load/results.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

RUNS=${RUNS:-3}
work=target/bench-snapshot-load
source benches/lab/setup.sh
prepare_sample

pid=""
cleanup() { if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; fi; rm -f "$work"/copy-*.snap; }
trap cleanup EXIT

# The two sizes: 2,100 and 10,000 synthetic companies (about 1.05 GB and 5.0 GB).
for companies in 2100 10000; do
  if [ ! -f "$work/synth-$companies.snap" ]; then
    echo "building the $companies-company synthetic snapshot"
    rm -rf "$work/synth-$companies"
    "$marks" synth --companies "$companies" --seed 42 --out "$work/synth-$companies" >/dev/null
    "$marks" build --source "$work/synth-$companies" --out "$work/synth-$companies.snap" \
      --signing-key sample/demo-signing-key.pem --quiet >/dev/null
  fi
done

seconds() { # command... -> wall seconds
  local start end
  start=$(date +%s.%N); "$@" >/dev/null 2>&1; end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.3f\n", e - s }'
}

results="$work/results.md"
{
  echo "| snapshot | bytes | cat > /dev/null s | cp s | marks verify-snapshot s (copy + checks) | load / cp | anonymous RSS MiB | file-backed RSS MiB | copy on disk |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
} >"$results"

for companies in 2100 10000; do
  snap="$work/synth-$companies.snap"
  bytes=$(stat -c %s "$snap")
  cat "$snap" >/dev/null  # warm the page cache once for all three
  cat_s=$(for _ in $(seq "$RUNS"); do seconds cat "$snap"; done | median)
  cp_s=$(for _ in $(seq "$RUNS"); do seconds cp --reflink=auto "$snap" "$work/copy-$companies.snap"; rm -f "$work/copy-$companies.snap"; done | median)
  load_s=$(for _ in $(seq "$RUNS"); do seconds "$marks" verify-snapshot "$snap"; done | median)
  # The server with that snapshot in force: its own memory, and the mapped copy's pages.
  # A multi-GB snapshot is checksummed before the server listens: it is given a minute more.
  MARKS_SERVE_TIMEOUT=120 marks_serve "$marks" "$work/serve.log" --snapshot "$snap" --keys "$work/keys.toml" \
    --no-access-log --log-level warn
  pid=$marks_pid
  read -r anon file < <(awk '/^RssAnon/ {a=$2} /^RssFile/ {f=$2} END {printf "%.1f %.1f\n", a/1024, f/1024}' "/proc/$pid/status")
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=""
  ratio=$(awk -v l="$load_s" -v c="$cp_s" 'BEGIN { printf "%.2f", l / c }')
  echo "| synth $companies | $bytes | $cat_s | $cp_s | $load_s | $ratio | $anon | $file | one more file of the same size while in force (a reflink on XFS/Btrfs) |" | tee -a "$results"
done
echo
cat "$results"
