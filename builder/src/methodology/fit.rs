//! The fitted method over one dataset, and the published marks of one company.
//!
//! [`Fit::new`] reads every company's effective history once, pools the spells into the daily
//! profiles, marks every month-end to learn the bands, and scores the method. [`Fit::marks`]
//! is what `GET /v1/companies/{slug}/marks` and the company items serve: one point per day from
//! the first anchor to `as_of`, or to the day before the company's outcome.

use rayon::prelude::*;

use crate::dataset::{Company, Dataset};
use crate::methodology::bands::{month_ends, BandTimeline, Bands, MonthEnd};
use crate::methodology::history::{years_between, Anchor, History};
use crate::methodology::profile::{ProfileTable, Profiles};
use crate::methodology::round_to;
use marks_format::rules::day::Day;

/// One day of a company's marks, in USD.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MarkDay {
    pub day: Day,
    pub mark: f64,
    pub band80: (f64, f64),
    pub band95: (f64, f64),
}

impl MarkDay {
    pub fn band(&self, coverage: Coverage) -> (f64, f64) {
        match coverage {
            Coverage::C80 => self.band80,
            Coverage::C95 => self.band95,
        }
    }
}

/// A band's coverage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    C80,
    C95,
}

impl Coverage {
    pub const ALL: [Coverage; 2] = [Coverage::C80, Coverage::C95];

    pub fn percent(self) -> u32 {
        match self {
            Coverage::C80 => 80,
            Coverage::C95 => 95,
        }
    }
}

/// The method's numbers for one company on one day.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Marked {
    pub anchor: Anchor,
    pub gap_years: f64,
    /// The fair-value mark (log) and the drift in it.
    pub x: f64,
    pub drift: f64,
    /// The next-print forecast (log).
    pub x_next: f64,
    pub bands: Bands,
}

/// What the latest mark rests on (docs/design.md section 4a): the anchor it starts from and
/// what the method adds for the days since.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MarkBasis {
    /// Index into the company's `events` of the anchor.
    pub event: usize,
    /// Days from the anchor to the latest mark.
    pub days: i32,
    /// ln(mark) - ln(anchor's value): the fair-value drift.
    pub drift_log: f64,
    /// Whether the anchor is an agreed sale, whose price holds.
    pub holds: bool,
    /// The anchor's value as the method reads it (a fund's mark of 0 floored), in USD.
    pub anchor_value: f64,
}

/// Everything published about one company's marks.
#[derive(Clone, Debug)]
pub struct CompanyMarks {
    pub series: Vec<MarkDay>,
    /// From the points 30 days apart, ending on `as_of`: none for a shorter series, or one that
    /// ended before `as_of` (an outcome), whose change is not today's.
    pub delta_30d_pct: Option<f64>,
    /// Whether a reported value fell within those 30 days; when none did, the change is the
    /// method's profile moving, not new evidence.
    pub delta_30d_has_news: bool,
    /// None when the company has no mark.
    pub basis: Option<MarkBasis>,
    /// The track record in force for the latest mark.
    pub confidence: f64,
    /// The next-print forecast beside the latest mark, in USD; none once the private period
    /// ended.
    pub next_reported: Option<f64>,
}

impl CompanyMarks {
    pub fn latest(&self) -> Option<&MarkDay> {
        self.series.last()
    }
}

/// The fitted method: every company's history, the daily profiles and bands, and the
/// month-end marks (the scorecard, which judges them, is `Method`'s).
#[derive(Debug)]
pub struct Fit {
    pub as_of: Day,
    /// In dataset order.
    pub histories: Vec<History>,
    pub profiles: ProfileTable,
    pub bands: BandTimeline,
    pub month_ends: Vec<MonthEnd>,
}

impl Fit {
    pub fn new(dataset: &Dataset) -> Fit {
        let as_of = dataset.info.as_of;
        let histories: Vec<History> = dataset.companies.par_iter().map(History::of).collect();
        let spells: Vec<_> = histories.iter().flat_map(History::spells).collect();
        // One day past as_of: the scorecard reports the profiles in force after it.
        let profiles = ProfileTable::new(&spells, as_of.plus(1));
        let month_ends: Vec<MonthEnd> = histories
            .par_iter()
            .enumerate()
            .flat_map_iter(|(company, history)| month_end_marks(company, history, &profiles, as_of))
            .collect();
        let bands = BandTimeline::new(&month_ends);
        Fit {
            as_of,
            histories,
            profiles,
            bands,
            month_ends,
        }
    }

