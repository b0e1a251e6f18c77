"""Developer cross-check of the methodology v0.3.0 confidence and scorecard figures.

Recomputes, independently of the Rust code, what the scorecard of the forecaster
"gap_profile_drift" should say (confidence Brier score and reliability, coverage by
gap bucket, listing verdicts, and per target: confidence, log error, hit and band
membership) from the methodology's reference implementation (reference.py), and
compares it with what a running server serves at /v1/scorecard and
/v1/scorecard/targets.

This is a developer cross-check, not a test: CI never runs it, it needs numpy and
pandas, and it needs a server already serving DATASET_DIR.

    python3 tools/crosscheck_reference.py DATASET_DIR BASE_URL
    python3 tools/crosscheck_reference.py DATASET_DIR --reference-only

Prints every figure as reference vs served with OK or MISMATCH; exits 1 on any mismatch.
"""

import argparse
import collections
import importlib.util
import json
import math
import os
import pathlib
import sys
import tempfile
import urllib.request

FORECASTER = "gap_profile_drift"
Z80 = 1.2815515655446004
TOLERANCE = 0.10
GAP_BUCKETS = [
    ("under_6_months", 0.5),
    ("6_to_12_months", 1.0),
    ("1_to_2_years", 2.0),
    ("over_2_years", math.inf),
]
VERDICTS = ("hit", "covered_80", "covered_95", "miss")
ROUNDED = 0.5e-4 + 1e-12  # served figures rounded to 4 decimals
REL = 1e-9  # per-target figures
DEFAULT_REFERENCE = (
    pathlib.Path(__file__).resolve().parents[2] / "shared/methodology/reference.py"
)


