//! `--out prometheus=URL`: the figures as Prometheus remote write 1.0
//! series, one sample each (counters, gauges, and the latency as a
//! classic histogram: `_bucket{le}`, `_sum`, `_count`), and, for a
//! receiver that takes them, the latency as a native histogram too.

use super::figures::{self, RunLabels, Sink, Value, BUCKETS};
use super::proto::{BucketSpan, Histogram, Label, Sample, TimeSeries, WriteRequest};
use crate::stats::RunStats;

/// The native histograms' schema: 8 buckets a doubling, each bound 9 %
/// above the last.
const SCHEMA: i32 = 3;

/// One interval's series, all at `at_ms`; with `native`, the latency's
/// native histograms too.
pub fn encode(
    labels: &RunLabels,
    delta: &RunStats,
    total: &RunStats,
    at_ms: i64,
    native: bool,
) -> WriteRequest {
    let mut series = Series {
        out: Vec::new(),
        at_ms,
        native,
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
    native: bool,
}

impl Series {
    /// One series with one sample: `name` and `labels`, sorted by name as
    /// remote write asks.
    fn push(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.out.push(TimeSeries {
            labels: sorted(name, labels),
            samples: vec![Sample {
                value,
                timestamp: self.at_ms,
            }],
            histograms: Vec::new(),
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
        if self.native {
            self.out.push(TimeSeries {
                labels: sorted(name, labels),
                samples: Vec::new(),
                histograms: vec![native(h, self.at_ms)],
            });
        }
    }
}

/// `name` and `labels` as remote write asks: sorted by name.
fn sorted(name: &str, labels: &[(&str, &str)]) -> Vec<Label> {
    let mut labels: Vec<Label> = std::iter::once(("__name__", name))
        .chain(labels.iter().copied())
        .map(|(name, value)| Label {
            name: name.to_string(),
            value: value.to_string(),
        })
        .collect();
    labels.sort_by(|a, b| a.name.cmp(&b.name));
    labels
}

/// The latency (µs) as a native histogram in seconds: each recorded value
/// in the bucket of [`SCHEMA`] that holds it, 0 in the zero bucket.
fn native(h: &hdrhistogram::Histogram<u64>, at_ms: i64) -> Histogram {
    let mut buckets = std::collections::BTreeMap::<i32, u64>::new();
    let mut zero = 0;
    for v in h.iter_recorded() {
        let seconds = v.value_iterated_to() as f64 / 1e6;
        match seconds > 0.0 {
            // The bucket whose upper bound, 2^(i / 2^SCHEMA), is the
            // first at or above the value.
            true => {
                let i = (seconds.log2() * f64::from(1 << SCHEMA)).ceil() as i32;
                *buckets.entry(i).or_default() += v.count_at_value();
            }
            false => zero += v.count_at_value(),
        }
    }
    let (mut spans, mut deltas) = (Vec::<BucketSpan>::new(), Vec::new());
    let (mut last_index, mut last_count) = (None, 0i64);
    for (&i, &n) in &buckets {
        match (last_index, spans.last_mut()) {
            (Some(l), Some(span)) if i == l + 1 => span.length += 1,
            _ => spans.push(BucketSpan {
                offset: last_index.map_or(i, |l| i - l - 1),
                length: 1,
            }),
        }
        let n = i64::try_from(n).unwrap_or(i64::MAX);
        deltas.push(n - last_count);
        (last_index, last_count) = (Some(i), n);
    }
    Histogram {
        count_int: h.len(),
        sum: figures::sum_seconds(h),
        schema: SCHEMA,
        zero_threshold: 0.0,
        zero_count_int: zero,
        positive_spans: spans,
        positive_deltas: deltas,
        timestamp: at_ms,
    }
}
