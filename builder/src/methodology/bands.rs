//! The month-end residuals, and from them the bands and `confidence` in force on every day
//! (docs/design.md section 3).
//!
//! - **Residuals.** For every company and calendar month-end t from its first anchor to its
//!   outcome (or `as_of`) that has a later reported value: `e = ln v_next - x(t)`, with `x` the
//!   published mark of that day. A residual is known from the day after its value was reported,
//!   never before: no residual is judged by a band it helped set.
//! - **Bands** for the next reported value: on day t, the known residuals are split by the gap
//!   bucket of their silence D; a bucket with at least 100 has equal-tail conformal quantiles of
//!   its own at .10/.90 and .025/.975 (the ceil((N+1)p)-th smallest above the median, the
//!   floor((N+1)p)-th below), else the pooled ones; each quantile is interpolated in D between
//!   bucket centres. With fewer than 100 known in all, a normal fallback `-+z S0 sqrt(C + D)`.
//! - **confidence**: the share of known residuals within +/-20% (ln 0.8 ..= ln 1.2), the same for
//!   every company on a day: a track record, not a company-specific probability; with fewer
//!   than 200 known, the normal fallback's probability.

use crate::methodology::history::{Anchor, NextValue};
use crate::methodology::params::{interpolate, BUCKETS, PARAMS};
use crate::methodology::timeline::StepTimeline;
use marks_format::rules::day::Day;

/// The band quantiles' levels, in the order every quantile array keeps them.
pub const LEVELS: [Level; 4] = [Level::P10, Level::P90, Level::P025, Level::P975];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    P10,
    P90,
    P025,
    P975,
}

impl Level {
    /// The rank of this quantile among `n` sorted values (1-based): exact integer arithmetic for
    /// ceil((n+1)p), at most n, above the median, and floor((n+1)p), at least 1, below it.
    pub fn rank(self, n: usize) -> usize {
        let m = n + 1;
        match self {
            Level::P90 => (m * 9).div_ceil(10).min(n),
            Level::P975 => (m * 39).div_ceil(40).min(n),
            Level::P10 => (m / 10).max(1),
            Level::P025 => (m / 40).max(1),
        }
    }
}

/// A month-end mark and the next value reported after it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MonthEnd {
    /// The company's position in the dataset.
    pub company: usize,
    pub day: Day,
    /// The published mark (log), the anchor it starts from and the silence since.
    pub x: f64,
    pub anchor: Anchor,
    pub gap_years: f64,
    /// The next-print forecast (log) of the day.
    pub x_next: f64,
    pub next: NextValue,
    /// The value on the day bridged log-linearly between the anchor and the next value (S2).
    pub bridged: f64,
}

impl MonthEnd {
    /// S1's error: the next reported value against the mark.
    pub fn residual(&self) -> f64 {
        self.next.log_value - self.x
    }
}

/// The calendar month-ends `m` with `first <= m <= last`.
pub fn month_ends(first: Day, last: Day) -> Vec<Day> {
    let mut out = Vec::new();
    let start = first.date();
    let (mut year, mut month) = (start.year(), start.month());
    loop {
        let (next_year, next_month) = if month == time::Month::December {
            (year + 1, time::Month::January)
        } else {
            (year, month.next())
        };
        let Ok(next_first) = time::Date::from_calendar_date(next_year, next_month, 1) else {
            return out;
        };
        let month_end = Day(next_first.to_julian_day() - 1);
        if month_end > last {
            return out;
        }
        if month_end >= first {
            out.push(month_end);
        }
        (year, month) = (next_year, next_month);
    }
}

/// The quantiles and confidence in force on a day.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandState {
    /// Known month-end residuals.
    pub n: usize,
    /// Per gap bucket, the quantiles at `LEVELS` (log offsets from the mark); none with fewer
    /// than `min_bucket_residuals` known in all.
    pub quantiles: Option<[[f64; 4]; BUCKETS]>,
    /// The track record; none with fewer than `min_confidence_residuals` known.
    pub track_record: Option<f64>,
}

/// A day's band offsets (log, at `LEVELS`) and confidence for a mark after `gap_years` of
/// silence.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bands {
    pub offsets: [f64; 4],
    pub confidence: f64,
    pub n: usize,
}

impl Bands {
    /// The 80% band around a log mark, in USD.
    pub fn band80(&self, x: f64) -> (f64, f64) {
        ((x + self.offsets[0]).exp(), (x + self.offsets[1]).exp())
    }

    pub fn band95(&self, x: f64) -> (f64, f64) {
        ((x + self.offsets[2]).exp(), (x + self.offsets[3]).exp())
    }

    /// Whether a log error lies in the 80% (95%) band.
    pub fn covers80(&self, error: f64) -> bool {
        self.offsets[0] <= error && error <= self.offsets[1]
    }

    pub fn covers95(&self, error: f64) -> bool {
        self.offsets[2] <= error && error <= self.offsets[3]
    }
}

impl BandState {
    const NONE: BandState = BandState {
        n: 0,
        quantiles: None,
        track_record: None,
    };

    /// The bands of a mark after `gap_years` of silence.
    pub fn bands(&self, gap_years: f64) -> Bands {
        let scale = PARAMS.fallback_scale(gap_years);
        let offsets = match &self.quantiles {
            None => {
                let (z80, z95) = (PARAMS.fallback_quantile_80, PARAMS.fallback_quantile_95);
                [-z80 * scale, z80 * scale, -z95 * scale, z95 * scale]
            }
            Some(q) => std::array::from_fn(|level| {
                let by_bucket: [f64; BUCKETS] = std::array::from_fn(|b| q[b][level]);
                interpolate(gap_years, &PARAMS.gap_bucket_centres_years, &by_bucket)
            }),
        };
        let confidence = self.track_record.unwrap_or_else(|| {
            let (low, high) = PARAMS.confidence_range();
            normal_cdf(high / scale) - normal_cdf(low / scale)
        });
        Bands {
            offsets,
            confidence,
            n: self.n,
        }
    }
}

