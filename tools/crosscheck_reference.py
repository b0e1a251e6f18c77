"""Developer cross-check of the served methodology v0.4.0 (and v0.3.0) against the references.

Runs the methodology's independent reference implementations on DATASET_DIR,
reference_v040.py (v0.4.0, served as forecaster "adaptive_gap_profile") and reference.py
(v0.3.0, served as the comparison forecaster "gap_profile_drift"), and compares what a
server serving that dataset says with what they compute:

1. Targets, from the keyless /v1/scorecard/targets. No event id is served without a key, so
   targets are matched on (kind, occurred_on, marked_on, event_type, gap in days), and where
   several share those, as multisets ordered by log error. Per target: log_error, scale, q80,
   q95, confidence, band_80_rel and band_95_rel (exp(-q scale), exp(q scale)), inside_80,
   inside_95, hit (ln 0.9 <= log_error <= ln 1.1) and the verdict of outcomes, floats to 1e-9
   relative (1e-12 absolute near zero). v0.3.0's confidence is its normal form (scale
   sigma q80 / 1.2816). The references do not score bankruptcies; they are checked with the
   references' own listing rule (the forecast of the day before, from the events before it).
2. Summary figures, from the keyless /v1/scorecard: per forecaster the row the references
   print (n, MAPE, median and mean |log error|, coverage 80/95, median band widths, Brier,
   base rate, skill, reliability, listings, coverage by gap bucket), compared at the served
   rounding; and `bands_in_force` / `quantiles_in_force` against the v0.4.0 reference's
   Residuals.state on as_of + 1 day (after every residual).
3. With --key (an enterprise key reads /v1/export/series, one request per coverage; a pro
   key falls back to /v1/companies/{slug}/marks, two requests per company): every served
   daily point of every company, mark and 80%/95% bands, against the reference's
   GapProfileDrift.forecast(slug, day, inclusive=True) and Residuals.state(day, ...), as
   reference_v040.py computes its golden_series_*.csv; whole dollars, so to 0.5 USD plus
   1e-9 relative. Where the reference's series code stops, the served rules of DESIGN.md
   section 3 hold: a listed company's series ends the day before its listing; a bankrupt one
   ends on its bankruptcy day with one point at the reported value (mark and bands equal to
   it, so a zero scale and a confidence of 1). Also each company's latest_mark.confidence
   (GET /v1/companies, 4 decimals) against the reference's confidence on its last day.

This is a developer cross-check, not a test: CI never runs it, it needs numpy and pandas,
and it needs a server already serving DATASET_DIR.

    python3 tools/crosscheck_reference.py DATASET_DIR BASE_URL [--key ENTERPRISE_KEY]
    python3 tools/crosscheck_reference.py DATASET_DIR --reference-only

Prints every check with OK or MISMATCH, then one line: "all figures agree: ..." or the
number of mismatches; exits 1 on any mismatch.
"""

import argparse
import collections
import datetime
import gzip
import importlib.util
import json
import math
import os
import pathlib
import sys
import tempfile
import time
import tomllib
import urllib.error
import urllib.request

import numpy as np
import pandas as pd

METHODOLOGY = pathlib.Path(__file__).resolve().parents[2] / "shared/methodology"
FORECASTERS = {  # served forecaster -> its reference
    "adaptive_gap_profile": METHODOLOGY / "reference_v040.py",
    "gap_profile_drift": METHODOLOGY / "reference.py",
}
METHOD = "adaptive_gap_profile"
Z80 = 1.2815515655446004
LO_HIT, HI_HIT = math.log(0.9), math.log(1.1)
GAP_BUCKETS = ("under_6_months", "6_to_12_months", "1_to_2_years", "over_2_years")
FLOAT = {"rel_tol": 1e-9, "abs_tol": 1e-12}
USD_ABS, USD_REL = 0.5, 1e-9
EPOCH = datetime.date(1970, 1, 1)
# decimals of the served summary figures
DECIMALS = {
    "mape_pct": 1,
    "median_abs_log_error": 3,
    "mean_abs_log_error": 3,
    "observed_pct": 1,
    "median_band_width_80_pct": 1,
    "median_band_width_95_pct": 1,
    "mean_abs_error_pct": 1,
    "confidence": 4,
}
MAX_SHOWN = 10


