//! Prometheus metrics: counters and a latency histogram in fixed arrays of atomics.
//!
//! Every label set is known in advance (operation x status), so recording a request is a
//! couple of relaxed atomic adds with no lock and no allocation; the text exposition is
//! rendered only when `/metrics` is scraped.

use std::fmt::Write;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use crate::api::routes::Operation;
use crate::budgets::shared::SharedBudgets;
use crate::budgets::streams::StreamBudget;
use crate::metric::Report;
use crate::response::body::Decoders;
use crate::snapshot::object_store::SnapshotSource;

/// The statuses the server produces; anything else is counted as "other".
const STATUSES: [u16; 15] = [
    200, 206, 304, 400, 401, 403, 404, 405, 408, 416, 422, 429, 431, 500, 503,
];
/// Latency bucket upper bounds, in seconds.
const BUCKETS: [f64; 12] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.1, 0.5, 1.0,
];

/// Requests by operation and status column (arrays of more than 32 have no derived Default).
#[derive(Debug)]
struct RequestCounts([[AtomicU64; STATUSES.len() + 1]; Operation::ALL.len()]);

impl Default for RequestCounts {
    fn default() -> RequestCounts {
        RequestCounts(std::array::from_fn(|_| Default::default()))
    }
}

impl std::ops::Deref for RequestCounts {
    type Target = [[AtomicU64; STATUSES.len() + 1]; Operation::ALL.len()];

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

#[derive(Debug, Default)]
pub struct Metrics {
    requests: RequestCounts,
    latency: [AtomicU64; BUCKETS.len() + 1],
    latency_micros_sum: AtomicU64,
    response_bytes: AtomicU64,
    pub rate_limited: AtomicU64,
    pub auth_throttled: AtomicU64,
    pub connections_open: AtomicI64,
    pub connections_accepted: AtomicU64,
    pub connection_errors: AtomicU64,
    /// Access-log lines dropped because the log's destination fell behind.
    pub access_log_dropped: AtomicU64,
    /// Connections closed at accept because their address held its cap.
    pub connections_refused_per_address: AtomicU64,
    /// The file watcher ended by a panic and was started again.
    pub watcher_restarts: AtomicU64,
    /// Looks at the watched files that did not answer within their time bound (a hung mount).
    pub file_look_timeouts: AtomicU64,
}

/// What the exposition needs from the rest of the server at scrape time.
#[derive(Debug, Default)]
pub struct ScrapeInputs<'a> {
    pub dataset_version: Option<&'a str>,
    pub methodology_version: Option<&'a str>,
    pub snapshot_bytes: u64,
    pub snapshot_loaded_at: Option<u64>,
    pub last_refusal_at: Option<u64>,
    pub snapshot_loads: u64,
    pub snapshot_refusals: u64,
    pub snapshot_rollbacks_refused: u64,
    pub keys_loads: u64,
    pub keys_refusals: u64,
    pub keys: usize,
    pub buckets: usize,
    /// Failed-authentication buckets dropped to keep that table under its maximum.
    pub throttle_buckets_dropped: u64,
    /// With `--budget-store`: the shared store's counters and mode.
    pub budget_store: Option<&'a SharedBudgets>,
    /// With `--snapshot-from`: the object store's counters.
    pub snapshot_source: Option<&'a SnapshotSource>,
    /// The server's HTTP/2 streams: open, reset when stalled, refused past the budget.
    pub h2_streams: Option<&'a StreamBudget>,
    /// Exports decoded for clients without gzip: refused for a key's share, cut for slowness.
    pub export_decoders: Option<&'a Decoders>,
    /// The snapshot in force's cache of decoded series.
    pub decoded_texts: Option<&'a crate::snapshot::decoded::DecodedTexts>,
}

impl Metrics {
    pub fn record(&self, operation: Operation, status: u16, elapsed: Duration, bytes: usize) {
        let column = STATUSES.iter().position(|&s| s == status).unwrap_or(STATUSES.len());
        self.requests[operation.index()][column].fetch_add(1, Relaxed);
        let seconds = elapsed.as_secs_f64();
        let bucket = BUCKETS.iter().position(|&b| seconds <= b).unwrap_or(BUCKETS.len());
        self.latency[bucket].fetch_add(1, Relaxed);
        self.latency_micros_sum
            .fetch_add(elapsed.as_micros().min(u128::from(u64::MAX)) as u64, Relaxed);
        self.response_bytes.fetch_add(bytes as u64, Relaxed);
    }

