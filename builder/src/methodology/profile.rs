//! The two drift profiles, learnt each day from the spells pooled over every company
//! (docs/design.md section 3), causally: on day t only spells completed before t count, each
//! weighted by `w = 2^(-age / H)` with its age in years.
//!
//! - **Fair value (the bridge).** At knots d = 0, .25, .5, .75, 1, 1.5, 2, 3 years:
//!   `f(d) = sum_{g > d} w r d/g / (sum_{g > d} w + K)`: the change that spells which lasted
//!   longer than d had accrued by d on a log-linear path between their two values, shrunk
//!   towards 0; never rising after 1 year; linear between knots, flat after 3 years. The mark
//!   is `ln v_anchor + f(D)`.
//! - **Next print.** Per gap bucket of the spells, `m_b = sum w r / (sum w + K)`, placed at
//!   .25, .75, 1.5 and 3 years after (0, 0): the change the next *reported* value has shown
//!   after silences that long. The forecast is `ln v_anchor + m(D)`.
//!
//! Both hold nothing while the anchor is an agreed sale. The sums are computed for every day in
//! one pass: each is kept relative to an anchor day and scaled to the day with one `exp2`, so no
//! error accumulates from day to day.

use crate::methodology::history::{Anchor, Spell};
use crate::methodology::params::{interpolate, Params, BRIDGE_KNOTS, BUCKETS, PARAMS};
use crate::methodology::DAYS_PER_YEAR;
use marks_format::rules::day::Day;

/// The pooled sums of one day.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Sums {
    /// Per bridge knot, over spells longer than it: sum of w r / g, and of w.
    bridge_change: [f64; BRIDGE_KNOTS],
    bridge_weight: [f64; BRIDGE_KNOTS],
    /// Per gap bucket: sum of w r, and of w.
    next_change: [f64; BUCKETS],
    next_weight: [f64; BUCKETS],
}

impl Sums {
    fn add(&mut self, spell: &Spell, weight: f64, params: &Params) {
        for (k, &knot) in params.profile_knots_years.iter().enumerate() {
            if spell.gap_years > knot {
                self.bridge_change[k] += weight * spell.log_change / spell.gap_years;
                self.bridge_weight[k] += weight;
            }
        }
        let bucket = params.bucket(spell.gap_years);
        self.next_change[bucket] += weight * spell.log_change;
        self.next_weight[bucket] += weight;
    }

    fn scaled(&self, factor: f64) -> Sums {
        Sums {
            bridge_change: self.bridge_change.map(|v| v * factor),
            bridge_weight: self.bridge_weight.map(|v| v * factor),
            next_change: self.next_change.map(|v| v * factor),
            next_weight: self.next_weight.map(|v| v * factor),
        }
    }
}

/// The two profiles on one day, as knot values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Profiles {
    /// f at `profile_knots_years`.
    pub bridge: [f64; BRIDGE_KNOTS],
    /// m at 0 and `next_print_knots_years`.
    pub next: [f64; BUCKETS + 1],
}

impl Profiles {
    fn of(sums: &Sums, params: &Params) -> Profiles {
        let k = params.drift_pseudo_spells;
        // `+ 0.0`: the knot at 0 is 0, never -0.
        let mut bridge: [f64; BRIDGE_KNOTS] = std::array::from_fn(|i| {
            params.profile_knots_years[i] * sums.bridge_change[i] / (sums.bridge_weight[i] + k) + 0.0
        });
        for i in 1..BRIDGE_KNOTS {
            if params.profile_knots_years[i] > params.profile_non_increasing_after_years {
                bridge[i] = bridge[i].min(bridge[i - 1]);
            }
        }
        let mut next = [0.0; BUCKETS + 1];
        for b in 0..BUCKETS {
            next[b + 1] = sums.next_change[b] / (sums.next_weight[b] + k);
        }
        Profiles { bridge, next }
    }

    /// The fair-value drift after `gap_years` of silence, in log units.
    pub fn fair_value_drift(&self, gap_years: f64) -> f64 {
        interpolate(gap_years, &PARAMS.profile_knots_years, &self.bridge)
    }

    /// The next-print drift after `gap_years` of silence, in log units.
    pub fn next_print_drift(&self, gap_years: f64) -> f64 {
        let knots = PARAMS.next_print_knots_years;
        interpolate(gap_years, &[0.0, knots[0], knots[1], knots[2], knots[3]], &self.next)
    }

    /// The fair-value mark (log) on a day `gap_years` after `anchor`, and the drift in it.
    pub fn mark(&self, anchor: &Anchor, gap_years: f64) -> (f64, f64) {
        let drift = if anchor.holds() {
            0.0
        } else {
            self.fair_value_drift(gap_years)
        };
        (anchor.log_value + drift, drift)
    }

    /// The next-print forecast (log) on a day `gap_years` after `anchor`.
    pub fn next_print(&self, anchor: &Anchor, gap_years: f64) -> f64 {
        if anchor.holds() {
            anchor.log_value
        } else {
            anchor.log_value + self.next_print_drift(gap_years)
        }
    }
}

/// The profiles in force on every day up to a last day, from one pass over the days.
#[derive(Clone, Debug)]
pub struct ProfileTable {
    first_day: Day,
    days: Vec<Sums>,
    log2_decay_per_day: f64,
}

