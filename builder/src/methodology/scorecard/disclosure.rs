//! What the scorecard discloses, and to whom.
//!
//! The scorecard promises that anyone can recompute every figure it states, and it must not
//! hand out what a key's tier may not read: the valuations of companies' events. So it comes in
//! two forms, rendered side by side at build time:
//!
//! - [`Disclosure::Public`], for everyone (no key, and keys below Pro): every summary figure;
//!   per scored target only relative quantities (log error, the bands as multiples of the mark,
//!   confidence, hit and inside flags, verdict, gap, event type and dates), with no slug, no
//!   event id and no dollar amount, in date order so that one company's targets do not sit
//!   together; misses and MAPE's contributors the same; listings and bankruptcies name the
//!   company (outcomes are what a company item reports anyway) with relative errors only.
//! - [`Disclosure::Full`], for Pro and above, who may read every company's events: every field.

use serde::Serialize;

use crate::dataset::EventType;
use crate::methodology::scorecard::{
    Comparison, ForecasterFigures, GapBucket, Miss, RelativeBand, Scorecard, Target, TargetForecast, TargetKind,
    Verdict,
};
use marks_format::day::Day;

/// Which form of the scorecard a reader gets.
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

/// The scorecard in one form.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum DisclosedScorecard<'a> {
    Full(&'a Scorecard),
    Public(PublicScorecard<'a>),
}

/// The scored targets in one form.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum DisclosedTargets<'a> {
    Full(&'a [Target]),
    Public(Vec<PublicTarget<'a>>),
}

impl Scorecard {
    pub fn disclosed(&self, disclosure: Disclosure) -> DisclosedScorecard<'_> {
        match disclosure {
            Disclosure::Full => DisclosedScorecard::Full(self),
            Disclosure::Public => DisclosedScorecard::Public(PublicScorecard::of(self)),
        }
    }

    pub fn disclosed_targets(&self, disclosure: Disclosure) -> DisclosedTargets<'_> {
        match disclosure {
            Disclosure::Full => DisclosedTargets::Full(&self.targets),
            Disclosure::Public => DisclosedTargets::Public(public_targets(&self.targets)),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct PublicScorecard<'a> {
    pub forecasters: Vec<PublicForecasterScore<'a>>,
    pub comparison: &'a Comparison,
    pub comparison_with_previous: &'a Comparison,
    pub listing_validations: Vec<PublicOutcome<'a>>,
    pub bankruptcy_outcomes: Vec<PublicOutcome<'a>>,
}

#[derive(Debug, Serialize)]
pub struct PublicForecasterScore<'a> {
    #[serde(flatten)]
    pub figures: &'a ForecasterFigures,
    pub misses: Vec<PublicMiss>,
    pub mape_top_contributors: Vec<PublicContributor>,
}

/// A scored event outside the 95% band, without whose it was or its dollars.
#[derive(Debug, Serialize)]
pub struct PublicMiss {
    pub event_type: EventType,
    pub occurred_on: Day,
    pub log_error: f64,
    pub band_95_rel: RelativeBand,
}

/// A scored event's share of MAPE, without whose it was.
#[derive(Debug, Serialize)]
pub struct PublicContributor {
    pub event_type: EventType,
    pub occurred_on: Day,
    pub abs_pct_error: f64,
    pub share_of_mape_pct: f64,
}

/// A listing or bankruptcy: the company and its date, each forecaster's error relative to its
/// mark the day before.
#[derive(Debug, Serialize)]
pub struct PublicOutcome<'a> {
    pub slug: &'a str,
    pub event_type: EventType,
    pub occurred_on: Day,
    pub marked_on: Day,
    pub estimates: Vec<PublicEstimate>,
}

#[derive(Debug, Serialize)]
pub struct PublicEstimate {
    pub forecaster: &'static str,
    /// (mark / outcome value - 1) in percent; null when the outcome value is 0.
    pub error_pct: Option<f64>,
    pub band_80_rel: RelativeBand,
    pub band_95_rel: RelativeBand,
    pub inside_80: bool,
    pub inside_95: bool,
    pub verdict: Verdict,
}

/// A scored target with relative quantities only.
#[derive(Debug, Serialize)]
pub struct PublicTarget<'a> {
    pub kind: TargetKind,
    pub event_type: EventType,
    pub occurred_on: Day,
    pub marked_on: Day,
    pub gap_years: f64,
    pub gap_bucket: GapBucket,
    pub forecasts: Vec<PublicTargetForecast<'a>>,
}

