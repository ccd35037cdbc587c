//! The lines of a saved run (JSON Lines, `docs/results-format.md`): the
//! header, one line per interval, the totals; and the conversion of
//! statistics to and from them. Histograms are base64 of hdrhistogram's
//! V2+DEFLATE serialization, so they survive a round trip exactly.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use super::info::{EndpointInfo, Record};
use crate::model::Malformed;
use crate::model::{Failure, TlsReason};
use crate::stats::{EndpointStats, InputStats, MismatchGroup, RunStats, Sends, VerdictStats};

/// The `format` value of a saved run's header.
pub const FORMAT: &str = "versus-run";
/// The format version this versus writes and reads.
pub const VERSION: u32 = 1;

/// The first line of a saved run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// Format version, [`VERSION`].
    pub version: u32,
    /// The versus version that wrote the file.
    pub versus: String,
    /// The command line, secrets masked unless `--show-secrets`.
    pub command: Vec<String>,
    /// Host name of the machine that ran it.
    pub host: String,
    /// When the run started, RFC 3339 (UTC).
    pub start: String,
    /// The same, in milliseconds since the Unix epoch.
    pub start_unix_ms: u64,
    /// Length of an interval, in milliseconds.
    pub interval_ms: u64,
    /// Endpoints in command-line order.
    pub endpoints: Vec<EndpointInfo>,
    /// Lead window per core, in requests.
    pub lead: usize,
    /// True when answers were compared.
    pub comparison: bool,
    /// Requests in flight per endpoint.
    #[serde(default)]
    pub concurrency: usize,
    /// Open model: the scheduled rate per second per endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<f64>,
    /// Open model: `--max-in-flight`.
    #[serde(default)]
    pub max_in_flight: usize,
    /// Noise mode: the endpoint that is the reference's second copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub twin: Option<usize>,
    /// `--shard`: which shard of a run this file is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::model::Share>,
    /// The run's id: `--run-id`, else a random one; `--out`'s series carry
    /// it as their `run_id` label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// `--start-at` had passed when the run was set up: by how many
    /// milliseconds it started late.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_ms: Option<u64>,
    /// When the file is a merge of shards: where each came from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<ShardRecord>,
    /// What the run noted before it started (an optional endpoint
    /// skipped by the pre-flight check).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The I/O driver of plain-TCP HTTP/1.1 connections (`--io`:
    /// `epoll`, `io_uring`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<String>,
    /// `--warmup` as given (`50`, `2s`): sent first, counted nowhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<String>,
    /// `--stages` as given: the load changed over time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<String>,
    /// `--sweep`'s steps: the rates, the settling and counted time of each.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<crate::engine::shape::Sweep>,
    /// `--find-capacity`: its conditions, bounds and steps in time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub search: Option<crate::engine::shape::Search>,
    /// Which request lines the file keeps (`--record`); files written
    /// before the choice existed kept every one.
    #[serde(default)]
    pub record: Record,
}

/// One shard of a merged file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ShardRecord {
    /// The shard's host.
    pub host: String,
    /// The shard's start time, RFC 3339.
    pub start: String,
    /// The shard's command line.
    pub command: Vec<String>,
    /// Which shard it was (`--shard`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<crate::model::Share>,
    /// How late it started (`--start-at` past), in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late_ms: Option<u64>,
}