/// The standard normal distribution function.
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * (1.0 + libm::erf(z / std::f64::consts::SQRT_2))
}

/// The band state in force on each day.
#[derive(Clone, Debug)]
pub struct BandTimeline(StepTimeline<BandState>);

/// Counts of inserted values by rank (a Fenwick tree), answering "the k-th smallest" in
/// O(log n).
struct RankCounts {
    tree: Vec<u32>,
    len: usize,
}

impl RankCounts {
    fn new(size: usize) -> RankCounts {
        RankCounts {
            tree: vec![0; size + 1],
            len: 0,
        }
    }

    fn insert(&mut self, rank: usize) {
        let mut i = rank + 1;
        while i < self.tree.len() {
            self.tree[i] += 1;
            i += i & i.wrapping_neg();
        }
        self.len += 1;
    }

    /// The rank of the k-th smallest inserted value (k from 1).
    fn kth(&self, k: usize) -> usize {
        let mut position = 0;
        let mut remaining = k as u32;
        let mut step = self.tree.len().next_power_of_two();
        while step > 0 {
            let next = position + step;
            if next < self.tree.len() && self.tree[next] < remaining {
                position = next;
                remaining -= self.tree[next];
            }
            step /= 2;
        }
        position
    }
}

impl BandTimeline {
    /// From every month-end residual.
    pub fn new(month_ends: &[MonthEnd]) -> BandTimeline {
        let params = &PARAMS;
        let residuals: Vec<f64> = month_ends.iter().map(MonthEnd::residual).collect();
        // Every residual's rank among all of them (ties by position), so that one sorted array
        // serves every day's order statistics.
        let mut by_value: Vec<usize> = (0..residuals.len()).collect();
        by_value.sort_by(|&a, &b| residuals[a].total_cmp(&residuals[b]).then(a.cmp(&b)));
        let mut rank = vec![0; residuals.len()];
        for (r, &i) in by_value.iter().enumerate() {
            rank[i] = r;
        }
        let sorted: Vec<f64> = by_value.iter().map(|&i| residuals[i]).collect();
        let mut by_known: Vec<usize> = (0..month_ends.len()).collect();
        by_known.sort_by_key(|&i| (month_ends[i].next.day, i));
        let mut pooled = RankCounts::new(residuals.len());
        let mut buckets: [RankCounts; BUCKETS] = std::array::from_fn(|_| RankCounts::new(residuals.len()));
        let (low, high) = params.confidence_range();
        let mut landed = 0usize;
        let mut timeline = StepTimeline::new(BandState::NONE);
        let quantiles_of =
            |counts: &RankCounts| -> [f64; 4] { LEVELS.map(|level| sorted[counts.kth(level.rank(counts.len))]) };
        let mut next = 0;
        while next < by_known.len() {
            let day = month_ends[by_known[next]].next.day;
            while next < by_known.len() && month_ends[by_known[next]].next.day == day {
                let i = by_known[next];
                pooled.insert(rank[i]);
                buckets[params.bucket(month_ends[i].gap_years)].insert(rank[i]);
                if (low..=high).contains(&residuals[i]) {
                    landed += 1;
                }
                next += 1;
            }
            let n = pooled.len;
            let quantiles = (n >= params.min_bucket_residuals).then(|| {
                let all = quantiles_of(&pooled);
                std::array::from_fn(|b| {
                    if buckets[b].len >= params.min_bucket_residuals {
                        quantiles_of(&buckets[b])
                    } else {
                        all
                    }
                })
            });
            let track_record = (n >= params.min_confidence_residuals).then(|| landed as f64 / n as f64);
            // Known from the day after the value was reported.
            timeline.push(
                day.plus(1),
                BandState {
                    n,
                    quantiles,
                    track_record,
                },
            );
        }
        BandTimeline(timeline)
    }

    pub fn on(&self, day: Day) -> &BandState {
        self.0.at(day)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conformal_ranks_by_hand() {
        // n = 99: (n+1) p is whole: the 90th, the 10th, the 97.5th -> 98th, the 2.5th -> 2nd.
        assert_eq!(LEVELS.map(|l| l.rank(99)), [10, 90, 2, 98]);
        // n = 100: ceil(90.9) = 91, floor(10.1) = 10, ceil(98.475) = 99, floor(2.525) = 2.
        assert_eq!(LEVELS.map(|l| l.rank(100)), [10, 91, 2, 99]);
        // Clipped to 1..=n.
        assert_eq!(LEVELS.map(|l| l.rank(3)), [1, 3, 1, 3]);
    }

    #[test]
    fn rank_counts_find_the_kth_smallest() {
        let mut counts = RankCounts::new(10);
        for rank in [7, 2, 9, 4] {
            counts.insert(rank);
        }
        assert_eq!([1, 2, 3, 4].map(|k| counts.kth(k)), [2, 4, 7, 9]);
    }

    #[test]
    fn month_ends_of_a_range() {
        let day = |s: &str| Day::parse(s).unwrap();
        let ends = month_ends(day("2024-01-31"), day("2024-04-29"));
        assert_eq!(ends, [day("2024-01-31"), day("2024-02-29"), day("2024-03-31")]);
        assert!(month_ends(day("2024-02-01"), day("2024-02-28")).is_empty());
    }
}