def load_reference(path, out_dir):
    """Import a reference by path; it writes its golden CSVs into $OUT at run time."""
    os.environ["OUT"] = out_dir
    spec = importlib.util.spec_from_file_location(f"reference_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def date(day):
    return (EPOCH + datetime.timedelta(days=int(day))).isoformat()


def day_of(iso):
    return (datetime.date.fromisoformat(iso) - EPOCH).days


def phi(x):
    return 0.5 * (1.0 + math.erf(x / math.sqrt(2.0)))


def normal_confidence(sd):
    return phi(HI_HIT / sd) - phi(LO_HIT / sd)


def verdict(hit, inside_80, inside_95):
    if hit:
        return "hit"
    if inside_80:
        return "covered_80"
    return "covered_95" if inside_95 else "miss"


def band(q, scale):
    return {"lower": math.exp(-q * scale), "upper": math.exp(q * scale)}


def same(a, b, tol=FLOAT):
    numbers = [isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b)]
    if all(numbers) and (isinstance(a, float) or isinstance(b, float)):
        return math.isclose(a, b, **tol)
    if isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return all(same(a[k], b[k], tol) for k in a)
    return a == b


class Report:
    """Counts mismatches and prints each check."""

    def __init__(self):
        self.failures = 0

    def check(self, ok, label, detail="", count=1):
        """Print one check; a failed one counts `count` mismatches."""
        self.failures += 0 if ok else count
        print(f"{'OK' if ok else 'MISMATCH':8} {label}" + (f"  {detail}" if detail else ""))
        return ok


# ---------------------------------------------------------------------------- reference


