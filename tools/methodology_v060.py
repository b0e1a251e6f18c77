"""Research harness of methodology v0.6.0: the last reliable value, and honest bands.

An independent implementation of DESIGN.md section 3, written from the text (not from the Rust
builder), so that the builder can be checked against it number for number (1e-9 relative). This
docstring is the exact specification: every formula and every choice the design leaves open.

    python3 tools/methodology_v060.py DATASET_DIR --out DIR [--as-of YYYY-MM-DD]
        writes DIR/latest.csv, monthends.csv, params.csv, series_stripe.csv, series_openai.csv,
        scorecard.json, and prints the scorecard's headline figures
    python3 tools/methodology_v060.py DATASET_DIR --cv
        prints the leave-companies-out cross-validation report (section 10)

Needs numpy and scipy (the project's research venv: target/research-venv).

1. Units and reading
--------------------
YEAR = 365.25 days. A day is an integer, the days since 1970-01-01. Logarithms are natural.
DATASET_DIR/events.csv (columns event_id, slug, event_type, occurred_on, valuation_usd,
reported_as, source_grade, supersedes; the others are ignored) and dataset.toml (`as_of`; the
horizon H of every computation, overridable with --as-of). An empty reported_as reads `closed`;
an empty source_grade is "ungraded" (not D).
Effective view (as reference_v050.py): every event_id named in any row's `supersedes` is left
out (a corrected record, or one a retraction withdraws), and so is every `retraction` row. The
records left keep their position in the file ("file order"; a correction sits where it was
appended, not where the record it corrects was). Per company, records are taken in order of
(day, file order). Point in time means: on occurred_on of the effective records.

2. What each record is
----------------------
The record's kind depends on event_type and reported_as:
- anchor (sets the mark, is an observation, is a target):
    primary_round, down_round          closed/announced/estimate    class round
    tender_offer, secondary_sale       closed/announced/estimate    class secondary
    fund_mark                          any but in_talks             class fund
    acquisition                        closed/announced             class agreed (agreed sale)
    ipo, direct_listing, spac_listing  announced                    class agreed (agreed listing)
- evidence (an observation only; never sets the mark, never a target):
    any record reported_as in_talks (of the types above, buyback or internal_valuation)
                                                                    class in_talks
    buyback                                                         class buyback
    internal_valuation                                              class internal
    acquisition_terminated with value > 0                           class terminated
- outcome (ends the private period; the company's later records are ignored):
    ipo, direct_listing, spac_listing closed (a listing); acquisition_closed (a sale);
    bankruptcy, wind_down, closed or announced (a failure).
A record with value 0 is no observation (and no anchor, no target), except: a fund_mark of 0 is
an anchor valued 0.01 x the value of the anchor in force just before it (section 3; with no
anchor in force it is nothing), and a failure's value is floored when it is a target (section 7).
A deal is an acquisition (closed or announced) or an agreed listing (announced), whatever its
value. acquisition_terminated (whatever its value) terminates the latest deal not yet terminated
(none: it terminates nothing, e.g. after talks only). If that deal is an anchor (value > 0), the
anchor is cancelled: from the termination's day it is no longer in force, and the mark falls back
to the previous anchor in force. Exception (as in v0.5.0): when cancelling it would leave the
company with no anchor in force (the deal was its only anchor: Figma), the anchor is not
cancelled and keeps the mark until the next anchor. Only the latest deal is terminated (Circle:
a $9B SPAC agreement that amended a $4.5B one; the mark falls back to the $4.5B agreement).
Cancelling changes the mark only: the agreed anchor stays an observation and a target.
Records on the outcome's day before it in file order are taken; an outcome with value 0 that is
not a failure (a sale or listing at an undisclosed price) ends the period and is no target.

3. The mark
-----------
The anchor in force on day t: the last anchor (in record order) dated on or before t that is not
cancelled on or before t. mark_t = its value (no drift). A company has a mark on every day from
its first anchor's day to H, or to the day before its outcome when the outcome is dated <= H.
silence_t = (t - anchor day) / YEAR.

4. The evidence filter
----------------------
Parameters theta = (q, r_round, r_secondary, r_agreed, r_fund, r_in_talks, r_buyback,
r_internal, r_D). An observation (anchor or evidence, not outcomes) has y = ln value and
    r = r_class + r_D [grade D]            (r_terminated = r_agreed + 1.0, + r_D if grade D)
A company's observations in record order; the first: x = y, V = r. Each later one at day d,
the previous at d_prev (gap = (d - d_prev) / YEAR; same-day records have gap 0):
    P = V + q * gap                                  (predicted variance)
    S = P + r,  innovation v = y - x                 (its variance S)
    K = P / S,  x = x + K * v,  V = (1 - K) * P
On day t: V_t = V after the last observation dated <= t, plus q * (t - d_last) / YEAR, with the
parameters in force on t (section 5). The scale of the next reported value:
    s_t = sqrt(V_t + q * H0 + r_round),   H0 = 0.5 year.

5. The walk-forward fit
-----------------------
Prior (research fit of all data): q = 1.06, r_round = r_secondary = r_agreed = 0.0025,
r_fund = 0.41, r_in_talks = 0.046, r_buyback = 0.10, r_internal = 0.10, r_D = 0.021.
Bounds: q >= 0.01, every r_class >= 0.0025, r_D >= 0; no upper bounds.
At every calendar month-end M from the month of the first effective record to H: if
M - d0 < 2 * YEAR (d0 = the day of the earliest effective record, of any kind, of the companies
fitted: all of them, or in section 10 those of four folds), the prior is used ("before 24 months
of records"). Otherwise theta(M) maximises
    L(theta) = sum over companies, over their observations dated <= M except each company's first
               (diffuse), of  -0.5 * (ln(2 pi S) + v^2 / S)
within the bounds. Free parameters: q, and each r that L depends on: r_class when an observation
of the class (r_agreed: of class agreed or terminated), r_D when one of grade D, is dated <= M in
a company with two or more observations dated <= M (a company's only observation is diffuse and
leaves L unchanged); the others stay at their prior value.
L is not assumed concave. The fit is a projected Newton method with the analytic gradient and
Hessian (forward differentiation of the filter), started from theta at the previous month-end
(the prior for the first fit and for a parameter newly free): the working set is the free
parameters except those at their lower bound with gradient g_i <= 0; the Newton direction solves
(-H) d = g on it (where -H is not positive definite, its eigenvalues are made positive); the
step is halved until L does not fall by more than 1e-12 |L|; a parameter the step takes below
its bound is set exactly to the bound. Convergence is judged on the step: the iteration stops
when a full Newton step moves no free parameter by more than 1e-12 * max(theta_i, 1e-3). The
projected gradient (g_i, or max(g_i, 0) at a bound) is then ~1e-13 (params.csv shows it and the
iterations, at most 11 on the sample). On the sample the maximiser reached from the prior and
from random starts agrees with the walk-forward fit to 4e-13 relative at every month-end (the
unit tests check a multi-start on a synthetic dataset), so a port may use any method that
reaches the same maximiser to 1e-10 (e.g. this one, or L-BFGS-B polished by Newton steps).
Parameters in force on day t: theta(M) of the latest month-end M <= t (the prior before the first
month-end).

6. Folds
--------
fold(slug) = int.from_bytes(sha256(slug as UTF-8)[:8], "big") % 5.

7. Month-end residuals
----------------------
For every company and calendar month-end m with a mark on m (section 3; m <= H): the target is
the first anchor or valued outcome dated after m (strictly; in record order; a cancelled agreed
anchor counts, it was reported). A failure's target value is max(value, 0.01 * mark_m); a listing
or sale at 0 is no target. With no target, m has no residual.
    z = (ln target - ln mark_m) / s_m              (s_m with the parameters in force on m)
The residual is known on day t when its target's day <= t.

8. Bands and confidence on day t (company of fold f)
----------------------------------------------------
The pool: residuals of companies of the other four folds known on t; n its size. Conformal
quantiles of the pool's sorted z (z_(1) <= ... <= z_(n)), with p in per mille (pm = 100, 900,
25, 975, 500) and integer arithmetic:
    pm < 500:  z_(k), k = max(floor((n + 1) * pm / 1000), 1)
    pm >= 500: z_(k), k = min(ceil((n + 1) * pm / 1000), n)
F(x) = (number of pool z <= x) / n. If n < 200 the prior is used instead: z_.10 = -0.61,
z_.90 = 1.24, z_.025 = -1.99, z_.975 = 1.88, z_.5 = 0, F = the standard normal CDF.
    lower80 = mark * exp(s_t * z_.10),  upper80 = mark * exp(s_t * z_.90)   (95%: .025, .975)
    confidence = F(ln 1.2 / s_t) - F(ln 0.8 / s_t)
    next_reported = mark * exp(s_t * z_.5)
    stale = lower80 < mark / 10 or upper80 > 10 * mark

9. Scorecard (scorecard.json)
-----------------------------
Over the month-end residuals with m >= 2019-01-31 ("scored"), each scored on day m: in80 =
z_.10 <= z <= z_.90, in95 = z_.025 <= z <= z_.975 (inclusive, in z), e = ln target - ln mark,
hit20 = ln 0.8 + 1e-12 < e <= ln 1.2 + 1e-12 (the interval the confidence measures; the 1e-12
keeps an exact 20% move on the same side in every port). Reported: coverage overall; by silence
bucket (silence_m in [0, .5), [.5, 1), [1, 2), [2, inf) years); by the anchor's grade; by fold;
mean confidence against the hit20 share; median and mean |e|. Current companies (a mark on H):
median mark / value of the anchor in force (1.0 by construction), overall and by silence bucket;
the count of stale ones. The move test: one synthetic record is appended (a primary_round at 2x
the mark of stripe, grade B; a wind_down at 0 of openai, grade B; both dated H; without those
companies, the first two current ones by slug), everything is recomputed, and over every other
company with a mark on the day the largest |new / old - 1| of the mark, of s and of the four
bounds, and the largest |new - old| of the confidence, are reported on H (the bounds move there
already: the appended record's residuals join the pools), and again on the first month-end
E >= H (both runs with horizon E), after the month-end refit.

10. Cross-validation (--cv)
---------------------------
For each held-out fold f: the parameters are fitted (walk-forward, as section 5) on the
companies of the other four folds only, every residual's z is computed with those parameters,
and the held-out fold's scored month-ends get their quantiles from the other four folds as in
section 8. Reported per fold and on average: n, 80% and 95% coverage, mean confidence, hit20
share; for H0 in {0.25, 0.5, 1.0}, with and without r_D, and with the prior r of buyback and
internal valuation at 0.046 and 0.41 instead of 0.10.

Outputs
-------
latest.csv: every company; its mark on its last marked day (H, or the day before its outcome;
empty fields for a company never marked): slug, status on H (listed, sold, bankrupt, wound_down
for an outcome dated <= H; else sale_agreed or listing_agreed while a deal is neither terminated
nor completed, else private), mark_date, anchor_event_id/type/date/value/grade, silence_years,
mark, s, lower80, upper80, lower95, upper95, confidence, next_reported, stale, n_residuals (the
pool's n), fold, outcome_event_id/type/date/value. monthends.csv: every month-end residual
(scored = 1 from 2019-01-31) with its anchor, mark, s, target (next_*), e, z, the quantiles and
pool size on m, and for scored ones in80, in95, confidence, hit20. params.csv: theta at every
month-end, the free parameters, L, the innovations, Newton iterations and the projected
gradient. series_<slug>.csv: every marked day of stripe and openai. Floats are written with
repr() (shortest round-trip), days as YYYY-MM-DD.
"""

