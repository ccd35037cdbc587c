//! Statistics in constant memory: per endpoint HDR histograms (latency,
//! time to first byte, connect) and counters (status codes, failures by
//! kind, bytes), and per run the verdict counters. Each core records into
//! its own [`RunStats`]; cores' stats are merged with [`RunStats::merge`].
//! Rendering lives in `report`, not here.

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::endpoint::{Failure, Outcome};

/// Highest latency a histogram holds: one hour, in microseconds. Longer
/// values are clamped to it (and still counted).
const MAX_MICROS: u64 = 3_600_000_000;

/// A latency histogram in microseconds, 3 significant figures.
pub fn new_histogram() -> Histogram<u64> {
    // Bounds are constants within hdrhistogram's limits.
    Histogram::new_with_bounds(1, MAX_MICROS, 3).unwrap_or_else(|_| unreachable!())
}

fn record(h: &mut Histogram<u64>, d: Duration) {
    let us = u64::try_from(d.as_micros())
        .unwrap_or(MAX_MICROS)
        .clamp(1, MAX_MICROS);
    h.saturating_record(us);
}

/// Everything recorded about one endpoint.
#[derive(Clone, Debug)]
pub struct EndpointStats {
    /// Requests started.
    pub sent: u64,
    /// Requests that got an HTTP response (any status).
    pub responses: u64,
    /// Requests without a response, by [`Failure`] kind.
    pub failures: [u64; Failure::ALL.len()],
    /// Responses by status code (index = code, 0..1000).
    pub status: Vec<u64>,
    /// Response body bytes received.
    pub bytes_in: u64,
    /// Request body bytes sent.
    pub bytes_out: u64,
    /// Latency of every response, µs.
    pub latency: Histogram<u64>,
    /// Time to the response head, µs.
    pub ttfb: Histogram<u64>,
    /// Connection set-up time, µs (one sample per connection opened).
    pub connect: Histogram<u64>,
    /// Connections opened during the run (not counting warm-up connects).
    pub reconnects: u64,
    /// Requests still in flight when the run was stopped, abandoned.
    pub abandoned: u64,
    /// Time this endpoint could not send because it was a full lead window
    /// ahead of a slower endpoint.
    pub held: Duration,
    /// Requests per second while the endpoint was not held back, summed over
    /// cores.
    pub rate: f64,
}

impl Default for EndpointStats {
    fn default() -> Self {
        EndpointStats {
            sent: 0,
            responses: 0,
            failures: [0; Failure::ALL.len()],
            status: vec![0; 1000],
            bytes_in: 0,
            bytes_out: 0,
            latency: new_histogram(),
            ttfb: new_histogram(),
            connect: new_histogram(),
            reconnects: 0,
            abandoned: 0,
            held: Duration::ZERO,
            rate: 0.0,
        }
    }
}

impl EndpointStats {
    /// Record one outcome.
    pub fn record(&mut self, outcome: &Outcome) {
        self.bytes_out += outcome.bytes_out;
        if let Some(c) = outcome.connect {
            record(&mut self.connect, c);
            self.reconnects += 1;
        }
        match &outcome.result {
            Ok(r) => {
                self.responses += 1;
                self.status[usize::from(r.status).min(999)] += 1;
                self.bytes_in += r.body_len;
                record(&mut self.latency, outcome.latency);
                record(&mut self.ttfb, r.ttfb);
            }
            Err(f) => self.failures[f.index()] += 1,
        }
    }

    /// Requests that completed: a response or a failure.
    pub fn completed(&self) -> u64 {
        self.responses + self.failures.iter().sum::<u64>()
    }

    /// Responses with status 400 or above.
    pub fn error_statuses(&self) -> u64 {
        self.status[400..].iter().sum()
    }

    /// Errors: failures plus responses with status 400 or above.
    pub fn errors(&self) -> u64 {
        self.failures.iter().sum::<u64>() + self.error_statuses()
    }

    /// Add another core's stats of the same endpoint.
    pub fn merge(&mut self, other: &EndpointStats) {
        self.sent += other.sent;
        self.responses += other.responses;
        for (a, b) in self.failures.iter_mut().zip(other.failures) {
            *a += b;
        }
        for (a, b) in self.status.iter_mut().zip(&other.status) {
            *a += b;
        }
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        // Same bounds everywhere, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.ttfb.add(&other.ttfb);
        let _ = self.connect.add(&other.connect);
        self.reconnects += other.reconnects;
        self.abandoned += other.abandoned;
        self.held = self.held.max(other.held);
        self.rate += other.rate;
    }
}

/// Counters of the input stream.
#[derive(Clone, Debug, Default)]
pub struct InputStats {
    /// Requests read and accepted.
    pub requests: u64,
    /// Records skipped as malformed.
    pub malformed: u64,
    /// The first few malformed records, for the report.
    pub samples: Vec<crate::input::Malformed>,
    /// What the source says it held, once it ended (e.g. capture streams).
    pub summary: Option<String>,
}

/// How many malformed records the report names one by one.
pub const MALFORMED_SAMPLES: usize = 5;

/// Counters of the comparison of requests across endpoints.
#[derive(Clone, Debug, Default)]
pub struct VerdictStats {
    /// Requests answered (or failed) by every endpoint and compared.
    pub compared: u64,
    /// Requests where at least one endpoint disagreed with the first.
    pub mismatched: u64,
    /// Requests not answered by every endpoint when the run stopped.
    pub incomplete: u64,
    /// Mismatches grouped by request method and field, most frequent first
    /// once sorted; bounded in number.
    pub groups: Vec<MismatchGroup>,
}