class Reference:
    """Both references run on the dataset, with the v0.4.0 model and residuals rebuilt."""

    def __init__(self, dataset_dir):
        self.dataset_dir = pathlib.Path(dataset_dir)
        with tempfile.TemporaryDirectory() as out:
            self.v040 = load_reference(FORECASTERS[METHOD], f"{out}/v040")
            self.df = {METHOD: self.v040.run(str(self.dataset_dir))}
            self.v030 = load_reference(FORECASTERS["gap_profile_drift"], f"{out}/v030")
            self.df["gap_profile_drift"] = self.v030.run(str(self.dataset_dir))
        self.events = pd.read_csv(self.dataset_dir / "events.csv")
        self.event_type = dict(zip(self.events.event_id, self.events.event_type, strict=True))
        with open(self.dataset_dir / "dataset.toml", "rb") as f:
            self.as_of = day_of(str(tomllib.load(f)["as_of"]))
        self.models = {
            METHOD: self.v040.GapProfileDrift(self.events),
            "gap_profile_drift": self.v030.GapProfileDrift(self.events),
        }
        self.model = self.models[METHOD]
        # run() keeps its Residuals to itself: add the scored events again, as it does
        self.residuals = self.v040.Residuals()
        for r in self.df[METHOD].query("kind == 'event'").itertuples():
            era = r.n_res >= self.v040.MIN_N
            self.residuals.add(r.day, r.z, era, abs(r.z) > r.q80, r.gap_years)
        self.bankruptcies = self.events[self.events.event_type == "bankruptcy"]

    def quantiles(self, forecaster, day, scale, gap):
        """(q80, q95, confidence) in force on day for a forecast of the given scale."""
        if forecaster == METHOD:
            st = self.residuals.state(day, scale, gap)
            return st["q80"], st["q95"], st["confidence"]
        df = self.df[forecaster]
        z = np.sort(np.abs(df.z[(df.kind == "event") & (df.day < day)].values))
        if len(z) < self.v040.MIN_N:
            q80, q95 = Z80, self.v040.Z95
        else:
            q80 = z[self.v040.conformal_rank(len(z), 0.80) - 1]
            q95 = z[self.v040.conformal_rank(len(z), 0.95) - 1]
        return q80, q95, normal_confidence(scale * q80 / Z80)

    def targets(self, forecaster):
        """The per-target figures the server publishes, keyed as the keyless form allows."""
        out = []
        for r in self.df[forecaster].itertuples():
            log_error = float(r.y - r.x)
            own = forecaster == METHOD
            confidence = float(r.confidence) if own else normal_confidence(r.scale * r.q80 / Z80)
            out.append(
                self.target(
                    r.kind,
                    self.event_type[r.event_id],
                    r.day,
                    r.mark_day,
                    r.gap_years,
                    r.scale,
                    float(r.q80),
                    float(r.q95),
                    confidence,
                    log_error,
                )
            )
        # bankruptcies: the references' listing rule (forecast of the day before from the
        # events before it, quantiles in force that day); a value of 0 has no log error
        for b in self.bankruptcies.itertuples():
            day = day_of(b.occurred_on)
            x, scale, gap = self.models[forecaster].forecast(b.slug, day - 1)
            q80, q95, confidence = self.quantiles(forecaster, day - 1, scale, gap)
            value = float(b.valuation_usd)
            log_error = math.log(value) - x if value > 0 else None
            out.append(
                self.target(
                    "bankruptcy",
                    "bankruptcy",
                    day,
                    day - 1,
                    gap,
                    scale,
                    q80,
                    q95,
                    confidence,
                    log_error,
                )
            )
        return out

    @staticmethod
    def target(kind, event_type, day, mark_day, gap, scale, q80, q95, conf, log_error):
        scale = float(scale)
        if log_error is None:
            inside_80 = inside_95 = hit = False
        else:
            inside_80 = abs(log_error) / scale <= q80
            inside_95 = abs(log_error) / scale <= q95
            hit = LO_HIT <= log_error <= HI_HIT
        return {
            "key": (kind, date(day), date(mark_day), event_type, round(gap * 365.25)),
            "log_error": log_error,
            "scale": scale,
            "q80": q80,
            "q95": q95,
            "confidence": conf,
            "band_80_rel": band(q80, scale),
            "band_95_rel": band(q95, scale),
            "inside_80": bool(inside_80),
            "inside_95": bool(inside_95),
            "hit": bool(hit),
            "verdict": None if kind == "event" else verdict(hit, inside_80, inside_95),
        }

    def figures(self, forecaster):
        """The scorecard row the reference prints, flat, under the served names."""
        df = self.df[forecaster]
        e, lst = df[df.kind == "event"], df[df.kind == "listing"]
        abs_log = np.abs(e.y - e.x)
        obs = np.exp(e.y)
        if forecaster == METHOD:
            conf = e.confidence.values.astype(float)
        else:
            conf = np.array([normal_confidence(s * q / Z80) for s, q in zip(e.scale, e.q80, strict=True)])
        hit = ((e.y - e.x >= LO_HIT) & (e.y - e.x <= HI_HIT)).values
        n, hits = len(e), int(hit.sum())
        brier = float(np.mean((conf - hit) ** 2))
        base = hits / n
        out = {
            "n": n,
            "mape_pct": float(np.mean(np.abs(e.mark_usd - obs) / obs) * 100),
            "median_abs_log_error": float(np.median(abs_log)),
            "mean_abs_log_error": float(np.mean(abs_log)),
            "median_band_width_80_pct": float(np.median(e.w80)),
            "median_band_width_95_pct": float(np.median(e.w95)),
            "misses_total": int((~e.in95).sum()),
            "listings.n": len(lst),
            "listings.mean_abs_error_pct": float(np.mean(np.abs(lst.mark_usd / np.exp(lst.y) - 1)) * 100),
            "listings.inside_80": int(lst.in80.sum()),
            "listings.inside_95": int(lst.in95.sum()),
            "confidence.n": n,
            "confidence.hits": hits,
            "confidence.brier": brier,
            "confidence.base_rate": base,
            "confidence.brier_base_rate": base * (1 - base),
            "confidence.brier_skill": 1 - brier / (base * (1 - base)),
        }
        for c in ("80", "95"):
            inside = int(e["in" + c].sum())
            out[f"coverage_{c}.inside"] = inside
            out[f"coverage_{c}.n"] = n
            out[f"coverage_{c}.observed_pct"] = inside / n * 100
        for k in range(10):
            lo, hi = k / 10, (k + 1) / 10
            m = (conf >= lo) & ((conf < hi) | (k == 9))
            label = f"confidence.reliability[{lo:.1f},{hi:.1f})"
            out[f"{label}.n"] = int(m.sum())
            out[f"{label}.mean_stated"] = float(conf[m].mean()) if m.any() else None
            out[f"{label}.observed"] = float(hit[m].mean()) if m.any() else None
        gb = np.array([self.v040.bucket(g) for g in e.gap_years])
        for k, name in enumerate(GAP_BUCKETS):
            in_bucket = gb == k
            out[f"coverage_by_gap.{name}.n"] = int(in_bucket.sum())
            for c in ("80", "95"):
                count = int(e["in" + c][in_bucket].sum())
                out[f"coverage_by_gap.{name}.coverage_{c}.inside"] = count
                out[f"coverage_by_gap.{name}.coverage_{c}.observed_pct"] = (
                    count / in_bucket.sum() * 100 if in_bucket.any() else None
                )
        return out

    def series(self, slug):
        """The company's expected daily points: day -> (mark, lo80, hi80, lo95, hi95),
        and its confidence on its last day."""
        m, points = self.model, {}
        o = m.obs.get(slug)
        if o is None or not len(o):
            return points, None
        last = self.as_of
        bankrupt = self.bankruptcies[self.bankruptcies.slug == slug]
        if slug in m.listing:
            last = day_of(m.listing[slug].occurred_on) - 1
        elif len(bankrupt):
            last = day_of(bankrupt.occurred_on.iloc[0]) - 1
        confidence = None
        for day in range(int(o[0][0]), last + 1):
            x, s, gap = m.forecast(slug, day, inclusive=True)
            st = self.residuals.state(day, s, gap)
            lo80, hi80 = math.exp(x - st["q80"] * s), math.exp(x + st["q80"] * s)
            lo95, hi95 = math.exp(x - st["q95"] * s), math.exp(x + st["q95"] * s)
            points[day] = (math.exp(x), lo80, hi80, lo95, hi95)
            confidence = st["confidence"]
        if len(bankrupt):  # one point at the reported value; zero scale: confidence 1
            value = float(bankrupt.valuation_usd.iloc[0])
            points[day_of(bankrupt.occurred_on.iloc[0])] = (value,) * 5
            confidence = 1.0
        return points, confidence


