//! The messages of OTLP metrics (opentelemetry-proto 1.x:
//! `collector/metrics/v1`, `metrics/v1`, `common/v1`, `resource/v1`),
//! written out by hand with the upstream field numbers: only the fields
//! versus sends, no code generation. Public so that a receiver (the
//! tests') can decode what versus sends.

/// `ExportMetricsServiceRequest`: one interval's metrics.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ExportMetricsServiceRequest {
    /// One, for versus.
    #[prost(message, repeated, tag = "1")]
    pub resource_metrics: Vec<ResourceMetrics>,
}

/// `ResourceMetrics`: the metrics of one resource (versus).
#[derive(Clone, PartialEq, prost::Message)]
pub struct ResourceMetrics {
    /// Who sends them: `service.name` = `versus`.
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    /// One, for versus.
    #[prost(message, repeated, tag = "2")]
    pub scope_metrics: Vec<ScopeMetrics>,
}

/// `Resource`: attributes of the sender.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Resource {
    /// `service.name` and its peers.
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

/// `ScopeMetrics`: the metrics of one instrumentation scope.
#[derive(Clone, PartialEq, prost::Message)]
pub struct ScopeMetrics {
    /// `versus` and its version.
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    /// Each named once, with its data points.
    #[prost(message, repeated, tag = "2")]
    pub metrics: Vec<Metric>,
}

/// `InstrumentationScope`: what made the metrics.
#[derive(Clone, PartialEq, prost::Message)]
pub struct InstrumentationScope {
    /// The name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The version.
    #[prost(string, tag = "2")]
    pub version: String,
}

/// `KeyValue`: one attribute.
#[derive(Clone, PartialEq, prost::Message)]
pub struct KeyValue {
    /// The key.
    #[prost(string, tag = "1")]
    pub key: String,
    /// The value.
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

/// `AnyValue`, of which versus sends strings only.
#[derive(Clone, PartialEq, prost::Message)]
pub struct AnyValue {
    /// `string_value`, one of the `value` oneof's fields.
    #[prost(string, optional, tag = "1")]
    pub string_value: Option<String>,
}

/// `Metric`: a name, its unit and its data.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Metric {
    /// The name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// What it is.
    #[prost(string, tag = "2")]
    pub description: String,
    /// UCUM: `s` for seconds, else none.
    #[prost(string, tag = "3")]
    pub unit: String,
    /// The `data` oneof.
    #[prost(oneof = "Data", tags = "5, 7, 9")]
    pub data: Option<Data>,
}

/// `Metric.data`: the kinds versus sends.
#[derive(Clone, PartialEq, prost::Oneof)]
pub enum Data {
    /// A value at a time.
    #[prost(message, tag = "5")]
    Gauge(Gauge),
    /// A counter.
    #[prost(message, tag = "7")]
    Sum(Sum),
    /// Counts in buckets.
    #[prost(message, tag = "9")]
    Histogram(Histogram),
}

/// `AggregationTemporality::AGGREGATION_TEMPORALITY_CUMULATIVE`: each
/// point holds everything since `start_time_unix_nano`.
pub const CUMULATIVE: i32 = 2;

/// `Gauge`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Gauge {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
}

/// `Sum`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sum {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<NumberDataPoint>,
    /// [`CUMULATIVE`].
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
    /// Never goes down.
    #[prost(bool, tag = "3")]
    pub is_monotonic: bool,
}

/// `Histogram`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    /// The points.
    #[prost(message, repeated, tag = "1")]
    pub data_points: Vec<HistogramDataPoint>,
    /// [`CUMULATIVE`].
    #[prost(int32, tag = "2")]
    pub aggregation_temporality: i32,
}

/// `NumberDataPoint`, a double.
#[derive(Clone, PartialEq, prost::Message)]
pub struct NumberDataPoint {
    /// The attributes (`endpoint`, `run_id`, ...).
    #[prost(message, repeated, tag = "7")]
    pub attributes: Vec<KeyValue>,
    /// The run's start, nanoseconds since the Unix epoch.
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// The interval's end.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// `as_double`, one of the `value` oneof's fields.
    #[prost(double, optional, tag = "4")]
    pub as_double: Option<f64>,
}

/// `HistogramDataPoint`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct HistogramDataPoint {
    /// The attributes.
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    /// The run's start.
    #[prost(fixed64, tag = "2")]
    pub start_time_unix_nano: u64,
    /// The interval's end.
    #[prost(fixed64, tag = "3")]
    pub time_unix_nano: u64,
    /// Values counted.
    #[prost(fixed64, tag = "4")]
    pub count: u64,
    /// Their sum.
    #[prost(double, optional, tag = "5")]
    pub sum: Option<f64>,
    /// Per bucket, not cumulative: one more than `explicit_bounds`.
    #[prost(fixed64, repeated, tag = "6")]
    pub bucket_counts: Vec<u64>,
    /// The buckets' upper bounds (inclusive), ascending.
    #[prost(double, repeated, tag = "7")]
    pub explicit_bounds: Vec<f64>,
}