/// Most mismatch groups kept; later new groups are counted in the last one.
pub const MAX_GROUPS: usize = 200;
/// Samples kept per mismatch group.
pub const GROUP_SAMPLES: usize = 3;

/// Mismatches of one kind: the same request method (JSON-RPC method, or
/// HTTP method and path) differing at the same place.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MismatchGroup {
    /// `eth_getBlockByNumber`, or `GET /users/{id}`.
    pub method: String,
    /// Where the answers differ: a JSON path with indices as `[*]`
    /// (`$.result.transactions[*].nonce`), or `status`, `body` (not JSON),
    /// `outcome` (a failure against a response), `header NAME`.
    pub field: String,
    /// What kind of difference: `changed`, `missing`, `added`, `type`,
    /// `result vs error`, ...
    pub kind: String,
    /// The endpoint (label) that differed from the reference.
    pub endpoint: String,
    /// Requests in this group.
    pub count: u64,
    /// The first few requests in this group.
    pub samples: Vec<MismatchSample>,
}

/// One request of a mismatch group, as shown with `-v` and saved.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MismatchSample {
    /// The request's position in the input.
    pub seq: u64,
    /// The request body (or line), as text, cut when long.
    pub request: String,
    /// Each endpoint's value at the differing field (compact JSON, status,
    /// or failure), in endpoint order.
    pub values: Vec<String>,
}

impl VerdictStats {
    /// Add another core's counters and groups.
    pub fn merge(&mut self, other: &VerdictStats) {
        self.compared += other.compared;
        self.mismatched += other.mismatched;
        self.incomplete += other.incomplete;
        for g in &other.groups {
            self.add_group(g);
        }
    }

    /// Count `g` into the matching group, or keep it as a new one while
    /// fewer than [`MAX_GROUPS`] exist (beyond that it is counted in an
    /// `(other)` group, so no mismatch goes uncounted).
    pub fn add_group(&mut self, g: &MismatchGroup) {
        let same = |h: &&mut MismatchGroup| {
            h.method == g.method
                && h.field == g.field
                && h.kind == g.kind
                && h.endpoint == g.endpoint
        };
        if let Some(h) = self.groups.iter_mut().find(same) {
            h.count += g.count;
            let room = GROUP_SAMPLES.saturating_sub(h.samples.len());
            h.samples.extend(g.samples.iter().take(room).cloned());
            return;
        }
        if self.groups.len() < MAX_GROUPS {
            self.groups.push(g.clone());
            return;
        }
        let other = MismatchGroup {
            method: "(other)".into(),
            field: "(other)".into(),
            kind: "(other)".into(),
            endpoint: "(other)".into(),
            count: 0,
            samples: Vec::new(),
        };
        if !self.groups.iter().any(|h| h.method == "(other)") {
            self.groups.push(other);
        }
        if let Some(h) = self.groups.iter_mut().find(|h| h.method == "(other)") {
            h.count += g.count;
        }
    }

    /// Groups, most frequent first (ties by method and field).
    pub fn sorted_groups(&self) -> Vec<&MismatchGroup> {
        let mut v: Vec<&MismatchGroup> = self.groups.iter().collect();
        v.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| (&a.method, &a.field).cmp(&(&b.method, &b.field)))
        });
        v
    }
}

/// One core's, or a whole run's, statistics.
#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// Per endpoint, in command-line order.
    pub endpoints: Vec<EndpointStats>,
    /// Comparison counters.
    pub verdicts: VerdictStats,
}

impl RunStats {
    /// Empty stats for `n` endpoints.
    pub fn new(n: usize) -> RunStats {
        RunStats {
            endpoints: (0..n).map(|_| EndpointStats::default()).collect(),
            verdicts: VerdictStats::default(),
        }
    }

    /// Add another core's stats (same endpoints in the same order).
    pub fn merge(&mut self, other: &RunStats) {
        for (a, b) in self.endpoints.iter_mut().zip(&other.endpoints) {
            a.merge(b);
        }
        self.verdicts.merge(&other.verdicts);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::Response;

    fn ok(status: u16, ms: u64) -> Outcome {
        Outcome {
            result: Ok(Response {
                status,
                body: bytes::Bytes::new(),
                body_len: 10,
                ttfb: Duration::from_millis(ms / 2),
            }),
            latency: Duration::from_millis(ms),
            connect: None,
            bytes_out: 3,
        }
    }

    #[test]
    fn records_and_merges_exactly() {
        let mut a = EndpointStats::default();
        let mut b = EndpointStats::default();
        for ms in 1..=100 {
            a.record(&ok(200, ms));
        }
        b.record(&ok(503, 7));
        b.record(&Outcome {
            result: Err(Failure::Timeout),
            latency: Duration::from_secs(1),
            connect: Some(Duration::from_micros(300)),
            bytes_out: 3,
        });
        a.merge(&b);
        assert_eq!(a.responses, 101);
        assert_eq!(a.completed(), 102);
        assert_eq!(a.errors(), 2);
        assert_eq!(a.status[200], 100);
        assert_eq!(a.status[503], 1);
        assert_eq!(a.failures[Failure::Timeout.index()], 1);
        assert_eq!(a.latency.len(), 101);
        assert_eq!(a.connect.len(), 1);
        assert_eq!(a.bytes_in, 1010);
        assert_eq!(a.bytes_out, 306);
        let p50 = a.latency.value_at_quantile(0.5);
        assert!((50_000..=51_100).contains(&p50), "{p50}");
    }
}