from __future__ import annotations

import argparse
import bisect
import csv
import dataclasses
import datetime as dt
import hashlib
import json
import math
import os
import sys
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

YEAR = 365.25
EPOCH = dt.date(1970, 1, 1)
FLOOR = 0.01  # a written-off fund mark or a failure: 1% of the value it is measured against
LN_08, LN_12 = math.log(0.8), math.log(1.2)
HIT_GUARD = 1e-12
LN_2PI = math.log(2.0 * math.pi)
SCORED_FROM = "2019-01-31"
FOLDS = 5
SERIES_SLUGS = ("stripe", "openai")

PARAM_NAMES = (
    "q",
    "r_round",
    "r_secondary",
    "r_agreed",
    "r_fund",
    "r_in_talks",
    "r_buyback",
    "r_internal",
    "r_D",
)
Q, R_ROUND, R_SECONDARY, R_AGREED, R_FUND, R_IN_TALKS, R_BUYBACK, R_INTERNAL, R_D = range(9)
CLASS_PARAM = {
    "round": R_ROUND,
    "secondary": R_SECONDARY,
    "agreed": R_AGREED,
    "fund": R_FUND,
    "in_talks": R_IN_TALKS,
    "buyback": R_BUYBACK,
    "internal": R_INTERNAL,
    "terminated": R_AGREED,  # a terminated deal's price: r_agreed + 1.0
}
TERMINATED_EXTRA = 1.0
PRIOR = (1.06, 0.0025, 0.0025, 0.0025, 0.41, 0.046, 0.10, 0.10, 0.021)
LOWER = np.array([0.01] + [0.0025] * 7 + [0.0])

# Quantiles by per mille, so that the rank is exact integer arithmetic in every port.
PM10, PM90, PM025, PM975, PM50 = 100, 900, 25, 975, 500
PRIOR_Z = {PM10: -0.61, PM90: 1.24, PM025: -1.99, PM975: 1.88, PM50: 0.0}

ROUNDS = ("primary_round", "down_round")
SECONDARIES = ("tender_offer", "secondary_sale")
LISTINGS = ("ipo", "direct_listing", "spac_listing")
FAILURES = ("bankruptcy", "wind_down")
SILENCE_EDGES = (0.5, 1.0, 2.0)
SILENCE_LABELS = ("<0.5y", "0.5-1y", "1-2y", ">=2y")

# Newton: stop when a full step moves no free parameter by more than this, relative.
STEP_TOL = 1e-12
MAX_NEWTON = 100


@dataclass(frozen=True)
class Settings:
    """The choices cross-validation varies; the defaults are the settled method."""

    h0: float = 0.5
    min_residuals: int = 200
    prior: tuple[float, ...] = PRIOR
    grade_d_adds: bool = True

    def fit_key(self, params_observed: frozenset[int]) -> tuple:
        """What the fits depend on: whether r_D is used, and the prior of q, r_D and of every
        class some observation has (the prior of a class never observed enters nothing)."""
        used = params_observed | {Q, R_D}
        prior = tuple(p if i in used else None for i, p in enumerate(self.prior))
        return (self.grade_d_adds, prior)


