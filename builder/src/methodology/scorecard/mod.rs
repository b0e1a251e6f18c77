//! The published scorecard (`marks build` prints it, `GET /v1/scorecard` serves it): three
//! numbers side by side on three scores, so that a reader sees which number wins which score
//! and why (docs/design.md section 3).
//!
//! The numbers: the published **mark** (the fair value today), the **next-print** forecast
//! published beside it, and the **last print** carried forward. The scores:
//! - **event day**: every anchor after a company's first, forecast from the data before its
//!   day, and every outcome marked the day before (v0.4.0's protocol), against the reported value;
//! - **month-end S1**: every calendar month-end mark against the next reported value;
//! - **month-end S2**: the same marks against the value on the day, bridged log-linearly between
//!   the two reported values around it.
//!
//! Reported values are selected (companies announce rises), so the next print runs above the
//! value on the day: the next-print forecast is built to win S1 and the event day, the mark to
//! win S2. Beside them: the bands' coverage (overall and by silence), `confidence` checked as a
//! forecast (it has no skill; it is published as a track record), company-clustered bootstrap
//! intervals of the differences, the latest marks against their last prints, and the profiles
//! in force.
//!
//! Every figure is computed from rows that are published whole (`GET /v1/scorecard/targets`),
//! so that anyone can recompute it.

pub mod bootstrap;
pub mod disclosure;

use serde::Serialize;

use crate::dataset::{Dataset, EventType};
use crate::methodology::bands::{BandState, MonthEnd};
use crate::methodology::fit::Fit;
use crate::methodology::history::{History, OutcomeKind};
use crate::methodology::params::{BUCKETS, PARAMS};
use crate::methodology::stats::{binomial_central_range, mean, median};
use crate::methodology::{round_to, METHODOLOGY_VERSION};
use bootstrap::{ClusterErrors, Difference};
use marks_format::rules::day::Day;

/// The probability mass of the coverage range reported beside each observed coverage.
pub const COVERAGE_RANGE_MASS: f64 = 0.90;

/// The three numbers scored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Number {
    Mark,
    NextPrint,
    LastPrint,
}

impl Number {
    pub const ALL: [Number; 3] = [Number::Mark, Number::NextPrint, Number::LastPrint];

    pub fn name(self) -> &'static str {
        match self {
            Number::Mark => "mark",
            Number::NextPrint => "next_print",
            Number::LastPrint => "last_print",
        }
    }

    pub fn description(self) -> &'static str {
        match self {
            Number::Mark => {
                "The published mark: today's value estimate, the last reported value moved by how values \
                 moved between prints of companies quiet as long (methodology v0.5.0)."
            }
            Number::NextPrint => {
                "The next-print forecast published beside the mark (latest_mark.next_reported): the \
                 valuation at which the company is next likely to be reported."
            }
            Number::LastPrint => "The last reported value carried forward unchanged: the baseline.",
        }
    }
}

/// What an event-day target is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetKind {
    /// An anchor after the company's first, forecast from the data before its day.
    Event,
    /// A listing, marked the day before.
    Listing,
    /// A bankruptcy or wind-down, marked the day before (its value floored at 1% of the anchor).
    Failure,
    /// A closed sale, marked the day before.
    Sale,
}

impl TargetKind {
    pub const ALL: [TargetKind; 4] = [
        TargetKind::Event,
        TargetKind::Listing,
        TargetKind::Failure,
        TargetKind::Sale,
    ];

    fn of(kind: OutcomeKind) -> TargetKind {
        match kind {
            OutcomeKind::Listing => TargetKind::Listing,
            OutcomeKind::Failure => TargetKind::Failure,
            OutcomeKind::Sale => TargetKind::Sale,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TargetKind::Event => "event",
            TargetKind::Listing => "listing",
            TargetKind::Failure => "failure",
            TargetKind::Sale => "sale",
        }
    }
}

