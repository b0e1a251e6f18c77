//! The words a company's mark is explained in, built for its case (docs/design.md section 4a):
//! a company recently priced, quiet, with a sale agreed and pending, listed, sold, bankrupt or
//! wound down. Every number in the words is one the same body carries beside them, in three
//! significant figures, so no paragraph can contradict the figures next to it; the explanation
//! test walks every company of the sample and holds each to its own facts.

use serde::Serialize;

use crate::dataset::{Company, EventType, ReportedAs, SourceGrade};
use crate::methodology::{round_to, usd, CompanyMarks, MarkBasis, PARAMS};
use crate::render::facts::{EventFacts, OutcomeKind};
use marks_format::rules::day::Day;

/// Up to this many days since its last reported value, a company is "recently priced".
pub const RECENTLY_PRICED_DAYS: i32 = 90;

/// A dollar amount in words, three significant figures: $286B, $1.14T, $812M.
pub fn usd_words(value: u64) -> String {
    let v = value as f64;
    let (scaled, unit) = match v {
        v if v >= 1e12 => (v / 1e12, "T"),
        v if v >= 1e9 => (v / 1e9, "B"),
        v if v >= 1e6 => (v / 1e6, "M"),
        v if v >= 1e3 => (v / 1e3, "K"),
        v => (v, ""),
    };
    // Three significant figures; a value that rounds up to the next unit's 1000 keeps its unit
    // ($999.6M is $1,000M), which is exact enough and never wrong.
    let digits = if scaled >= 100.0 {
        0
    } else if scaled >= 10.0 {
        1
    } else {
        2
    };
    let text = format!("{scaled:.digits$}");
    let text = if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    };
    format!("${text}{unit}")
}

/// A count of days in words: "1 day", "30 days".
fn days(n: i32) -> String {
    if n == 1 {
        "1 day".to_string()
    } else {
        format!("{n} days")
    }
}

/// What kind of record an event is, in words.
fn event_words(kind: EventType) -> &'static str {
    match kind {
        EventType::PrimaryRound => "funding round",
        EventType::DownRound => "down round",
        EventType::TenderOffer => "tender offer",
        EventType::SecondarySale => "secondary sale",
        EventType::FundMark => "fund's mark of its stake",
        EventType::Ipo => "IPO",
        EventType::DirectListing => "direct listing",
        EventType::SpacListing => "SPAC listing",
        EventType::Acquisition => "agreed sale",
        EventType::AcquisitionClosed => "closed sale",
        EventType::AcquisitionTerminated => "terminated sale",
        EventType::Bankruptcy => "bankruptcy",
        EventType::WindDown => "wind-down",
        EventType::Retraction => "retraction",
        EventType::Buyback => "buyback by the company",
        EventType::InternalValuation => "internal (409A or board) valuation",
    }
}

/// How firm a reported figure was, as a qualifier after it; none when it closed.
fn firmness(reported_as: Option<ReportedAs>) -> &'static str {
    match reported_as {
        Some(ReportedAs::Announced) => ", announced",
        Some(ReportedAs::InTalks) => ", reported in talks",
        Some(ReportedAs::Estimate) => ", an estimate",
        Some(ReportedAs::Closed) | None => "",
    }
}

/// The next-print forecast beside a current mark, in words; nothing when there is none.
fn next_words(next: Option<&str>) -> String {
    next.map(|n| {
        format!(
            " The forecast of the next reported valuation, published beside it, is {n}: reported rounds run above the \
             value on the day."
        )
    })
    .unwrap_or_default()
}

/// The case a company's mark is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Case {
    RecentlyPriced,
    Quiet,
    SaleAgreed,
    Listed,
    Sold,
    Bankrupt,
    WoundDown,
    ListingAgreed,
}

/// The mark in words, for its case.
#[derive(Debug, Serialize)]
pub struct Explanation {
    pub case: Case,
    pub summary: String,
}

