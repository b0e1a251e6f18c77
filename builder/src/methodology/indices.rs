//! Private-market indices: one over every company and one per sector, daily, from the
//! published marks (docs/methodology.md, "Indices").
//!
//! - **Constituents.** A company is in an index from the first day it has a mark (its first
//!   event) until its outcome (a listing, an agreed sale that holds its mark, a bankruptcy),
//!   which it is no longer in: `[first, until)`. A company with no outcome stays to `as_of`.
//! - **Weights.** By value: each constituent's published mark (whole dollars) over their sum.
//! - **Chain-linking.** The level moves from one day to the next by the change in value of the
//!   companies that are constituents on both days, `level(t) = level(t-1) * sum M(t) / sum
//!   M(t-1)` over them, so a company entering or leaving moves nothing by itself. The first day
//!   with a constituent is 100. A day with no constituent on the day before keeps the level.
//! - **Bands.** Day t's 80% (95%) band scales its level by the constituents' summed band edges
//!   over their summed marks: the basket's value if every constituent sat at the same edge of
//!   its band at once. Sums of quantiles are the quantiles of the sum when errors move together
//!   (comonotone), so these are the widest bands any positive dependence between companies
//!   gives; the earlier links of the chain are taken as marked.

use crate::methodology::fit::MarkDay;
use crate::methodology::usd;
use marks_format::day::Day;

/// The days a company counts in the indices: from `first` up to, not including, `until`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Membership {
    pub first: Day,
    pub until: Day,
}

impl Membership {
    /// From a company's series and the day of its outcome, if any.
    pub fn of(series: &[MarkDay], outcome: Option<Day>) -> Option<Membership> {
        let first = series.first()?.day;
        let after_series = series.last()?.day.plus(1);
        let until = outcome.map_or(after_series, |day| day.min(after_series));
        (until > first).then_some(Membership { first, until })
    }
}

/// One day of an index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexDay {
    pub day: Day,
    pub level: f64,
    pub band80: (f64, f64),
    pub band95: (f64, f64),
    pub constituents: u32,
}

/// What one index sums on each day.
#[derive(Clone, Debug, Default)]
struct Sums {
    /// Over the companies in on this day and the day before: their marks on each day.
    linked_before: Vec<f64>,
    linked_today: Vec<f64>,
    /// Over the constituents of the day: marks, band edges, count.
    value: Vec<f64>,
    bands: Vec<[f64; 4]>,
    count: Vec<u32>,
}

/// Sums of every index over the days from `origin` to `last`, as companies are added one by
/// one (in any order).
#[derive(Debug)]
pub struct IndexBuilder {
    origin: Day,
    days: usize,
    sums: Vec<Sums>,
}

impl IndexBuilder {
    pub fn new(origin: Day, last: Day, indices: usize) -> IndexBuilder {
        let days = usize::try_from(last.days_since(origin) + 1).unwrap_or(0);
        let sums = Sums {
            linked_before: vec![0.0; days],
            linked_today: vec![0.0; days],
            value: vec![0.0; days],
            bands: vec![[0.0; 4]; days],
            count: vec![0; days],
        };
        IndexBuilder {
            origin,
            days,
            sums: vec![sums; indices],
        }
    }

    /// Adds a company's published marks to the indices it belongs to.
    pub fn add(&mut self, indices: &[usize], series: &[MarkDay], membership: Membership) {
        let mut before: Option<(Day, f64)> = None;
        for point in series {
            if point.day < membership.first || point.day >= membership.until {
                continue;
            }
            let Ok(slot) = usize::try_from(point.day.days_since(self.origin)) else {
                continue;
            };
            if slot >= self.days {
                continue;
            }
            // The published numbers: whole dollars.
            let mark = usd(point.mark) as f64;
            let edges = [point.band80.0, point.band80.1, point.band95.0, point.band95.1].map(|e| usd(e) as f64);
            for &index in indices {
                let sums = &mut self.sums[index];
                sums.value[slot] += mark;
                sums.count[slot] += 1;
                for (sum, edge) in sums.bands[slot].iter_mut().zip(edges) {
                    *sum += edge;
                }
                if let Some((day, mark_before)) = before {
                    if day.plus(1) == point.day {
                        sums.linked_before[slot] += mark_before;
                        sums.linked_today[slot] += mark;
                    }
                }
            }
            before = Some((point.day, mark));
        }
    }

    /// Each index's days, in the order the indices were numbered.
    pub fn finish(self) -> Vec<Vec<IndexDay>> {
        let origin = self.origin;
        self.sums
            .into_iter()
            .map(|sums| {
                let mut days = Vec::new();
                let mut level: Option<f64> = None;
                for slot in 0..sums.count.len() {
                    if sums.count[slot] == 0 {
                        continue;
                    }
                    let next = match level {
                        None => 100.0,
                        Some(level) if sums.linked_before[slot] > 0.0 => {
                            level * sums.linked_today[slot] / sums.linked_before[slot]
                        }
                        Some(level) => level,
                    };
                    level = Some(next);
                    let value = sums.value[slot];
                    let scale = |edge: f64| if value > 0.0 { next * edge / value } else { next };
                    let [l80, u80, l95, u95] = sums.bands[slot];
                    days.push(IndexDay {
                        day: origin.plus(slot as i32),
                        level: next,
                        band80: (scale(l80), scale(u80)),
                        band95: (scale(l95), scale(u95)),
                        constituents: sums.count[slot],
                    });
                }
                days
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(n: i32) -> Day {
        Day(2_460_000 + n)
    }

    fn series(first: i32, marks: &[f64]) -> Vec<MarkDay> {
        marks
            .iter()
            .enumerate()
            .map(|(i, &mark)| MarkDay {
                day: day(first + i as i32),
                mark,
                band80: (mark * 0.5, mark * 2.0),
                band95: (mark * 0.25, mark * 4.0),
            })
            .collect()
    }

    #[test]
    fn entries_and_exits_move_nothing_and_returns_are_value_weighted() {
        // A from day 0; B enters on day 2 at ten times A's size; A leaves on day 3.
        let a = series(0, &[100.0, 110.0, 120.0, 500.0]);
        let b = series(2, &[1000.0, 900.0, 990.0]);
        let mut builder = IndexBuilder::new(day(0), day(4), 1);
        builder.add(&[0], &a, Membership::of(&a, Some(day(3))).unwrap());
        builder.add(&[0], &b, Membership::of(&b, None).unwrap());
        let index = builder.finish().remove(0);
        let levels: Vec<f64> = index.iter().map(|d| d.level).collect();
        // Day 1: A +10%. Day 2: B enters, only A links: 110 -> 120. Day 3: A has left (its 500
        // is not counted), B -10%. Day 4: B +10%.
        let expected = [100.0, 110.0, 120.0, 108.0, 118.8];
        for (got, want) in levels.iter().zip(expected) {
            assert!((got - want).abs() < 1e-9, "{levels:?}");
        }
        assert_eq!(
            index.iter().map(|d| d.constituents).collect::<Vec<_>>(),
            [1, 1, 2, 1, 1]
        );
        // Every constituent's band is half and twice its mark (whole dollars), so the index's is too.
        assert!((index[2].band80.0 - 60.0).abs() < 1e-9 && (index[2].band80.1 - 240.0).abs() < 1e-9);
    }

    #[test]
    fn a_company_whose_outcome_is_its_first_day_is_never_in() {
        let a = series(0, &[100.0]);
        assert_eq!(Membership::of(&a, Some(day(0))), None);
        assert_eq!(
            Membership::of(&a, None),
            Some(Membership {
                first: day(0),
                until: day(1)
            })
        );
    }
}