/// One event-day target: the three numbers the day before (or from the data before the day),
/// and what was reported.
#[derive(Clone, Debug, Serialize)]
pub struct Target {
    pub slug: String,
    pub event_id: String,
    pub kind: TargetKind,
    pub event_type: EventType,
    pub occurred_on: Day,
    /// The day the numbers are for.
    pub marked_on: Day,
    /// The value as reported (0 for a write-off).
    pub reported_usd: u64,
    /// The reported value as the score reads it (a failure floored at 1% of its anchor), in logs.
    pub observed_log: f64,
    /// Years from the anchor in force to `marked_on`.
    pub gap_years: f64,
    /// The mark, the next-print forecast and the last print, in logs.
    pub mark_log: f64,
    pub next_print_log: f64,
    pub last_print_log: f64,
    /// The mark's band offsets (log) at .10, .90, .025, .975.
    pub band_offsets: [f64; 4],
    pub confidence: f64,
    /// Known month-end residuals that set the bands.
    pub residuals_known: usize,
}

impl Target {
    /// ln(observed) - the number's log.
    pub fn error(&self, number: Number) -> f64 {
        self.observed_log
            - match number {
                Number::Mark => self.mark_log,
                Number::NextPrint => self.next_print_log,
                Number::LastPrint => self.last_print_log,
            }
    }

    pub fn inside_80(&self) -> bool {
        let e = self.error(Number::Mark);
        self.band_offsets[0] <= e && e <= self.band_offsets[1]
    }

    pub fn inside_95(&self) -> bool {
        let e = self.error(Number::Mark);
        self.band_offsets[2] <= e && e <= self.band_offsets[3]
    }

    /// The reported value landed within +/-20% of the mark.
    pub fn hit(&self) -> bool {
        within_tolerance(self.error(Number::Mark))
    }
}

/// Within the +/-20% that `confidence` counts.
pub fn within_tolerance(log_error: f64) -> bool {
    let (low, high) = PARAMS.confidence_range();
    (low..=high).contains(&log_error)
}

/// One month-end scored: the row of [`MonthEnd`] with its bands in force.
#[derive(Clone, Copy, Debug)]
pub struct MonthEndScored<'a> {
    pub row: &'a MonthEnd,
    pub band_offsets: [f64; 4],
    pub confidence: f64,
    pub residuals_known: usize,
}

impl MonthEndScored<'_> {
    /// S1: the next reported value against a number.
    pub fn s1(&self, number: Number) -> f64 {
        self.row.next.log_value - self.log_of(number)
    }

    /// S2: the bridged value on the day against a number.
    pub fn s2(&self, number: Number) -> f64 {
        self.row.bridged - self.log_of(number)
    }

    fn log_of(&self, number: Number) -> f64 {
        match number {
            Number::Mark => self.row.x,
            Number::NextPrint => self.row.x_next,
            Number::LastPrint => self.row.anchor.log_value,
        }
    }

    pub fn inside_80(&self) -> bool {
        let e = self.s1(Number::Mark);
        self.band_offsets[0] <= e && e <= self.band_offsets[1]
    }

    pub fn inside_95(&self) -> bool {
        let e = self.s1(Number::Mark);
        self.band_offsets[2] <= e && e <= self.band_offsets[3]
    }

    pub fn hit(&self) -> bool {
        within_tolerance(self.s1(Number::Mark))
    }
}

/// One figure for each number, named by it.
#[derive(Clone, Debug, Serialize)]
pub struct ByNumber<T> {
    pub mark: T,
    pub next_print: T,
    pub last_print: T,
}

impl<T> ByNumber<T> {
    fn of(f: impl Fn(Number) -> T) -> ByNumber<T> {
        ByNumber {
            mark: f(Number::Mark),
            next_print: f(Number::NextPrint),
            last_print: f(Number::LastPrint),
        }
    }

    pub fn get(&self, number: Number) -> &T {
        match number {
            Number::Mark => &self.mark,
            Number::NextPrint => &self.next_print,
            Number::LastPrint => &self.last_print,
        }
    }
}