/// One endpoint's counters and histograms (of an interval, or the totals).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct EndpointRecord {
    /// Requests started.
    pub sent: u64,
    /// Requests completed (responses and failures).
    pub completed: u64,
    /// Responses (any status).
    pub responses: u64,
    /// Failures, responses with status 400 or above and JSON-RPC error
    /// answers.
    pub errors: u64,
    /// Failures by kind, named as in the text report; only those seen.
    pub failures: BTreeMap<String, u64>,
    /// TLS handshake failures by reason (`tls: name mismatch`), named as
    /// in the text report; only those seen. Absent in files written
    /// before reasons were counted.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tls_reasons: BTreeMap<String, u64>,
    /// Responses by status code; only those seen.
    pub status: BTreeMap<u16, u64>,
    /// Response body bytes received.
    pub bytes_in: u64,
    /// Request body bytes sent.
    pub bytes_out: u64,
    /// Connections opened during the run.
    pub reconnects: u64,
    /// How long requests that found no connection free waited for one:
    /// histogram (µs); absent when none waited, and in files written
    /// before it was kept.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub connect_wait: String,
    /// Open model: the background's connects that failed; absent when
    /// none did, and in files written before they were counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub spare_failed: u64,
    /// Requests in flight when the run was stopped.
    pub abandoned: u64,
    /// Time held back a full lead window ahead, in nanoseconds.
    pub held_ns: u64,
    /// Requests per second while running (set in the last interval and the
    /// totals; 0 elsewhere): completed over `active_ns`, kept for readers
    /// of older versions.
    pub rate: f64,
    /// How long the endpoint ran (`EndpointStats::active`), in
    /// nanoseconds; absent in files written before it was kept (the time
    /// is then taken from `rate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_ns: Option<u64>,
    /// Latency histogram (µs), base64 of V2+DEFLATE.
    pub latency: String,
    /// Time-to-first-byte histogram (µs).
    pub ttfb: String,
    /// Connect-time histogram (µs).
    pub connect: String,
    /// JSON-RPC error answers by code.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub jsonrpc_errors: BTreeMap<i64, u64>,
    /// gRPC error statuses by code name (`NOT_FOUND`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub grpc_errors: BTreeMap<String, u64>,
    /// TLS handshake histogram (µs); empty without TLS.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tls: String,
    /// Open model: uncorrected-latency histogram (µs); empty otherwise.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uncorrected: String,
    /// Open model: send-lag histogram (µs); empty otherwise.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub lag: String,
    /// Open model: requests that started late (`--max-in-flight` reached).
    #[serde(default)]
    pub late: u64,
    /// Open model: requests due before the stop that were never sent;
    /// absent when none, and in files written before they were counted.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unsent: u64,
    /// Open model: requests that fell due; absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub offered: u64,
    /// Closed model: the time virtual users were active, summed over them,
    /// in nanoseconds; absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub user_ns: u64,
    /// How long the endpoint was sending (`EndpointStats::sending`), in
    /// nanoseconds; absent in files written before it was kept (the time
    /// it ran is then taken).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sending_ns: Option<u64>,
    /// Requests where this endpoint disagreed with the first one, once
    /// each; absent in files written before it was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mismatched: Option<u64>,
    /// Answers that failed a flow step's check.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed_checks: u64,
    /// Flows: per step, in step order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub steps: Vec<PartRecord>,
    /// Request streams: per JSON-RPC method or HTTP route.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<PartRecord>,
    /// Flows: whole instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<FlowRecord>,
    /// Scenario suites: whole instances of each flow, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scenarios: Vec<FlowRecord>,
    /// Injected faults (`--fault`) by name: the connections (HTTP faults:
    /// requests) each acted on; every fault set is named. Absent without
    /// faults and in files written before faults existed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub faults: BTreeMap<String, u64>,
    /// Errors a fault caused, by error kind and fault. Absent without
    /// faults, when none caused an error, and in older files.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fault_errors: Vec<FaultErrorRecord>,
    /// When the requests started and the last ended
    /// (`EndpointStats::sends`); absent without requests and in files
    /// written before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sends: Option<SendsRecord>,
}

/// An endpoint's send times ([`crate::stats::Sends`]), in nanoseconds
/// from the start of the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendsRecord {
    /// The first request's start.
    pub first_ns: u64,
    /// The last request's start.
    pub last_ns: u64,
    /// The latest end of a request.
    pub end_ns: u64,
}

impl SendsRecord {
    fn from_stats(s: &Sends) -> Option<SendsRecord> {
        let ns = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        (!s.is_empty()).then(|| SendsRecord {
            first_ns: ns(s.first),
            last_ns: ns(s.last),
            end_ns: ns(s.end),
        })
    }

    fn to_stats(self) -> Sends {
        Sends {
            first: Duration::from_nanos(self.first_ns),
            last: Duration::from_nanos(self.last_ns),
            end: Duration::from_nanos(self.end_ns),
        }
    }
}