# ---------------------------------------------------------------------------- reading


def day_number(iso: str) -> int:
    return (dt.date.fromisoformat(iso) - EPOCH).days


def iso_date(day: int) -> str:
    return (EPOCH + dt.timedelta(days=int(day))).isoformat()


def fold_of(slug: str) -> int:
    return int.from_bytes(hashlib.sha256(slug.encode("utf-8")).digest()[:8], "big") % FOLDS


def month_ends(lo: int, hi: int) -> list[int]:
    """Calendar month-ends m with lo <= m <= hi, counting from lo's month."""
    d = EPOCH + dt.timedelta(days=lo)
    year, month = d.year, d.month
    out = []
    while True:
        first_of_next = dt.date(year + (month == 12), month % 12 + 1, 1)
        end = (first_of_next - EPOCH).days - 1
        if end > hi:
            return out
        if end >= lo:
            out.append(end)
        year, month = first_of_next.year, first_of_next.month


@dataclass(frozen=True)
class Record:
    order: int  # position among the effective records, in file order
    event_id: str
    slug: str
    event_type: str
    day: int
    value: int
    reported_as: str
    grade: str


def read_as_of(path: str) -> str:
    with open(os.path.join(path, "dataset.toml"), encoding="utf-8") as fh:
        for line in fh:
            key, _, rest = line.partition("=")
            if key.strip() == "as_of":
                return rest.strip().strip('"')
    raise ValueError(f"{path}/dataset.toml: no as_of")


def read_company_slugs(path: str) -> list[str]:
    name = os.path.join(path, "companies.csv")
    if not os.path.exists(name):
        return []
    with open(name, newline="", encoding="utf-8") as fh:
        return [row["slug"] for row in csv.DictReader(fh)]


def effective_records(rows: list[dict]) -> list[Record]:
    """The effective view: drop what a later record corrects or retracts, and the retractions.

    As reference_v050.py: every event_id named in a `supersedes` is gone (a correction replaces
    it, a retraction withdraws it), whatever the naming record is.
    """
    gone = {row["supersedes"] for row in rows if row.get("supersedes")}
    kept = [r for r in rows if r["event_id"] not in gone and r["event_type"] != "retraction"]
    return [
        Record(
            order=i,
            event_id=r["event_id"],
            slug=r["slug"],
            event_type=r["event_type"],
            day=day_number(r["occurred_on"]),
            value=int(r["valuation_usd"]),
            reported_as=r.get("reported_as") or "closed",  # empty: older than the column
            grade=r.get("source_grade") or "",
        )
        for i, r in enumerate(kept)
    ]


@dataclass
class Dataset:
    records: list[Record]
    slugs: list[str]
    as_of: str


