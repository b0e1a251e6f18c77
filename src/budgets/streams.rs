//! The budget of HTTP/2 stream tasks across the whole server: how many are alive and how many
//! may be, and each task's place in it (`server::h2_streams` runs the tasks and resets the
//! stalled ones).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// The HTTP/2 stream tasks alive across the server, and how many may be.
#[derive(Debug)]
pub struct StreamBudget {
    open: AtomicUsize,
    limit: AtomicUsize,
    /// Requests answered 503 because the budget was full.
    pub refused: AtomicU64,
    /// Streams reset because they made no progress for the stall deadline.
    pub stalled: AtomicU64,
    /// Streams reset unanswered because even the 503s filled the budget's headroom.
    pub dropped: AtomicU64,
}

impl StreamBudget {
    pub fn new(limit: usize) -> StreamBudget {
        StreamBudget {
            open: AtomicUsize::new(0),
            limit: AtomicUsize::new(limit),
            refused: AtomicU64::new(0),
            stalled: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    /// The most stream tasks ever alive: the limit, and an eighth more (at least 16) for the
    /// 503s that answer past it.
    pub fn hard_limit(&self) -> usize {
        let limit = self.limit();
        limit.saturating_add((limit / 8).max(16))
    }

    pub fn set_limit(&self, limit: usize) {
        self.limit.store(limit, Relaxed);
    }

    pub fn limit(&self) -> usize {
        self.limit.load(Relaxed)
    }

    pub fn open(&self) -> usize {
        self.open.load(Relaxed)
    }

    /// Whether a new stream would go past the budget; counts the refusal it leads to.
    pub fn refuses_another(&self) -> bool {
        let full = self.open() >= self.limit();
        if full {
            self.refused.fetch_add(1, Relaxed);
        }
        full
    }
}

/// One stream's place in the budget, given back when its task ends.
#[derive(Debug)]
pub struct StreamSlot(Arc<StreamBudget>);

impl StreamSlot {
    /// The budget the place is in.
    pub fn budget(&self) -> &StreamBudget {
        &self.0
    }

    /// A place among the streams held, unless the hard limit is reached: checked and taken in
    /// one step, so streams started at once on several threads cannot pass it.
    pub fn take(budget: &Arc<StreamBudget>) -> Option<StreamSlot> {
        let hard = budget.hard_limit();
        budget
            .open
            .fetch_update(Relaxed, Relaxed, |open| (open < hard).then_some(open + 1))
            .ok()
            .map(|_| StreamSlot(budget.clone()))
    }
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Relaxed);
    }
}

impl crate::metric::Report for StreamBudget {
    fn metrics(&self) -> Vec<crate::metric::Metric> {
        use crate::metric::Metric;
        vec![
            Metric::counter(
                "marks_h2_streams_stalled_total",
                "HTTP/2 streams reset because their response made no progress for the stream deadline.",
                self.stalled.load(Relaxed),
            ),
            Metric::counter(
                "marks_h2_streams_refused_total",
                "HTTP/2 requests answered 503 because the server held its budget of streams.",
                self.refused.load(Relaxed),
            ),
            Metric::counter(
                "marks_h2_streams_dropped_total",
                "HTTP/2 streams reset unanswered because the budget and its headroom for 503s were full.",
                self.dropped.load(Relaxed),
            ),
            Metric::gauge(
                "marks_h2_streams_open",
                "HTTP/2 streams whose response is being sent now.",
                self.open() as u64,
            ),
        ]
    }
}
