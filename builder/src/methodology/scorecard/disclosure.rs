//! What the scorecard's rows disclose, and to whom.
//!
//! The scorecard promises that anyone can recompute every figure it states, and it must not
//! hand out what a key's tier may not read: companies' event values and sources. Its summary
//! figures are aggregates and are the same for everyone; its rows (`GET
//! /v1/scorecard/targets`) come in two forms, rendered side by side at build time:
//!
//! - [`Disclosure::Public`], for everyone (no key, and keys below Pro): per row only relative
//!   quantities (log errors, band offsets, confidence, flags, silence, kind, event type and
//!   dates), with no slug, no event id and no dollar amount, in date order so that one
//!   company's rows do not sit together;
//! - [`Disclosure::Full`], for Pro and above, who may read every company's events: every field,
//!   the unrounded logs among them, so that a cross-check can hold them to 1e-9.

use serde::Serialize;

use crate::dataset::{Dataset, EventType};
use crate::methodology::scorecard::{MonthEndScored, Number, Target, TargetKind};
use crate::methodology::usd;
use marks_format::rules::day::Day;

/// Which form a reader gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Disclosure {
    Public,
    Full,
}

impl Disclosure {
    pub const ALL: [Disclosure; 2] = [Disclosure::Public, Disclosure::Full];

    /// As the documents name their form.
    pub fn as_str(self) -> &'static str {
        match self {
            Disclosure::Public => "public",
            Disclosure::Full => "full",
        }
    }
}

/// The band offsets of a row, named.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Offsets {
    pub q10: f64,
    pub q90: f64,
    pub q025: f64,
    pub q975: f64,
}

impl Offsets {
    fn of(offsets: [f64; 4]) -> Offsets {
        let [q10, q90, q025, q975] = offsets;
        Offsets { q10, q90, q025, q975 }
    }
}

/// The errors of the three numbers on a row, in logs (observed - number).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct NumberErrors {
    pub mark: f64,
    pub next_print: f64,
    pub last_print: f64,
}

impl NumberErrors {
    fn of(error: impl Fn(Number) -> f64) -> NumberErrors {
        NumberErrors {
            mark: error(Number::Mark),
            next_print: error(Number::NextPrint),
            last_print: error(Number::LastPrint),
        }
    }
}

/// An event-day target in the public form.
#[derive(Debug, Serialize)]
pub struct PublicTarget {
    pub kind: TargetKind,
    pub event_type: EventType,
    pub occurred_on: Day,
    pub marked_on: Day,
    pub gap_years: f64,
    pub log_error: NumberErrors,
    pub band_offsets: Offsets,
    pub confidence: f64,
    pub inside_80: bool,
    pub inside_95: bool,
    pub hit: bool,
    pub residuals_known: usize,
}

/// An event-day target in full.
#[derive(Debug, Serialize)]
pub struct FullTarget<'a> {
    pub slug: &'a str,
    pub event_id: &'a str,
    #[serde(flatten)]
    pub public: PublicTarget,
    /// The value as reported (0 for a write-off); as scored (a failure floored at 1% of its
    /// anchor), in USD and in logs.
    pub observed_usd: u64,
    pub scored_usd: u64,
    pub observed_log: f64,
    pub mark_log: f64,
    pub next_print_log: f64,
    pub last_print_log: f64,
    pub mark_usd: u64,
    pub next_print_usd: u64,
    pub last_print_usd: u64,
}

/// A scored month-end in the public form.
#[derive(Debug, Serialize)]
pub struct PublicMonthEnd {
    pub day: Day,
    pub gap_years: f64,
    /// What the next reported value was: `anchor`, `listing`, `failure` or `sale`.
    pub next_kind: &'static str,
    pub next_on: Day,
    /// S1: against the next reported value.
    pub next_reported_error: NumberErrors,
    /// S2: against the value on the day bridged between the two reported values.
    pub bridged_error: NumberErrors,
    pub band_offsets: Offsets,
    pub confidence: f64,
    pub inside_80: bool,
    pub inside_95: bool,
    pub hit: bool,
    pub residuals_known: usize,
}