# ------------------------------------------------------------------------------- served


class Server:
    def __init__(self, base_url, key=None):
        self.base = base_url.rstrip("/")
        self.key = key

    def get(self, path, keyed=False, raw=False):
        headers = {"Accept-Encoding": "identity"}
        if keyed:
            headers["X-API-Key"] = self.key
        request = urllib.request.Request(self.base + path, headers=headers)
        for _ in range(10):
            try:
                with urllib.request.urlopen(request, timeout=300) as response:
                    body = response.read()
                    if response.headers.get("Content-Encoding") == "gzip":
                        body = gzip.decompress(body)
                    return body if raw else json.loads(body)
            except urllib.error.HTTPError as e:
                if e.code != 429:
                    raise
                time.sleep(int(e.headers.get("Retry-After", "1")))
        raise RuntimeError(f"{path}: still rate-limited")

    def series(self):
        """slug -> {coverage -> [points]}: the export, or per company where refused."""
        out = collections.defaultdict(dict)
        try:
            for coverage in (80, 95):
                body = self.get(f"/v1/export/series?coverage={coverage}", True, True)
                for line in body.splitlines()[1:]:
                    row = json.loads(line)
                    out[row["slug"]][coverage] = row["series"]
            return out, "export"
        except urllib.error.HTTPError as e:
            if e.code != 403:
                raise
        for slug in self.companies():
            for coverage in (80, 95):
                path = f"/v1/companies/{slug}/marks?coverage={coverage}"
                out[slug][coverage] = self.get(path, True)["series"]
        return out, "per company"

    def companies(self):
        """slug -> latest_mark, every page."""
        out, cursor = {}, None
        while True:
            path = "/v1/companies?limit=200" + (f"&cursor={cursor}" if cursor else "")
            page = self.get(path, True)
            out.update({c["slug"]: c["latest_mark"] for c in page["companies"]})
            cursor = page["page"].get("next_cursor")
            if not page["page"].get("has_more"):
                return out


