//! Private-market indices: one over every company and one per sector, daily, from the
//! published marks (docs/methodology.md, "Indices").
//!
//! - **Constituents.** A company is in an index from the first day it has a mark (its first
//!   event) until its outcome (a listing, an agreed sale that holds its mark, a bankruptcy),
//!   which it is no longer in: `[first, until)`. A company with no outcome stays to `as_of`.
//! - **Weights.** By value, each capped at 10% (`marks_format::rules::weights`): a capped company's
//!   excess is shared by value among the others; below ten constituents the cap is 1/n. So no
//!   one company (Anthropic, OpenAI) is a quarter of "All companies".
//! - **Chain-linking.** The level moves from one day to the next by the weighted change in value
//!   of the companies that are constituents on both days, weighted on the day before, so a
//!   company entering or leaving moves nothing by itself. The first day with a constituent is
//!   100. A day with no constituent on the day before keeps the level. The uncapped level (plain
//!   value weights, `level(t) = level(t-1) * sum M(t) / sum M(t-1)`) is kept beside it for the
//!   scorecard's comparison.
//! - **Sectors.** A sector index holds at least five constituents on every day it is published: a
//!   sector with fewer than five on the latest day has no index of its own (its companies count
//!   in "other" for their whole history), and an index starts on the first day from which it has
//!   five on every day ([`plan_sector_indices`]).
//! - **Bands.** Day t's 80% (95%) band scales its level by the constituents' band edges over
//!   their marks, weighted as the level is: the basket's value if every constituent sat at the
//!   same edge of its band at once. Quantiles add up for errors that move together (comonotone),
//!   so these are the widest bands any positive dependence between companies gives; the earlier
//!   links of the chain are taken as marked.

use crate::methodology::fit::MarkDay;
use crate::methodology::usd;
use marks_format::rules::day::Day;
use marks_format::rules::weights::{capped, MIN_SECTOR_COMPANIES};

/// At most this many constituents can be held at the cap (1 / `marks_format::rules::weights::WEIGHT_CAP`):
/// the largest this many are all the capping ever needs to see.
const LARGEST: usize = 10;

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
        Membership::between(first, after_series, outcome)
    }

    /// From the first and the day after the last day a company is marked, and the day of its
    /// outcome, if any.
    pub fn between(first: Day, after_series: Day, outcome: Option<Day>) -> Option<Membership> {
        let until = outcome.map_or(after_series, |day| day.min(after_series));
        (until > first).then_some(Membership { first, until })
    }

    /// The same days from `start` on, if any remain.
    pub fn from(self, start: Day) -> Option<Membership> {
        let first = self.first.max(start);
        (self.until > first).then_some(Membership { first, ..self })
    }
}

/// Each index's constituents on `as_of` with their published marks (whole dollars) and bands:
/// what the builder stores as the latest day's constituents (`rules::constituents`).
#[derive(Debug)]
pub struct LatestMembers {
    as_of: Day,
    /// Per index number: each constituent's company position and its
    /// `[mark, lower80, upper80, lower95, upper95]`.
    pub members: Vec<Vec<(usize, [u64; 5])>>,
}

impl LatestMembers {
    pub fn new(as_of: Day, indices: usize) -> LatestMembers {
        LatestMembers {
            as_of,
            members: vec![Vec::new(); indices],
        }
    }

    /// Counts company `position` in `index` when it is a constituent on `as_of`.
    pub fn add(&mut self, index: usize, position: usize, series: &[MarkDay], membership: Membership) {
        let in_on_as_of = membership.first <= self.as_of && self.as_of < membership.until;
        let Some(point) = series.last().filter(|p| p.day == self.as_of && in_on_as_of) else {
            return;
        };
        let numbers = [
            point.mark,
            point.band80.0,
            point.band80.1,
            point.band95.0,
            point.band95.1,
        ]
        .map(usd);
        if let Some(members) = self.members.get_mut(index) {
            members.push((position, numbers));
        }
    }
}

/// Which index each company counts in beside "all", and from which day each index counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectorIndices {
    /// Per company (in the order given), the number of its index beside "all" (0 is "all"):
    /// its sector's, or "other"'s when its sector folds.
    pub index_of: Vec<usize>,
    /// Per index number, the first day its constituents count (from it to `as_of` it has at
    /// least `MIN_SECTOR_COMPANIES` every day); a day after `as_of` for an index that has fewer
    /// on `as_of`.
    pub starts: Vec<Day>,
}