/// A scored month-end in full.
#[derive(Debug, Serialize)]
pub struct FullMonthEnd<'a> {
    pub slug: &'a str,
    pub anchor_event_id: &'a str,
    pub anchor_type: EventType,
    #[serde(flatten)]
    pub public: PublicMonthEnd,
    pub mark_log: f64,
    pub next_print_log: f64,
    pub last_print_log: f64,
    pub next_log: f64,
    pub bridged_log: f64,
}

/// Every row in one form.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum DisclosedRows<'a> {
    Full {
        targets: Vec<FullTarget<'a>>,
        month_ends: Vec<FullMonthEnd<'a>>,
    },
    Public {
        targets: Vec<PublicTarget>,
        month_ends: Vec<PublicMonthEnd>,
    },
}

fn public_target(t: &Target) -> PublicTarget {
    PublicTarget {
        kind: t.kind,
        event_type: t.event_type,
        occurred_on: t.occurred_on,
        marked_on: t.marked_on,
        gap_years: t.gap_years,
        log_error: NumberErrors::of(|n| t.error(n)),
        band_offsets: Offsets::of(t.band_offsets),
        confidence: t.confidence,
        inside_80: t.inside_80(),
        inside_95: t.inside_95(),
        hit: t.hit(),
        residuals_known: t.residuals_known,
    }
}

fn public_month_end(r: &MonthEndScored<'_>) -> PublicMonthEnd {
    PublicMonthEnd {
        day: r.row.day,
        gap_years: r.row.gap_years,
        next_kind: r.row.next.kind.as_str(),
        next_on: r.row.next.day,
        next_reported_error: NumberErrors::of(|n| r.s1(n)),
        bridged_error: NumberErrors::of(|n| r.s2(n)),
        band_offsets: Offsets::of(r.band_offsets),
        confidence: r.confidence,
        inside_80: r.inside_80(),
        inside_95: r.inside_95(),
        hit: r.hit(),
        residuals_known: r.residuals_known,
    }
}

/// The rows of the scorecard in one form.
pub fn rows<'a>(
    dataset: &'a Dataset,
    targets: &'a [Target],
    month_ends: &[MonthEndScored<'_>],
    disclosure: Disclosure,
) -> DisclosedRows<'a> {
    match disclosure {
        Disclosure::Full => DisclosedRows::Full {
            targets: targets
                .iter()
                .map(|t| FullTarget {
                    slug: &t.slug,
                    event_id: &t.event_id,
                    public: public_target(t),
                    observed_usd: t.reported_usd,
                    scored_usd: usd(t.observed_log.exp()),
                    observed_log: t.observed_log,
                    mark_log: t.mark_log,
                    next_print_log: t.next_print_log,
                    last_print_log: t.last_print_log,
                    mark_usd: usd(t.mark_log.exp()),
                    next_print_usd: usd(t.next_print_log.exp()),
                    last_print_usd: usd(t.last_print_log.exp()),
                })
                .collect(),
            month_ends: month_ends
                .iter()
                .map(|r| {
                    let company = &dataset.companies[r.row.company];
                    let anchor = &company.events[r.row.anchor.event];
                    FullMonthEnd {
                        slug: &company.slug,
                        anchor_event_id: &anchor.event_id,
                        anchor_type: anchor.event_type,
                        public: public_month_end(r),
                        mark_log: r.row.x,
                        next_print_log: r.row.x_next,
                        last_print_log: r.row.anchor.log_value,
                        next_log: r.row.next.log_value,
                        bridged_log: r.row.bridged,
                    }
                })
                .collect(),
        },
        Disclosure::Public => {
            let mut targets: Vec<PublicTarget> = targets.iter().map(public_target).collect();
            // Date order, then kind, type and error: the order itself does not group one
            // company's rows.
            targets.sort_by(|a, b| {
                (a.marked_on, a.occurred_on, a.kind as u8, a.event_type.as_str())
                    .cmp(&(b.marked_on, b.occurred_on, b.kind as u8, b.event_type.as_str()))
                    .then(a.log_error.mark.total_cmp(&b.log_error.mark))
            });
            let mut month_ends: Vec<PublicMonthEnd> = month_ends.iter().map(public_month_end).collect();
            month_ends.sort_by(|a, b| {
                a.day
                    .cmp(&b.day)
                    .then(a.next_reported_error.mark.total_cmp(&b.next_reported_error.mark))
            });
            DisclosedRows::Public { targets, month_ends }
        }
    }
}
