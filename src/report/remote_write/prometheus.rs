//! `--out prometheus=URL`: the figures as Prometheus remote write 1.0
//! series, one sample each (counters, gauges, and the latency as a
//! classic histogram: `_bucket{le}`, `_sum`, `_count`).

use super::figures::{self, RunLabels, Sink, Value, BUCKETS};
use super::proto::{Label, Sample, TimeSeries, WriteRequest};
use crate::stats::RunStats;

/// One interval's series, all at `at_ms`.
pub fn encode(labels: &RunLabels, delta: &RunStats, total: &RunStats, at_ms: i64) -> WriteRequest {
    let mut series = Series {
        out: Vec::new(),
        at_ms,
    };
    figures::walk(labels, delta, total, &mut series);
    WriteRequest {
        timeseries: series.out,
    }
}

/// Series being made.
struct Series {
    out: Vec<TimeSeries>,
    at_ms: i64,
}

impl Series {
    /// One series with one sample: `name` and `labels`, sorted by name as
    /// remote write asks.
    fn push(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        let mut labels: Vec<Label> = std::iter::once(("__name__", name))
            .chain(labels.iter().copied())
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
}

impl Sink for Series {
    fn put(&mut self, name: &str, labels: &[(&str, &str)], value: Value<'_>) {
        let h = match value {
            Value::Counter(v) | Value::Gauge(v) => return self.push(name, labels, v),
            Value::Latency(h) => h,
        };
        let bucket = format!("{name}_bucket");
        let counts = figures::cumulative_buckets(h);
        let bounds = BUCKETS.map(|le| le.to_string());
        let les = bounds.iter().map(String::as_str).chain(["+Inf"]);
        for (le, upto) in les.zip(counts.into_iter().chain([h.len()])) {
            let with_le: Vec<(&str, &str)> = labels.iter().copied().chain([("le", le)]).collect();
            self.push(&bucket, &with_le, upto as f64);
        }
        self.push(&format!("{name}_sum"), labels, figures::sum_seconds(h));
        self.push(&format!("{name}_count"), labels, h.len() as f64);
    }
}