    /// The method's numbers for a company on `day`, from the anchor on or before it
    /// (`inclusive`) or strictly before it; none before its first anchor.
    pub fn marked(&self, history: &History, day: Day, inclusive: bool) -> Option<Marked> {
        let anchor = *history.anchor_at(day, inclusive)?;
        let gap_years = years_between(day, anchor.day);
        let profiles: Profiles = self.profiles.on(day);
        let (x, drift) = profiles.mark(&anchor, gap_years);
        Some(Marked {
            anchor,
            gap_years,
            x,
            drift,
            x_next: profiles.next_print(&anchor, gap_years),
            bands: self.bands.on(day).bands(gap_years),
        })
    }

    /// The published marks of the company at `position` in the dataset.
    pub fn marks(&self, position: usize, company: &Company) -> CompanyMarks {
        let history = &self.histories[position];
        let end = history.last_marked_day(self.as_of);
        let Some(first) = history.anchors.first().filter(|a| a.day <= end) else {
            return CompanyMarks {
                series: Vec::new(),
                delta_30d_pct: None,
                delta_30d_has_news: false,
                basis: None,
                confidence: 0.0,
                next_reported: None,
            };
        };
        let mut series = Vec::with_capacity(usize::try_from(end.days_since(first.day) + 1).unwrap_or(0));
        let mut latest = None;
        let mut day = first.day;
        while day <= end {
            if let Some(marked) = self.marked(history, day, true) {
                series.push(MarkDay {
                    day,
                    mark: marked.x.exp(),
                    band80: marked.bands.band80(marked.x),
                    band95: marked.bands.band95(marked.x),
                });
                latest = Some(marked);
            }
            day = day.plus(1);
        }
        let basis = latest.map(|m| MarkBasis {
            event: m.anchor.event,
            days: end.days_since(m.anchor.day),
            drift_log: m.drift,
            holds: m.anchor.holds(),
            anchor_value: m.anchor.log_value.exp(),
        });
        // The points are consecutive days, so the one 30 days back is 30 positions back.
        let delta_30d_pct = (series.len() > 30 && end == self.as_of).then(|| {
            let (now, then) = (series[series.len() - 1].mark, series[series.len() - 31].mark);
            round_to((now / then - 1.0) * 100.0, 2)
        });
        let window_start = end.plus(-30);
        let delta_30d_has_news = company
            .effective()
            .any(|e| e.occurred_on > window_start && e.occurred_on <= end);
        let open = history.outcome.is_none();
        CompanyMarks {
            series,
            delta_30d_pct,
            delta_30d_has_news,
            basis,
            confidence: latest.map_or(0.0, |m| m.bands.confidence),
            next_reported: latest.filter(|_| open).map(|m| m.x_next.exp()),
        }
    }

    /// The profiles in force the day after `as_of`, when every spell is known.
    pub fn profiles_after(&self) -> Profiles {
        self.profiles.on(self.as_of.plus(1))
    }
}

/// Every scored month-end of one company: from its first anchor to its outcome (or `as_of`),
/// each with a later reported value.
fn month_end_marks(company: usize, history: &History, profiles: &ProfileTable, as_of: Day) -> Vec<MonthEnd> {
    let Some(first) = history.anchors.first() else {
        return Vec::new();
    };
    let last = history.outcome.as_ref().map_or(as_of, |o| o.day.min(as_of));
    month_ends(first.day, last)
        .into_iter()
        .filter_map(|day| {
            let next = history.next_value(day)?;
            let anchor = *history.anchor_at(day, true)?;
            let gap_years = years_between(day, anchor.day);
            let on_day = profiles.on(day);
            let (x, _) = on_day.mark(&anchor, gap_years);
            let share = f64::from(day.days_since(anchor.day)) / f64::from(next.day.days_since(anchor.day));
            Some(MonthEnd {
                company,
                day,
                x,
                anchor,
                gap_years,
                x_next: on_day.next_print(&anchor, gap_years),
                next,
                bridged: anchor.log_value + share * (next.log_value - anchor.log_value),
            })
        })
        .collect()
}