    pub fn requests(&self, operation: Operation, status: u16) -> u64 {
        STATUSES
            .iter()
            .position(|&s| s == status)
            .map_or(0, |column| self.requests[operation.index()][column].load(Relaxed))
    }

    /// The Prometheus text exposition format, version 0.0.4.
    pub fn render(&self, gauges: &ScrapeInputs<'_>) -> String {
        let mut out = String::with_capacity(8192);
        let _ = self.write(&mut out, gauges);
        out
    }

    fn write(&self, out: &mut String, g: &ScrapeInputs<'_>) -> std::fmt::Result {
        self.write_requests(out)?;
        self.write_counters(out, g)?;
        self.write_gauges(out, g)
    }

    /// Requests by operation and status, and the handler's latency histogram.
    fn write_requests(&self, out: &mut String) -> std::fmt::Result {
        writeln!(
            out,
            "# HELP marks_requests_total Requests answered, by operation and HTTP status."
        )?;
        writeln!(out, "# TYPE marks_requests_total counter")?;
        for operation in Operation::ALL {
            for (column, counter) in self.requests[operation.index()].iter().enumerate() {
                let count = counter.load(Relaxed);
                if count > 0 {
                    let status = STATUSES.get(column).map_or("other".to_string(), |s| s.to_string());
                    writeln!(
                        out,
                        "marks_requests_total{{operation=\"{}\",status=\"{status}\"}} {count}",
                        operation.name()
                    )?;
                }
            }
        }
        writeln!(
            out,
            "# HELP marks_request_duration_seconds Time to answer a request, in the handler."
        )?;
        writeln!(out, "# TYPE marks_request_duration_seconds histogram")?;
        let mut cumulative = 0;
        for (bound, counter) in BUCKETS.iter().zip(&self.latency) {
            cumulative += counter.load(Relaxed);
            writeln!(
                out,
                "marks_request_duration_seconds_bucket{{le=\"{bound}\"}} {cumulative}"
            )?;
        }
        cumulative += self.latency[BUCKETS.len()].load(Relaxed);
        writeln!(out, "marks_request_duration_seconds_bucket{{le=\"+Inf\"}} {cumulative}")?;
        let sum = self.latency_micros_sum.load(Relaxed) as f64 / 1e6;
        writeln!(out, "marks_request_duration_seconds_sum {sum}")?;
        writeln!(out, "marks_request_duration_seconds_count {cumulative}")?;
        Ok(())
    }