/// Errors of one kind one fault caused (`EndpointStats::fault_errors`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FaultErrorRecord {
    /// The error kind, as reports name it (`connection reset`, `HTTP 503`).
    pub kind: String,
    /// The fault, in its own words.
    pub fault: String,
    /// How many.
    pub count: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One step of a flow, or one method of a stream, at one endpoint.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PartRecord {
    /// The step's name, or the method or route.
    pub name: String,
    /// Requests finished.
    pub requests: u64,
    /// Of those, errors (for a step: the step failed).
    pub errors: u64,
    /// Answers that failed the step's check.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub failed_checks: u64,
    /// Steps whose request could not be built.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_built: u64,
    /// Steps skipped after the instance failed earlier.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped: u64,
    /// Answers that differed from the reference's.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub mismatched: u64,
    /// Latency histogram (µs).
    pub latency: String,
    /// A paged step's traversals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traversal: Option<TraversalRecord>,
}

/// A paged step's traversals at one endpoint (see
/// [`crate::stats::TraversalStats`]).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct TraversalRecord {
    pub completed: u64,
    pub stopped: u64,
    pub pages: u64,
    pub items: u64,
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duplicates: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unkeyed: u64,
    /// Time per completed traversal histogram (µs).
    pub time: String,
    /// Page latency histograms (µs) by depth bucket: page 1, 2, 3-4, 5-8...
    pub depth: Vec<String>,
}

impl TraversalRecord {
    fn from_stats(t: &crate::stats::TraversalStats) -> TraversalRecord {
        TraversalRecord {
            completed: t.completed,
            stopped: t.stopped,
            pages: t.pages,
            items: t.items,
            bytes: t.bytes,
            duplicates: t.duplicates,
            unkeyed: t.unkeyed,
            time: encode_histogram(&t.time),
            depth: t.depth.iter().map(encode_histogram).collect(),
        }
    }

    fn to_stats(&self) -> Result<crate::stats::TraversalStats, String> {
        let new = crate::stats::new_part_histogram;
        Ok(crate::stats::TraversalStats {
            completed: self.completed,
            stopped: self.stopped,
            pages: self.pages,
            items: self.items,
            bytes: self.bytes,
            duplicates: self.duplicates,
            unkeyed: self.unkeyed,
            time: decode_into(&self.time, new())?,
            depth: self
                .depth
                .iter()
                .map(|h| decode_into(h, new()))
                .collect::<Result<_, _>>()?,
        })
    }
}

/// Whole flow instances at one endpoint.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct FlowRecord {
    /// The flow's name (absent for all flows of a run together).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Instances that ended.
    pub instances: u64,
    /// Of those, instances whose every step succeeded.
    pub succeeded: u64,
    /// Duration histogram of the successful instances (µs).
    pub duration: String,
}

impl FlowRecord {
    fn from_stats(f: &crate::stats::FlowStats) -> FlowRecord {
        FlowRecord {
            name: f.name.clone(),
            instances: f.instances,
            succeeded: f.succeeded,
            duration: encode_histogram(&f.duration),
        }
    }

    fn to_stats(&self) -> Result<crate::stats::FlowStats, String> {
        Ok(crate::stats::FlowStats {
            name: self.name.clone(),
            instances: self.instances,
            succeeded: self.succeeded,
            duration: decode_histogram(&self.duration)?,
        })
    }
}

impl PartRecord {
    fn from_stats(p: &crate::stats::PartStats) -> PartRecord {
        PartRecord {
            name: p.name.clone(),
            requests: p.requests,
            errors: p.errors,
            failed_checks: p.failed_checks,
            not_built: p.not_built,
            skipped: p.skipped,
            mismatched: p.mismatched,
            latency: encode_histogram(&p.latency),
            traversal: p.traversal.as_deref().map(TraversalRecord::from_stats),
        }
    }

    fn to_stats(&self) -> Result<crate::stats::PartStats, String> {
        Ok(crate::stats::PartStats {
            name: self.name.clone(),
            requests: self.requests,
            errors: self.errors,
            failed_checks: self.failed_checks,
            not_built: self.not_built,
            skipped: self.skipped,
            mismatched: self.mismatched,
            latency: decode_into(&self.latency, crate::stats::new_part_histogram())?,
            traversal: match &self.traversal {
                Some(t) => Some(Box::new(t.to_stats()?)),
                None => None,
            },
        })
    }
}

