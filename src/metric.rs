//! What a part of the server reports to `/metrics`: named counters and gauges, as plain data.
//!
//! Each part that keeps counters (the budget store, the object-store source, the HTTP/2 stream
//! budget, the export decoders, the cache of decoded texts) says what they are and mean
//! through [`Report`], so the exposition (`api::metrics`) asks each for its own and names none
//! of their fields. Like `settings.rs`, it imports nothing of the crate: every arrow to it
//! points down.

/// A Prometheus metric type, as the exposition's `# TYPE` line names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

/// One metric's value at a scrape, with its name and help text.
#[derive(Clone, Copy, Debug)]
pub struct Metric {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: Kind,
    pub value: u64,
}

impl Metric {
    pub fn counter(name: &'static str, help: &'static str, value: u64) -> Metric {
        Metric {
            name,
            help,
            kind: Kind::Counter,
            value,
        }
    }

    pub fn gauge(name: &'static str, help: &'static str, value: u64) -> Metric {
        Metric {
            name,
            help,
            kind: Kind::Gauge,
            value,
        }
    }
}

/// A part of the server with metrics of its own.
pub trait Report {
    /// Its metrics now, in the order the exposition lists them.
    fn metrics(&self) -> Vec<Metric>;
}