    /// The server's own counters, the watcher's, and each component's report (decoders, HTTP/2
    /// streams, the shared budget store, the snapshot source).
    fn write_counters(&self, out: &mut String, g: &ScrapeInputs<'_>) -> std::fmt::Result {
        let counters = [
            (
                "marks_response_body_bytes_total",
                "Response body bytes sent.",
                &self.response_bytes,
            ),
            (
                "marks_rate_limited_total",
                "Requests refused with 429 because a key's budget was spent.",
                &self.rate_limited,
            ),
            (
                "marks_auth_throttled_total",
                "Failed authentications refused with 429 because their address failed too often.",
                &self.auth_throttled,
            ),
            (
                "marks_connections_accepted_total",
                "Connections accepted.",
                &self.connections_accepted,
            ),
            (
                "marks_connection_errors_total",
                "Connections that ended in an error (timeouts, malformed requests, resets).",
                &self.connection_errors,
            ),
            (
                "marks_access_log_dropped_total",
                "Access-log lines dropped because the log's destination fell behind.",
                &self.access_log_dropped,
            ),
            (
                "marks_connections_refused_per_address_total",
                "Connections closed at accept because their client address (IPv6: /64) held its cap.",
                &self.connections_refused_per_address,
            ),
            (
                "marks_watcher_restarts_total",
                "Times the snapshot and keys watcher panicked and was started again.",
                &self.watcher_restarts,
            ),
            (
                "marks_file_look_timeouts_total",
                "Looks at the snapshot and keys files skipped because the filesystem did not answer in time.",
                &self.file_look_timeouts,
            ),
        ];
        write_counter_list(out, &counters)?;
        for (name, help, value) in [
            (
                "marks_snapshot_loads_total",
                "Snapshots loaded and published.",
                g.snapshot_loads,
            ),
            (
                "marks_snapshot_refusals_total",
                "Snapshot files refused (failed a check); the previous one kept serving.",
                g.snapshot_refusals,
            ),
            (
                "marks_snapshot_rollbacks_refused_total",
                "Of the snapshot files refused, the valid ones that did not succeed the snapshot in force (an older dataset version, a rewritten publication log); see --allow-rollback.",
                g.snapshot_rollbacks_refused,
            ),
            ("marks_keys_reloads_total", "Keys files loaded.", g.keys_loads),
            (
                "marks_keys_refusals_total",
                "Keys files refused; the previous keys stayed in force.",
                g.keys_refusals,
            ),
        ] {
            write_metric(out, name, help, "counter", value)?;
        }
        write_metric(
            out,
            "marks_auth_throttle_dropped_total",
            "Failed-authentication buckets dropped (least recently used first) to keep that table under its maximum.",
            "counter",
            g.throttle_buckets_dropped,
        )?;
        let parts: [Option<&dyn Report>; 5] = [
            g.export_decoders.map(|d| d as &dyn Report),
            g.decoded_texts.map(|s| s as &dyn Report),
            g.h2_streams.map(|s| s as &dyn Report),
            g.budget_store.map(|s| s as &dyn Report),
            g.snapshot_source.map(|s| s as &dyn Report),
        ];
        for metric in parts.into_iter().flatten().flat_map(|part| part.metrics()) {
            write_metric(out, metric.name, metric.help, metric.kind.as_str(), metric.value)?;
        }
        Ok(())
    }

    /// What is in force now: connections, the snapshot, the keys, the buckets.
    fn write_gauges(&self, out: &mut String, g: &ScrapeInputs<'_>) -> std::fmt::Result {
        let gauges: [(&str, &str, String); 6] = [
            (
                "marks_connections_open",
                "Connections open now.",
                self.connections_open.load(Relaxed).to_string(),
            ),
            (
                "marks_snapshot_bytes",
                "Size of the snapshot being served.",
                g.snapshot_bytes.to_string(),
            ),
            (
                "marks_snapshot_loaded_timestamp_seconds",
                "When the snapshot being served was loaded.",
                g.snapshot_loaded_at.unwrap_or(0).to_string(),
            ),
            (
                "marks_snapshot_last_refusal_timestamp_seconds",
                "When a snapshot file was last refused (0: never).",
                g.last_refusal_at.unwrap_or(0).to_string(),
            ),
            ("marks_api_keys", "Keys in the keys file in force.", g.keys.to_string()),
            (
                "marks_rate_limit_buckets",
                "Token buckets held in memory.",
                g.buckets.to_string(),
            ),
        ];
        for (name, help, value) in gauges {
            write_metric(out, name, help, "gauge", value)?;
        }
        writeln!(
            out,
            "# HELP marks_snapshot_info The snapshot being served (1), by version."
        )?;
        writeln!(out, "# TYPE marks_snapshot_info gauge")?;
        if let (Some(dataset), Some(methodology)) = (g.dataset_version, g.methodology_version) {
            writeln!(
                out,
                "marks_snapshot_info{{dataset_version=\"{dataset}\",methodology_version=\"{methodology}\"}} 1"
            )?;
        }
        Ok(())
    }
}

/// One metric in the text exposition format: its HELP and TYPE lines, then its value.
fn write_metric(
    out: &mut String,
    name: &str,
    help: &str,
    kind: &str,
    value: impl std::fmt::Display,
) -> std::fmt::Result {
    writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}")
}

/// Counters by name, help and value.
fn write_counter_list(out: &mut String, counters: &[(&str, &str, &AtomicU64)]) -> std::fmt::Result {
    for (name, help, counter) in counters {
        write_metric(out, name, help, "counter", counter.load(Relaxed))?;
    }
    Ok(())
}