def served_targets(targets, forecaster):
    out = []
    for t in targets:
        f = next(f for f in t["forecasts"] if f["forecaster"] == forecaster)
        out.append(
            {
                "key": (
                    t["kind"],
                    t["occurred_on"],
                    t["marked_on"],
                    t["event_type"],
                    round(t["gap_years"] * 365.25),
                ),
                **{k: f.get(k) for k in FIELDS},
            }
        )
    return out


FIELDS = (
    "log_error",
    "scale",
    "q80",
    "q95",
    "confidence",
    "band_80_rel",
    "band_95_rel",
    "inside_80",
    "inside_95",
    "hit",
    "verdict",
)


def flat(card):
    """The served per-forecaster figures, flat, under the names of Reference.figures."""
    out = {}
    for k in (
        "n",
        "mape_pct",
        "median_abs_log_error",
        "mean_abs_log_error",
        "median_band_width_80_pct",
        "median_band_width_95_pct",
        "misses_total",
    ):
        out[k] = card[k]
    for k, v in card["listings"].items():
        out[f"listings.{k}"] = v
    for c in ("80", "95"):
        for k in ("inside", "n", "observed_pct"):
            out[f"coverage_{c}.{k}"] = card[f"coverage_{c}"][k]
    conf = card["confidence"]
    for k in ("n", "hits", "brier", "base_rate", "brier_base_rate", "brier_skill"):
        out[f"confidence.{k}"] = conf[k]
    for b in conf["reliability"]:
        label = f"confidence.reliability[{b['lower']:.1f},{b['upper']:.1f})"
        for k in ("n", "mean_stated", "observed"):
            out[f"{label}.{k}"] = b[k]
    for b in card["coverage_by_gap"]:
        out[f"coverage_by_gap.{b['bucket']}.n"] = b["n"]
        for c in ("80", "95"):
            for k in ("inside", "observed_pct"):
                out[f"coverage_by_gap.{b['bucket']}.coverage_{c}.{k}"] = b[f"coverage_{c}"][k]
    return out


def rounding(label):
    """Absolute tolerance of a served figure: half a unit of its last decimal."""
    parts = label.split(".")
    name = "confidence" if parts[0] == "confidence" else parts[-1]
    decimals = DECIMALS.get(name)
    return None if decimals is None else 0.5 * 10**-decimals + 1e-9


# ------------------------------------------------------------------------------- checks