/// Comparison counters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct VerdictRecord {
    /// Requests compared.
    pub compared: u64,
    /// Requests where an endpoint disagreed with the first.
    pub mismatched: u64,
    /// Requests not answered by every endpoint at the stop.
    pub incomplete: u64,
    /// Mismatch groups with their samples (of this interval, or all).
    #[serde(default)]
    pub groups: Vec<MismatchGroup>,
    /// Errors grouped by method, endpoint and kind.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub error_groups: Vec<MismatchGroup>,
    /// Requests per method.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<(String, u64)>,
    /// Requests compared byte for byte because a body was not JSON.
    #[serde(default)]
    pub fell_back: u64,
    /// Requests a timing core judged itself (the judge thread was behind).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub judged_on_core: u64,
    /// Requests whose differing answers were not judged: the run was
    /// stopped while they waited.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub not_judged: u64,
    /// The most bytes of differing answers waiting to be judged at once.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub judge_queue_peak: u64,
    /// Noise mode: requests whose differences were all noise.
    #[serde(default)]
    pub noise_only: u64,
    /// Noise mode: per field, reference-pair and candidate differences.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noise: Vec<crate::stats::NoiseField>,
}

/// One interval.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct IntervalLine {
    /// Always `interval`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Interval number from 0: it covers `[index, index + 1) × interval_ms`
    /// from the start.
    pub index: u64,
    /// When the line was written, milliseconds since the Unix epoch.
    pub written_unix_ms: u64,
    /// Per endpoint, in header order.
    pub endpoints: Vec<EndpointRecord>,
    /// Comparison counters of the interval.
    pub verdicts: VerdictRecord,
}

/// Input counters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct InputRecord {
    /// Requests read.
    pub requests: u64,
    /// Malformed records skipped.
    pub malformed: u64,
    /// The first few malformed records.
    #[serde(default)]
    pub samples: Vec<MalformedRecord>,
    /// What the source said it held.
    #[serde(default)]
    pub summary: Option<String>,
}

/// A malformed input record.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MalformedRecord {
    /// Where it was.
    pub location: String,
    /// What was wrong.
    pub reason: String,
}

/// The last line: the whole run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TotalsLine {
    /// Always `totals`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The run's wall time, nanoseconds.
    pub elapsed_ns: u64,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
    /// Input counters.
    pub input: InputRecord,
    /// Why the input failed, if it did.
    #[serde(default)]
    pub input_error: Option<String>,
    /// Per endpoint, merged over the run.
    pub endpoints: Vec<EndpointRecord>,
    /// Comparison counters and every mismatch group.
    pub verdicts: VerdictRecord,
    /// `--mismatches`: mismatched requests seen, lines written, and the
    /// limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logged: Option<(u64, u64, u64)>,
    /// `--record mismatches`: the requests that mismatched or met an
    /// error, and the request lines written for them (fewer once
    /// `--record-limit` is reached).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recorded: Option<(u64, u64)>,
}

/// A histogram as base64 of its V2+DEFLATE serialization.
pub fn encode_histogram(h: &Histogram<u64>) -> String {
    let mut buf = Vec::new();
    // Serializing into a Vec cannot fail for a histogram of ours.
    let _ = V2DeflateSerializer::new().serialize(h, &mut buf);
    base64::engine::general_purpose::STANDARD.encode(buf)
}

/// The histogram of [`encode_histogram`].
///
/// # Errors
/// When the text is not base64 or not a serialized histogram.
pub fn decode_histogram(s: &str) -> Result<Histogram<u64>, String> {
    decode_into(s, crate::stats::new_histogram())
}

/// Decode a histogram into `out`, whose bounds and precision are those of
/// the live stats it stands for, so merging is exact.
fn decode_into(s: &str, mut out: Histogram<u64>) -> Result<Histogram<u64>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(s)
        .map_err(|e| format!("histogram is not base64: {e}"))?;
    let h: Histogram<u64> = Deserializer::new()
        .deserialize(&mut &bytes[..])
        .map_err(|e| format!("histogram cannot be decoded: {e:?}"))?;
    out.add(&h)
        .map_err(|e| format!("histogram out of range: {e:?}"))?;
    Ok(out)
}