/// Plans the sector indices: `sector_of[c]` is company c's sector as an index number (1..), with
/// `other` the number of "other"; `memberships[c]` the days it counts. A sector with fewer than
/// `MIN_SECTOR_COMPANIES` constituents on `as_of` folds into "other" for its whole history; each
/// index then starts on the first day from which it has at least that many on every day to
/// `as_of` (its earlier days, when it had fewer, are not published).
pub fn plan_sector_indices(
    sector_of: &[usize],
    memberships: &[Option<Membership>],
    other: usize,
    indices: usize,
    origin: Day,
    as_of: Day,
) -> SectorIndices {
    let days = usize::try_from(as_of.days_since(origin) + 1).unwrap_or(0);
    let counts = |index_of: &[usize]| {
        let mut change = vec![vec![0i64; days + 1]; indices];
        for (&index, membership) in index_of.iter().zip(memberships) {
            let Some(m) = membership else { continue };
            let slot = |day: Day| usize::try_from(day.days_since(origin)).unwrap_or(0).min(days);
            change[index][slot(m.first)] += 1;
            change[index][slot(m.until)] -= 1;
        }
        change
            .into_iter()
            .map(|deltas| {
                deltas[..days]
                    .iter()
                    .scan(0i64, |count, delta| {
                        *count += delta;
                        Some(*count)
                    })
                    .collect::<Vec<i64>>()
            })
            .collect::<Vec<_>>()
    };
    let enough = MIN_SECTOR_COMPANIES as i64;
    // The first day of the last run of days with enough constituents that reaches `as_of`.
    let first_full = |daily: &[i64]| match daily.iter().rposition(|&n| n < enough) {
        None if !daily.is_empty() => Some(0),
        Some(last_short) if last_short + 1 < daily.len() => Some(last_short + 1),
        _ => None,
    };
    let holds = |daily: &[i64]| first_full(daily).is_some();
    let before = counts(sector_of);
    let index_of: Vec<usize> = sector_of
        .iter()
        .map(|&index| {
            if index == other || holds(&before[index]) {
                index
            } else {
                other
            }
        })
        .collect();
    let after = counts(&index_of);
    let starts = after
        .iter()
        .map(|daily| origin.plus(first_full(daily).unwrap_or(days) as i32))
        .collect();
    SectorIndices { index_of, starts }
}

/// One day of an index.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IndexDay {
    pub day: Day,
    pub level: f64,
    pub band80: (f64, f64),
    pub band95: (f64, f64),
    pub constituents: u32,
    /// The level with plain value weights, uncapped.
    pub uncapped_level: f64,
    /// The largest constituent's share of the day's value, before capping.
    pub largest_share: f64,
}

/// The largest entries of a day by their first number, descending, at most `LARGEST`.
#[derive(Clone, Debug, Default)]
struct Largest<T>(Vec<(f64, T)>);

impl<T: Copy> Largest<T> {
    fn add(&mut self, key: f64, value: T) {
        if self.0.len() == LARGEST && self.0.last().is_some_and(|(k, _)| *k >= key) {
            return;
        }
        let at = self.0.partition_point(|(k, _)| *k >= key);
        self.0.insert(at, (key, value));
        self.0.truncate(LARGEST);
    }

    fn keys(&self) -> Vec<f64> {
        self.0.iter().map(|(k, _)| *k).collect()
    }
}

/// What one index sums on each day.
#[derive(Clone, Debug, Default)]
struct Sums {
    /// Over the companies in on this day and the day before: their marks on each day, their
    /// count, and the largest of them by the mark of the day before.
    linked_before: Vec<f64>,
    linked_today: Vec<f64>,
    linked_count: Vec<u32>,
    linked_largest: Vec<Largest<f64>>,
    /// Over the constituents of the day: marks, band edges, count, and the largest by mark.
    value: Vec<f64>,
    bands: Vec<[f64; 4]>,
    count: Vec<u32>,
    largest: Vec<Largest<[f64; 4]>>,
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
            linked_count: vec![0; days],
            linked_largest: vec![Largest::default(); days],
            value: vec![0.0; days],
            bands: vec![[0.0; 4]; days],
            count: vec![0; days],
            largest: vec![Largest::default(); days],
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
                sums.largest[slot].add(mark, edges);
                for (sum, edge) in sums.bands[slot].iter_mut().zip(edges) {
                    *sum += edge;
                }
                if let Some((day, mark_before)) = before {
                    if day.plus(1) == point.day {
                        sums.linked_before[slot] += mark_before;
                        sums.linked_today[slot] += mark;
                        sums.linked_count[slot] += 1;
                        sums.linked_largest[slot].add(mark_before, mark);
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
                let mut levels: Option<(f64, f64)> = None;
                for slot in 0..sums.count.len() {
                    if sums.count[slot] == 0 {
                        continue;
                    }
                    let (before, today) = (sums.linked_before[slot], sums.linked_today[slot]);
                    let (level, uncapped) = match levels {
                        None => (100.0, 100.0),
                        Some((level, uncapped)) if before > 0.0 => (
                            level * capped_change(&sums.linked_largest[slot], before, today, sums.linked_count[slot]),
                            uncapped * today / before,
                        ),
                        Some(kept) => kept,
                    };
                    levels = Some((level, uncapped));
                    let ratios = capped_band_ratios(
                        &sums.largest[slot],
                        sums.value[slot],
                        sums.bands[slot],
                        sums.count[slot],
                    );
                    let largest_share = sums.largest[slot].0.first().map_or(0.0, |(mark, _)| {
                        if sums.value[slot] > 0.0 {
                            mark / sums.value[slot]
                        } else {
                            0.0
                        }
                    });
                    days.push(IndexDay {
                        day: origin.plus(slot as i32),
                        level,
                        band80: (level * ratios[0], level * ratios[1]),
                        band95: (level * ratios[2], level * ratios[3]),
                        constituents: sums.count[slot],
                        uncapped_level: uncapped,
                        largest_share,
                    });
                }
                days
            })
            .collect()
    }
}