/// A number's errors on one score.
#[derive(Clone, Debug, Serialize)]
pub struct Errors {
    #[serde(serialize_with = "four_decimals")]
    pub median_abs_log_error: Option<f64>,
    #[serde(serialize_with = "four_decimals")]
    pub mean_abs_log_error: Option<f64>,
    /// Mean log error (observed - number): above 0, the number ran below what was reported.
    #[serde(serialize_with = "four_decimals")]
    pub bias: Option<f64>,
}

impl Errors {
    fn of(errors: &[f64]) -> Errors {
        let abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
        Errors {
            median_abs_log_error: median(abs.clone()),
            mean_abs_log_error: mean(&abs),
            bias: mean(errors),
        }
    }
}

/// Figures are kept exact (the printed scorecard rounds them its own way) and served to four
/// decimals: far below what the scores can resolve, and readable.
fn four_decimals<S: serde::Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => serializer.serialize_f64(round_to(*v, 4)),
        None => serializer.serialize_none(),
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct CoverageScore {
    pub nominal_pct: u32,
    pub observed_pct: Option<f64>,
    pub inside: usize,
    pub n: usize,
    /// The observed coverage a band with exactly the nominal coverage shows 90% of the time on
    /// n targets (binomial, as if they were independent): outside it, the band is
    /// miscalibrated; inside, n cannot tell.
    pub binomial_90_range_pct: Option<[f64; 2]>,
    pub within_binomial_90_range: Option<bool>,
}

impl CoverageScore {
    fn new(nominal_pct: u32, inside: usize, n: usize) -> CoverageScore {
        let range = (n > 0).then(|| binomial_central_range(n, f64::from(nominal_pct) / 100.0, COVERAGE_RANGE_MASS));
        CoverageScore {
            nominal_pct,
            observed_pct: percent_of(inside, n),
            inside,
            n,
            binomial_90_range_pct: range.map(|(low, high)| [percent(low, n), percent(high, n)]),
            within_binomial_90_range: range.map(|(low, high)| (low..=high).contains(&inside)),
        }
    }
}

fn percent(count: usize, n: usize) -> f64 {
    round_to(count as f64 * 100.0 / n as f64, 1)
}

fn percent_of(count: usize, n: usize) -> Option<f64> {
    (n > 0).then(|| percent(count, n))
}

/// The event-day score of one kind of target.
#[derive(Clone, Debug, Serialize)]
pub struct EventDayScore {
    pub n: usize,
    pub errors: ByNumber<Errors>,
    pub coverage_80: CoverageScore,
    pub coverage_95: CoverageScore,
    /// The share of targets within +/-20% of the mark.
    pub within_tolerance_pct: Option<f64>,
}

/// Band coverage of the month-end marks of one gap bucket, against the next reported value.
#[derive(Clone, Debug, Serialize)]
pub struct GapCoverage {
    pub bucket: &'static str,
    pub n: usize,
    pub coverage_80: CoverageScore,
    pub coverage_95: CoverageScore,
}

pub const BUCKET_LABELS: [&str; BUCKETS] = ["under 6 months", "6-12 months", "1-2 years", "over 2 years"];

/// `confidence` judged as a forecast of landing within +/-20%.
#[derive(Clone, Debug, Serialize)]
pub struct ConfidenceScore {
    pub tolerance_pct: f64,
    pub n: usize,
    /// The mean confidence stated.
    #[serde(serialize_with = "four_decimals")]
    pub mean_stated: Option<f64>,
    /// The share of month-ends whose next reported value landed within +/-20%.
    #[serde(serialize_with = "four_decimals")]
    pub base_rate: Option<f64>,
    /// Mean of (confidence - landed)^2; lower is better.
    #[serde(serialize_with = "four_decimals")]
    pub brier: Option<f64>,
    /// 1 - brier / (base_rate (1 - base_rate)): above 0 only if stating `confidence` beat stating
    /// the base rate every time.
    #[serde(serialize_with = "four_decimals")]
    pub brier_skill: Option<f64>,
}