impl EndpointRecord {
    /// The record of `s`.
    pub fn from_stats(s: &EndpointStats) -> EndpointRecord {
        EndpointRecord {
            sent: s.sent,
            completed: s.completed(),
            responses: s.responses,
            errors: s.errors(),
            failures: Failure::ALL
                .iter()
                .filter(|f| s.failures[f.index()] > 0)
                .map(|f| (f.name().to_string(), s.failures[f.index()]))
                .collect(),
            tls_reasons: TlsReason::ALL
                .iter()
                .filter(|r| s.tls_reasons[r.index()] > 0)
                .map(|r| (r.name().to_string(), s.tls_reasons[r.index()]))
                .collect(),
            status: s
                .status
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(c, n)| (c as u16, *n))
                .collect(),
            bytes_in: s.bytes_in,
            bytes_out: s.bytes_out,
            reconnects: s.reconnects,
            connect_wait: optional_histogram(&s.connect_wait),
            spare_failed: s.spare_failed,
            abandoned: s.abandoned,
            held_ns: u64::try_from(s.held_back.as_nanos()).unwrap_or(u64::MAX),
            rate: s.rate(),
            active_ns: (!s.active.is_zero())
                .then(|| u64::try_from(s.active.as_nanos()).unwrap_or(u64::MAX)),
            latency: encode_histogram(&s.latency),
            ttfb: encode_histogram(&s.ttfb),
            connect: encode_histogram(&s.connect),
            jsonrpc_errors: s.jsonrpc_errors.clone(),
            grpc_errors: s
                .grpc_errors
                .iter()
                .map(|(c, n)| (crate::grpc::code_name(*c).to_string(), *n))
                .collect(),
            tls: optional_histogram(&s.tls),
            uncorrected: optional_histogram(&s.uncorrected),
            lag: optional_histogram(&s.lag),
            late: s.late,
            unsent: s.unsent,
            offered: s.offered,
            user_ns: u64::try_from(s.user_time.as_nanos()).unwrap_or(u64::MAX),
            sending_ns: (!s.sending.is_zero())
                .then(|| u64::try_from(s.sending.as_nanos()).unwrap_or(u64::MAX)),
            mismatched: Some(s.mismatched),
            failed_checks: s.failed_checks,
            steps: s.steps.iter().map(PartRecord::from_stats).collect(),
            methods: s.methods.iter().map(PartRecord::from_stats).collect(),
            flows: (s.flows.instances > 0).then(|| FlowRecord::from_stats(&s.flows)),
            scenarios: s.by_flow.iter().map(FlowRecord::from_stats).collect(),
            faults: s.faults.clone(),
            fault_errors: s
                .fault_errors
                .iter()
                .map(|((kind, fault), n)| FaultErrorRecord {
                    kind: kind.clone(),
                    fault: fault.clone(),
                    count: *n,
                })
                .collect(),
            sends: SendsRecord::from_stats(&s.sends),
        }
    }

    /// How long the endpoint ran: `active_ns`, or in older files the time
    /// its completed requests took at its `rate`.
    fn active(&self) -> Duration {
        match self.active_ns {
            Some(ns) => Duration::from_nanos(ns),
            None if self.rate > 0.0 => {
                let completed = self.responses + self.failures.values().sum::<u64>();
                Duration::try_from_secs_f64(completed as f64 / self.rate).unwrap_or_default()
            }
            None => Duration::ZERO,
        }
    }

    /// The statistics of this record.
    ///
    /// # Errors
    /// An unknown failure kind, a status code out of range, a bad histogram.
    pub fn to_stats(&self) -> Result<EndpointStats, String> {
        let mut s = EndpointStats {
            sent: self.sent,
            responses: self.responses,
            bytes_in: self.bytes_in,
            bytes_out: self.bytes_out,
            reconnects: self.reconnects,
            abandoned: self.abandoned,
            held_back: Duration::from_nanos(self.held_ns),
            active: self.active(),
            sending: self
                .sending_ns
                .map_or_else(|| self.active(), Duration::from_nanos),
            latency: decode_histogram(&self.latency)?,
            ttfb: decode_histogram(&self.ttfb)?,
            connect: decode_histogram(&self.connect)?,
            jsonrpc_errors: self.jsonrpc_errors.clone(),
            late: self.late,
            unsent: self.unsent,
            offered: self.offered,
            user_time: Duration::from_nanos(self.user_ns),
            spare_failed: self.spare_failed,
            faults: self.faults.clone(),
            fault_errors: self
                .fault_errors
                .iter()
                .map(|r| ((r.kind.clone(), r.fault.clone()), r.count))
                .collect(),
            mismatched: self.mismatched.unwrap_or(0),
            failed_checks: self.failed_checks,
            sends: self.sends.map(SendsRecord::to_stats).unwrap_or_default(),
            steps: self
                .steps
                .iter()
                .map(PartRecord::to_stats)
                .collect::<Result<_, _>>()?,
            methods: self
                .methods
                .iter()
                .map(PartRecord::to_stats)
                .collect::<Result<_, _>>()?,
            ..EndpointStats::default()
        };
        if let Some(f) = &self.flows {
            s.flows = f.to_stats()?;
        }
        s.by_flow = self
            .scenarios
            .iter()
            .map(FlowRecord::to_stats)
            .collect::<Result<_, _>>()?;
        // The histograms a record leaves out when empty.
        for (h, text) in [
            (&mut s.tls, &self.tls),
            (&mut s.uncorrected, &self.uncorrected),
            (&mut s.lag, &self.lag),
            (&mut s.connect_wait, &self.connect_wait),
        ] {
            if !text.is_empty() {
                *h = decode_histogram(text)?;
            }
        }
        for (name, n) in &self.failures {
            let f = Failure::ALL
                .iter()
                .find(|f| f.name() == name)
                .ok_or_else(|| format!("unknown failure kind {name:?}"))?;
            s.failures[f.index()] = *n;
        }
        for (name, n) in &self.grpc_errors {
            // A name a later versus knows is still an error: UNKNOWN.
            let code = crate::grpc::code_by_name(name).unwrap_or(2);
            *s.grpc_errors.entry(code).or_default() += *n;
        }
        for (name, n) in &self.tls_reasons {
            // A reason a later versus names is still a TLS failure.
            let r = TlsReason::from_name(name).unwrap_or(TlsReason::Other);
            s.tls_reasons[r.index()] += *n;
        }
        for (code, n) in &self.status {
            let slot = s
                .status
                .get_mut(usize::from(*code))
                .ok_or_else(|| format!("status code {code} out of range"))?;
            *slot = *n;
        }
        Ok(s)
    }
}