def load_dataset(path: str, as_of: str | None = None) -> Dataset:
    with open(os.path.join(path, "events.csv"), newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    records = effective_records(rows)
    slugs = read_company_slugs(path)
    slugs += sorted({r.slug for r in records} - set(slugs))
    return Dataset(records, slugs, as_of or read_as_of(path))


# ---------------------------------------------------------------------------- a company's records


@dataclass
class Anchor:
    day: int
    value: float
    event_id: str
    event_type: str
    grade: str
    agreed: bool
    cancelled_on: int | None = None


@dataclass
class Deal:
    """An agreed sale or listing (any value) while it may still be terminated."""

    day: int
    event_type: str
    anchor: Anchor | None  # None: a price not disclosed, so no anchor
    terminated_on: int | None = None


@dataclass(frozen=True)
class Observation:
    day: int
    log_value: float
    param: int  # index of its r_class in theta
    grade_d: bool
    extra: float  # added to r: 1.0 for a terminated deal's price
    event_id: str


@dataclass(frozen=True)
class Target:
    day: int
    value: float  # a failure's raw value (floored against the mark when scored)
    kind: str  # anchor, listing, sale, failure
    event_id: str


@dataclass(frozen=True)
class Outcome:
    day: int
    kind: str  # listing, sale, failure
    event_type: str
    value: int
    event_id: str


def classify(record: Record) -> tuple[str, str]:
    """(kind, class) of a record, by section 2: kind is anchor, evidence, outcome or
    termination; class names its r (anchor, evidence) or the outcome (listing, sale, failure)."""
    t, reported = record.event_type, record.reported_as
    if t in ("acquisition_closed", "acquisition_terminated", *FAILURES) and reported == "in_talks":
        raise ValueError(f"{record.event_id}: {t} cannot be reported_as in_talks")
    if reported == "in_talks":
        return "evidence", "in_talks"
    if t in ROUNDS:
        return "anchor", "round"
    if t in SECONDARIES:
        return "anchor", "secondary"
    if t == "fund_mark":
        return "anchor", "fund"
    if t == "acquisition":
        return "anchor", "agreed"
    if t in LISTINGS:
        return ("anchor", "agreed") if reported == "announced" else ("outcome", "listing")
    if t == "acquisition_closed":
        return "outcome", "sale"
    if t in FAILURES:
        return "outcome", "failure"
    if t == "buyback":
        return "evidence", "buyback"
    if t == "internal_valuation":
        return "evidence", "internal"
    if t == "acquisition_terminated":
        return "termination", "terminated"
    raise ValueError(f"{record.event_id}: unknown event_type {t!r}")


class CompanyHistory:
    """One company's anchors, observations, targets and outcome, read in record order."""

    def __init__(self, slug: str, records: list[Record]):
        self.slug = slug
        self.fold = fold_of(slug)
        self.first_record_day = records[0].day if records else None
        self.anchors: list[Anchor] = []
        self.observations: list[Observation] = []
        self.targets: list[Target] = []
        self.outcome: Outcome | None = None
        self.deals: list[Deal] = []
        for record in records:
            kind, cls = classify(record)
            if kind == "outcome":
                o = record
                self.outcome = Outcome(o.day, cls, o.event_type, o.value, o.event_id)
                if cls == "failure" or record.value > 0:
                    value = float(record.value)
                    self.targets.append(Target(record.day, value, cls, record.event_id))
                break  # the private period is over: later records are ignored
            if kind == "termination":
                self._terminate_latest_deal(record.day)
            if cls == "agreed":
                self.deals.append(Deal(record.day, record.event_type, None))
            value = float(record.value)
            if kind == "anchor" and value <= 0 and cls == "fund":
                in_force = self.anchor_on(record.day)
                value = FLOOR * in_force.value if in_force is not None else 0.0
            if value <= 0:
                continue  # no observation of value (an undisclosed price, a placeholder)
            self.observations.append(
                Observation(
                    record.day,
                    math.log(value),
                    CLASS_PARAM[cls],
                    record.grade == "D",
                    TERMINATED_EXTRA if cls == "terminated" else 0.0,
                    record.event_id,
                )
            )
            if kind == "anchor":
                anchor = Anchor(
                    record.day,
                    value,
                    record.event_id,
                    record.event_type,
                    record.grade,
                    agreed=cls == "agreed",
                )
                self.anchors.append(anchor)
                if anchor.agreed:
                    self.deals[-1].anchor = anchor
                self.targets.append(Target(record.day, value, "anchor", record.event_id))

    def _terminate_latest_deal(self, day: int) -> None:
        """A termination ends the latest pending deal; its anchor, if it has one, leaves the
        mark, unless it is the company's only anchor in force (then it keeps the mark)."""
        pending = [d for d in self.deals if d.terminated_on is None]
        if not pending:
            return  # a deal only talked about (in_talks): nothing to cancel
        deal = pending[-1]
        deal.terminated_on = day
        if deal.anchor is None:
            return
        others = [a for a in self.anchors if a is not deal.anchor and a.cancelled_on is None]
        if others:  # else the agreed value keeps the mark (the Figma case)
            deal.anchor.cancelled_on = day

    def anchor_on(self, t: int) -> Anchor | None:
        """The anchor in force on day t: the last dated <= t and not cancelled by t."""
        found = None
        for a in self.anchors:
            if a.day > t:
                break
            if a.cancelled_on is None or a.cancelled_on > t:
                found = a
        return found

    def last_marked_day(self, horizon: int) -> int | None:
        """The last day with a mark: the horizon, or the day before the outcome."""
        if not self.anchors:
            return None
        end = horizon if self.outcome is None else min(horizon, self.outcome.day - 1)
        return end if end >= self.anchors[0].day else None

    def target_after(self, m: int) -> Target | None:
        for target in self.targets:
            if target.day > m:
                return target
        return None

    def status_on(self, t: int) -> str:
        if self.outcome is not None and self.outcome.day <= t:
            if self.outcome.kind == "failure":
                return "bankrupt" if self.outcome.event_type == "bankruptcy" else "wound_down"
            return {"listing": "listed", "sale": "sold"}[self.outcome.kind]
        pending = [d for d in self.deals if d.day <= t]
        pending = [d for d in pending if d.terminated_on is None or d.terminated_on > t]
        if pending:
            return "sale_agreed" if pending[-1].event_type == "acquisition" else "listing_agreed"
        return "private"


def build_histories(records: list[Record], slugs: list[str]) -> dict[str, CompanyHistory]:
    by_slug: dict[str, list[Record]] = {s: [] for s in slugs}
    for record in sorted(records, key=lambda r: (r.slug, r.day, r.order)):
        by_slug.setdefault(record.slug, []).append(record)
    return {slug: CompanyHistory(slug, rs) for slug, rs in sorted(by_slug.items())}


# ---------------------------------------------------------------------------- the filter


def observation_variance(ob: Observation, theta, grade_d_adds: bool) -> float:
    r = theta[ob.param] + ob.extra
    if ob.grade_d and grade_d_adds:
        r += theta[R_D]
    return r


def posterior_variance(observations: list[Observation], theta, t: int, grade_d_adds: bool):
    """V_t: the filter's variance of the log value after the observations dated <= t."""
    V = None
    last = None
    x = 0.0
    for ob in observations:
        if ob.day > t:
            break
        r = observation_variance(ob, theta, grade_d_adds)
        if last is None:
            x, V = ob.log_value, r
        else:
            P = V + theta[Q] * ((ob.day - last) / YEAR)
            K = P / (P + r)
            x = x + K * (ob.log_value - x)
            V = (1.0 - K) * P
        last = ob.day
    if last is None:
        return None
    return V + theta[Q] * ((t - last) / YEAR)


@dataclass
class ObservationArrays:
    """Every fitted company's observations, padded to one length, for a vectorised filter."""

    y: np.ndarray  # (n, L) log values
    day: np.ndarray  # (n, L) days; padding +inf so that no month-end counts it
    gap: np.ndarray  # (n, L) years since the company's previous observation
    design: np.ndarray  # (n, L, 9): r = design @ theta + extra
    extra: np.ndarray  # (n, L)

    @classmethod
    def of(cls, histories: list[CompanyHistory], grade_d_adds: bool) -> ObservationArrays:
        n = len(histories)
        length = max((len(h.observations) for h in histories), default=0) or 1
        y = np.zeros((n, length))
        day = np.full((n, length), np.inf)
        gap = np.zeros((n, length))
        design = np.zeros((n, length, len(PARAM_NAMES)))
        extra = np.zeros((n, length))
        for i, h in enumerate(histories):
            for j, ob in enumerate(h.observations):
                y[i, j] = ob.log_value
                day[i, j] = ob.day
                if j:
                    gap[i, j] = (ob.day - h.observations[j - 1].day) / YEAR
                design[i, j, ob.param] = 1.0
                if ob.grade_d and grade_d_adds:
                    design[i, j, R_D] = 1.0
                extra[i, j] = ob.extra
        return cls(y, day, gap, design, extra)

    def counts(self, m: int) -> np.ndarray:
        """Per company, how many observations are dated <= m (they come in day order)."""
        return np.sum(self.day <= m, axis=1)

    def params_in_likelihood(self, counts: np.ndarray) -> np.ndarray:
        """The r's that L depends on: of observations of companies with two or more of them
        (a company's only observation is diffuse and leaves L unchanged)."""
        mask = (np.arange(self.y.shape[1])[None, :] < counts[:, None]) & (counts[:, None] >= 2)
        return np.any(self.design[mask] > 0, axis=0)


def _outer(a, b):
    return a[:, :, None] * b[:, None, :]


def innovation_loglik(theta, arrays: ObservationArrays, counts, derivatives: bool = True):
    """L(theta) of section 5, with its gradient and Hessian by forward differentiation.

    x and V of each company carry their first and second derivatives in theta; every quantity
    of the filter is a sum, product or quotient of them, differentiated by the usual rules.
    """
    n, length = arrays.y.shape
    p = theta.size
    r_all = arrays.design @ theta + arrays.extra
    x = arrays.y[:, 0].copy()
    V = r_all[:, 0].copy()
    ll = 0.0
    grad = np.zeros(p)
    hess = np.zeros((p, p))
    if derivatives:
        dx = np.zeros((n, p))
        dV = arrays.design[:, 0, :].copy()
        hx = np.zeros((n, p, p))
        hV = np.zeros((n, p, p))
    for j in range(1, length):
        act = np.nonzero(counts > j)[0]
        if act.size == 0:
            break
        gap = arrays.gap[act, j]
        P = V[act] + theta[Q] * gap
        S = P + r_all[act, j]
        v = arrays.y[act, j] - x[act]
        ll += -0.5 * float(np.sum(LN_2PI + np.log(S) + v * v / S))
        K = P / S
        if derivatives:
            iS = 1.0 / S
            iS2 = iS * iS
            c1 = iS[:, None]
            c2 = iS2[:, None, None]
            dP = dV[act].copy()
            dP[:, Q] += gap
            hP = hV[act]
            dS = dP + arrays.design[act, j, :]
            hS = hP
            dv = -dx[act]
            hv = -hx[act]
            ss = _outer(dS, dS)
            vv = v * v
            grad -= 0.5 * np.sum(dS * c1 + 2.0 * v[:, None] * dv * c1 - (vv * iS2)[:, None] * dS, 0)
            hess += -0.5 * np.sum(
                hS * iS[:, None, None]
                - ss * c2
                + 2.0 * (_outer(dv, dv) + v[:, None, None] * hv) * iS[:, None, None]
                - 2.0 * v[:, None, None] * (_outer(dv, dS) + _outer(dS, dv)) * c2
                - (vv * iS2)[:, None, None] * hS
                + 2.0 * (vv * iS2 * iS)[:, None, None] * ss,
                0,
            )
            dK = dP * c1 - (P * iS2)[:, None] * dS
            hK = (
                hP * iS[:, None, None]
                - (_outer(dP, dS) + _outer(dS, dP)) * c2
                - (P * iS2)[:, None, None] * hS
                + 2.0 * (P * iS2 * iS)[:, None, None] * ss
            )
            dx[act] = dx[act] + v[:, None] * dK + K[:, None] * dv
            cross = _outer(dK, dv)
            hx[act] = hx[act] + v[:, None, None] * hK + cross + cross.transpose(0, 2, 1)
            hx[act] += K[:, None, None] * hv
            dV[act] = (1.0 - K)[:, None] * dP - P[:, None] * dK
            cross = _outer(dK, dP)
            hV[act] = (1.0 - K)[:, None, None] * hP - cross - cross.transpose(0, 2, 1)
            hV[act] -= P[:, None, None] * hK
        x[act] = x[act] + K * v
        V[act] = (1.0 - K) * P
    return ll, grad, hess


@dataclass
class Fit:
    month_end: int
    theta: np.ndarray
    fitted: bool  # False: the prior (before 24 months of records)
    free: np.ndarray
    loglik: float = float("nan")
    n_innovations: int = 0
    iterations: int = 0
    max_projected_gradient: float = 0.0


def newton_direction(neg_hess: np.ndarray, grad: np.ndarray) -> np.ndarray:
    """Solve (-H) d = g; where -H is not positive definite, flip and floor its eigenvalues
    (far from the optimum only), so that d is still an ascent direction."""
    try:
        chol = np.linalg.cholesky(neg_hess)
        return np.linalg.solve(chol.T, np.linalg.solve(chol, grad))
    except np.linalg.LinAlgError:
        w, vecs = np.linalg.eigh(neg_hess)
        w = np.maximum(np.abs(w), 1e-8 * max(1.0, float(np.max(np.abs(w)))))
        return vecs @ ((vecs.T @ grad) / w)


def projected_gradient(theta, grad, free) -> np.ndarray:
    pg = np.where(free, grad, 0.0)
    at_bound = theta <= LOWER
    return np.where(at_bound, np.maximum(pg, 0.0), pg)


def maximise_likelihood(arrays, counts, free, start) -> tuple[np.ndarray, float, int]:
    """Projected Newton on L within the bounds (section 5). Returns theta, L, iterations."""
    theta = np.where(free, np.maximum(start, LOWER), start)
    ll, grad, hess = innovation_loglik(theta, arrays, counts)
    for iteration in range(1, MAX_NEWTON + 1):
        # A parameter at its bound whose gradient points outwards stays there this step.
        work = free & ~((theta <= LOWER) & (grad <= 0.0))
        if not work.any():
            return theta, ll, iteration
        idx = np.nonzero(work)[0]
        step = newton_direction(-hess[np.ix_(idx, idx)], grad[idx])
        alpha = 1.0
        while True:
            candidate = theta.copy()
            candidate[idx] = np.maximum(LOWER[idx], theta[idx] + alpha * step)
            ll_c = innovation_loglik(candidate, arrays, counts, derivatives=False)[0]
            # Accept no loss beyond rounding: near the optimum L is flat to machine precision.
            if ll_c >= ll - 1e-12 * max(1.0, abs(ll)):
                break
            alpha *= 0.5
            if alpha < 1e-12:  # no ascent left: only acceptable at the optimum
                if np.max(np.abs(projected_gradient(theta, grad, free))) > 1e-6:
                    raise RuntimeError("the fit's line search failed away from the optimum")
                return theta, ll, iteration
        moved = np.max(np.abs(candidate - theta) / np.maximum(np.abs(theta), 1e-3))
        theta = candidate
        ll, grad, hess = innovation_loglik(theta, arrays, counts)
        if alpha == 1.0 and moved <= STEP_TOL:
            return theta, ll, iteration
    raise RuntimeError(f"the fit did not converge in {MAX_NEWTON} Newton steps")


def fit_walk_forward(histories, horizon: int, settings: Settings) -> list[Fit]:
    """theta(M) at every month-end M from the first record's month to the horizon."""
    prior = np.array(settings.prior, dtype=float)
    firsts = [h.first_record_day for h in histories if h.first_record_day is not None]
    if not firsts:
        return []
    d0 = min(firsts)
    arrays = ObservationArrays.of(histories, settings.grade_d_adds)
    fits = []
    previous = None
    for m in month_ends(d0, horizon):
        counts = arrays.counts(m)
        if m - d0 < 2 * YEAR:
            fits.append(Fit(m, prior.copy(), False, np.zeros(len(prior), bool)))
            continue
        free = arrays.params_in_likelihood(counts)
        free[Q] = True
        if not settings.grade_d_adds:
            free[R_D] = False
        start = prior.copy()
        if previous is not None:
            start[previous.free] = previous.theta[previous.free]
        theta, ll, iterations = maximise_likelihood(arrays, counts, free, start)
        _, grad, _ = innovation_loglik(theta, arrays, counts)
        pg = projected_gradient(theta, grad, free)
        n_innovations = int(np.sum(np.maximum(counts - 1, 0)))
        fit = Fit(m, theta, True, free, ll, n_innovations, iterations, float(np.max(np.abs(pg))))
        fits.append(fit)
        previous = fit
    return fits


# ---------------------------------------------------------------------------- residuals, quantiles


@dataclass(frozen=True)
class Residual:
    slug: str
    fold: int
    day: int  # the month-end m
    anchor: Anchor
    mark: float
    s: float
    target: Target
    target_value: float
    z: float

    @property
    def known_on(self) -> int:
        return self.target.day

    @property
    def log_error(self) -> float:
        return math.log(self.target_value) - math.log(self.mark)

    @property
    def silence(self) -> float:
        return (self.day - self.anchor.day) / YEAR


def silence_bucket(years: float) -> int:
    return sum(years >= edge for edge in SILENCE_EDGES)


def silence_label(years: float) -> str:
    return SILENCE_LABELS[silence_bucket(years)]


def row_silence(row: ScoredMonthEnd) -> str:
    return silence_label(row.residual.silence)


def conformal_quantile(sorted_z, per_mille: int) -> float:
    """z_(k) by section 8's ranks; (n + 1) p is kept in integers so that the rank is exact."""
    n = len(sorted_z)
    scaled = (n + 1) * per_mille
    if per_mille < 500:
        return float(sorted_z[max(scaled // 1000, 1) - 1])  # floor, at least the first
    return float(sorted_z[min(-(-scaled // 1000), n) - 1])  # ceil, at most the last


@dataclass(frozen=True)
class Quantiles:
    """The band quantiles and the distribution F used on one day for one fold."""

    n: int
    z: dict  # per mille -> z
    sorted_z: np.ndarray | None  # None: the prior (F is the standard normal CDF)

    def cdf(self, x: float) -> float:
        if self.sorted_z is None:
            return float(ndtr(x))
        return bisect.bisect_right(self.sorted_z, x) / self.n


class ResidualPools:
    """For each fold, the residuals of the other four, in the order they become known."""

    def __init__(self, residuals: list[Residual], min_residuals: int):
        self.min_residuals = min_residuals
        self.known: list[list[int]] = []
        self.z: list[np.ndarray] = []
        for f in range(FOLDS):
            pool = sorted((r for r in residuals if r.fold != f), key=lambda r: r.known_on)
            self.known.append([r.known_on for r in pool])
            self.z.append(np.array([r.z for r in pool], dtype=float))
        self._cache: dict[tuple[int, int], Quantiles] = {}

    def on(self, fold: int, t: int) -> Quantiles:
        n = bisect.bisect_right(self.known[fold], t)
        key = (fold, n)
        if key not in self._cache:
            if n < self.min_residuals:
                self._cache[key] = Quantiles(n, dict(PRIOR_Z), None)
            else:
                ordered = np.sort(self.z[fold][:n]).tolist()
                z = {pm: conformal_quantile(ordered, pm) for pm in PRIOR_Z}
                self._cache[key] = Quantiles(n, z, ordered)
        return self._cache[key]


# ---------------------------------------------------------------------------- the model


@dataclass(frozen=True)
class DayMark:
    day: int
    anchor: Anchor
    mark: float
    s: float
    lower80: float
    upper80: float
    lower95: float
    upper95: float
    confidence: float
    next_reported: float
    stale: bool
    quantiles: Quantiles


class Model:
    """The method on one dataset up to one horizon: fits, residuals, and marks on any day."""

    def __init__(
        self,
        dataset: Dataset,
        horizon: int | None = None,
        settings: Settings | None = None,
        fit_exclude_fold: int | None = None,
        fit_cache: dict | None = None,
    ):
        self.settings = settings or Settings()
        self.horizon = day_number(dataset.as_of) if horizon is None else horizon
        records = [r for r in dataset.records if r.day <= self.horizon]
        self.histories = build_histories(records, dataset.slugs)
        # Cross-validation fits the parameters without the held-out fold.
        fitted = [h for h in self.histories.values() if h.fold != fit_exclude_fold]
        present = frozenset(ob.param for h in fitted for ob in h.observations)
        key = (fit_exclude_fold, self.horizon, self.settings.fit_key(present))
        if fit_cache is not None and key in fit_cache:
            self.fits = fit_cache[key]
        else:
            self.fits = fit_walk_forward(fitted, self.horizon, self.settings)
            if fit_cache is not None:
                fit_cache[key] = self.fits
        self._fit_days = [f.month_end for f in self.fits]
        self.prior = np.array(self.settings.prior, dtype=float)
        self.residuals = self._month_end_residuals()
        self.pools = ResidualPools(self.residuals, self.settings.min_residuals)

    def params_on(self, t: int) -> np.ndarray:
        i = bisect.bisect_right(self._fit_days, t) - 1
        return self.fits[i].theta if i >= 0 else self.prior

    def scale_on(self, history: CompanyHistory, t: int) -> float:
        theta = self.params_on(t)
        V = posterior_variance(history.observations, theta, t, self.settings.grade_d_adds)
        return math.sqrt(V + theta[Q] * self.settings.h0 + theta[R_ROUND])

    def _month_end_residuals(self) -> list[Residual]:
        out = []
        for h in self.histories.values():
            end = h.last_marked_day(self.horizon)
            if end is None:
                continue
            for m in month_ends(h.anchors[0].day, end):
                target = h.target_after(m)
                if target is None:
                    continue
                anchor = h.anchor_on(m)
                value = target.value
                if target.kind == "failure":
                    value = max(value, FLOOR * anchor.value)
                s = self.scale_on(h, m)
                z = (math.log(value) - math.log(anchor.value)) / s
                out.append(Residual(h.slug, h.fold, m, anchor, anchor.value, s, target, value, z))
        return out

    def mark_on(self, history: CompanyHistory, t: int) -> DayMark | None:
        anchor = history.anchor_on(t)
        if anchor is None:
            return None
        mark = anchor.value
        s = self.scale_on(history, t)
        qs = self.pools.on(history.fold, t)
        lower80 = mark * math.exp(s * qs.z[PM10])
        upper80 = mark * math.exp(s * qs.z[PM90])
        return DayMark(
            day=t,
            anchor=anchor,
            mark=mark,
            s=s,
            lower80=lower80,
            upper80=upper80,
            lower95=mark * math.exp(s * qs.z[PM025]),
            upper95=mark * math.exp(s * qs.z[PM975]),
            confidence=qs.cdf(LN_12 / s) - qs.cdf(LN_08 / s),
            next_reported=mark * math.exp(s * qs.z[PM50]),
            stale=lower80 < mark / 10.0 or upper80 > 10.0 * mark,
            quantiles=qs,
        )

    def series(self, slug: str) -> list[DayMark]:
        h = self.histories.get(slug)
        end = h.last_marked_day(self.horizon) if h is not None else None
        if end is None:
            return []
        return [self.mark_on(h, t) for t in range(h.anchors[0].day, end + 1)]

    def latest(self, history: CompanyHistory) -> DayMark | None:
        end = history.last_marked_day(self.horizon)
        return self.mark_on(history, end) if end is not None else None

    def scored_month_ends(self, folds=None) -> list[ScoredMonthEnd]:
        start = day_number(SCORED_FROM)
        out = []
        for r in self.residuals:
            if r.day < start or (folds is not None and r.fold not in folds):
                continue
            qs = self.pools.on(r.fold, r.day)
            e = r.log_error
            out.append(
                ScoredMonthEnd(
                    residual=r,
                    quantiles=qs,
                    in80=qs.z[PM10] <= r.z <= qs.z[PM90],
                    in95=qs.z[PM025] <= r.z <= qs.z[PM975],
                    confidence=qs.cdf(LN_12 / r.s) - qs.cdf(LN_08 / r.s),
                    hit20=LN_08 + HIT_GUARD < e <= LN_12 + HIT_GUARD,
                )
            )
        return out


@dataclass(frozen=True)
class ScoredMonthEnd:
    residual: Residual
    quantiles: Quantiles
    in80: bool
    in95: bool
    confidence: float
    hit20: bool


# ---------------------------------------------------------------------------- scorecard


def coverage(rows: list[ScoredMonthEnd]) -> dict:
    n = len(rows)
    if not n:
        return {"n": 0}
    return {
        "n": n,
        "coverage80": sum(r.in80 for r in rows) / n,
        "coverage95": sum(r.in95 for r in rows) / n,
        "mean_confidence": sum(r.confidence for r in rows) / n,
        "hit20_share": sum(r.hit20 for r in rows) / n,
    }


def group_coverage(rows, key, order=None) -> dict:
    """Coverage per group, in the given order of group names (else sorted)."""
    groups: dict = {}
    for r in rows:
        groups.setdefault(key(r), []).append(r)
    names = [k for k in order if k in groups] if order else sorted(groups)
    return {str(k): coverage(groups[k]) for k in names}


def current_companies(model: Model) -> list[tuple[CompanyHistory, DayMark]]:
    """Companies with a mark on the horizon (private or pending), with that mark."""
    out = []
    for h in model.histories.values():
        if h.last_marked_day(model.horizon) == model.horizon:
            out.append((h, model.mark_on(h, model.horizon)))
    return out


def synthetic_record(dataset: Dataset, model: Model, slug: str, kind: str) -> Record:
    """The record the move test appends: a round at twice the mark, or a wind-down at 0."""
    mark = model.mark_on(model.histories[slug], model.horizon).mark
    value, reported = (int(2 * mark), "closed") if kind == "primary_round" else (0, "announced")
    return Record(
        order=len(dataset.records),
        event_id=f"synthetic-{slug}",
        slug=slug,
        event_type=kind,
        day=model.horizon,
        value=value,
        reported_as=reported,
        grade="B",
    )


def largest_moves(before: Model, after: Model, day: int, skip: str) -> dict:
    """The largest relative change of other companies' figures on one day, between runs."""
    moves = {"mark": 0.0, "bounds": 0.0, "confidence": 0.0, "s": 0.0, "companies": 0}
    worst_band = ""
    for slug, h in before.histories.items():
        if slug == skip or h.last_marked_day(before.horizon) is None:
            continue
        if h.last_marked_day(before.horizon) < day:
            continue
        a = before.mark_on(h, day)
        b = after.mark_on(after.histories[slug], day)
        moves["companies"] += 1
        moves["mark"] = max(moves["mark"], abs(b.mark / a.mark - 1.0))
        moves["s"] = max(moves["s"], abs(b.s / a.s - 1.0))
        moves["confidence"] = max(moves["confidence"], abs(b.confidence - a.confidence))
        for name in ("lower80", "upper80", "lower95", "upper95"):
            move = abs(getattr(b, name) / getattr(a, name) - 1.0)
            if move > moves["bounds"]:
                moves["bounds"], worst_band = move, f"{slug} {name}"
    moves["largest_bound_move_at"] = worst_band
    return moves


def move_test(dataset: Dataset, model: Model, settings: Settings) -> list[dict]:
    """Append one record to one company, rerun, and measure every other company's move."""
    horizon = model.horizon
    refit_day = month_ends(horizon, horizon + 31)[0]
    base_refit = Model(dataset, refit_day, settings)
    current = {h.slug for h, _ in current_companies(model)}
    chosen = [s for s in SERIES_SLUGS if s in current] or sorted(current)[:2]
    scenarios = []
    for slug, kind in zip(chosen, ("primary_round", "wind_down"), strict=False):
        record = synthetic_record(dataset, model, slug, kind)
        appended = dataclasses.replace(dataset, records=[*dataset.records, record])
        on_day = largest_moves(model, Model(appended, horizon, settings), horizon, slug)
        refit = Model(appended, refit_day, settings)
        after_refit = largest_moves(base_refit, refit, refit_day, slug)
        scenarios.append(
            {
                "appended": f"{kind} of {slug} at {record.value} on {iso_date(horizon)}",
                "on_the_day": on_day,
                "after_refit": {"day": iso_date(refit_day), **after_refit},
            }
        )
    return scenarios


def median(values) -> float | None:
    return float(np.median(values)) if len(values) else None


def mean(values) -> float | None:
    return float(np.mean(values)) if len(values) else None


def theta_dict(theta) -> dict:
    return {name: float(v) for name, v in zip(PARAM_NAMES, theta, strict=True)}


def scorecard(dataset: Dataset, model: Model, settings: Settings, with_moves: bool = True):
    rows = model.scored_month_ends()
    errors = np.array([abs(r.residual.log_error) for r in rows])
    current = current_companies(model)
    ratios = [(d.mark / d.anchor.value, (model.horizon - d.anchor.day) / YEAR) for _, d in current]
    by_silence: dict[str, list[float]] = {k: [] for k in SILENCE_LABELS}
    for ratio, silence in ratios:
        by_silence.setdefault(silence_label(silence), []).append(ratio)
    last = next((f for f in reversed(model.fits) if f.month_end <= model.horizon), None)
    card = {
        "methodology_version": "v0.6.0",
        "as_of": iso_date(model.horizon),
        "scored_from": SCORED_FROM,
        "settings": {
            "H0": settings.h0,
            "min_residuals": settings.min_residuals,
            "prior": theta_dict(settings.prior),
            "grade_d_adds": settings.grade_d_adds,
        },
        "month_ends": {
            **coverage(rows),
            "by_silence": group_coverage(rows, row_silence, SILENCE_LABELS),
            "by_grade": group_coverage(rows, lambda r: r.residual.anchor.grade or "ungraded"),
            "by_fold": group_coverage(rows, lambda r: r.residual.fold),
            "median_abs_log_error": median(errors),
            "mean_abs_log_error": mean(errors),
            "prior_quantiles_used": sum(r.quantiles.sorted_z is None for r in rows),
        },
        "current": {
            "n": len(current),
            "median_mark_over_last_print": median([r for r, _ in ratios]),
            "median_mark_over_last_print_by_silence": {
                k: {"n": len(v), "median": median(v)} for k, v in by_silence.items() if v
            },
            "stale": sum(d.stale for _, d in current),
            "stale_companies": sorted(h.slug for h, d in current if d.stale),
            "mean_confidence": mean([d.confidence for _, d in current]),
        },
        "parameters": {
            "month_end": iso_date(last.month_end) if last else None,
            "fitted": bool(last.fitted) if last else False,
            **theta_dict(last.theta if last else settings.prior),
        },
        "n_residuals": len(model.residuals),
    }
    if with_moves:
        card["move_test"] = move_test(dataset, model, settings)
    return card


# ---------------------------------------------------------------------------- outputs


def fmt(v):
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, float):
        return repr(v)
    return "" if v is None else v


def write_csv(path: str, header: list[str], rows) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(header)
        for row in rows:
            w.writerow([fmt(v) for v in row])


MARK_COLUMNS = [
    "mark",
    "s",
    "lower80",
    "upper80",
    "lower95",
    "upper95",
    "confidence",
    "next_reported",
    "stale",
    "n_residuals",
]


def mark_values(d: DayMark) -> list:
    return [
        d.mark,
        d.s,
        d.lower80,
        d.upper80,
        d.lower95,
        d.upper95,
        d.confidence,
        d.next_reported,
        d.stale,
        d.quantiles.n,
    ]


def latest_rows(model: Model):
    for slug, h in model.histories.items():
        d = model.latest(h)
        o = h.outcome if h.outcome is not None and h.outcome.day <= model.horizon else None
        outcome = [o.event_id, o.event_type, iso_date(o.day), o.value] if o else [""] * 4
        if d is None:
            yield [slug, h.status_on(model.horizon), *[""] * 8, *[""] * 10, h.fold, *outcome]
            continue
        a = d.anchor
        yield [
            slug,
            h.status_on(model.horizon),
            iso_date(d.day),
            a.event_id,
            a.event_type,
            iso_date(a.day),
            a.value,
            a.grade,
            (d.day - a.day) / YEAR,
            *mark_values(d),
            h.fold,
            *outcome,
        ]


def write_outputs(out: str, dataset: Dataset, model: Model, settings: Settings) -> dict:
    os.makedirs(out, exist_ok=True)
    write_csv(
        os.path.join(out, "latest.csv"),
        [
            "slug",
            "status",
            "mark_date",
            "anchor_event_id",
            "anchor_type",
            "anchor_date",
            "anchor_value",
            "anchor_grade",
            "silence_years",
            *MARK_COLUMNS,
            "fold",
            "outcome_event_id",
            "outcome_type",
            "outcome_date",
            "outcome_value",
        ],
        latest_rows(model),
    )
    start = day_number(SCORED_FROM)
    scored = {(r.residual.slug, r.residual.day): r for r in model.scored_month_ends()}
    rows = []
    for r in model.residuals:
        sc = scored.get((r.slug, r.day))
        qs = model.pools.on(r.fold, r.day)
        rows.append(
            [
                r.slug,
                iso_date(r.day),
                r.fold,
                int(r.day >= start),
                r.anchor.event_id,
                r.anchor.grade,
                r.silence,
                r.mark,
                r.s,
                r.target.event_id,
                r.target.kind,
                r.target_value,
                iso_date(r.target.day),
                r.log_error,
                r.z,
                qs.z[PM10],
                qs.z[PM90],
                qs.z[PM025],
                qs.z[PM975],
                qs.n,
                sc.in80 if sc else "",
                sc.in95 if sc else "",
                sc.confidence if sc else "",
                sc.hit20 if sc else "",
            ]
        )
    write_csv(
        os.path.join(out, "monthends.csv"),
        [
            "slug",
            "date",
            "fold",
            "scored",
            "anchor_event_id",
            "anchor_grade",
            "silence_years",
            "mark",
            "s",
            "next_event_id",
            "next_kind",
            "next_value",
            "next_date",
            "log_error",
            "z",
            "z10",
            "z90",
            "z025",
            "z975",
            "n_residuals",
            "in80",
            "in95",
            "confidence",
            "hit20",
        ],
        rows,
    )
    write_csv(
        os.path.join(out, "params.csv"),
        [
            "month_end",
            "fitted",
            *PARAM_NAMES,
            "free",
            "loglik",
            "n_innovations",
            "iterations",
            "max_projected_gradient",
        ],
        (
            [
                iso_date(f.month_end),
                f.fitted,
                *(float(v) for v in f.theta),
                " ".join(n for n, free in zip(PARAM_NAMES, f.free, strict=True) if free),
                f.loglik,
                f.n_innovations,
                f.iterations,
                f.max_projected_gradient,
            ]
            for f in model.fits
        ),
    )
    for slug in SERIES_SLUGS:
        series = model.series(slug)
        if series:
            write_csv(
                os.path.join(out, f"series_{slug}.csv"),
                ["date", "anchor_event_id", *MARK_COLUMNS],
                ([iso_date(d.day), d.anchor.event_id, *mark_values(d)] for d in series),
            )
    card = scorecard(dataset, model, settings)
    with open(os.path.join(out, "scorecard.json"), "w", encoding="utf-8") as fh:
        json.dump(card, fh, indent=2)
        fh.write("\n")
    return card


def headline(card: dict) -> str:
    me = card["month_ends"]
    lines = [
        f"scored month-ends n={me['n']}: coverage 80% {me['coverage80']:.3f}, "
        f"95% {me['coverage95']:.3f}; mean confidence {me['mean_confidence']:.3f} vs hit20 "
        f"share {me['hit20_share']:.3f}; median |log error| {me['median_abs_log_error']:.3f}, "
        f"mean {me['mean_abs_log_error']:.3f}",
    ]
    for name in ("by_fold", "by_silence", "by_grade"):
        groups = me[name].items()
        cells = [f"{k}: n={v['n']} {v['coverage80']:.3f}/{v['coverage95']:.3f}" for k, v in groups]
        lines.append(f"  {name} (80/95): " + "; ".join(cells))
    cur = card["current"]
    lines.append(
        f"current companies n={cur['n']}: stale {cur['stale']}; median mark/last print "
        f"{cur['median_mark_over_last_print']}"
    )
    p = card["parameters"]
    values = ", ".join(f"{k}={p[k]:.6g}" for k in PARAM_NAMES)
    lines.append(f"parameters at {p['month_end']}: {values}")
    for sc in card.get("move_test", []):
        a, b = sc["on_the_day"], sc["after_refit"]
        lines.append(
            f"move test ({sc['appended']}): others' mark {a['mark']:.3g}, bounds "
            f"{a['bounds']:.3g} on the day; after the refit on {b['day']}: mark {b['mark']:.3g}, "
            f"bounds {b['bounds']:.3g}, confidence {b['confidence']:.3g}"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------- cross-validation


def cross_validate(dataset: Dataset, configs: list[tuple[str, Settings]]) -> str:
    """Section 10: each fold held out of the parameter fit and of its own quantiles."""
    cache: dict = {}
    lines = []
    header = f"{'fold':>6} {'n':>6} {'cov80':>7} {'cov95':>7} {'conf':>7} {'hit20':>7}"
    for label, settings in configs:
        lines.append(f"\n{label}")
        lines.append(header)
        per_fold = []
        for fold in range(FOLDS):
            model = Model(dataset, None, settings, fit_exclude_fold=fold, fit_cache=cache)
            c = coverage(model.scored_month_ends(folds={fold}))
            per_fold.append(c)
            lines.append(
                f"{fold:>6} {c['n']:>6} {c['coverage80']:>7.3f} {c['coverage95']:>7.3f} "
                f"{c['mean_confidence']:>7.3f} {c['hit20_share']:>7.3f}"
            )
        means = {k: float(np.mean([c[k] for c in per_fold])) for k in per_fold[0] if k != "n"}
        lines.append(
            f"{'mean':>6} {sum(c['n'] for c in per_fold):>6} {means['coverage80']:>7.3f} "
            f"{means['coverage95']:>7.3f} {means['mean_confidence']:>7.3f} "
            f"{means['hit20_share']:>7.3f}"
        )
    return "\n".join(lines)


def cv_configs() -> list[tuple[str, Settings]]:
    settled = Settings()
    prior = list(PRIOR)
    configs = []
    for h0 in (0.25, 0.5, 1.0):
        label = f"H0 = {h0} year" + (" (settled)" if h0 == settled.h0 else "")
        configs.append((label, Settings(h0=h0)))
    configs.append(("without r_D (grade D adds nothing)", Settings(grade_d_adds=False)))
    for value in (0.046, 0.41):
        p = prior.copy()
        p[R_BUYBACK] = p[R_INTERNAL] = value
        configs.append((f"prior r_buyback = r_internal = {value}", Settings(prior=tuple(p))))
    return configs


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dataset", help="dataset directory (events.csv, dataset.toml)")
    parser.add_argument("--out", help="write latest.csv, monthends.csv, ... into this directory")
    parser.add_argument("--as-of", help="horizon (default: dataset.toml's as_of)")
    parser.add_argument("--cv", action="store_true", help="print the cross-validation report")
    args = parser.parse_args(argv)
    if not args.out and not args.cv:
        parser.error("nothing to do: give --out DIR and/or --cv")
    dataset = load_dataset(args.dataset, args.as_of)
    if args.out:
        settings = Settings()
        model = Model(dataset, None, settings)
        card = write_outputs(args.out, dataset, model, settings)
        print(headline(card))
    if args.cv:
        print(cross_validate(dataset, cv_configs()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