/// The month-end scores.
#[derive(Clone, Debug, Serialize)]
pub struct MonthEndScore {
    pub n: usize,
    /// S1: against the next reported value.
    pub next_reported: ByNumber<Errors>,
    /// S2: against the value on the day bridged between the two reported values.
    pub bridged: ByNumber<Errors>,
    /// The mark's bands against the next reported value.
    pub coverage_80: CoverageScore,
    pub coverage_95: CoverageScore,
    pub coverage_by_gap: Vec<GapCoverage>,
    pub confidence: ConfidenceScore,
}

/// Two numbers on one score, company-clustered bootstrap.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    /// Which score: `event_day`, `month_end_next_reported` (S1) or `month_end_bridged` (S2).
    pub score: &'static str,
    pub a: &'static str,
    pub b: &'static str,
    pub method: &'static str,
    pub draws: usize,
    pub seed: u64,
    pub companies: usize,
    pub differences: Vec<Difference>,
}

/// The latest marks of private companies against their last prints, by silence.
#[derive(Clone, Debug, Serialize)]
pub struct LatestSummary {
    pub n: usize,
    #[serde(serialize_with = "four_decimals")]
    pub median_mark_over_last: Option<f64>,
    pub below_last: usize,
    pub share_below_last_pct: Option<f64>,
    pub above_one_and_a_half: usize,
    pub share_above_one_and_a_half_pct: Option<f64>,
    pub by_silence: Vec<SilenceCell>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SilenceCell {
    pub label: &'static str,
    pub from_days: i32,
    pub to_days: Option<i32>,
    pub n: usize,
    #[serde(serialize_with = "four_decimals")]
    pub median_mark_over_last: Option<f64>,
}

/// The silences of the latest-mark summary (days, upper edge excluded).
pub const SILENCE_CELLS: [(&str, i32, Option<i32>); 7] = [
    ("0-90d", 0, Some(90)),
    ("90-180d", 90, Some(180)),
    ("180-270d", 180, Some(270)),
    ("270-365d", 270, Some(365)),
    ("1-2y", 365, Some(730)),
    ("2-3y", 730, Some(1095)),
    ("3y+", 1095, None),
];

/// A knot of a profile: the drift after a silence, in logs.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Knot {
    pub years: f64,
    pub drift: f64,
}

/// The profiles and bands in force the day after `as_of`.
#[derive(Clone, Debug, Serialize)]
pub struct InForce {
    pub day: Day,
    pub fair_value_profile: Vec<Knot>,
    pub next_print_profile: Vec<Knot>,
    pub residuals_known: usize,
    /// Per gap bucket, the band offsets at .10, .90, .025, .975; null while the normal fallback
    /// holds.
    pub band_quantiles: Option<Vec<[f64; 4]>>,
    pub confidence_track_record: Option<f64>,
}

/// The published scorecard.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Scorecard {
    pub numbers: Vec<NumberInfo>,
    pub event_day: EventDay,
    pub month_end: Option<MonthEndScore>,
    pub comparisons: Vec<Comparison>,
    pub latest_private: Option<LatestSummary>,
    pub in_force: Option<InForce>,
    /// Which number wins which score and why, in words worked out from the figures above.
    pub findings: Vec<String>,
    /// Every event-day target: published as a document of its own (it grows with the dataset).
    #[serde(skip)]
    pub targets: Vec<Target>,
    /// Where each company's targets are in `targets`, in dataset order.
    #[serde(skip)]
    pub targets_by_company: Vec<std::ops::Range<usize>>,
}

/// The event-day score by kind of target; a kind with no target is left out.
#[derive(Clone, Debug, Default, Serialize)]
pub struct EventDay {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<EventDayScore>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listing: Option<EventDayScore>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure: Option<EventDayScore>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sale: Option<EventDayScore>,
}