impl VerdictRecord {
    /// The record of `v`.
    pub fn from_stats(v: &VerdictStats) -> VerdictRecord {
        VerdictRecord {
            compared: v.compared,
            mismatched: v.mismatched,
            incomplete: v.incomplete,
            groups: v.groups.clone(),
            error_groups: v.error_groups.clone(),
            methods: v.methods.clone(),
            fell_back: v.fell_back,
            judged_on_core: v.judged_on_core,
            not_judged: v.not_judged,
            judge_queue_peak: v.judge_queue_peak,
            noise_only: v.noise_only,
            noise: v.noise.clone(),
        }
    }

    /// The counters of this record.
    pub fn to_stats(&self) -> VerdictStats {
        VerdictStats {
            compared: self.compared,
            mismatched: self.mismatched,
            incomplete: self.incomplete,
            groups: self.groups.clone(),
            error_groups: self.error_groups.clone(),
            methods: self.methods.clone(),
            fell_back: self.fell_back,
            judged_on_core: self.judged_on_core,
            not_judged: self.not_judged,
            judge_queue_peak: self.judge_queue_peak,
            noise_only: self.noise_only,
            noise: self.noise.clone(),
        }
    }
}

/// A histogram's text, or nothing when it is empty (the open model's
/// histograms are empty in a closed-model run).
fn optional_histogram(h: &hdrhistogram::Histogram<u64>) -> String {
    if h.is_empty() {
        String::new()
    } else {
        encode_histogram(h)
    }
}

/// Records of every endpoint of `s`.
pub fn records_of(s: &RunStats) -> Vec<EndpointRecord> {
    s.endpoints.iter().map(EndpointRecord::from_stats).collect()
}

