//! `--out prometheus=URL`: each interval's figures sent while the run
//! goes, as Prometheus remote write 1.0 (protobuf, snappy), per endpoint,
//! per method or route and per flow step (docs/metrics.md lists the
//! series). The observer encodes the interval on the collector's thread
//! (the only new work: nothing is done per request); a thread per target
//! sends it ([`sender`]), so a receiver that is down or slow never slows
//! the run, and the report says how many intervals were not delivered.

pub mod proto;
mod sender;

use hdrhistogram::Histogram;

use crate::engine::Observer;
use crate::stats::{EndpointStats, PartStats, RunStats};
use proto::{Label, Sample, TimeSeries, WriteRequest};
use sender::{Delivery, Sender, Target};

/// The kinds `--out` takes.
const KINDS: [&str; 1] = ["prometheus"];

/// The upper bounds of the latency histogram's buckets, in seconds.
pub const BUCKETS: [f64; 15] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The latency quantiles sent as gauges, and their series' names.
const QUANTILES: [(f64, &str); 3] = [
    (0.5, "versus_request_duration_p50_seconds"),
    (0.9, "versus_request_duration_p90_seconds"),
    (0.99, "versus_request_duration_p99_seconds"),
];

/// Check every `--out KIND=URL`, before anything is sent.
///
/// # Errors
/// A message naming `--out` and how to put it right (exit 2).
pub fn targets(outs: &[String]) -> Result<Vec<Target>, String> {
    outs.iter()
        .map(|out| {
            let Some((kind, url)) = out.split_once('=') else {
                return Err(format!(
                    "--out {out:?}: give KIND=URL, like --out prometheus=http://127.0.0.1:9090/api/v1/write"
                ));
            };
            if !KINDS.contains(&kind) {
                return Err(format!(
                    "--out {out:?}: unknown kind {kind:?}; the kinds are: {}",
                    KINDS.join(", ")
                ));
            }
            Target::parse(url).map_err(|e| format!("--out {out:?}: {e}"))
        })
        .collect()
}

/// The labels that name a run's series.
pub struct RunLabels {
    /// `run_id`: `--run-id`, or a random one.
    pub run_id: String,
    /// `shard`: `I/N` (`0/1` for a whole run).
    pub shard: String,
    /// `endpoint`, per endpoint in command-line order.
    pub endpoints: Vec<String>,
}

/// A random run id: 16 hex digits.
pub fn random_run_id() -> String {
    format!("{:016x}", fastrand::u64(..))
}

/// The observer that sends each interval to every target.
pub struct RemoteWrite {
    labels: RunLabels,
    senders: Vec<Sender>,
    /// The last interval's timestamp, ms: each is later than the last,
    /// even when intervals end within a millisecond (at the end of a
    /// run), since a receiver rejects a second sample at one time.
    last_ms: i64,
}

impl RemoteWrite {
    /// Start a sending thread per target.
    ///
    /// # Errors
    /// When a thread cannot start.
    pub fn start(targets: Vec<Target>, labels: RunLabels) -> Result<RemoteWrite, String> {
        let senders = targets
            .into_iter()
            .map(Sender::start)
            .collect::<Result<_, _>>()?;
        Ok(RemoteWrite {
            labels,
            senders,
            last_ms: 0,
        })
    }

    /// Stop sending (the bodies still queued get a bounded time) and say,
    /// per target, what was delivered: notes for the report.
    pub fn finish(self) -> Vec<String> {
        let run_id = self.labels.run_id;
        self.senders
            .into_iter()
            .map(|s| {
                let url = s.url();
                note(&run_id, &url, &s.finish())
            })
            .collect()
    }
}

/// The report's note on one target.
fn note(run_id: &str, url: &str, d: &Delivery) -> String {
    let lost = d.intervals - d.delivered.min(d.intervals);
    let mut note = format!(
        "metrics (run_id {run_id}) sent to {url}: {} of {} intervals delivered",
        d.delivered, d.intervals
    );
    if lost > 0 {
        note.push_str(&format!(", {lost} not delivered"));
        if let Some(e) = &d.last_error {
            note.push_str(&format!(" (last error: {e})"));
        }
    }
    if d.retried > 0 {
        let sends = if d.retried == 1 { "send" } else { "sends" };
        note.push_str(&format!("; {} {sends} tried again", d.retried));
    }
    note
}

impl Observer for RemoteWrite {
    fn interval(&mut self, _index: u64, delta: &RunStats, total: &RunStats) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        self.last_ms = now.max(self.last_ms + 1);
        let body = encode(&self.labels, delta, total, self.last_ms).encode_snappy();
        for s in &mut self.senders {
            s.send(body.clone());
        }
    }
}