impl EventDay {
    pub fn get(&self, kind: TargetKind) -> Option<&EventDayScore> {
        match kind {
            TargetKind::Event => self.event.as_ref(),
            TargetKind::Listing => self.listing.as_ref(),
            TargetKind::Failure => self.failure.as_ref(),
            TargetKind::Sale => self.sale.as_ref(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct NumberInfo {
    pub name: &'static str,
    pub methodology_version: Option<&'static str>,
    pub description: &'static str,
}

impl Scorecard {
    pub fn new(dataset: &Dataset, fit: &Fit) -> Scorecard {
        let mut targets = Vec::new();
        let mut targets_by_company = Vec::with_capacity(dataset.companies.len());
        for (company, history) in dataset.companies.iter().zip(&fit.histories) {
            let start = targets.len();
            targets.extend(event_day_targets(&company.slug, company, history, fit));
            targets_by_company.push(start..targets.len());
        }
        let month_ends: Vec<MonthEndScored<'_>> = fit.month_ends.iter().map(|row| scored(fit, row)).collect();
        let score = |kind| event_day_score(kind, &targets);
        let event_day = EventDay {
            event: score(TargetKind::Event),
            listing: score(TargetKind::Listing),
            failure: score(TargetKind::Failure),
            sale: score(TargetKind::Sale),
        };
        let month_end = (!month_ends.is_empty()).then(|| month_end_score(&month_ends));
        let comparisons = comparisons(dataset.companies.len(), &targets, &targets_by_company, &month_ends);
        let latest_private = latest_summary(fit);
        let in_force = in_force(fit);
        let mut scorecard = Scorecard {
            numbers: Number::ALL
                .iter()
                .map(|&n| NumberInfo {
                    name: n.name(),
                    methodology_version: (n != Number::LastPrint).then_some(METHODOLOGY_VERSION),
                    description: n.description(),
                })
                .collect(),
            event_day,
            month_end,
            comparisons,
            latest_private,
            in_force: Some(in_force),
            findings: Vec::new(),
            targets,
            targets_by_company,
        };
        scorecard.findings = findings(&scorecard);
        scorecard
    }

    /// The targets of the company at `position` in the dataset.
    pub fn targets_of(&self, position: usize) -> &[Target] {
        self.targets_by_company
            .get(position)
            .and_then(|range| self.targets.get(range.clone()))
            .unwrap_or(&[])
    }

    pub fn comparison(&self, score: &str, a: Number, b: Number) -> Option<&Comparison> {
        self.comparisons
            .iter()
            .find(|c| c.score == score && c.a == a.name() && c.b == b.name())
    }
}

/// A month-end with the bands in force on its day.
pub fn scored<'a>(fit: &Fit, row: &'a MonthEnd) -> MonthEndScored<'a> {
    let bands = fit.bands.on(row.day).bands(row.gap_years);
    MonthEndScored {
        row,
        band_offsets: bands.offsets,
        confidence: bands.confidence,
        residuals_known: bands.n,
    }
}

/// A company's event-day targets: every anchor after its first, from the data strictly before
/// its day; its valued outcome, from the day before.
fn event_day_targets(slug: &str, company: &crate::dataset::Company, history: &History, fit: &Fit) -> Vec<Target> {
    let mut out = Vec::new();
    let target = |event: usize, kind: TargetKind, day: Day, inclusive: bool, observed: &dyn Fn(f64) -> f64| {
        let marked = fit.marked(history, day, inclusive)?;
        let record = &company.events[event];
        Some(Target {
            slug: slug.to_string(),
            event_id: record.event_id.clone(),
            kind,
            event_type: record.event_type,
            occurred_on: record.occurred_on,
            marked_on: day,
            reported_usd: record.valuation_usd,
            observed_log: observed(marked.anchor.log_value),
            gap_years: marked.gap_years,
            mark_log: marked.x,
            next_print_log: marked.x_next,
            last_print_log: marked.anchor.log_value,
            band_offsets: marked.bands.offsets,
            confidence: marked.bands.confidence,
            residuals_known: marked.bands.n,
        })
    };
    for anchor in history.anchors.iter().skip(1) {
        let value = anchor.log_value;
        out.extend(target(anchor.event, TargetKind::Event, anchor.day, false, &|_| value));
    }
    if let (Some(outcome), false) = (history.valued_outcome(), history.anchors.is_empty()) {
        let outcome = *outcome;
        out.extend(target(
            outcome.event,
            TargetKind::of(outcome.kind()),
            outcome.day.plus(-1),
            true,
            &|anchor_log| outcome.log_value(anchor_log),
        ));
    }
    out
}

fn coverage_pair(inside: impl Iterator<Item = (bool, bool)>) -> (CoverageScore, CoverageScore) {
    let (mut n, mut i80, mut i95) = (0, 0, 0);
    for (a, b) in inside {
        n += 1;
        i80 += usize::from(a);
        i95 += usize::from(b);
    }
    (CoverageScore::new(80, i80, n), CoverageScore::new(95, i95, n))
}

fn event_day_score(kind: TargetKind, targets: &[Target]) -> Option<EventDayScore> {
    let of_kind: Vec<&Target> = targets.iter().filter(|t| t.kind == kind).collect();
    if of_kind.is_empty() {
        return None;
    }
    let errors = ByNumber::of(|number| Errors::of(&of_kind.iter().map(|t| t.error(number)).collect::<Vec<_>>()));
    let (coverage_80, coverage_95) = coverage_pair(of_kind.iter().map(|t| (t.inside_80(), t.inside_95())));
    Some(EventDayScore {
        n: of_kind.len(),
        errors,
        coverage_80,
        coverage_95,
        within_tolerance_pct: percent_of(of_kind.iter().filter(|t| t.hit()).count(), of_kind.len()),
    })
}

fn month_end_score(rows: &[MonthEndScored<'_>]) -> MonthEndScore {
    let errors = |s2: bool| -> ByNumber<Errors> {
        ByNumber::of(|number| {
            let errors: Vec<f64> = rows
                .iter()
                .map(|r| if s2 { r.s2(number) } else { r.s1(number) })
                .collect();
            Errors::of(&errors)
        })
    };
    let (coverage_80, coverage_95) = coverage_pair(rows.iter().map(|r| (r.inside_80(), r.inside_95())));
    let coverage_by_gap = (0..BUCKETS)
        .map(|bucket| {
            let (coverage_80, coverage_95) = coverage_pair(
                rows.iter()
                    .filter(|r| PARAMS.bucket(r.row.gap_years) == bucket)
                    .map(|r| (r.inside_80(), r.inside_95())),
            );
            GapCoverage {
                bucket: BUCKET_LABELS[bucket],
                n: coverage_80.n,
                coverage_80,
                coverage_95,
            }
        })
        .collect();
    let landed: Vec<f64> = rows.iter().map(|r| f64::from(u8::from(r.hit()))).collect();
    let stated: Vec<f64> = rows.iter().map(|r| r.confidence).collect();
    let squared: Vec<f64> = stated.iter().zip(&landed).map(|(c, h)| (c - h).powi(2)).collect();
    let base_rate = mean(&landed);
    let brier = mean(&squared);
    let brier_skill = base_rate
        .zip(brier)
        .filter(|(b, _)| *b > 0.0 && *b < 1.0)
        .map(|(b, brier)| 1.0 - brier / (b * (1.0 - b)));
    MonthEndScore {
        n: rows.len(),
        next_reported: errors(false),
        bridged: errors(true),
        coverage_80,
        coverage_95,
        coverage_by_gap,
        confidence: ConfidenceScore {
            tolerance_pct: PARAMS.confidence_tolerance * 100.0,
            n: rows.len(),
            mean_stated: mean(&stated),
            base_rate,
            brier,
            brier_skill,
        },
    }
}

/// The bootstrap comparisons the findings rest on.
fn comparisons(
    companies: usize,
    targets: &[Target],
    targets_by_company: &[std::ops::Range<usize>],
    month_ends: &[MonthEndScored<'_>],
) -> Vec<Comparison> {
    let mut by_company: Vec<Vec<&MonthEndScored<'_>>> = vec![Vec::new(); companies];
    for row in month_ends {
        by_company[row.row.company].push(row);
    }
    let mut out = Vec::new();
    for (score, a, b) in [
        ("month_end_bridged", Number::Mark, Number::LastPrint),
        ("month_end_bridged", Number::Mark, Number::NextPrint),
        ("month_end_next_reported", Number::NextPrint, Number::Mark),
        ("month_end_next_reported", Number::Mark, Number::LastPrint),
        ("event_day", Number::NextPrint, Number::Mark),
        ("event_day", Number::Mark, Number::LastPrint),
    ] {
        let clusters: Vec<ClusterErrors> = match score {
            "event_day" => targets_by_company
                .iter()
                .map(|range| ClusterErrors {
                    abs_log_errors: targets[range.clone()]
                        .iter()
                        .filter(|t| t.kind == TargetKind::Event)
                        .map(|t| [t.error(a).abs(), t.error(b).abs()])
                        .collect(),
                })
                .collect(),
            _ => by_company
                .iter()
                .map(|rows| ClusterErrors {
                    abs_log_errors: rows
                        .iter()
                        .map(|r| {
                            let error = |n| if score == "month_end_bridged" { r.s2(n) } else { r.s1(n) };
                            [error(a).abs(), error(b).abs()]
                        })
                        .collect(),
                })
                .collect(),
        };
        let clusters: Vec<ClusterErrors> = clusters.into_iter().filter(|c| !c.abs_log_errors.is_empty()).collect();
        out.push(Comparison {
            score,
            a: a.name(),
            b: b.name(),
            method: "company-clustered bootstrap: whole companies resampled with replacement; the 2.5th and 97.5th \
                     percentiles of the difference A - B",
            draws: bootstrap::DRAWS,
            seed: bootstrap::SEED,
            companies: clusters.len(),
            differences: bootstrap::compare(&clusters, bootstrap::DRAWS, bootstrap::SEED),
        });
    }
    out
}

/// The latest mark of every private company against its last print.
fn latest_summary(fit: &Fit) -> Option<LatestSummary> {
    let as_of = fit.as_of;
    let mut rows: Vec<(i32, f64)> = Vec::new();
    for history in &fit.histories {
        if history.outcome.is_some_and(|o| o.day <= as_of) {
            continue;
        }
        if history.anchors.first().is_none_or(|a| a.day > as_of) {
            continue;
        }
        if let Some(marked) = fit.marked(history, as_of, true) {
            rows.push((
                as_of.days_since(marked.anchor.day),
                (marked.x - marked.anchor.log_value).exp(),
            ));
        }
    }
    if rows.is_empty() {
        return None;
    }
    let ratios: Vec<f64> = rows.iter().map(|r| r.1).collect();
    let below_last = ratios.iter().filter(|&&r| r < 1.0).count();
    let above_one_and_a_half = ratios.iter().filter(|&&r| r > 1.5).count();
    Some(LatestSummary {
        n: rows.len(),
        median_mark_over_last: median(ratios.clone()),
        below_last,
        share_below_last_pct: percent_of(below_last, ratios.len()),
        above_one_and_a_half,
        share_above_one_and_a_half_pct: percent_of(above_one_and_a_half, ratios.len()),
        by_silence: SILENCE_CELLS
            .iter()
            .map(|&(label, from, to)| {
                let cell: Vec<f64> = rows
                    .iter()
                    .filter(|(days, _)| *days >= from && to.is_none_or(|to| *days < to))
                    .map(|r| r.1)
                    .collect();
                SilenceCell {
                    label,
                    from_days: from,
                    to_days: to,
                    n: cell.len(),
                    median_mark_over_last: median(cell),
                }
            })
            .collect(),
    })
}

fn in_force(fit: &Fit) -> InForce {
    let day = fit.as_of.plus(1);
    let profiles = fit.profiles.on(day);
    let next_knots = PARAMS.next_print_knots_years;
    let state: &BandState = fit.bands.on(day);
    InForce {
        day,
        fair_value_profile: PARAMS
            .profile_knots_years
            .iter()
            .zip(profiles.bridge)
            .map(|(&years, drift)| Knot { years, drift })
            .collect(),
        next_print_profile: [0.0, next_knots[0], next_knots[1], next_knots[2], next_knots[3]]
            .iter()
            .zip(profiles.next)
            .map(|(&years, drift)| Knot { years, drift })
            .collect(),
        residuals_known: state.n,
        band_quantiles: state.quantiles.map(|q| q.to_vec()),
        confidence_track_record: state.track_record,
    }
}

/// Which number wins which score, in words, from the figures and their intervals: every
/// comparative word is decided by the numbers beside it.
fn findings(scorecard: &Scorecard) -> Vec<String> {
    let mut out = Vec::new();
    let words = |n: Number| match n {
        Number::Mark => "the mark",
        Number::NextPrint => "the next-print forecast",
        Number::LastPrint => "the last print carried forward",
    };
    // "A's median |log error| is x against y for B; A's mean error is smaller (larger), beyond
    // the bootstrap interval / not distinguishable from B's by it."
    let compared = |score: &str, a: Number, b: Number| -> Option<String> {
        let comparison = scorecard.comparison(score, a, b)?;
        let median = comparison
            .differences
            .iter()
            .find(|d| d.figure == "median_abs_log_error")?;
        let mean = comparison
            .differences
            .iter()
            .find(|d| d.figure == "mean_abs_log_error")?;
        let (ma, mb) = (median.a?, median.b?);
        let lower = if ma <= mb { words(a) } else { words(b) };
        let mean_words = match mean.verdict {
            "a_better" => format!("{}'s mean error is smaller, beyond the bootstrap interval", words(a)),
            "b_better" => format!("{}'s mean error is smaller, beyond the bootstrap interval", words(b)),
            _ => "their mean errors are not distinguishable by the bootstrap interval".to_string(),
        };
        Some(format!(
            "{}'s median |log error| is {ma:.3} against {mb:.3} for {} ({lower} is lower); {mean_words}",
            words(a),
            words(b)
        ))
    };
    if let Some(text) = compared("month_end_bridged", Number::Mark, Number::LastPrint) {
        out.push(format!(
            "The value today (month-ends scored against the value on the day, bridged between the two reported \
             values around it): {text}. This is the score the mark is built for."
        ));
    }
    if let (Some(text), Some(m)) = (
        compared("month_end_bridged", Number::Mark, Number::NextPrint),
        &scorecard.month_end,
    ) {
        let bias = m.bridged.next_print.bias.unwrap_or(0.0);
        let side = if bias < 0.0 { "above" } else { "below" };
        out.push(format!(
            "On the same score against the next-print forecast: {text}. The next-print forecast runs {side} the value \
             on the day (mean log error {bias:+.3}, the mark's {:+.3}): it forecasts the next announcement, and \
             announcements are selected (companies report rises; quiet companies are often quiet because things go \
             less well).",
            m.bridged.mark.bias.unwrap_or(0.0)
        ));
    }
    if let Some(text) = compared("event_day", Number::NextPrint, Number::Mark) {
        out.push(format!(
            "The next reported value (each reported value forecast from the data before its day): {text}. Use \
             next_reported to anticipate the next round's price, the mark for what a holding is worth today."
        ));
    }
    if let Some(score) = &scorecard.month_end {
        let c = &score.confidence;
        if let (Some(skill), Some(stated)) = (c.brier_skill, c.mean_stated) {
            let verdict = if skill > 0.0 {
                "it beat stating the base rate, but it is the same for every company on a day"
            } else {
                "it has no skill: it did no better than stating the base rate every time"
            };
            out.push(format!(
                "confidence states the share of past month-end marks whose next reported value came within +/-20% \
                 (on average {:.0}% here). Judged as a forecast for one company (Brier skill {:+.1}%), {verdict}; so it \
                 is published as a track record, not a company-specific probability.",
                stated * 100.0,
                skill * 100.0
            ));
        }
        if let (Some(c80), Some(c95)) = (score.coverage_80.observed_pct, score.coverage_95.observed_pct) {
            out.push(format!(
                "The bands are for the next reported value: at month-ends it fell inside the 80% band {c80:.1}% and \
                 inside the 95% band {c95:.1}% of the time (by silence in the coverage table)."
            ));
        }
    }
    out
}