#[derive(Debug, Serialize)]
pub struct PublicTargetForecast<'a> {
    pub forecaster: &'static str,
    pub scale: f64,
    pub q80: f64,
    pub q95: f64,
    pub confidence: f64,
    pub log_error: Option<f64>,
    pub band_80_rel: &'a RelativeBand,
    pub band_95_rel: &'a RelativeBand,
    pub inside_80: bool,
    pub inside_95: bool,
    pub hit: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
}

impl<'a> PublicScorecard<'a> {
    fn of(card: &'a Scorecard) -> PublicScorecard<'a> {
        let outcomes = |kind: TargetKind| -> Vec<PublicOutcome<'a>> {
            card.targets
                .iter()
                .filter(|t| t.kind == kind)
                .map(|t| PublicOutcome {
                    slug: &t.slug,
                    event_type: t.event_type,
                    occurred_on: t.occurred_on,
                    marked_on: t.marked_on,
                    estimates: t.forecasts.iter().map(PublicEstimate::of).collect(),
                })
                .collect()
        };
        PublicScorecard {
            forecasters: card
                .forecasters
                .iter()
                .map(|f| PublicForecasterScore {
                    figures: &f.figures,
                    misses: f.misses.iter().map(PublicMiss::of).collect(),
                    mape_top_contributors: f
                        .mape_top_contributors
                        .iter()
                        .map(|c| PublicContributor {
                            event_type: c.event_type,
                            occurred_on: c.occurred_on,
                            abs_pct_error: c.abs_pct_error,
                            share_of_mape_pct: c.share_of_mape_pct,
                        })
                        .collect(),
                })
                .collect(),
            comparison: &card.comparison,
            comparison_with_previous: &card.comparison_with_previous,
            listing_validations: outcomes(TargetKind::Listing),
            bankruptcy_outcomes: outcomes(TargetKind::Bankruptcy),
        }
    }
}

impl PublicMiss {
    fn of(miss: &Miss) -> PublicMiss {
        PublicMiss {
            event_type: miss.event_type,
            occurred_on: miss.occurred_on,
            log_error: miss.log_error,
            band_95_rel: miss.band_95_rel,
        }
    }
}

impl PublicEstimate {
    fn of(forecast: &TargetForecast) -> PublicEstimate {
        PublicEstimate {
            forecaster: forecast.forecaster,
            error_pct: forecast.error_pct(),
            band_80_rel: forecast.band_80_rel,
            band_95_rel: forecast.band_95_rel,
            inside_80: forecast.inside_80,
            inside_95: forecast.inside_95,
            verdict: forecast.verdict.unwrap_or(Verdict::Miss),
        }
    }
}

/// Every target in the public form, ordered by date (then kind, type and error) so that the
/// order itself does not group one company's targets.
fn public_targets(targets: &[Target]) -> Vec<PublicTarget<'_>> {
    let mut public: Vec<PublicTarget<'_>> = targets
        .iter()
        .map(|t| PublicTarget {
            kind: t.kind,
            event_type: t.event_type,
            occurred_on: t.occurred_on,
            marked_on: t.marked_on,
            gap_years: t.gap_years,
            gap_bucket: t.gap_bucket,
            forecasts: t
                .forecasts
                .iter()
                .map(|f| PublicTargetForecast {
                    forecaster: f.forecaster,
                    scale: f.scale,
                    q80: f.q80,
                    q95: f.q95,
                    confidence: f.confidence,
                    log_error: f.log_error,
                    band_80_rel: &f.band_80_rel,
                    band_95_rel: &f.band_95_rel,
                    inside_80: f.inside_80,
                    inside_95: f.inside_95,
                    hit: f.hit,
                    verdict: f.verdict,
                })
                .collect(),
        })
        .collect();
    let error = |t: &PublicTarget<'_>| {
        t.forecasts
            .first()
            .and_then(|f| f.log_error)
            .unwrap_or(f64::NEG_INFINITY)
    };
    public.sort_by(|a, b| {
        (a.marked_on, a.occurred_on, a.kind as u8, a.event_type.as_str())
            .cmp(&(b.marked_on, b.occurred_on, b.kind as u8, b.event_type.as_str()))
            .then(error(a).total_cmp(&error(b)))
    });
    public
}
