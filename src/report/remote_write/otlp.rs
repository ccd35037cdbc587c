//! `--out otlp=URL`: the figures as OTLP metrics (binary protobuf over
//! HTTP): counters as cumulative monotonic sums from the run's start,
//! gauges as gauges, the latency as a cumulative histogram with the
//! Prometheus output's bucket bounds. Names and attributes are the
//! Prometheus series' (docs/metrics.md says why).

use super::figures::{self, RunLabels, Sink, Value, BUCKETS};
use super::otlp_proto::{
    AnyValue, Data, ExportMetricsServiceRequest, Gauge, Histogram, HistogramDataPoint,
    InstrumentationScope, KeyValue, Metric, NumberDataPoint, Resource, ResourceMetrics,
    ScopeMetrics, Sum, CUMULATIVE,
};
use crate::stats::RunStats;

/// One interval's metrics: every point at `at_ns`, the counters' and the
/// histogram's counted since `start_ns` (nanoseconds since the epoch).
pub fn encode(
    labels: &RunLabels,
    delta: &RunStats,
    total: &RunStats,
    start_ns: u64,
    at_ns: u64,
) -> ExportMetricsServiceRequest {
    let mut metrics = Metrics {
        out: Vec::new(),
        start_ns,
        at_ns,
    };
    figures::walk(labels, delta, total, &mut metrics);
    let metrics = metrics.out.into_iter().map(|(name, data)| Metric {
        // No unit but seconds: a Prometheus exporter would add `_ratio`
        // to a gauge of unit `1`.
        unit: if name.ends_with("_seconds") { "s" } else { "" }.to_string(),
        name,
        description: String::new(),
        data: Some(data),
    });
    let version = env!("CARGO_PKG_VERSION");
    ExportMetricsServiceRequest {
        resource_metrics: vec![ResourceMetrics {
            resource: Some(Resource {
                attributes: attributes(&[("service.name", "versus"), ("service.version", version)]),
            }),
            scope_metrics: vec![ScopeMetrics {
                scope: Some(InstrumentationScope {
                    name: "versus".into(),
                    version: version.into(),
                }),
                metrics: metrics.collect(),
            }],
        }],
    }
}

/// String attributes.
fn attributes(labels: &[(&str, &str)]) -> Vec<KeyValue> {
    labels
        .iter()
        .map(|(key, value)| KeyValue {
            key: (*key).to_string(),
            value: Some(AnyValue {
                string_value: Some((*value).to_string()),
            }),
        })
        .collect()
}

/// Metrics being made, each name once, in the order first met.
struct Metrics {
    out: Vec<(String, Data)>,
    start_ns: u64,
    at_ns: u64,
}

impl Metrics {
    /// The data of metric `name`, made by `new` the first time.
    fn data(&mut self, name: &str, new: impl FnOnce() -> Data) -> &mut Data {
        let at = match self.out.iter().position(|(n, _)| n == name) {
            Some(at) => at,
            None => {
                self.out.push((name.to_string(), new()));
                self.out.len() - 1
            }
        };
        &mut self.out[at].1
    }

    /// A number point at this interval's end.
    fn point(&self, labels: &[(&str, &str)], start_ns: u64, value: f64) -> NumberDataPoint {
        NumberDataPoint {
            attributes: attributes(labels),
            start_time_unix_nano: start_ns,
            time_unix_nano: self.at_ns,
            as_double: Some(value),
        }
    }
}

impl Sink for Metrics {
    fn put(&mut self, name: &str, labels: &[(&str, &str)], value: Value<'_>) {
        match value {
            Value::Counter(v) => {
                let point = self.point(labels, self.start_ns, v);
                let new = || {
                    Data::Sum(Sum {
                        data_points: Vec::new(),
                        aggregation_temporality: CUMULATIVE,
                        is_monotonic: true,
                    })
                };
                if let Data::Sum(s) = self.data(name, new) {
                    s.data_points.push(point);
                }
            }
            Value::Gauge(v) => {
                let point = self.point(labels, 0, v);
                if let Data::Gauge(g) = self.data(name, || Data::Gauge(Gauge::default())) {
                    g.data_points.push(point);
                }
            }
            Value::Latency(h) => {
                let upto = figures::cumulative_buckets(h);
                // OTLP counts each bucket on its own; the last is past 30 s.
                let mut below = 0;
                let mut bucket_counts: Vec<u64> = upto
                    .iter()
                    .map(|&n| {
                        let own = n - below;
                        below = n;
                        own
                    })
                    .collect();
                bucket_counts.push(h.len() - below);
                let point = HistogramDataPoint {
                    attributes: attributes(labels),
                    start_time_unix_nano: self.start_ns,
                    time_unix_nano: self.at_ns,
                    count: h.len(),
                    sum: Some(figures::sum_seconds(h)),
                    bucket_counts,
                    explicit_bounds: BUCKETS.to_vec(),
                };
                let new = || {
                    Data::Histogram(Histogram {
                        data_points: Vec::new(),
                        aggregation_temporality: CUMULATIVE,
                    })
                };
                if let Data::Histogram(d) = self.data(name, new) {
                    d.data_points.push(point);
                }
            }
        }
    }
}