/// The summary of a company's mark, or none when it has no mark.
pub fn explanation(company: &Company, marks: &CompanyMarks, facts: &EventFacts<'_>) -> Option<Explanation> {
    let latest = marks.latest()?;
    let basis = marks.basis?;
    let anchor = company.events.get(basis.event)?;
    let mark = usd_words(usd(latest.mark));
    let (low, high) = (usd_words(usd(latest.band80.0)), usd_words(usd(latest.band80.1)));
    let last = if anchor.valuation_usd == 0 {
        format!(
            "{} at $0 on {} (written off; taken as {}, 1% of the value before it)",
            event_words(anchor.event_type),
            anchor.occurred_on,
            usd_words(usd(basis.anchor_value))
        )
    } else {
        format!(
            "{} at {} on {}{}",
            event_words(anchor.event_type),
            usd_words(anchor.valuation_usd),
            anchor.occurred_on,
            firmness(anchor.reported_as)
        )
    };
    let drift_pct = round_to((basis.drift_log.exp() - 1.0) * 100.0, 1);
    let track = |confidence: f64| {
        let one_in = (1.0 / confidence).round().max(1.0);
        format!(
            " confidence {:.1}%: historically about 1 in {one_in} of our marks was within +/-{}% of the next reported \
             valuation; not a company-specific probability.",
            confidence * 100.0,
            PARAMS.confidence_tolerance * 100.0
        )
    };
    let next = marks.next_reported.map(|n| usd_words(usd(n)));
    let outcome = facts.outcome.as_ref();
    let ended = |what: String, case: Case| {
        let vs = facts
            .outcome
            .as_ref()
            .filter(|o| o.valuation_usd > 0)
            .map(|o| {
                let pct = round_to((latest.mark / o.valuation_usd as f64 - 1.0) * 100.0, 1);
                let side = if pct >= 0.0 { "above" } else { "below" };
                format!(", {:.1}% {side} the outcome's value", pct.abs())
            })
            .unwrap_or_default();
        Explanation {
            case,
            summary: format!(
                "{what} Its private period ended: the last private mark, of {}, was {mark}{vs}. That mark is kept for \
                 the record; it is not a value today.",
                latest.day
            ),
        }
    };
    Some(match outcome.map(|o| o.kind) {
        Some(OutcomeKind::Listed) => {
            let o = outcome?;
            ended(
                format!(
                    "Listed on {} ({}) at {}.",
                    o.occurred_on,
                    event_words(o.event_type),
                    usd_words(o.valuation_usd)
                ),
                Case::Listed,
            )
        }
        Some(OutcomeKind::Sold) => {
            let o = outcome?;
            let price = if o.valuation_usd > 0 {
                format!("for {}", usd_words(o.valuation_usd))
            } else {
                "at a price not disclosed".to_string()
            };
            ended(format!("Sold on {} {price}.", o.occurred_on), Case::Sold)
        }
        Some(OutcomeKind::Bankrupt) => {
            let o = outcome?;
            ended(
                format!(
                    "Filed for bankruptcy on {}; the equity was reported at {}.",
                    o.occurred_on,
                    usd_words(o.valuation_usd)
                ),
                Case::Bankrupt,
            )
        }
        Some(OutcomeKind::WoundDown) => {
            let o = outcome?;
            ended(
                format!(
                    "Wound down on {}; the equity was reported at {}.",
                    o.occurred_on,
                    usd_words(o.valuation_usd)
                ),
                Case::WoundDown,
            )
        }
        Some(kind @ (OutcomeKind::SaleAgreed | OutcomeKind::ListingAgreed)) => {
            let o = outcome?;
            let (deal, agreed, case) = match kind {
                OutcomeKind::SaleAgreed => ("sale", "A sale was agreed", Case::SaleAgreed),
                _ => (
                    "listing",
                    "A listing was agreed (a merger with a listed SPAC, or a direct listing, signed and not completed)",
                    Case::ListingAgreed,
                ),
            };
            let summary = if basis.holds {
                format!(
                    "{agreed} on {} at {} and is pending: the mark holds the agreed price, {mark}, and adds \
                     nothing while it is pending. Its 80% band, {low} to {high}, is the spread of values reported next \
                     after such marks; for an agreed {deal} it mostly says the deal may still fail.{}",
                    o.occurred_on,
                    usd_words(o.valuation_usd),
                    track(marks.confidence)
                )
            } else {
                format!(
                    "{agreed} on {} at a price not disclosed and is pending; the mark runs from the last \
                     reported value, a {last} ({} ago): today's value estimate is {mark} ({drift_pct:+.1}%), with an \
                     80% band of {low} to {high}.{}{}",
                    o.occurred_on,
                    days(basis.days),
                    next_words(next.as_deref()),
                    track(marks.confidence)
                )
            };
            Explanation { case, summary }
        }
        None => {
            let beside = next_words(next.as_deref());
            let (case, opening) = if basis.days <= RECENTLY_PRICED_DAYS {
                (
                    Case::RecentlyPriced,
                    format!(
                        "Recently priced: a {last}, {} ago. Today's value estimate is {mark} ({drift_pct:+.1}%).",
                        days(basis.days)
                    ),
                )
            } else {
                (
                    Case::Quiet,
                    format!(
                        "Last reported: a {last} ({} ago). Today's value estimate is {mark}, {drift_pct:+.1}% for \
                         {} of silence, learnt from how values moved between prints of companies quiet as long.",
                        days(basis.days),
                        days(basis.days)
                    ),
                )
            };
            Explanation {
                case,
                summary: format!(
                    "{opening} Its 80% band, {low} to {high}, is for the next reported value.{beside}{}",
                    track(marks.confidence)
                ),
            }
        }
    })
}