/// The statistics of `endpoints` (those of the header, `infos`) and
/// `verdicts`.
/// A record written before mismatched requests were counted per endpoint
/// gets the sum of its mismatch groups (which counts a request once per
/// differing field: the closest figure such a file holds).
///
/// # Errors
/// As [`EndpointRecord::to_stats`].
#[allow(clippy::needless_update)]
pub fn stats_of(
    endpoints: &[EndpointRecord],
    infos: &[EndpointInfo],
    verdicts: &VerdictRecord,
) -> Result<RunStats, String> {
    let mut stats = RunStats {
        endpoints: endpoints
            .iter()
            .map(EndpointRecord::to_stats)
            .collect::<Result<_, _>>()?,
        verdicts: verdicts.to_stats(),
        ..RunStats::default()
    };
    for ((s, r), info) in stats.endpoints.iter_mut().zip(endpoints).zip(infos) {
        if r.mismatched.is_none() {
            s.mismatched = (verdicts.groups.iter())
                .filter(|g| g.endpoint == info.label)
                .map(|g| g.count)
                .sum();
        }
    }
    Ok(stats)
}

impl InputRecord {
    /// The record of `i`.
    pub fn from_stats(i: &InputStats) -> InputRecord {
        InputRecord {
            requests: i.requests,
            malformed: i.malformed,
            samples: i
                .samples
                .iter()
                .map(|m| MalformedRecord {
                    location: m.location.clone(),
                    reason: m.reason.clone(),
                })
                .collect(),
            summary: i.summary.clone(),
        }
    }