def check_targets(report, ref, targets, forecaster):
    """Match served and reference targets; compare every field. Returns targets matched."""
    mine = collections.defaultdict(list)
    theirs = collections.defaultdict(list)
    for t in ref.targets(forecaster):
        mine[t["key"]].append(t)
    for t in served_targets(targets, forecaster):
        theirs[t["key"]].append(t)
    pairs, unmatched = [], []
    for key in sorted(mine.keys() | theirs.keys()):
        a = sorted(mine[key], key=lambda t: (t["log_error"] is None, t["log_error"] or 0))
        b = sorted(theirs[key], key=lambda t: (t["log_error"] is None, t["log_error"] or 0))
        if len(a) != len(b):
            unmatched.append(f"{key}: reference {len(a)}, served {len(b)}")
        pairs += zip(a, b, strict=False)
    kinds = collections.Counter(a["key"][0] for a, _ in pairs)
    counts = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    label = f"{forecaster} targets matched: {len(pairs)} ({counts})"
    report.check(not unmatched, label, count=len(unmatched))
    for line in unmatched[:MAX_SHOWN]:
        print(f"           unmatched {line}")
    for field in FIELDS:
        bad = [(a, b) for a, b in pairs if not same(a[field], b[field])]
        agree = f"{len(pairs) - len(bad)}/{len(pairs)} agree"
        report.check(not bad, f"{forecaster} targets.{field}", agree, len(bad))
        for a, b in bad[:MAX_SHOWN]:
            print(f"           {a['key']}: reference={a[field]} served={b[field]}")
    return len(pairs)


def check_figures(report, ref, card, forecaster):
    mine, theirs = ref.figures(forecaster), flat(card)
    for label in sorted(mine.keys() | theirs.keys()):
        a, b = mine.get(label, "absent"), theirs.get(label, "absent")
        tol = rounding(label)
        ok = same(a, b, {"rel_tol": 0, "abs_tol": tol} if tol else FLOAT)
        report.check(ok, f"{forecaster} {label}", f"reference={a} served={b}")


def check_bands_in_force(report, ref, card):
    st = ref.residuals.state(ref.as_of + 1, 1.0, 0.0)
    mine = {
        "q80": st["q80"],
        "q95": st["q95"],
        "residuals": st["n_res"],
        "conformal_era": st["n_aci"],
        "misses": st["m_aci"],
        "rank80": st["rank80"],
        "level80": st["level80"],
    }
    served = card["bands_in_force"]
    for k, a in mine.items():
        b = served.get(k, "absent")
        report.check(same(a, b), f"bands_in_force.{k}", f"reference={a} served={b}")
    q = card.get("quantiles_in_force", {})
    for k, a in (("q80", st["q80"]), ("q95", st["q95"]), ("n", st["n_res"])):
        b = q.get(k, "absent")
        report.check(same(a, b), f"quantiles_in_force.{k}", f"reference={a} served={b}")


def check_outcome_verdicts(report, card, targets, forecaster):
    """The scorecard's outcome counts against its own served targets."""
    counts = collections.Counter(
        f["verdict"] for t in targets if t["kind"] != "event" for f in t["forecasts"] if f["forecaster"] == forecaster
    )
    for v, n in card["outcome_verdicts"].items():
        ok = n == counts[v]
        report.check(
            ok,
            f"{forecaster} outcome_verdicts.{v}",
            f"scorecard={n} targets={counts[v]}",
        )


def close_usd(a, b):
    return abs(a - b) <= USD_ABS + USD_REL * abs(a)


