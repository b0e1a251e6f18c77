"""Developer cross-check of methodology v0.5.0 against its independent reference implementation.

Runs ../shared/methodology/reference_v050.py on DATASET_DIR (it reads events.csv and dataset.toml,
and applies `supersedes` and `retraction` records itself), then compares what the product
computes on the same dataset with what the reference wrote, number for number:

- every latest mark of a private company (mark, 80% and 95% bounds, confidence, the next-print
  value `next_usd`, the anchor and the days since it);
- every daily point of the series the reference writes (stripe, openai);
- every scored month-end (the mark, the next value, the bridged value, both errors, the band
  offsets, the flags, the confidence and the number of residuals known);
- every event-day target (the mark, the value, the band offsets, the flags, the confidence and
  the next-print forecast `x_next`);
- the printed scorecard, line for line.

Floats agree to 1e-9 relative (1e-12 absolute near zero); whole-dollar figures served by the API
to 0.5 USD plus 1e-9 relative. Where the product's numbers come from:

    python3 tools/crosscheck_reference.py DATASET_DIR --rows DIR
        DIR holds the builder's rows in the reference's layout, written by
        cargo run --release -p marks-builder --example reference_rows -- DATASET_DIR DIR stripe openai
        (the example also prints the scorecard; pass it with --scorecard FILE to compare it too)

    python3 tools/crosscheck_reference.py DATASET_DIR --server BASE_URL --key PRO_KEY
        a server serving DATASET_DIR: the full scored rows from /v1/scorecard/targets (Pro and
        above), every company item (/v1/companies) and the series of stripe and openai

    --golden DIR  also compares the reference's own output with a golden directory (for example
                  ../shared/methodology/golden_v050), so a changed reference is noticed.

This is a developer tool, not a test: CI never runs it, it needs numpy, and the project's tests
never read ../shared/methodology. Prints every check with its count of differences, then one
line, "all figures agree" or the number of differences; exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
REFERENCE = HERE.parent.parent / "shared" / "methodology" / "reference_v050.py"

# Per file: the key columns and the columns compared (the rest are identifiers or copies).
FILES = {
    "golden_latest.csv": ["slug"],
    "golden_events.csv": ["slug", "event_id", "kind"],
    "golden_monthends.csv": ["slug", "day"],
    "golden_series_stripe.csv": ["day"],
    "golden_series_openai.csv": ["day"],
}


def close(a: float, b: float, dollars: bool = False) -> bool:
    """1e-9 relative (1e-12 absolute near zero); whole dollars may differ by their rounding too."""
    tolerance = max(1e-9 * max(abs(a), abs(b)), 1e-12) + (0.5 if dollars else 0.0)
    return abs(a - b) <= tolerance


def read_rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def compare_tables(name: str, reference: list[dict], product: list[dict], key: list[str], dollars=()) -> int:
    """Differences between two tables keyed by `key`, on every column both have."""
    ref = {tuple(r[k] for k in key): r for r in reference}
    got = {tuple(r[k] for k in key): r for r in product}
    missing = sorted(set(ref) - set(got))
    extra = sorted(set(got) - set(ref))
    differences = len(missing) + len(extra)
    shown = 0
    for k in sorted(set(ref) & set(got)):
        for column, value in ref[k].items():
            if column not in got[k]:
                continue
            other = got[k][column]
            try:
                same = close(float(value), float(other), column in dollars)
            except ValueError:
                same = value == other
            if not same:
                differences += 1
                if shown < 5:
                    print(f"  MISMATCH {name} {k} {column}: reference {value}, product {other}")
                    shown += 1
    for k in missing[:5]:
        print(f"  MISSING from the product: {name} {k}")
    for k in extra[:5]:
        print(f"  NOT in the reference: {name} {k}")
    verdict = "OK" if differences == 0 else "MISMATCH"
    print(f"{verdict} {name}: {len(reference)} reference rows, {len(product)} product rows, {differences} differences")
    return differences


def run_reference(dataset: Path, out: Path) -> str:
    env = dict(os.environ, OUT=str(out))
    done = subprocess.run(
        [sys.executable, str(REFERENCE), str(dataset)], env=env, capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        sys.exit(f"the reference failed:\n{done.stderr}")
    return done.stdout


def compare_rows(reference: Path, rows: Path) -> int:
    total = 0
    for name, key in FILES.items():
        if not (reference / name).exists():
            continue
        if not (rows / name).exists():
            print(f"MISMATCH {name}: the product wrote none")
            total += 1
            continue
        total += compare_tables(name, read_rows(reference / name), read_rows(rows / name), key)
    return total


def compare_scorecard(reference_text: str, product_text: str) -> int:
    ref_lines = [line for line in reference_text.splitlines() if line.strip()]
    got_lines = product_text.splitlines()[: len(ref_lines)]
    differences = sum(1 for a, b in zip(ref_lines, got_lines, strict=False) if a != b) + abs(
        len(ref_lines) - len(got_lines)
    )
    for a, b in zip(ref_lines, got_lines, strict=False):
        if a != b:
            print(f"  MISMATCH scorecard line\n    reference: {a}\n    product:   {b}")
    print(f"{'OK' if differences == 0 else 'MISMATCH'} scorecard: {len(ref_lines)} lines, {differences} differences")
    return differences


def fetch(base: str, path: str, key: str | None) -> object:
    request = urllib.request.Request(base.rstrip("/") + path, headers={"X-API-Key": key} if key else {})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def unix_day(date: str) -> int:
    import datetime

    return (datetime.date.fromisoformat(date) - datetime.date(1970, 1, 1)).days


def server_rows(base: str, key: str) -> dict[str, list[dict]]:
    """The product's numbers as a server serves them, in the reference's layout."""
    rows = fetch(base, "/v1/scorecard/targets", key)
    if rows.get("disclosure") != "full":
        sys.exit("the scored rows in full need a Pro (or higher) key")
    events = []
    for t in rows["targets"]:
        q = t["band_offsets"]
        events.append(
            {
                "slug": t["slug"],
                "event_id": t["event_id"],
                "kind": t["kind"],
                "x": t["mark_log"],
                "y": t["observed_log"],
                "e": t["log_error"]["mark"],
                "q10": q["q10"],
                "q90": q["q90"],
                "q025": q["q025"],
                "q975": q["q975"],
                "in80": int(t["inside_80"]),
                "in95": int(t["inside_95"]),
                "confidence": t["confidence"],
                "hit20": int(t["hit"]),
                "x_next": t["next_print_log"],
                "mark_day": unix_day(t["marked_on"]),
            }
        )
    month_ends = []
    for m in rows["month_ends"]:
        q = m["band_offsets"]
        month_ends.append(
            {
                "slug": m["slug"],
                "day": str(unix_day(m["day"])),
                "gap_years": m["gap_years"],
                "anchor_id": m["anchor_event_id"],
                "x": m["mark_log"],
                "y_next": m["next_log"],
                "next_kind": m["next_kind"],
                "y_bridge": m["bridged_log"],
                "e1": m["next_reported_error"]["mark"],
                "e2": m["bridged_error"]["mark"],
                "q10": q["q10"],
                "q90": q["q90"],
                "q025": q["q025"],
                "q975": q["q975"],
                "in80": int(m["inside_80"]),
                "in95": int(m["inside_95"]),
                "confidence": m["confidence"],
                "hit20": int(m["hit"]),
                "n_res": m["residuals_known"],
            }
        )
    latest = []
    cursor = None
    while True:
        page = fetch(base, "/v1/companies?limit=200" + (f"&cursor={cursor}" if cursor else ""), key)
        for c in page["companies"]:
            mark = c.get("latest_mark")
            if not mark or (c.get("outcome") and c["outcome"]["kind"] != "sale_agreed"):
                continue
            row = {
                "slug": c["slug"],
                "anchor_id": c["last_event"]["event_id"],
                "days_since": c["days_since_last_event"],
                "mark_usd": mark["value_usd"],
                "lo80": mark["lower_usd"],
                "hi80": mark["upper_usd"],
                "next_usd": (mark.get("next_reported") or {}).get("value_usd", ""),
            }
            latest.append(row)
        cursor = page["page"]["next_cursor"]
        if not cursor:
            break
    series = {}
    for slug in ("stripe", "openai"):
        for coverage, (lo, hi) in ((80, ("lo80", "hi80")), (95, ("lo95", "hi95"))):
            body = fetch(base, f"/v1/companies/{slug}/marks?coverage={coverage}", key)
            for p in body["series"]:
                point = series.setdefault(slug, {}).setdefault(
                    p["date"], {"day": str(unix_day(p["date"])), "mark_usd": p["mark_usd"]}
                )
                point[lo], point[hi] = p["lower_usd"], p["upper_usd"]
    return {
        "golden_events.csv": events,
        "golden_monthends.csv": month_ends,
        "golden_latest.csv": latest,
        **{f"golden_series_{slug}.csv": list(points.values()) for slug, points in series.items()},
    }


def compare_server(reference: Path, base: str, key: str) -> int:
    product = server_rows(base, key)
    total = 0
    dollars = ("mark_usd", "lo80", "hi80", "lo95", "hi95", "next_usd")
    for name, key_columns in FILES.items():
        ref = read_rows(reference / name)
        if name == "golden_latest.csv":
            # The API serves the published marks: private companies (and pending sales).
            ref = [r for r in ref if r["status"] == "private"]
        got = [{k: str(v) for k, v in r.items()} for r in product.get(name, [])]
        total += compare_tables(name, ref, got, key_columns, dollars=dollars)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--rows", type=Path, help="the builder's rows (examples/reference_rows)")
    parser.add_argument("--scorecard", type=Path, help="the scorecard the builder printed")
    parser.add_argument("--server", help="base URL of a server serving DATASET")
    parser.add_argument("--key", help="a Pro or higher key for --server")
    parser.add_argument("--golden", type=Path, help="a golden directory to hold the reference's output to")
    args = parser.parse_args()
    if not REFERENCE.exists():
        sys.exit(f"no reference at {REFERENCE}: this tool runs beside ../shared")
    total = 0
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        printed = run_reference(args.dataset, out)
        print(f"reference run on {args.dataset}")
        if args.golden:
            total += compare_rows(args.golden, out)
        if args.rows:
            total += compare_rows(out, args.rows)
        if args.scorecard:
            total += compare_scorecard(printed, args.scorecard.read_text(encoding="utf-8"))
        if args.server:
            if not args.key:
                sys.exit("--server needs --key (Pro or higher)")
            total += compare_server(out, args.server, args.key)
    if not (args.rows or args.server or args.golden):
        sys.exit("nothing to compare: give --rows, --server or --golden")
    print("all figures agree" if total == 0 else f"{total} differences")
    sys.exit(1 if total else 0)


if __name__ == "__main__":
    main()
