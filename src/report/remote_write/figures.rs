//! One walk over an interval's statistics, naming every figure `--out`
//! sends once (its metric name, labels and value), for each wire format
//! to write in its own way ([`Sink`]): Prometheus and OTLP carry the same
//! figures under the same names.

use hdrhistogram::Histogram;

use crate::stats::{EndpointStats, PartStats, RunStats};

/// The upper bounds of the latency histogram's buckets, in seconds.
pub const BUCKETS: [f64; 15] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
];

/// The latency histogram's name.
const LATENCY: &str = "versus_request_duration_seconds";

/// The latency quantiles sent as gauges, and their metrics' names.
const QUANTILES: [(f64, &str); 3] = [
    (0.5, "versus_request_duration_p50_seconds"),
    (0.9, "versus_request_duration_p90_seconds"),
    (0.99, "versus_request_duration_p99_seconds"),
];

/// The labels that name a run's series.
pub struct RunLabels {
    /// `run_id`: `--run-id`, or a random one.
    pub run_id: String,
    /// `shard`: `I/N` (`0/1` for a whole run).
    pub shard: String,
    /// `endpoint`, per endpoint in command-line order.
    pub endpoints: Vec<String>,
}

/// A figure's value.
pub enum Value<'h> {
    /// A count since the run started, never going down.
    Counter(f64),
    /// A value now.
    Gauge(f64),
    /// The latency of the run so far, in µs.
    Latency(&'h Histogram<u64>),
}

/// Takes the figures of one interval, in a wire format.
pub trait Sink {
    /// One figure: `name`, its labels (the run's first, then its own) and
    /// its value.
    fn put(&mut self, name: &str, labels: &[(&str, &str)], value: Value<'_>);
}

/// The number of answers at most each of [`BUCKETS`]' bounds
/// (cumulative, as Prometheus counts them).
pub fn cumulative_buckets(h: &Histogram<u64>) -> [u64; 15] {
    BUCKETS.map(|le| h.count_between(0, (le * 1e6) as u64))
}

/// The latencies' sum in seconds: the histogram's mean times its count.
pub fn sum_seconds(h: &Histogram<u64>) -> f64 {
    h.mean() * h.len() as f64 / 1e6
}

/// Hand every figure of one interval to `sink`: the counters and latency
/// of the run so far (`total`), the rates and connections of the
/// interval (`delta`).
pub fn walk(labels: &RunLabels, delta: &RunStats, total: &RunStats, sink: &mut impl Sink) {
    let parts = total.endpoints.iter().zip(&delta.endpoints).enumerate();
    for (i, (t, d)) in parts {
        let endpoint = labels.endpoints.get(i).map_or("", String::as_str);
        let mut s = Figures {
            sink: &mut *sink,
            base: [
                ("endpoint", endpoint),
                ("run_id", &labels.run_id),
                ("shard", &labels.shard),
            ],
        };
        endpoint_figures(&mut s, i, t, d);
        for p in &t.methods {
            part_figures(&mut s, "method", p);
        }
        for p in &t.steps {
            part_figures(&mut s, "step", p);
            // Counted per step; a stream's by method and field, below.
            s.counter(
                "versus_mismatches_total",
                &[("step", &p.name)],
                p.mismatched,
            );
        }
    }
    for g in &total.verdicts.groups {
        let mut s = Figures {
            sink: &mut *sink,
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
        s.counter("versus_mismatch_fields_total", &extra, g.count);
    }
}

/// The figures of endpoint `i` as a whole (no `method` or `step` label).
fn endpoint_figures<S: Sink>(
    s: &mut Figures<'_, S>,
    i: usize,
    t: &EndpointStats,
    d: &EndpointStats,
) {
    s.counter("versus_requests_total", &[], t.completed());
    for (kind, n) in t.error_kinds() {
        s.counter("versus_errors_total", &[("kind", &kind)], n);
    }
    if i > 0 {
        s.counter("versus_mismatches_total", &[], t.mismatched);
    }
    s.latency(&[], &t.latency);
    s.put("versus_achieved_rate", &[], Value::Gauge(d.rate()));
    if t.offered > 0 {
        s.put("versus_offered_rate", &[], Value::Gauge(d.offered_rate()));
    }
    let opened = d.connect.len() as f64;
    s.put("versus_connections", &[], Value::Gauge(opened));
}

/// The figures of one method, route or step (`label` says which).
fn part_figures<S: Sink>(s: &mut Figures<'_, S>, label: &str, p: &PartStats) {
    let extra = [(label, p.name.as_str())];
    s.counter("versus_requests_total", &extra, p.requests);
    s.counter("versus_errors_total", &extra, p.errors);
    s.latency(&extra, &p.latency);
}

/// Figures being handed over, with the labels every one of them has.
struct Figures<'a, S> {
    sink: &'a mut S,
    base: [(&'static str, &'a str); 3],
}

impl<S: Sink> Figures<'_, S> {
    /// One figure with the base labels and `extra`.
    fn put(&mut self, name: &str, extra: &[(&str, &str)], value: Value<'_>) {
        let labels: Vec<(&str, &str)> = self.base.iter().chain(extra).copied().collect();
        self.sink.put(name, &labels, value);
    }

    /// A counter of `n`.
    fn counter(&mut self, name: &str, extra: &[(&str, &str)], n: u64) {
        self.put(name, extra, Value::Counter(n as f64));
    }

    /// The latency histogram `h`, and its quantiles as gauges (none
    /// without a sample).
    fn latency(&mut self, extra: &[(&str, &str)], h: &Histogram<u64>) {
        self.put(LATENCY, extra, Value::Latency(h));
        if !h.is_empty() {
            for (q, name) in QUANTILES {
                let seconds = h.value_at_quantile(q) as f64 / 1e6;
                self.put(name, extra, Value::Gauge(seconds));
            }
        }
    }
}