def check_series(report, ref, server):
    """Every served daily point of every company, and each latest confidence."""
    served, how = server.series()
    latest = server.companies()
    slugs = sorted(set(ref.events.slug) | served.keys())
    points = bad_points = 0
    shown, worst = [], collections.defaultdict(float)
    bad_days, bad_confidence = [], []
    for slug in slugs:
        expected, confidence = ref.series(slug)
        got = {c: {day_of(p["date"]): p for p in served.get(slug, {}).get(c, [])} for c in (80, 95)}
        for c in (80, 95):
            if got[c].keys() != expected.keys():
                missing = sorted(expected.keys() - got[c].keys())
                extra = sorted(got[c].keys() - expected.keys())
                bad_days.append(
                    f"{slug} coverage {c}: {len(missing)} days not served"
                    + (f" (first {date(missing[0])})" if missing else "")
                    + f", {len(extra)} served beyond the reference"
                    + (f" (first {date(extra[0])})" if extra else "")
                )
        for day in sorted(expected.keys() & got[80].keys() & got[95].keys()):
            mark, lo80, hi80, lo95, hi95 = expected[day]
            p80, p95 = got[80][day], got[95][day]
            pairs = {
                "mark_usd@80": (mark, p80["mark_usd"]),
                "mark_usd@95": (mark, p95["mark_usd"]),
                "lower_usd@80": (lo80, p80["lower_usd"]),
                "upper_usd@80": (hi80, p80["upper_usd"]),
                "lower_usd@95": (lo95, p95["lower_usd"]),
                "upper_usd@95": (hi95, p95["upper_usd"]),
            }
            points += 1
            for k, (a, b) in pairs.items():
                worst[k] = max(worst[k], abs(a - b))
            wrong = {k: v for k, v in pairs.items() if not close_usd(*v)}
            if wrong:
                bad_points += 1
                if len(shown) < MAX_SHOWN:
                    shown.append(
                        f"{slug} {date(day)}: "
                        + ", ".join(f"{k} reference={a:.2f} served={b}" for k, (a, b) in wrong.items())
                    )
        mark = latest.get(slug)
        if mark is not None and confidence is not None:
            ok = abs(confidence - mark["confidence"]) <= 0.5e-4 + 1e-12
            if not ok:
                bad_confidence.append(
                    f"{slug} {mark['as_of_date']}: reference={confidence} served={mark['confidence']}"
                )
        elif (mark is None) != (confidence is None):
            bad_confidence.append(f"{slug}: reference={confidence} served={mark}")
    companies = sum(1 for s in slugs if served.get(s))
    label = f"series days ({how}): {companies} companies"
    report.check(not bad_days, label, count=len(bad_days))
    for line in bad_days[:MAX_SHOWN]:
        print(f"           {line}")
    label = "series points (mark, 80% and 95% bands)"
    agree = f"{points - bad_points}/{points} agree"
    report.check(not bad_points, label, agree, bad_points)
    for line in shown:
        print(f"           {line}")
    print(
        "           largest |reference - served| in USD: " + ", ".join(f"{k} {v:.3g}" for k, v in sorted(worst.items()))
    )
    agree = f"{len(latest) - len(bad_confidence)}/{len(latest)} agree"
    report.check(not bad_confidence, "latest_mark.confidence", agree, len(bad_confidence))
    for line in bad_confidence[:MAX_SHOWN]:
        print(f"           {line}")
    return points, companies


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset_dir")
    parser.add_argument("base_url", nargs="?")
    parser.add_argument("--key", help="an enterprise (export) or pro key: checks daily points")
    parser.add_argument("--reference-only", action="store_true")
    args = parser.parse_args()
    if not args.reference_only and not args.base_url:
        parser.error("BASE_URL is required unless --reference-only")

    ref = Reference(args.dataset_dir)
    if args.reference_only:
        for forecaster in FORECASTERS:
            for label, value in ref.figures(forecaster).items():
                print(f"{forecaster} {label:60} {value}")
        return 0

    report, server = Report(), Server(args.base_url, args.key)
    card = server.get("/v1/scorecard")
    targets = server.get("/v1/scorecard/targets")["targets"]
    cards = {f["name"]: f for f in card["forecasters"]}
    matched = {}
    for forecaster in FORECASTERS:
        matched[forecaster] = check_targets(report, ref, targets, forecaster)
        check_figures(report, ref, cards[forecaster], forecaster)
        check_outcome_verdicts(report, cards[forecaster], targets, forecaster)
    check_bands_in_force(report, ref, card)
    summary = " + ".join(f"{n} {f}" for f, n in matched.items()) + " targets"
    if args.key:
        points, companies = check_series(report, ref, server)
        summary += f", {points} daily points over {companies} companies"
    else:
        summary += " (no --key: daily points not checked)"
    if report.failures:
        print(f"{report.failures} mismatches ({summary})")
        return 1
    print(f"all figures agree: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
