//! What every company item says of the events behind its mark (docs/design.md section 4a): its
//! last event on or before `as_of` and how long ago, and the outcome that ended or fixed its
//! private marks (a listing, a bankruptcy, or an agreed sale that holds the mark). Values, dates
//! and types only: a company's history with its sources and notes is getMarkEvents's (Pro).

use serde::Serialize;

use crate::dataset::{Company, Event, EventType};
use crate::methodology::round_to;
use marks_format::day::Day;

/// The facts every company item carries beside its mark.
#[derive(Debug, Serialize)]
pub struct EventFacts<'a> {
    pub last_event: Option<LastEvent<'a>>,
    pub days_since_last_event: Option<i32>,
    pub outcome: Option<Outcome<'a>>,
}

#[derive(Debug, Serialize)]
pub struct LastEvent<'a> {
    pub event_id: &'a str,
    pub occurred_on: Day,
    pub event_type: EventType,
    pub valuation_usd: u64,
}

#[derive(Debug, Serialize)]
pub struct Outcome<'a> {
    pub event_id: &'a str,
    pub event_type: EventType,
    pub occurred_on: Day,
    pub valuation_usd: u64,
}

impl<'a> EventFacts<'a> {
    pub fn of(company: &'a Company, as_of: Day) -> EventFacts<'a> {
        // A company's events are in date order; none is after as_of (the builder refuses it).
        let last = company.events.iter().rfind(|e| e.occurred_on <= as_of);
        let outcome = company
            .terminal()
            .or(last.filter(|e| e.event_type == EventType::Acquisition))
            .map(|e: &'a Event| Outcome {
                event_id: &e.event_id,
                event_type: e.event_type,
                occurred_on: e.occurred_on,
                valuation_usd: e.valuation_usd,
            });
        EventFacts {
            last_event: last.map(|e| LastEvent {
                event_id: &e.event_id,
                occurred_on: e.occurred_on,
                event_type: e.event_type,
                valuation_usd: e.valuation_usd,
            }),
            days_since_last_event: last.map(|e| as_of.days_since(e.occurred_on)),
            outcome,
        }
    }

    /// A mark against the last event's value, in percent (two decimals); none against a value
    /// of 0 (a bankruptcy written off).
    pub fn vs_last_event_pct(&self, mark: f64) -> Option<f64> {
        let value = self.last_event.as_ref()?.valuation_usd as f64;
        (value > 0.0).then(|| round_to((mark / value - 1.0) * 100.0, 2))
    }

    /// The days of the last event and of the outcome, for sorting.
    pub fn sort_days(&self) -> (i32, Option<i32>) {
        (
            self.last_event.as_ref().map_or(0, |e| e.occurred_on.0),
            self.outcome.as_ref().map(|o| o.occurred_on.0),
        )
    }
}
