//! One company's effective history as the method reads it (docs/design.md section 3): the
//! anchors a mark may start from, the outcome that ended the private period, the spells between
//! consecutive rounds that teach the drift, and the next reported value after a day.
//!
//! Built from the effective view only (corrected and retracted records left out), in date order
//! and file order within a day:
//! - anchors: rounds, down rounds, tenders, secondaries, an agreed sale (`acquisition`) or
//!   listing (one `announced`), fund marks; a value of 0 is no observation, except a fund's
//!   mark of 0, floored at 1% of the anchor before it (a stake written off); a buyback, an
//!   internal valuation and a listing `in_talks` are evidence, not anchors;
//! - an `acquisition_terminated` removes the company's agreed-deal anchors (the failed deal
//!   anchors nothing; if nothing else is left, they stay);
//! - the first closed listing, closed sale, bankruptcy or wind-down is the outcome, and ends the
//!   history: later records are not read.

use crate::dataset::{Company, EventType};
use crate::methodology::params::PARAMS;
use crate::methodology::DAYS_PER_YEAR;
use marks_format::rules::day::Day;

/// An observation of value a mark may start from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anchor {
    pub day: Day,
    pub log_value: f64,
    pub kind: EventType,
    /// Index of its record in the company's `events`.
    pub event: usize,
}

impl Anchor {
    /// An agreed deal holds its price: no drift while it is pending. An agreed sale, or an
    /// agreed listing (a listing among the anchors is one `announced`: a closed one is the
    /// outcome).
    pub fn holds(&self) -> bool {
        self.kind == EventType::Acquisition || self.kind.is_listing()
    }
}

/// What an outcome is, for the scorecard's event-day kinds and the pages' words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutcomeKind {
    Listing,
    Failure,
    Sale,
}

impl OutcomeKind {
    pub fn of(kind: EventType) -> OutcomeKind {
        if kind.is_listing() {
            OutcomeKind::Listing
        } else if kind.is_failure() {
            OutcomeKind::Failure
        } else {
            OutcomeKind::Sale
        }
    }
}

/// The record that ended the private period.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    pub day: Day,
    pub kind: EventType,
    /// As reported (0: written off, or a price not disclosed).
    pub value_usd: f64,
    pub event: usize,
}

impl Outcome {
    pub fn kind(&self) -> OutcomeKind {
        OutcomeKind::of(self.kind)
    }

    /// Whether it is an observation of value: a failure always (floored), a listing or sale
    /// only when its price was disclosed.
    pub fn valued(&self) -> bool {
        self.kind.is_failure() || self.value_usd > 0.0
    }

    /// Its value in logs, a failure's floored at 1% of `anchor_log_value` so that logs stay
    /// finite.
    pub fn log_value(&self, anchor_log_value: f64) -> f64 {
        let value = if self.kind.is_failure() {
            self.value_usd.max(PARAMS.failure_floor * anchor_log_value.exp())
        } else {
            self.value_usd
        };
        value.ln()
    }
}

/// A spell between two reported values: the pool the drift is learnt from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spell {
    /// The day of its second value: it counts in the pool from the next day on.
    pub completed: Day,
    pub gap_years: f64,
    pub log_change: f64,
}

/// The next value reported after a day, and what it was.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NextValue {
    pub day: Day,
    pub log_value: f64,
    pub kind: NextKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextKind {
    Anchor,
    Outcome(OutcomeKind),
}

impl NextKind {
    pub fn as_str(self) -> &'static str {
        match self {
            NextKind::Anchor => "anchor",
            NextKind::Outcome(OutcomeKind::Listing) => "listing",
            NextKind::Outcome(OutcomeKind::Failure) => "failure",
            NextKind::Outcome(OutcomeKind::Sale) => "sale",
        }
    }
}

/// A company's effective history, as the method reads it.
#[derive(Clone, Debug, Default)]
pub struct History {
    pub anchors: Vec<Anchor>,
    pub outcome: Option<Outcome>,
}

