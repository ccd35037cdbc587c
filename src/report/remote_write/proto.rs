//! The messages of Prometheus remote write 1.0 (`prompb`), written out by
//! hand: what a sender needs, no code generation. Public so that a
//! receiver (the tests') can decode what versus sends.

/// One request: every series of one interval.
#[derive(Clone, PartialEq, prost::Message)]
pub struct WriteRequest {
    /// The series, each with its samples.
    #[prost(message, repeated, tag = "1")]
    pub timeseries: Vec<TimeSeries>,
}

/// One series: its labels (sorted by name, `__name__` the metric) and its
/// samples.
#[derive(Clone, PartialEq, prost::Message)]
pub struct TimeSeries {
    /// Sorted by name.
    #[prost(message, repeated, tag = "1")]
    pub labels: Vec<Label>,
    /// Oldest first.
    #[prost(message, repeated, tag = "2")]
    pub samples: Vec<Sample>,
    /// Native histograms, oldest first (a series has samples or these).
    #[prost(message, repeated, tag = "4")]
    pub histograms: Vec<Histogram>,
}

/// A native histogram: exponential buckets of `schema` (each bucket's
/// bound the last one's times 2^(2^-schema)), integer counts. Only what
/// versus sends: no negative buckets, no float counts.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Histogram {
    /// Observations in all.
    #[prost(uint64, tag = "1")]
    pub count_int: u64,
    /// Their sum.
    #[prost(double, tag = "3")]
    pub sum: f64,
    #[prost(sint32, tag = "4")]
    pub schema: i32,
    #[prost(double, tag = "5")]
    pub zero_threshold: f64,
    /// Observations of 0.
    #[prost(uint64, tag = "6")]
    pub zero_count_int: u64,
    /// Runs of buckets holding observations: where each starts (after the
    /// last) and how many it spans.
    #[prost(message, repeated, tag = "11")]
    pub positive_spans: Vec<BucketSpan>,
    /// Each bucket's count less the one before it (the first, less 0).
    #[prost(sint64, repeated, tag = "12")]
    pub positive_deltas: Vec<i64>,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "15")]
    pub timestamp: i64,
}

/// A run of consecutive buckets.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BucketSpan {
    /// Buckets from the end of the last span (from index 0 for the first).
    #[prost(sint32, tag = "1")]
    pub offset: i32,
    #[prost(uint32, tag = "2")]
    pub length: u32,
}

/// A label's name and value.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Label {
    /// The name.
    #[prost(string, tag = "1")]
    pub name: String,
    /// The value.
    #[prost(string, tag = "2")]
    pub value: String,
}

/// One value at one time.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Sample {
    /// The value.
    #[prost(double, tag = "1")]
    pub value: f64,
    /// Milliseconds since the Unix epoch.
    #[prost(int64, tag = "2")]
    pub timestamp: i64,
}

impl WriteRequest {
    /// The protobuf bytes, snappy block-compressed, as remote write sends
    /// them.
    pub fn encode_snappy(&self) -> Vec<u8> {
        let bytes = prost::Message::encode_to_vec(self);
        // Compressing a buffer in memory fails only past snappy's 4 GiB.
        snap::raw::Encoder::new()
            .compress_vec(&bytes)
            .unwrap_or_default()
    }

    /// Decode a body [`WriteRequest::encode_snappy`] made.
    ///
    /// # Errors
    /// When it is not snappy, or not a `WriteRequest`.
    pub fn decode_snappy(body: &[u8]) -> Result<WriteRequest, String> {
        let bytes = snap::raw::Decoder::new()
            .decompress_vec(body)
            .map_err(|e| format!("snappy: {e}"))?;
        prost::Message::decode(bytes.as_slice()).map_err(|e| format!("protobuf: {e}"))
    }
}