impl ProfileTable {
    pub fn new(spells: &[Spell], last_day: Day) -> ProfileTable {
        let params = &PARAMS;
        let log2_decay_per_day = -1.0 / (DAYS_PER_YEAR * params.drift_half_life_years);
        let mut sorted: Vec<&Spell> = spells.iter().collect();
        sorted.sort_by_key(|s| s.completed);
        let Some(first) = sorted.first() else {
            return ProfileTable {
                first_day: last_day.plus(1),
                days: Vec::new(),
                log2_decay_per_day,
            };
        };
        let first_day = first.completed.plus(1);
        // Relative to an anchor day: a spell enters with weight 2^(age of the anchor at its
        // completion); the day's factor 2^(-age of the anchor) makes it 2^(-its own age).
        let mut anchor = first.completed;
        let mut anchored = Sums::default();
        let mut next = 0;
        let mut days = Vec::with_capacity(usize::try_from(last_day.days_since(first_day) + 1).unwrap_or(0));
        let mut day = first_day;
        while day <= last_day {
            while next < sorted.len() && sorted[next].completed < day {
                let spell = sorted[next];
                let weight = (-f64::from(spell.completed.days_since(anchor)) * log2_decay_per_day).exp2();
                anchored.add(spell, weight, params);
                next += 1;
            }
            let factor = (f64::from(day.days_since(anchor)) * log2_decay_per_day).exp2();
            let today = anchored.scaled(factor);
            days.push(today);
            if factor < 1e-100 {
                anchored = today;
                anchor = day;
            }
            day = day.plus(1);
        }
        ProfileTable {
            first_day,
            days,
            log2_decay_per_day,
        }
    }

    /// The profiles in force on `day`: none before a spell completes; after the last tabled day,
    /// the last day's sums aged (no later spell is known).
    pub fn on(&self, day: Day) -> Profiles {
        let offset = day.days_since(self.first_day);
        let sums = if offset < 0 {
            Sums::default()
        } else {
            match self.days.get(offset as usize) {
                Some(sums) => *sums,
                None => match self.days.last() {
                    Some(last) => {
                        let beyond = offset - (self.days.len() as i32 - 1);
                        last.scaled((f64::from(beyond) * self.log2_decay_per_day).exp2())
                    }
                    None => Sums::default(),
                },
            }
        };
        Profiles::of(&sums, &PARAMS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::EventType;

    fn day(n: i32) -> Day {
        Day(2_460_000 + n)
    }

    #[test]
    fn one_spell_by_hand() {
        // One spell of two years that doubled, completed on day 0. On day 1 its weight is
        // 2^(-1/365.25); a knot d < 2 takes w ln2 d/2 / (w + 3), knots at or past 2 nothing.
        let spell = Spell {
            completed: day(0),
            gap_years: 2.0,
            log_change: 2f64.ln(),
        };
        let table = ProfileTable::new(&[spell], day(10));
        let profiles = table.on(day(1));
        let w = (-1.0 / DAYS_PER_YEAR).exp2();
        let f = |d: f64| w * 2f64.ln() * d / 2.0 / (w + 3.0);
        assert!((profiles.bridge[3] - f(0.75)).abs() < 1e-15);
        assert!((profiles.bridge[4] - f(1.0)).abs() < 1e-15);
        // f(1.5) would be higher, but after a year the profile may only fall.
        assert!(f(1.5) > f(1.0));
        assert_eq!(profiles.bridge[5], profiles.bridge[4]);
        // 2 and 3 years: no spell longer, so 0.
        assert_eq!(profiles.bridge[6], 0.0);
        assert_eq!(profiles.bridge[7], 0.0);
        // Bucket 3 (2 years and more) holds it for the next print.
        assert!((profiles.next[4] - w * 2f64.ln() / (w + 3.0)).abs() < 1e-15);
        assert_eq!(profiles.next[1], 0.0);
        // Nothing counts on its own day.
        assert_eq!(table.on(day(0)).bridge, [0.0; BRIDGE_KNOTS]);
        // After the table, the sums age.
        let later = table.on(day(400)).bridge[4];
        let w400 = (-400.0 / DAYS_PER_YEAR).exp2();
        assert!((later - w400 * 2f64.ln() * 0.5 / (w400 + 3.0)).abs() < 1e-15);
    }

    #[test]
    fn the_profile_never_rises_after_a_year() {
        let spells: Vec<Spell> = [(0.9, -0.5), (1.2, 0.1), (2.5, 2.0)]
            .map(|(g, r)| Spell {
                completed: day(0),
                gap_years: g,
                log_change: r,
            })
            .to_vec();
        let profiles = ProfileTable::new(&spells, day(5)).on(day(1));
        for k in 5..BRIDGE_KNOTS {
            assert!(profiles.bridge[k] <= profiles.bridge[k - 1], "{:?}", profiles.bridge);
        }
        let anchor = Anchor {
            day: day(0),
            log_value: 10.0,
            kind: EventType::Acquisition,
            event: 0,
        };
        assert_eq!(profiles.mark(&anchor, 2.0), (10.0, 0.0));
        assert_eq!(profiles.next_print(&anchor, 2.0), 10.0);
    }
}