pub fn years_between(later: Day, earlier: Day) -> f64 {
    f64::from(later.days_since(earlier)) / DAYS_PER_YEAR
}

impl History {
    pub fn of(company: &Company) -> History {
        let mut history = History::default();
        for (index, event) in company.events.iter().enumerate() {
            if !event.is_effective() {
                continue;
            }
            let kind = event.event_type;
            if event.ends_private_period() {
                history.outcome = Some(Outcome {
                    day: event.occurred_on,
                    kind,
                    value_usd: event.valuation_usd as f64,
                    event: index,
                });
                break;
            }
            if kind == EventType::AcquisitionTerminated {
                if history.anchors.iter().any(|a| !a.holds()) {
                    history.anchors.retain(|a| !a.holds());
                }
                continue;
            }
            if !event.is_anchor() {
                continue;
            }
            let mut value = event.valuation_usd as f64;
            if value <= 0.0 && kind == EventType::FundMark {
                if let Some(before) = history.anchors.last() {
                    value = PARAMS.failure_floor * before.log_value.exp();
                }
            }
            if value <= 0.0 {
                continue;
            }
            history.anchors.push(Anchor {
                day: event.occurred_on,
                log_value: value.ln(),
                kind,
                event: index,
            });
        }
        history
    }

    /// The last anchor on or before `day` (`inclusive`), or strictly before it.
    pub fn anchor_at(&self, day: Day, inclusive: bool) -> Option<&Anchor> {
        let count = self
            .anchors
            .partition_point(|a| a.day < day || (inclusive && a.day == day));
        count.checked_sub(1).map(|i| &self.anchors[i])
    }

    /// The outcome, if it is an observation of value.
    pub fn valued_outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref().filter(|o| o.valued())
    }

    /// The first value reported after `day`: an anchor, or a valued outcome (a failure floored
    /// against the anchor in force on `day`).
    pub fn next_value(&self, day: Day) -> Option<NextValue> {
        if let Some(anchor) = self.anchors.iter().find(|a| a.day > day) {
            return Some(NextValue {
                day: anchor.day,
                log_value: anchor.log_value,
                kind: NextKind::Anchor,
            });
        }
        let outcome = self.valued_outcome().filter(|o| o.day > day)?;
        let anchor = self.anchor_at(day, true)?;
        Some(NextValue {
            day: outcome.day,
            log_value: outcome.log_value(anchor.log_value),
            kind: NextKind::Outcome(outcome.kind()),
        })
    }

    /// The spells the drift is learnt from: consecutive round anchors on distinct days (fund
    /// marks anchor a mark but are not rounds), and the last round to a valued outcome; none
    /// starting at an agreed sale, after which nothing drifts.
    pub fn spells(&self) -> Vec<Spell> {
        let rounds: Vec<&Anchor> = self.anchors.iter().filter(|a| a.kind != EventType::FundMark).collect();
        let spell = |from: &Anchor, day: Day, log_value: f64| Spell {
            completed: day,
            gap_years: years_between(day, from.day),
            log_change: log_value - from.log_value,
        };
        let mut spells: Vec<Spell> = rounds
            .windows(2)
            .filter(|pair| pair[1].day > pair[0].day && !pair[0].holds())
            .map(|pair| spell(pair[0], pair[1].day, pair[1].log_value))
            .collect();
        if let (Some(outcome), Some(last)) = (self.valued_outcome(), rounds.last()) {
            if outcome.day > last.day && !last.holds() {
                spells.push(spell(last, outcome.day, outcome.log_value(last.log_value)));
            }
        }
        spells
    }

    /// The last day the company is marked: `as_of`, or the day before its outcome.
    pub fn last_marked_day(&self, as_of: Day) -> Day {
        match &self.outcome {
            Some(outcome) => as_of.min(outcome.day.plus(-1)),
            None => as_of,
        }
    }
}