    /// The counters of this record.
    pub fn to_stats(&self) -> InputStats {
        InputStats {
            requests: self.requests,
            malformed: self.malformed,
            samples: self
                .samples
                .iter()
                .map(|m| Malformed {
                    location: m.location.clone(),
                    reason: m.reason.clone(),
                })
                .collect(),
            summary: self.summary.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mismatched_requests_round_trip_and_older_files_fall_back_to_the_groups() {
        let info = |label: &str| EndpointInfo {
            label: label.into(),
            named: true,
            url: String::new(),
        };
        let infos = [info("ref"), info("new")];
        let verdicts = VerdictRecord {
            groups: vec![
                MismatchGroup {
                    endpoint: "new".into(),
                    count: 4,
                    ..MismatchGroup::default()
                },
                MismatchGroup {
                    endpoint: "new".into(),
                    count: 2,
                    ..MismatchGroup::default()
                },
            ],
            ..VerdictRecord::default()
        };
        let new = EndpointStats {
            mismatched: 3,
            ..EndpointStats::default()
        };
        let json = serde_json::to_value(EndpointRecord::from_stats(&new)).unwrap();
        let reference = EndpointRecord::from_stats(&EndpointStats::default());
        let saved: EndpointRecord = serde_json::from_value(json.clone()).unwrap();
        let stats = stats_of(&[reference.clone(), saved], &infos, &verdicts).unwrap();
        assert_eq!(stats.endpoints[1].mismatched, 3);
        // A file from before the counter: the sum of the endpoint's groups.
        let mut old = json;
        old.as_object_mut().unwrap().remove("mismatched");
        let old: EndpointRecord = serde_json::from_value(old).unwrap();
        let stats = stats_of(&[reference, old], &infos, &verdicts).unwrap();
        assert_eq!(stats.endpoints[1].mismatched, 6);
        assert_eq!(stats.endpoints[0].mismatched, 0);
    }

    #[test]
    fn tls_reasons_round_trip_and_older_files_have_none() {
        let mut s = EndpointStats::default();
        s.failures[Failure::Tls(TlsReason::Expired).index()] = 3;
        s.tls_reasons[TlsReason::Expired.index()] = 3;
        let json = serde_json::to_value(EndpointRecord::from_stats(&s)).unwrap();
        assert_eq!(json["tls_reasons"]["tls: expired"], 3);
        let back: EndpointRecord = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back.to_stats().unwrap().tls_reasons, s.tls_reasons);
        // A file from before reasons were counted: the kind, no reasons.
        let mut old = json;
        old.as_object_mut().unwrap().remove("tls_reasons");
        let old = serde_json::from_value::<EndpointRecord>(old)
            .unwrap()
            .to_stats()
            .unwrap();
        assert_eq!(old.failures[Failure::Tls(TlsReason::Other).index()], 3);
        assert_eq!(old.tls_reasons, [0; TlsReason::ALL.len()]);
    }

    #[test]
    fn send_times_round_trip_and_older_files_have_none() {
        let mut s = EndpointStats::default();
        s.sends
            .record(Duration::from_millis(3), Duration::from_millis(200));
        s.sends
            .record(Duration::from_millis(9), Duration::from_millis(1));
        let json = serde_json::to_value(EndpointRecord::from_stats(&s)).unwrap();
        let back: EndpointRecord = serde_json::from_value(json.clone()).unwrap();
        assert_eq!(back.to_stats().unwrap().sends, s.sends);
        // No requests, or a file from before send times were kept.
        let none = serde_json::to_value(EndpointRecord::from_stats(&EndpointStats::default()));
        assert!(none.unwrap().get("sends").is_none());
        let mut old = json;
        old.as_object_mut().unwrap().remove("sends");
        let old = serde_json::from_value::<EndpointRecord>(old).unwrap();
        assert!(old.to_stats().unwrap().sends.is_empty());
    }

    #[test]
    fn connect_waits_round_trip_and_older_files_have_none() {
        let mut s = EndpointStats::default();
        crate::stats::record(&mut s.connect_wait, Duration::from_micros(700));
        s.spare_failed = 4;
        let spare = serde_json::to_value(EndpointRecord::from_stats(&s)).unwrap();
        let spare: EndpointRecord = serde_json::from_value(spare).unwrap();
        assert_eq!(spare.to_stats().unwrap().spare_failed, 4);
        let json = serde_json::to_value(EndpointRecord::from_stats(&s)).unwrap();
        let back: EndpointRecord = serde_json::from_value(json.clone()).unwrap();
        let back = back.to_stats().unwrap().connect_wait;
        assert_eq!((back.len(), back.max()), (1, 700));
        // None waited, or a file from before waits were kept: no field.
        let none = serde_json::to_value(EndpointRecord::from_stats(&EndpointStats::default()));
        assert!(none.unwrap().get("connect_wait").is_none());
        let mut old = json;
        old.as_object_mut().unwrap().remove("connect_wait");
        let old = serde_json::from_value::<EndpointRecord>(old).unwrap();
        assert!(old.to_stats().unwrap().connect_wait.is_empty());
    }

    /// Every figure a run holds survives its saved file: each endpoint's
    /// record and the verdicts, written as JSON and read back. Figures
    /// that are 0 in ordinary runs (late, abandoned, judged on a core,
    /// background connects failed) are set too.
    #[test]
    fn every_figure_survives_a_saved_run() {
        fn json_round_trip<T: Serialize + for<'de> Deserialize<'de>>(t: &T) -> T {
            serde_json::from_str(&serde_json::to_string(t).unwrap()).unwrap()
        }
        let run = crate::stats::every_figure::run(1);
        let records: Vec<EndpointRecord> = run
            .endpoints
            .iter()
            .map(|e| json_round_trip(&EndpointRecord::from_stats(e)))
            .collect();
        let verdicts = json_round_trip(&VerdictRecord::from_stats(&run.verdicts));
        let infos: Vec<EndpointInfo> = ["a", "b"]
            .iter()
            .map(|l| EndpointInfo {
                label: l.to_string(),
                named: true,
                url: String::new(),
            })
            .collect();
        let back = stats_of(&records, &infos, &verdicts).unwrap();
        crate::stats::every_figure::assert_same(&back, &run, "read back");
    }

    /// The due requests left unsent and the time sending lasted are kept;
    /// a file from before they were has none unsent and the sent rate over
    /// the time the endpoint ran.
    #[test]
    fn unsent_and_sending_round_trip_and_older_files_send_while_they_ran() {
        let s = EndpointStats {
            sent: 60,
            unsent: 20,
            active: Duration::from_millis(3200),
            sending: Duration::from_secs(3),
            ..EndpointStats::default()
        };
        let json = serde_json::to_value(EndpointRecord::from_stats(&s)).unwrap();
        let back: EndpointRecord = serde_json::from_value(json.clone()).unwrap();
        let back = back.to_stats().unwrap();
        assert_eq!((back.unsent, back.sending), (20, Duration::from_secs(3)));
        assert_eq!(back.sent_rate(), 20.0);
        let mut old = json;
        let fields = old.as_object_mut().unwrap();
        fields.remove("unsent");
        fields.remove("sending_ns");
        let old = serde_json::from_value::<EndpointRecord>(old).unwrap();
        let old = old.to_stats().unwrap();
        assert_eq!((old.unsent, old.sending), (0, Duration::from_millis(3200)));
    }
}
