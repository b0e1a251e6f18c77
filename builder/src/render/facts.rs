//! What every company item says of the events behind its mark (docs/design.md section 4a): the
//! effective anchor its last mark starts from and how long ago, and its outcome: the record that
//! ended its private period (listed, sold, bankrupt, wound down) or a sale agreed and pending.
//! Values, dates, types and grades only: a company's history with its sources and notes is
//! getMarkEvents's (Pro).

use serde::Serialize;

use crate::dataset::{Company, Event, EventType, SourceGrade};
use crate::methodology::history::History;
use crate::methodology::round_to;
use marks_format::rules::day::Day;

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
    pub source_grade: Option<SourceGrade>,
}

/// What ended or fixed a company's private marks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeKind {
    Listed,
    Sold,
    SaleAgreed,
    Bankrupt,
    WoundDown,
    ListingAgreed,
}

impl OutcomeKind {
    pub const ALL: [OutcomeKind; 6] = [
        OutcomeKind::Listed,
        OutcomeKind::Sold,
        OutcomeKind::SaleAgreed,
        OutcomeKind::Bankrupt,
        OutcomeKind::WoundDown,
        OutcomeKind::ListingAgreed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OutcomeKind::Listed => "listed",
            OutcomeKind::Sold => "sold",
            OutcomeKind::SaleAgreed => "sale_agreed",
            OutcomeKind::Bankrupt => "bankrupt",
            OutcomeKind::WoundDown => "wound_down",
            OutcomeKind::ListingAgreed => "listing_agreed",
        }
    }

    /// Its code in the snapshot's company entries (`marks_format::file::layout::OUTCOME_*`).
    pub fn code(kind: Option<OutcomeKind>) -> u8 {
        use marks_format::file::layout as l;
        match kind {
            None => l::OUTCOME_NONE,
            Some(OutcomeKind::Listed) => l::OUTCOME_LISTED,
            Some(OutcomeKind::Sold) => l::OUTCOME_SOLD,
            Some(OutcomeKind::SaleAgreed) => l::OUTCOME_SALE_AGREED,
            Some(OutcomeKind::Bankrupt) => l::OUTCOME_BANKRUPT,
            Some(OutcomeKind::WoundDown) => l::OUTCOME_WOUND_DOWN,
            Some(OutcomeKind::ListingAgreed) => l::OUTCOME_LISTING_AGREED,
        }
    }

    /// Whether the private period is over (a pending sale or listing is not yet).
    pub fn ended(self) -> bool {
        !self.pending()
    }

    /// An agreed deal, sale or listing, still pending.
    pub fn pending(self) -> bool {
        matches!(self, OutcomeKind::SaleAgreed | OutcomeKind::ListingAgreed)
    }
}

#[derive(Debug, Serialize)]
pub struct Outcome<'a> {
    pub kind: OutcomeKind,
    pub event_id: &'a str,
    pub event_type: EventType,
    pub occurred_on: Day,
    /// As reported: 0 for a write-off or an undisclosed price.
    pub valuation_usd: u64,
}

impl<'a> EventFacts<'a> {
    pub fn of(company: &'a Company, history: &History, as_of: Day) -> EventFacts<'a> {
        // The anchor the last mark starts from: for a company whose private period ended, the
        // last one before the outcome's day (a sale agreed on its closing day is no part of it).
        let last = history
            .anchor_at(history.last_marked_day(as_of), true)
            .and_then(|a| company.events.get(a.event));
        let outcome = outcome_of(company).map(|(kind, e): (OutcomeKind, &'a Event)| Outcome {
            kind,
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
                source_grade: e.source_grade,
            }),
            days_since_last_event: last.map(|e| as_of.days_since(e.occurred_on)),
            outcome,
        }
    }

    /// A mark against the last event's value, in percent (two decimals); none against a value
    /// of 0.
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

    pub fn outcome_kind(&self) -> Option<OutcomeKind> {
        self.outcome.as_ref().map(|o| o.kind)
    }
}

/// A company's outcome in its effective view: its closed listing, closed sale, bankruptcy or
/// wind-down, or else an agreed sale or listing that is still pending: no later record
/// terminated it and no later value was reported (a company that raised again after an
/// agreement, as Flipkart after Walmart's, is no longer waiting on it).
pub fn outcome_of(company: &Company) -> Option<(OutcomeKind, &Event)> {
    if let Some(end) = company.terminal() {
        let kind = match end.event_type {
            EventType::AcquisitionClosed => OutcomeKind::Sold,
            EventType::Bankruptcy => OutcomeKind::Bankrupt,
            EventType::WindDown => OutcomeKind::WoundDown,
            _ => OutcomeKind::Listed,
        };
        return Some((kind, end));
    }
    company
        .effective()
        .rfind(|e| {
            e.event_type == EventType::AcquisitionTerminated
                || (e.is_anchor() && e.valuation_usd > 0)
                || e.is_agreed_deal()
        })
        .filter(|e| e.is_agreed_deal())
        .map(|e| match e.event_type {
            EventType::Acquisition => (OutcomeKind::SaleAgreed, e),
            _ => (OutcomeKind::ListingAgreed, e),
        })
}
