"""Unit tests of the v0.6.0 research harness (tools/methodology_v060.py), on synthetic datasets.

The bundled sample has buybacks and internal valuations but no announced listing, so these tests
build a small dataset that has every kind of record, and check what section 2 of the harness's
docstring says each one does, the filter and the fit, and the two properties the design promises:
point in time (the series on day t is what the records dated up to t give) and isolation (a
record of one company leaves every other company's marks unchanged).

    target/research-venv/bin/python -m unittest tools/test_methodology_v060.py
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import math
import os
import random
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import methodology_v060 as m

AS_OF = "2023-06-30"
HEADER = [
    "event_id", "slug", "event_type", "occurred_on", "valuation_usd", "reported_as",
    "source_url", "source_grade", "note", "supersedes",
]  # fmt: skip

# Companies whose records test one rule each: (slug, type, date, value, reported_as, grade).
SCRIPTED = [
    # Evidence never sets the mark: a buyback at a discount, a 409A, an in-talks figure.
    ("alpha", "primary_round", "2019-03-01", 1_000_000_000, "closed", "B"),
    ("alpha", "buyback", "2019-09-01", 600_000_000, "closed", "A"),
    ("alpha", "internal_valuation", "2020-02-01", 400_000_000, "estimate", "C"),
    ("alpha", "primary_round", "2020-06-01", 2_000_000_000, "in_talks", "D"),
    ("alpha", "secondary_sale", "2021-01-15", 1_500_000_000, "closed", "C"),
    # An agreed listing (a SPAC merger signed) anchors the mark while pending; its termination
    # falls back to the round; the company lists later.
    ("beta", "primary_round", "2019-05-01", 3_000_000_000, "closed", "B"),
    ("beta", "spac_listing", "2021-02-01", 5_000_000_000, "announced", "B"),
    ("beta", "acquisition_terminated", "2021-08-01", 5_000_000_000, "closed", "C"),
    ("beta", "ipo", "2022-09-01", 4_000_000_000, "closed", "A"),
    # An agreed sale that is the only anchor keeps the mark after its termination (Figma).
    ("gamma", "acquisition", "2019-06-01", 8_000_000_000, "announced", "B"),
    ("gamma", "acquisition_terminated", "2020-06-01", 0, "closed", "B"),
    ("gamma", "tender_offer", "2021-03-01", 6_000_000_000, "closed", "D"),
    # A written-off fund mark (floored at 1% of the mark), then a bankruptcy at 0.
    ("delta", "primary_round", "2018-04-01", 500_000_000, "closed", "C"),
    ("delta", "fund_mark", "2020-03-31", 250_000_000, "estimate", "B"),
    ("delta", "fund_mark", "2021-06-30", 0, "estimate", "B"),
    ("delta", "bankruptcy", "2021-09-15", 0, "closed", "B"),
    # An announced listing that completes; an undisclosed agreed sale (value 0) is no anchor.
    ("epsilon", "primary_round", "2018-09-01", 700_000_000, "", ""),
    ("epsilon", "direct_listing", "2020-10-01", 1_100_000_000, "announced", "C"),
    ("epsilon", "direct_listing", "2020-12-01", 1_300_000_000, "closed", "B"),
    ("eta", "primary_round", "2019-01-10", 900_000_000, "closed", "D"),
    ("eta", "acquisition", "2022-01-10", 0, "announced", "D"),
    ("eta", "wind_down", "2022-11-30", 0, "announced", "B"),
    # Corrections: zeta's second round is corrected, its third retracted (rows appended below).
    ("zeta", "primary_round", "2018-11-01", 400_000_000, "closed", "B"),
    ("zeta", "primary_round", "2020-01-01", 900_000_000, "closed", "D"),
    ("zeta", "primary_round", "2021-05-01", 5_000_000_000, "closed", "D"),
]

FILLER_TYPES = [
    ("primary_round", "closed", 0.45),
    ("down_round", "closed", 0.05),
    ("tender_offer", "announced", 0.08),
    ("secondary_sale", "closed", 0.07),
    ("fund_mark", "estimate", 0.10),
    ("primary_round", "in_talks", 0.07),
    ("buyback", "closed", 0.06),
    ("internal_valuation", "estimate", 0.06),
    ("acquisition", "announced", 0.03),
    ("ipo", "announced", 0.03),
]


def filler_rows(rng: random.Random, n: int) -> list[tuple]:
    """Random companies (two named stripe and openai, so the CLI writes their series)."""
    rows = []
    slugs = ["stripe", "openai"] + [f"co{i:02d}" for i in range(n - 2)]
    horizon = m.day_number(AS_OF)
    for slug in slugs:
        day = m.day_number("2016-01-01") + rng.randrange(0, 1100)
        value = math.exp(rng.uniform(math.log(2e8), math.log(2e10)))
        for _ in range(rng.randrange(3, 9)):
            if day > horizon:
                break
            kinds, weights = zip(*((k[:2], k[2]) for k in FILLER_TYPES), strict=True)
            kind, reported = rng.choices(kinds, weights)[0]
            value *= math.exp(rng.gauss(0.15, 0.5))
            shown = value * (0.6 if kind in ("buyback", "internal_valuation") else 1.0)
            grade = rng.choice(["A", "B", "C", "D", "D", ""])
            rows.append((slug, kind, m.iso_date(day), int(shown), reported, grade))
            day += rng.randrange(20, 500)
        if day <= horizon and rng.random() < 0.25:
            end = rng.choice(["ipo", "bankruptcy", "acquisition_closed"])
            v = 0 if end == "bankruptcy" else int(value * 1.2)
            rows.append((slug, end, m.iso_date(day), v, "closed", "B"))
    return rows


def write_dataset(path: str, rows: list[tuple], extra: list[dict] | None = None) -> None:
    """events.csv in date order (ids in that order), then the correction rows, then the rest."""
    os.makedirs(path, exist_ok=True)
    ordered = sorted(rows, key=lambda r: r[2])
    lines = []
    for i, (slug, kind, date, value, reported, grade) in enumerate(ordered, start=1):
        lines.append(
            {
                "event_id": f"e{i:04d}",
                "slug": slug,
                "event_type": kind,
                "occurred_on": date,
                "valuation_usd": str(value),
                "reported_as": reported,
                "source_url": f"https://example.com/{i}",
                "source_grade": grade,
                "note": "synthetic",
                "supersedes": "",
            }
        )
    for row in extra or []:
        lines.append({**dict.fromkeys(HEADER, ""), **row, "event_id": f"e{len(lines) + 1:04d}"})
    with open(os.path.join(path, "events.csv"), "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, HEADER, lineterminator="\n")
        w.writeheader()
        w.writerows(lines)
    slugs = sorted({line["slug"] for line in lines})
    with open(os.path.join(path, "companies.csv"), "w", encoding="utf-8") as fh:
        fh.write("slug,name,sector,status,aliases\n")
        fh.writelines(f"{s},{s.title()},other,private,\n" for s in slugs)
    with open(os.path.join(path, "dataset.toml"), "w", encoding="utf-8") as fh:
        fh.write(f'dataset_version = "{AS_OF}"\nas_of = "{AS_OF}"\n')


def event_id_of(path: str, slug: str, date: str) -> str:
    with open(os.path.join(path, "events.csv"), newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh):
            if row["slug"] == slug and row["occurred_on"] == date:
                return row["event_id"]
    raise KeyError((slug, date))


def make_synthetic(path: str, seed: int = 20260127, fillers: int = 34) -> None:
    rows = SCRIPTED + filler_rows(random.Random(seed), fillers)
    write_dataset(path, rows)
    corrected = event_id_of(path, "zeta", "2020-01-01")
    retracted = event_id_of(path, "zeta", "2021-05-01")
    extra = [
        {
            "slug": "zeta", "event_type": "primary_round", "occurred_on": "2020-01-01",
            "valuation_usd": "1100000000", "reported_as": "closed", "source_grade": "B",
            "supersedes": corrected,
        },
        {"slug": "zeta", "event_type": "retraction", "occurred_on": AS_OF,
         "valuation_usd": "0", "supersedes": retracted},
    ]  # fmt: skip
    write_dataset(path, rows, extra)


def dataset_up_to(dataset: m.Dataset, t: int, path: str) -> m.Dataset:
    """The effective records dated <= t, written as a dataset of their own and read back."""
    rows = []
    for r in sorted(dataset.records, key=lambda r: r.order):
        if r.day <= t:
            rows.append((r.event_id, r.slug, r.event_type, m.iso_date(r.day), r.value,
                         r.reported_as, r.grade))  # fmt: skip
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "events.csv"), "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(HEADER)
        for event_id, slug, kind, date, value, reported, grade in rows:
            w.writerow([event_id, slug, kind, date, value, reported, "", grade, "", ""])
    with open(os.path.join(path, "companies.csv"), "w", encoding="utf-8") as fh:
        fh.write("slug,name,sector,status,aliases\n")
        fh.writelines(f"{s},{s},other,private,\n" for s in dataset.slugs)
    with open(os.path.join(path, "dataset.toml"), "w", encoding="utf-8") as fh:
        fh.write(f'as_of = "{m.iso_date(t)}"\n')
    return m.load_dataset(path)


def day(iso: str) -> int:
    return m.day_number(iso)


class SyntheticCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.path = os.path.join(cls.tmp.name, "synthetic")
        make_synthetic(cls.path)
        cls.dataset = m.load_dataset(cls.path)
        # A small residual threshold, so that the empirical quantiles are exercised too.
        cls.settings = m.Settings(min_residuals=20)
        cls.model = m.Model(cls.dataset, None, cls.settings)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def history(self, slug):
        return self.model.histories[slug]

    def mark(self, slug, iso):
        return self.history(slug).anchor_on(day(iso))


class RecordKinds(SyntheticCase):
    def test_evidence_is_observed_but_never_sets_the_mark(self):
        h = self.history("alpha")
        for iso in ("2019-09-01", "2020-02-01", "2020-06-01", "2021-01-14"):
            self.assertEqual(self.mark("alpha", iso).value, 1e9, iso)
        self.assertEqual(self.mark("alpha", "2021-01-15").value, 1.5e9)
        expected = [m.R_ROUND, m.R_BUYBACK, m.R_INTERNAL, m.R_IN_TALKS, m.R_SECONDARY]
        self.assertEqual([ob.param for ob in h.observations], expected)
        # Evidence is no target: the month-ends of 2019-2020 look ahead to the secondary.
        self.assertEqual(h.target_after(day("2019-03-31")).event_id, h.anchors[1].event_id)

    def test_evidence_widens_or_narrows_the_band_through_the_filter(self):
        h = self.history("alpha")
        theta = np.array(m.PRIOR)
        before = m.posterior_variance(h.observations, theta, day("2019-08-31"), True)
        after = m.posterior_variance(h.observations, theta, day("2019-09-01"), True)
        # A buyback observes the value (with r_buyback), so V falls on its day.
        self.assertLess(after, before + theta[m.Q] / m.YEAR)

    def test_agreed_listing_anchors_while_pending_and_termination_falls_back(self):
        h = self.history("beta")
        self.assertEqual(self.mark("beta", "2021-02-01").value, 5e9)
        self.assertEqual(h.status_on(day("2021-03-01")), "listing_agreed")
        self.assertEqual(self.mark("beta", "2021-07-31").value, 5e9)
        self.assertEqual(self.mark("beta", "2021-08-01").value, 3e9)
        self.assertEqual(h.status_on(day("2021-08-01")), "private")
        # The cancelled anchor stays an observation and a target; the terminated price is
        # evidence with r_agreed + 1.
        kinds = [(ob.param, ob.extra) for ob in h.observations]
        self.assertEqual(kinds, [(m.R_ROUND, 0.0), (m.R_AGREED, 0.0), (m.R_AGREED, 1.0)])
        self.assertEqual(h.target_after(day("2021-01-31")).value, 5e9)
        self.assertEqual(h.target_after(day("2021-02-28")).kind, "listing")
        self.assertEqual(h.last_marked_day(day(AS_OF)), day("2022-08-31"))
        self.assertEqual(h.status_on(day(AS_OF)), "listed")

    def test_an_only_anchor_keeps_the_mark_after_its_termination(self):
        self.assertEqual(self.mark("gamma", "2020-06-01").value, 8e9)
        self.assertEqual(self.mark("gamma", "2021-02-28").value, 8e9)
        self.assertEqual(self.mark("gamma", "2021-03-01").value, 6e9)
        self.assertEqual(self.history("gamma").status_on(day("2020-07-01")), "private")
        # A termination with value 0 is no observation.
        self.assertEqual(len(self.history("gamma").observations), 2)

    def test_written_off_fund_mark_and_failure_are_floored(self):
        h = self.history("delta")
        self.assertAlmostEqual(self.mark("delta", "2021-06-30").value, 2.5e6, delta=1e-6)
        self.assertEqual(h.last_marked_day(day(AS_OF)), day("2021-09-14"))
        self.assertEqual(h.status_on(day(AS_OF)), "bankrupt")
        rows = [r for r in self.model.residuals if r.slug == "delta" and r.day == day("2021-07-31")]
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0].target.kind, "failure")
        self.assertAlmostEqual(rows[0].target_value, 2.5e4, delta=1e-6)

    def test_announced_listing_then_closed_and_undisclosed_sale(self):
        self.assertEqual(self.mark("epsilon", "2020-11-30").value, 1.1e9)
        h = self.history("epsilon")
        self.assertEqual(h.outcome.kind, "listing")
        self.assertEqual(h.anchors[0].grade, "")  # empty reported_as reads closed: an anchor
        eta = self.history("eta")
        self.assertEqual(len(eta.anchors), 1)  # the agreed sale at 0 is no anchor
        self.assertEqual(eta.status_on(day("2022-06-01")), "sale_agreed")
        self.assertEqual(eta.status_on(day(AS_OF)), "wound_down")

    def test_corrections_and_retractions(self):
        h = self.history("zeta")
        self.assertEqual([a.value for a in h.anchors], [4e8, 1.1e9])
        self.assertEqual(self.mark("zeta", AS_OF).value, 1.1e9)


class Arithmetic(SyntheticCase):
    def test_fold_hash(self):
        digest = hashlib.sha256(b"stripe").digest()
        self.assertEqual(m.fold_of("stripe"), int.from_bytes(digest[:8], "big") % 5)

    def test_conformal_ranks(self):
        z = list(range(1, 200))  # n = 199: (n + 1) p is whole
        self.assertEqual(m.conformal_quantile(z, m.PM10), 20)
        self.assertEqual(m.conformal_quantile(z, m.PM90), 180)
        self.assertEqual(m.conformal_quantile(z, m.PM025), 5)
        self.assertEqual(m.conformal_quantile(z, m.PM975), 195)
        small = [1.0, 2.0, 3.0, 4.0]
        self.assertEqual(m.conformal_quantile(small, m.PM025), 1.0)  # at least the first
        self.assertEqual(m.conformal_quantile(small, m.PM975), 4.0)  # at most the last
        self.assertEqual(m.conformal_quantile(small, m.PM50), 3.0)  # ceil(2.5)

    def test_filter_by_hand(self):
        obs = [
            m.Observation(0, math.log(100.0), m.R_ROUND, False, 0.0, "a"),
            m.Observation(365, math.log(150.0), m.R_FUND, True, 0.0, "b"),
            m.Observation(365, math.log(140.0), m.R_AGREED, False, 1.0, "c"),
        ]
        theta = np.array([0.8, 0.01, 0.02, 0.03, 0.2, 0.05, 0.1, 0.1, 0.04])
        V = 0.01
        x = math.log(100.0)
        for y, r, gap in ((math.log(150.0), 0.24, 365 / m.YEAR), (math.log(140.0), 1.03, 0.0)):
            P = V + 0.8 * gap
            K = P / (P + r)
            x, V = x + K * (y - x), (1 - K) * P
        got = m.posterior_variance(obs, theta, 365 + 100, True)
        self.assertAlmostEqual(got, V + 0.8 * 100 / m.YEAR, places=14)

    def test_gradient_and_hessian_match_finite_differences(self):
        histories = list(self.model.histories.values())
        arrays = m.ObservationArrays.of(histories, True)
        counts = arrays.counts(day(AS_OF))
        theta = np.array([0.9, 0.01, 0.02, 0.03, 0.3, 0.06, 0.12, 0.15, 0.03])
        _, grad, hess = m.innovation_loglik(theta, arrays, counts)
        for i in range(len(theta)):
            h = 1e-6
            e = np.zeros_like(theta)
            e[i] = h
            lp, gp, _ = m.innovation_loglik(theta + e, arrays, counts)
            lm, gm, _ = m.innovation_loglik(theta - e, arrays, counts)
            self.assertAlmostEqual(grad[i], (lp - lm) / (2 * h), delta=1e-5 * max(1, abs(grad[i])))
            np.testing.assert_allclose(hess[i], (gp - gm) / (2 * h), rtol=1e-5, atol=1e-4)

    def test_fit_reaches_the_same_maximiser_from_any_start(self):
        fitted = [f for f in self.model.fits if f.fitted]
        self.assertTrue(fitted, "the synthetic dataset spans more than 24 months")
        self.assertTrue(all(not f.fitted for f in self.model.fits[:24]))
        arrays = m.ObservationArrays.of(list(self.model.histories.values()), True)
        rng = np.random.default_rng(3)
        for fit in (fitted[0], fitted[len(fitted) // 2], fitted[-1]):
            self.assertLess(fit.max_projected_gradient, 1e-8)
            counts = arrays.counts(fit.month_end)
            for _ in range(3):
                start = np.exp(rng.uniform(math.log(0.003), math.log(3.0), len(m.PARAM_NAMES)))
                start = np.where(fit.free, start, fit.theta)
                theta, _, _ = m.maximise_likelihood(arrays, counts, fit.free, start)
                np.testing.assert_allclose(theta, fit.theta, rtol=1e-9)
            # A parameter at its bound sits exactly on it.
            at_bound = fit.theta <= m.LOWER
            np.testing.assert_array_equal(fit.theta[at_bound], m.LOWER[at_bound])
        # The buyback and internal classes are present here, so they are fitted.
        self.assertTrue(fitted[-1].free[m.R_BUYBACK] and fitted[-1].free[m.R_INTERNAL])


def same_day_mark(testcase, a: m.DayMark, b: m.DayMark, what: str) -> None:
    testcase.assertEqual(a.anchor.event_id, b.anchor.event_id, what)
    for name in ("mark", "s", "lower80", "upper80", "lower95", "upper95", "next_reported"):
        x, y = getattr(a, name), getattr(b, name)
        testcase.assertLessEqual(abs(x - y), 1e-12 * abs(x), f"{what} {name}: {x} vs {y}")
    testcase.assertAlmostEqual(a.confidence, b.confidence, delta=1e-14, msg=what)
    testcase.assertEqual(a.stale, b.stale, what)
    testcase.assertEqual(a.quantiles.n, b.quantiles.n, what)


class PointInTime(SyntheticCase):
    def test_series_on_day_t_is_what_the_records_up_to_t_give(self):
        days = ["2019-12-31", "2020-06-01", "2020-06-02", "2021-08-01", "2022-03-17", AS_OF]
        pools = [self.model.pools.on(f, day("2021-08-01")) for f in range(m.FOLDS)]
        self.assertTrue(all(qs.sorted_z is not None for qs in pools), "empirical quantiles")
        series = {d.day: d for d in self.model.series("stripe")}
        for iso in days:
            t = day(iso)
            cut = dataset_up_to(self.dataset, t, os.path.join(self.tmp.name, f"cut-{iso}"))
            past = m.Model(cut, None, self.settings)
            self.assertEqual(past.horizon, t)
            compared = 0
            for slug, h in self.model.histories.items():
                end = h.last_marked_day(self.model.horizon)
                if end is None or not (h.anchors[0].day <= t <= end):
                    continue
                same_day_mark(
                    self,
                    self.model.mark_on(h, t),
                    past.latest(past.histories[slug]),
                    f"{slug} on {iso}",
                )
                compared += 1
            self.assertGreater(compared, 10)
            if t in series:
                same_day_mark(self, series[t], past.latest(past.histories["stripe"]), iso)
            # The fits up to t are the same.
            for a, b in zip(past.fits, self.model.fits, strict=False):
                np.testing.assert_allclose(a.theta, b.theta, rtol=1e-12)

    def test_appending_a_record_leaves_every_other_company_marks_unchanged(self):
        appended = [
            ("alpha", "primary_round", AS_OF, 9_000_000_000, "closed", "B"),
            ("co05", "wind_down", "2021-04-15", 0, "announced", "B"),  # dated in the past
            ("openai", "buyback", "2020-08-01", 50_000_000, "closed", "D"),
        ]
        for slug, *_ in appended:
            self.assertIn(slug, self.model.histories)
        for record in appended:
            new = m.Record(len(self.dataset.records), "synthetic", record[0], record[1],
                           day(record[2]), record[3], record[4], record[5])  # fmt: skip
            data = dataclasses.replace(self.dataset, records=[*self.dataset.records, new])
            after = m.Model(data, None, self.settings)
            for slug, h in self.model.histories.items():
                if slug == record[0]:
                    continue
                end = h.last_marked_day(self.model.horizon)
                if end is None:
                    continue
                other = after.histories[slug]
                for t in range(h.anchors[0].day, end + 1):
                    self.assertEqual(h.anchor_on(t).value, other.anchor_on(t).value, (slug, t))
                self.assertEqual(end, other.last_marked_day(after.horizon))


class CommandLine(unittest.TestCase):
    def test_writes_every_output(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "synthetic")
            make_synthetic(path, seed=7, fillers=24)
            out = os.path.join(tmp, "out")
            with redirect_stdout(io.StringIO()) as printed:
                self.assertEqual(m.main([path, "--out", out]), 0)
            self.assertIn("coverage 80%", printed.getvalue())
            names = sorted(os.listdir(out))
            self.assertEqual(
                names,
                ["latest.csv", "monthends.csv", "params.csv", "scorecard.json",
                 "series_openai.csv", "series_stripe.csv"],
            )  # fmt: skip
            with open(os.path.join(out, "latest.csv"), newline="", encoding="utf-8") as fh:
                latest = list(csv.DictReader(fh))
            dataset = m.load_dataset(path)
            self.assertEqual(sorted(r["slug"] for r in latest), sorted(dataset.slugs))
            with open(os.path.join(out, "scorecard.json"), encoding="utf-8") as fh:
                card = fh.read()
            self.assertIn('"move_test"', card)
            self.assertIn('"mark": 0.0', card)


if __name__ == "__main__":
    unittest.main()