/// A day's change of a capped index: the capped constituents' own changes at the cap, the rest
/// by value, weighted on the day before.
fn capped_change(largest: &Largest<f64>, before: f64, today: f64, n: u32) -> f64 {
    let (held, cap) = capped(&largest.keys(), before, n as usize);
    let held_entries = &largest.0[..held];
    let rest_before = before - held_entries.iter().map(|(b, _)| b).sum::<f64>();
    let rest_today = today - held_entries.iter().map(|(_, t)| t).sum::<f64>();
    let held_change: f64 = held_entries
        .iter()
        .map(|(b, t)| if *b > 0.0 { cap * t / b } else { cap })
        .sum();
    let rest_weight = 1.0 - cap * held as f64;
    held_change
        + if rest_before > 0.0 {
            rest_weight * rest_today / rest_before
        } else {
            0.0
        }
}

/// A day's band edges over its level, weighted as the level is: each capped constituent's edge
/// over its mark at the cap, the rest's summed edges over their summed marks.
fn capped_band_ratios(largest: &Largest<[f64; 4]>, value: f64, bands: [f64; 4], n: u32) -> [f64; 4] {
    if value <= 0.0 {
        return [1.0; 4];
    }
    let (held, cap) = capped(&largest.keys(), value, n as usize);
    let held_entries = &largest.0[..held];
    let rest_value = value - held_entries.iter().map(|(m, _)| m).sum::<f64>();
    let rest_weight = 1.0 - cap * held as f64;
    std::array::from_fn(|edge| {
        let held_part: f64 = held_entries
            .iter()
            .map(|(mark, edges)| if *mark > 0.0 { cap * edges[edge] / mark } else { cap })
            .sum();
        let rest_edges = bands[edge] - held_entries.iter().map(|(_, edges)| edges[edge]).sum::<f64>();
        held_part
            + if rest_value > 0.0 {
                rest_weight * rest_edges / rest_value
            } else {
                0.0
            }
    })
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

    /// Twelve companies: one of 50 that rises 10%, eleven of 5 that stay put. Value-weighted the
    /// index would rise (55 + 55) / 105 - 1 = 4.76%; capped, the large one weighs 10%: +1%.
    #[test]
    fn a_capped_constituent_moves_the_index_by_its_cap() {
        let mut builder = IndexBuilder::new(day(0), day(1), 1);
        let big = series(0, &[50_000.0, 55_000.0]);
        builder.add(&[0], &big, Membership::of(&big, None).unwrap());
        for _ in 0..11 {
            let small = series(0, &[5_000.0, 5_000.0]);
            builder.add(&[0], &small, Membership::of(&small, None).unwrap());
        }
        let index = builder.finish().remove(0);
        assert!((index[1].level - 101.0).abs() < 1e-9, "{:?}", index[1]);
        assert!((index[1].uncapped_level - 100.0 * 110.0 / 105.0).abs() < 1e-9);
        assert!((index[0].largest_share - 50.0 / 105.0).abs() < 1e-12);
        // Every band is half and twice its mark, so the capped band is too.
        assert!((index[1].band80.0 - 50.5).abs() < 1e-9 && (index[1].band80.1 - 202.0).abs() < 1e-9);
    }

    #[test]
    fn a_sector_index_holds_five_on_every_day_it_is_published_or_folds_into_other() {
        let member = |first: i32, until: i32| Membership::between(day(first), day(until), None);
        // Index 1: five on days 1, then four on day 2, five again from day 3 to the end. Index
        // 2: five from day 0, four from day 5 (one leaves). Index 3 is "other", two of its own.
        let mut sector_of = vec![1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 3, 3];
        let mut memberships = vec![
            member(0, 10),
            member(0, 10),
            member(1, 10),
            member(1, 10),
            member(1, 2),
            member(3, 10),
            member(0, 10),
            member(0, 10),
            member(0, 10),
            member(0, 10),
            member(0, 5),
            member(0, 10),
            member(3, 10),
        ];
        let plan = plan_sector_indices(&sector_of, &memberships, 3, 4, day(0), day(9));
        assert_eq!(plan.index_of, vec![1, 1, 1, 1, 1, 1, 3, 3, 3, 3, 3, 3, 3]);
        assert_eq!(plan.starts[1], day(3), "from the first day of its last run of five");
        assert_eq!(
            plan.starts[3],
            day(0),
            "other has five from day 0 with the folded sector"
        );
        assert!(plan.starts[2] > day(9), "a folded sector's index has no day");
        // One more in sector 2 from day 5 keeps it at five on the latest day: it stays.
        sector_of.push(2);
        memberships.push(member(5, 10));
        let plan = plan_sector_indices(&sector_of, &memberships, 3, 4, day(0), day(9));
        assert_eq!(plan.index_of[6], 2);
        assert_eq!(plan.starts[2], day(0));
        assert!(plan.starts[3] > day(9), "other's two never make five");
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