def load_reference(path, out_dir):
    """Import reference.py by path; it writes its golden CSVs into $OUT at run time."""
    os.environ["OUT"] = out_dir
    spec = importlib.util.spec_from_file_location("methodology_reference", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def phi(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def verdict(hit, inside_80, inside_95):
    if hit:
        return "hit"
    if inside_80:
        return "covered_80"
    return "covered_95" if inside_95 else "miss"


def reference_targets(df):
    """event_id -> the per-target figures the server publishes for FORECASTER."""
    targets = {}
    for r in df.itertuples():
        sd = r.scale * r.q80 / Z80
        obs, mark = math.exp(r.y), math.exp(r.x)
        hit = (1 - TOLERANCE) * mark <= obs <= (1 + TOLERANCE) * mark
        inside_80, inside_95 = bool(r.in80), bool(r.in95)
        targets[r.event_id] = {
            "kind": r.kind,
            "gap_years": float(r.gap_years),
            "confidence": phi(math.log(1.1) / sd) - phi(math.log(0.9) / sd),
            "log_error": float(r.y - r.x),
            "inside_80": inside_80,
            "inside_95": inside_95,
            "hit": hit,
            "verdict": (
                verdict(hit, inside_80, inside_95) if r.kind == "listing" else None
            ),
        }
    return targets


def figures(targets):
    """The scorecard figures, flat, from the reference's per-target figures."""
    events = [t for t in targets.values() if t["kind"] == "event"]
    n = len(events)
    hits = sum(t["hit"] for t in events)
    brier = sum((t["confidence"] - t["hit"]) ** 2 for t in events) / n if n else None
    base = hits / n if n else None
    bbr = base * (1 - base) if n else None
    out = {
        "confidence.tolerance_pct": 10,
        "confidence.n": n,
        "confidence.hits": hits,
        "confidence.brier": brier,
        "confidence.base_rate": base,
        "confidence.brier_base_rate": bbr,
        "confidence.brier_skill": 1 - brier / bbr if bbr else None,
    }
    for k in range(10):
        lo, hi = k / 10, (k + 1) / 10
        inside = [
            t
            for t in events
            if lo <= t["confidence"] and (t["confidence"] < hi or k == 9)
        ]
        m = len(inside)
        out[f"reliability[{lo:.1f},{hi:.1f}).n"] = m
        out[f"reliability[{lo:.1f},{hi:.1f}).mean_stated"] = (
            sum(t["confidence"] for t in inside) / m if m else None
        )
        out[f"reliability[{lo:.1f},{hi:.1f}).observed"] = (
            sum(t["hit"] for t in inside) / m if m else None
        )
    lower = 0.0
    for name, upper in GAP_BUCKETS:
        inside = [t for t in events if lower <= t["gap_years"] < upper]
        out[f"coverage_by_gap.{name}.n"] = len(inside)
        out[f"coverage_by_gap.{name}.inside_80"] = sum(t["inside_80"] for t in inside)
        out[f"coverage_by_gap.{name}.inside_95"] = sum(t["inside_95"] for t in inside)
        lower = upper
    for v in VERDICTS:
        out[f"listing_verdicts.{v}"] = sum(
            t["verdict"] == v for t in targets.values() if t["kind"] == "listing"
        )
    return out


def get(base, path):
    with urllib.request.urlopen(base.rstrip("/") + path, timeout=60) as response:
        return json.load(response)


def served(base):
    """Flat scorecard figures, event_id -> per-target figures, and consistency pairs
    (scorecard, targets), all as the server serves them."""
    card = next(
        f for f in get(base, "/v1/scorecard")["forecasters"] if f["name"] == FORECASTER
    )
    conf = card["confidence"]
    keys = ("tolerance_pct", "n", "hits", "brier", "base_rate", "brier_base_rate")
    out = {f"confidence.{k}": conf[k] for k in (*keys, "brier_skill")}
    for b in conf["reliability"]:
        label = f"reliability[{b['lower']:.1f},{b['upper']:.1f})"
        for k in ("n", "mean_stated", "observed"):
            out[f"{label}.{k}"] = b[k]
    for b in card["coverage_by_gap"]:
        out[f"coverage_by_gap.{b['bucket']}.n"] = b["n"]
        out[f"coverage_by_gap.{b['bucket']}.inside_80"] = b["coverage_80"]["inside"]
        out[f"coverage_by_gap.{b['bucket']}.inside_95"] = b["coverage_95"]["inside"]
    # the scorecard's outcome_verdicts also count bankruptcies, which the reference does
    # not score: compare listing verdicts from the targets instead, and check that the
    # scorecard's counts agree with the served targets.
    targets, outcomes = {}, collections.Counter()
    fields = ("confidence", "log_error", "inside_80", "inside_95", "hit", "verdict")
    for t in get(base, "/v1/scorecard/targets")["targets"]:
        f = next(f for f in t["forecasts"] if f["forecaster"] == FORECASTER)
        if t["kind"] != "event":
            outcomes[f["verdict"]] += 1
        if t["kind"] != "bankruptcy":
            targets[t["event_id"]] = {"kind": t["kind"], "gap_years": t["gap_years"]}
            targets[t["event_id"]].update({k: f.get(k) for k in fields})
    for v in VERDICTS:
        out[f"listing_verdicts.{v}"] = sum(
            t["verdict"] == v for t in targets.values() if t["kind"] == "listing"
        )
    consistency = {
        f"served outcome_verdicts.{v}": (
            card["outcome_verdicts"][v],
            outcomes[v],
        )
        for v in VERDICTS
    }
    return out, targets, consistency


def same(a, b, tol):
    numbers = [isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b)]
    if all(numbers) and (isinstance(a, float) or isinstance(b, float)):
        return math.isclose(a, b, **tol)
    return a == b


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset_dir")
    parser.add_argument("base_url", nargs="?")
    parser.add_argument("--reference-only", action="store_true")
    parser.add_argument("--reference", default=str(DEFAULT_REFERENCE))
    args = parser.parse_args()
    if not args.reference_only and not args.base_url:
        parser.error("BASE_URL is required unless --reference-only")

    with tempfile.TemporaryDirectory() as out_dir:
        df = load_reference(args.reference, out_dir).run(args.dataset_dir)
    ref_targets = reference_targets(df)
    ref = figures(ref_targets)
    if args.reference_only:
        for label, value in ref.items():
            print(f"{label:45} {value}")
        return 0

    srv, srv_targets, consistency = served(args.base_url)
    failures = 0
    pairs = {k: (ref.get(k, "absent"), srv.get(k, "absent")) for k in ref | srv}
    for names, checks in (
        (("reference", "served"), pairs),
        (("scorecard", "targets"), consistency),
    ):
        for label, (a, b) in checks.items():
            ok = same(a, b, {"rel_tol": 0, "abs_tol": ROUNDED})
            failures += not ok
            status = "OK" if ok else "MISMATCH"
            print(f"{status:8} {label:45} {names[0]}={a} {names[1]}={b}")

    for event_id in sorted(ref_targets.keys() - srv_targets.keys()):
        print(f"MISMATCH target {event_id}: scored by the reference, not served")
        failures += 1
    for event_id in sorted(srv_targets.keys() - ref_targets.keys()):
        print(f"MISMATCH target {event_id}: served, not scored by the reference")
        failures += 1
    common = sorted(ref_targets.keys() & srv_targets.keys())
    for field in ref_targets[common[0]] if common else ():
        bad = [
            (e, ref_targets[e][field], srv_targets[e][field])
            for e in common
            if not same(
                ref_targets[e][field],
                srv_targets[e][field],
                {"rel_tol": REL, "abs_tol": 1e-12},
            )
        ]
        failures += len(bad)
        status = "OK" if not bad else "MISMATCH"
        agree = f"{len(common) - len(bad)}/{len(common)} agree"
        print(f"{status:8} targets.{field:37} {agree}")
        for e, r, s in bad[:10]:
            print(f"           {e}: reference={r} served={s}")
    print("all figures agree" if not failures else f"{failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
