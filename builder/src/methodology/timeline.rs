//! A value that changes on given days, read by day: the bands and confidence in force on each
//! day, set by the month-end residuals known by then.

use marks_format::rules::day::Day;

/// `values[i]` holds from `starts[i]` until the next start; before the first, `before`.
#[derive(Clone, Debug)]
pub struct StepTimeline<T> {
    starts: Vec<Day>,
    values: Vec<T>,
    before: T,
}

impl<T: Clone> StepTimeline<T> {
    pub fn new(before: T) -> StepTimeline<T> {
        StepTimeline {
            starts: Vec::new(),
            values: Vec::new(),
            before,
        }
    }

    /// Sets the value from `start` on; starts must not decrease (a repeated start replaces).
    pub fn push(&mut self, start: Day, value: T) {
        match self.starts.last() {
            Some(&last) if last == start => {
                if let Some(slot) = self.values.last_mut() {
                    *slot = value;
                }
            }
            _ => {
                self.starts.push(start);
                self.values.push(value);
            }
        }
    }

    pub fn at(&self, day: Day) -> &T {
        match self.starts.partition_point(|&s| s <= day) {
            0 => &self.before,
            i => &self.values[i - 1],
        }
    }

    /// The same steps with each value mapped.
    pub fn map<U>(&self, f: impl Fn(&T) -> U) -> StepTimeline<U> {
        StepTimeline {
            starts: self.starts.clone(),
            values: self.values.iter().map(&f).collect(),
            before: f(&self.before),
        }
    }

    /// A reader for days visited in increasing order, in O(1) amortised per day.
    pub fn cursor(&self) -> TimelineCursor<'_, T> {
        TimelineCursor {
            timeline: self,
            next: 0,
        }
    }
}

#[derive(Debug)]
pub struct TimelineCursor<'a, T> {
    timeline: &'a StepTimeline<T>,
    next: usize,
}

impl<'a, T: Clone> TimelineCursor<'a, T> {
    pub fn at(&mut self, day: Day) -> &'a T {
        let starts = &self.timeline.starts;
        if self.next > 0 && starts[self.next - 1] > day {
            self.next = starts.partition_point(|&s| s <= day);
        }
        while self.next < starts.len() && starts[self.next] <= day {
            self.next += 1;
        }
        match self.next {
            0 => &self.timeline.before,
            i => &self.timeline.values[i - 1],
        }
    }
}