/// One part of what a latest mark rests on.
#[derive(Debug, Serialize)]
#[serde(tag = "part", rename_all = "snake_case")]
pub enum Observation<'a> {
    /// The event the mark starts from; all of the mark moves with its value.
    Event {
        event_id: &'a str,
        occurred_on: Day,
        event_type: EventType,
        valuation_usd: u64,
        source_grade: Option<SourceGrade>,
        weight: f64,
        explanation: String,
    },
    /// What the method adds for the days since that event.
    Drift {
        days: i32,
        drift_pct: f64,
        explanation: String,
    },
    /// What ended the private period, after the last private mark.
    Outcome {
        kind: OutcomeKind,
        event_id: &'a str,
        occurred_on: Day,
        event_type: EventType,
        valuation_usd: u64,
        explanation: String,
    },
}

/// What the latest mark rests on, part by part.
pub fn observations<'a>(
    company: &'a Company,
    basis: &MarkBasis,
    marks: &CompanyMarks,
    facts: &EventFacts<'a>,
    as_of: Day,
) -> Vec<Observation<'a>> {
    let Some(event) = company.events.get(basis.event) else {
        return Vec::new();
    };
    let mut parts = vec![Observation::Event {
        event_id: &event.event_id,
        occurred_on: event.occurred_on,
        event_type: event.event_type,
        valuation_usd: event.valuation_usd,
        source_grade: event.source_grade,
        weight: 1.0,
        explanation: if event.valuation_usd == 0 {
            format!(
                "The mark starts from this {} at $0 on {} (a stake written off), taken as {}: 1% of the value reported \
                 before it, so that the mark stays a value.",
                event_words(event.event_type),
                event.occurred_on,
                usd_words(usd(basis.anchor_value))
            )
        } else {
            format!(
                "The mark starts from this {} at {} on {}: the last value reported before the mark.",
                event_words(event.event_type),
                usd_words(event.valuation_usd),
                event.occurred_on
            )
        },
    }];
    let drift_pct = round_to((basis.drift_log.exp() - 1.0) * 100.0, 2);
    let ended = facts.outcome.as_ref().is_some_and(|o| o.kind.ended());
    let explanation = match (basis.holds, ended) {
        (true, true) => format!(
            "The mark held the agreed price, {} after the agreement, until the private period ended: nothing drifts \
             under an agreed sale.",
            days(basis.days)
        ),
        (true, false) => format!(
            "The mark holds the agreed price, {} on: nothing drifts while an agreed sale is pending. Its bands still \
             widen with time, because agreed deals can fail.",
            days(basis.days)
        ),
        (false, _) => {
            let moved = if drift_pct >= 0.0 { "adds" } else { "moves" };
            format!(
                "The mark {moved} {drift_pct:+}% for {} without a reported value, learnt from how values moved between \
                 prints of companies quiet as long.",
                days(basis.days)
            )
        }
    };
    parts.push(Observation::Drift {
        days: basis.days,
        drift_pct,
        explanation,
    });
    if let Some(outcome) = facts.outcome.as_ref().filter(|o| o.kind.ended()) {
        let last = marks.latest().map_or(as_of, |m| m.day);
        parts.push(Observation::Outcome {
            kind: outcome.kind,
            event_id: outcome.event_id,
            occurred_on: outcome.occurred_on,
            event_type: outcome.event_type,
            valuation_usd: outcome.valuation_usd,
            explanation: format!(
                "The {} on {} ended the private period: the mark above is its last private one, of {last}, not a value \
                 today.",
                event_words(outcome.event_type),
                outcome.occurred_on
            ),
        });
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dollars_in_three_significant_figures() {
        assert_eq!(usd_words(286_450_592_196), "$286B");
        assert_eq!(usd_words(1_140_000_000_000), "$1.14T");
        assert_eq!(usd_words(32_000_000_000), "$32B");
        assert_eq!(usd_words(2_850_000_000), "$2.85B");
        assert_eq!(usd_words(812_400_000), "$812M");
        assert_eq!(usd_words(0), "$0");
    }
}