/// One interval's series: the counters and latency of the run so far
/// (`total`), the rates and connections of the interval (`delta`).
pub fn encode(labels: &RunLabels, delta: &RunStats, total: &RunStats, at_ms: i64) -> WriteRequest {
    let mut out = Vec::new();
    let parts = total.endpoints.iter().zip(&delta.endpoints).enumerate();
    for (i, (t, d)) in parts {
        let endpoint = labels.endpoints.get(i).map_or("", String::as_str);
        let mut s = Series {
            out: &mut out,
            at_ms,
            base: [
                ("endpoint", endpoint),
                ("run_id", &labels.run_id),
                ("shard", &labels.shard),
            ],
        };
        endpoint_series(&mut s, i, t, d);
        for p in &t.methods {
            part_series(&mut s, "method", p);
        }
        for p in &t.steps {
            part_series(&mut s, "step", p);
            // Counted per step; a stream's by method and field, below.
            s.push(
                "versus_mismatches_total",
                &[("step", &p.name)],
                p.mismatched as f64,
            );
        }
    }
    for g in &total.verdicts.groups {
        let mut s = Series {
            out: &mut out,
            at_ms,
            base: [
                ("endpoint", &g.endpoint),
                ("run_id", &labels.run_id),
                ("shard", &labels.shard),
            ],
        };
        let extra = [
            ("method", &*g.method),
            ("field", &*g.field),
            ("kind", &*g.kind),
        ];
        s.push("versus_mismatch_fields_total", &extra, g.count as f64);
    }
    WriteRequest { timeseries: out }
}

/// The series of endpoint `i` as a whole (no `method` or `step` label).
fn endpoint_series(s: &mut Series<'_>, i: usize, t: &EndpointStats, d: &EndpointStats) {
    s.push("versus_requests_total", &[], t.completed() as f64);
    for (kind, n) in t.error_kinds() {
        s.push("versus_errors_total", &[("kind", &kind)], n as f64);
    }
    if i > 0 {
        s.push("versus_mismatches_total", &[], t.mismatched as f64);
    }
    s.latency(&[], &t.latency);
    s.push("versus_achieved_rate", &[], d.rate());
    if t.offered > 0 {
        s.push("versus_offered_rate", &[], d.offered_rate());
    }
    s.push("versus_connections", &[], d.connect.len() as f64);
}

/// The series of one method, route or step (`label` says which).
fn part_series(s: &mut Series<'_>, label: &str, p: &PartStats) {
    let extra = [(label, p.name.as_str())];
    s.push("versus_requests_total", &extra, p.requests as f64);
    s.push("versus_errors_total", &extra, p.errors as f64);
    s.latency(&extra, &p.latency);
}

/// Series being made, with the labels every one of them has.
struct Series<'a> {
    out: &'a mut Vec<TimeSeries>,
    at_ms: i64,
    base: [(&'static str, &'a str); 3],
}

impl Series<'_> {
    /// One series with one sample: `name`, the base labels and `extra`,
    /// sorted by name as remote write asks.
    fn push(&mut self, name: &str, extra: &[(&str, &str)], value: f64) {
        let mut labels: Vec<Label> = std::iter::once(("__name__", name))
            .chain(self.base.iter().copied())
            .chain(extra.iter().copied())
            .map(|(name, value)| Label {
                name: name.to_string(),
                value: value.to_string(),
            })
            .collect();
        labels.sort_by(|a, b| a.name.cmp(&b.name));
        self.out.push(TimeSeries {
            labels,
            samples: vec![Sample {
                value,
                timestamp: self.at_ms,
            }],
        });
    }

    /// A classic histogram of `h` (µs) in seconds, and its quantiles as
    /// gauges (none without a sample).
    fn latency(&mut self, extra: &[(&str, &str)], h: &Histogram<u64>) {
        const NAME: &str = "versus_request_duration_seconds";
        for le in BUCKETS {
            let upto = h.count_between(0, (le * 1e6) as u64);
            let le = le.to_string();
            let labels: Vec<(&str, &str)> = extra.iter().copied().chain([("le", &*le)]).collect();
            self.push(&format!("{NAME}_bucket"), &labels, upto as f64);
        }
        let labels: Vec<(&str, &str)> = extra.iter().copied().chain([("le", "+Inf")]).collect();
        self.push(&format!("{NAME}_bucket"), &labels, h.len() as f64);
        let sum = h.mean() * h.len() as f64 / 1e6;
        self.push(&format!("{NAME}_sum"), extra, sum);
        self.push(&format!("{NAME}_count"), extra, h.len() as f64);
        if !h.is_empty() {
            for (q, name) in QUANTILES {
                self.push(name, extra, h.value_at_quantile(q) as f64 / 1e6);
            }
        }
    }
}
