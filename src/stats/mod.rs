//! Statistics in constant memory: per endpoint HDR histograms (latency,
//! time to first byte, connect) and counters (status codes, failures by
//! kind, bytes), and per run the verdict counters. Each core records into
//! its own [`RunStats`]; cores' stats are merged with [`RunStats::merge`].
//! Rendering lives in `report`, not here.

use std::time::Duration;

use hdrhistogram::Histogram;

use crate::model::{Failure, Outcome, TlsReason};

#[cfg(test)]
pub(crate) mod every_figure;
mod sends;
mod tally;
pub use sends::Sends;
pub use tally::Tallies;

/// The code under which a JSON-RPC batch answer holding errors is counted.
pub const BATCH_ERROR: i64 = i64::MIN;

/// Highest latency a histogram holds: one hour, in microseconds. Longer
/// values are clamped to it (and still counted).
const MAX_MICROS: u64 = 3_600_000_000;

/// A latency histogram in microseconds, 3 significant figures. It starts
/// covering 1 µs to 2 ms (16 KiB of counts) and grows, a bucket (8 KiB) per
/// doubling, to the largest value recorded (at most [`MAX_MICROS`], 184 KiB):
/// memory follows the latencies seen, never the number of requests, and the
/// many histograms a run keeps stay small when latencies are.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new(SIGFIG).unwrap_or_else(|_| unreachable!("3 significant figures are in range"))
}

/// The significant figures of [`new_histogram`].
const SIGFIG: u8 = 3;

/// The significant figures of [`new_part_histogram`].
const PART_SIGFIG: u8 = 2;

/// A latency histogram of one part of an endpoint's traffic (a flow step,
/// a method), with 2 significant figures (1%): its tables show p50 and
/// p99, and a run keeps one per part, endpoint and interval, so at 3
/// figures they cost eight times the memory for a precision no table
/// shows. Grows like [`new_histogram`].
pub fn new_part_histogram() -> Histogram<u64> {
    Histogram::new(PART_SIGFIG)
        .unwrap_or_else(|_| unreachable!("2 significant figures are in range"))
}

/// Record a duration in µs (clamped to 1 µs ..= [`MAX_MICROS`]).
pub fn record(h: &mut Histogram<u64>, d: Duration) {
    let us = u64::try_from(d.as_micros())
        .unwrap_or(MAX_MICROS)
        .clamp(1, MAX_MICROS);
    // Every histogram comes from `new_histogram` (those read from files
    // too: `results::format` copies into one) and resizes itself, so
    // recording up to MAX_MICROS cannot fail.
    let _ = h.record(us);
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
    /// TLS handshake failures (of `failures`) by [`TlsReason`].
    pub tls_reasons: [u64; TlsReason::ALL.len()],
    /// Responses by status code (index = code, 0..1000).
    pub status: Vec<u64>,
    /// JSON-RPC error answers (inside HTTP 2xx) by error code; a batch
    /// holding errors counts under [`BATCH_ERROR`].
    pub jsonrpc_errors: std::collections::BTreeMap<i64, u64>,
    /// gRPC answers whose status was an error (any code but `OK`, in an
    /// HTTP 2xx answer), by code.
    pub grpc_errors: std::collections::BTreeMap<u32, u64>,
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
    /// TLS handshake time, µs (one sample per TLS connection).
    pub tls: Histogram<u64>,
    /// Open model: latency from the actual send, as a closed-loop tool
    /// would report it, µs.
    pub uncorrected: Histogram<u64>,
    /// Open model: how late each request started against its schedule, µs.
    pub lag: Histogram<u64>,
    /// Open model: requests released when no slot was free for this
    /// endpoint (`--max-in-flight` reached); they started late.
    pub late: u64,
    /// Open model: requests (flow instances in a scenario) due before the
    /// run stopped that were never sent to this endpoint: the stop came
    /// while they waited for a free slot (`--max-in-flight`) or for room
    /// in the lead window (`--lead`).
    pub unsent: u64,
    /// Open model: requests that fell due (sent, or counted unsent); over
    /// an interval, the load offered then (`--stages` changes it).
    pub offered: u64,
    /// Closed model: the time virtual users were active, summed over them;
    /// over an interval, the users then (`--stages` changes them).
    pub user_time: Duration,
    /// How long this endpoint was sending, what the sent rate is over:
    /// open model, from the start of counting to the stop, or to when the
    /// next request would have been due once the input ran out (not the
    /// wait for the last answers); closed model, where every send waits
    /// for an answer, [`EndpointStats::active`]. Paused time left out.
    pub sending: Duration,
    /// Requests where this endpoint disagreed with the first one: once a
    /// request however many fields differ (the mismatch groups count
    /// fields).
    pub mismatched: u64,
    /// Connections opened during the run (not counting warm-up connects).
    pub reconnects: u64,
    /// How long each request that found no connection free waited for
    /// one (a connect, or one given back at `--max-connections`), µs:
    /// part of its latency.
    pub connect_wait: Histogram<u64>,
    /// Open model: the background's connects of spare connections that
    /// failed (it backs off; a request finding none free dials its own).
    pub spare_failed: u64,
    /// Requests still in flight when the run was stopped, abandoned.
    pub abandoned: u64,
    /// Time this endpoint could not send because it was a full lead window
    /// ahead of a slower endpoint.
    pub held_back: Duration,
    /// How long this endpoint ran: from the start of counting to the end
    /// of the run (the stop, or the end of the `--stop-after` duration),
    /// or to its own last completion when its work ran out before that;
    /// paused time left out. Held-back time is part of it: the endpoint
    /// was running, kept back by a slower one. Cores and shards run side
    /// by side, so merging keeps the longest. [`EndpointStats::rate`] is
    /// the one rate every report, merge and comparison shows.
    pub active: Duration,
    /// Answers that failed a flow step's check (their status was not an
    /// error by itself).
    pub failed_checks: u64,
    /// Flows: per step, in step order.
    pub steps: Vec<PartStats>,
    /// Request streams: per JSON-RPC method or HTTP route, at most
    /// [`MAX_PARTS`] names (the rest under `(other)`).
    pub methods: Vec<PartStats>,
    /// Flows: the whole instances.
    pub flows: FlowStats,
    /// Several flows in one run (scenario suites): the instances of each,
    /// in the order of the mix; empty otherwise.
    pub by_flow: Vec<FlowStats>,
    /// Injected faults (`--fault`) by name: how many connections (or, for
    /// the HTTP faults, requests) each acted on; every fault set on the
    /// endpoint is named, zero included. Empty without faults.
    pub faults: std::collections::BTreeMap<String, u64>,
    /// Errors a fault caused, by error kind (as
    /// [`EndpointStats::error_kinds`] names it) and fault name: the
    /// requests whose connection a fault broke (or, for a timeout,
    /// slowed) or whose error status a fault answered. The rest of each
    /// kind is the endpoint's own. Empty without faults.
    pub fault_errors: std::collections::BTreeMap<(String, String), u64>,
    /// When the counted requests started and the last ended (vegeta's
    /// attack and wait).
    pub sends: Sends,
}

/// Most parts (steps, methods) an endpoint keeps by name; later names
/// are counted together under `(other)`.
pub const MAX_PARTS: usize = 50;

/// One named part of an endpoint's traffic: a flow's step, or in a
/// request stream one JSON-RPC method or HTTP route.
#[derive(Clone, Debug)]
pub struct PartStats {
    /// The step's name, or the method or route.
    pub name: String,
    /// Requests finished (an answer or a failure).
    pub requests: u64,
    /// Of those: failures, statuses of 400 and above, JSON-RPC error
    /// answers, and answers that failed the step's check.
    pub errors: u64,
    /// Answers that failed the step's check, or lacked a value the step
    /// takes (and were not errors by themselves).
    pub failed_checks: u64,
    /// Flow steps whose request could not be built (a value an earlier
    /// answer lacked); no request was sent.
    pub not_built: u64,
    /// Flow steps not run because the instance had failed at an earlier
    /// step at this endpoint.
    pub skipped: u64,
    /// Answers that differed from the reference endpoint's.
    pub mismatched: u64,
    /// Latency of the answers, µs.
    pub latency: Histogram<u64>,
    /// A paged step's traversals (its requests are its pages).
    pub traversal: Option<Box<TraversalStats>>,
}

/// The traversals of a paged flow step at one endpoint.
#[derive(Clone, Debug)]
pub struct TraversalStats {
    /// Traversals that reached the last page.
    pub completed: u64,
    /// Traversals that ended before it (a failed page, or a stop such as
    /// a cycle or the page limit: grouped under the step's errors).
    pub stopped: u64,
    /// Pages, items (with a key, once each), body bytes, repeated items
    /// and items without a key, over the completed traversals.
    pub pages: u64,
    /// See [`TraversalStats::pages`].
    pub items: u64,
    /// See [`TraversalStats::pages`].
    pub bytes: u64,
    /// See [`TraversalStats::pages`].
    pub duplicates: u64,
    /// See [`TraversalStats::pages`].
    pub unkeyed: u64,
    /// Time of each completed traversal, µs.
    pub time: Histogram<u64>,
    /// Page latency by depth, µs: bucket 0 is page 1, bucket b > 0 pages
    /// 2^(b-1)+1 ..= 2^b (2, 3-4, 5-8, ...).
    pub depth: Vec<Histogram<u64>>,
}

impl Default for TraversalStats {
    fn default() -> Self {
        TraversalStats {
            completed: 0,
            stopped: 0,
            pages: 0,
            items: 0,
            bytes: 0,
            duplicates: 0,
            unkeyed: 0,
            time: new_part_histogram(),
            depth: Vec::new(),
        }
    }
}

impl TraversalStats {
    /// The depth bucket of page `depth` (from 1).
    pub fn bucket(depth: u32) -> usize {
        (u32::BITS - depth.max(1).saturating_sub(1).leading_zeros()) as usize
    }

    /// The pages bucket `b` holds, as text (`1`, `2`, `3-4`, `5-8`).
    pub fn bucket_label(b: usize) -> String {
        match b {
            0 => "1".into(),
            1 => "2".into(),
            _ => format!("{}-{}", (1u64 << (b - 1)) + 1, 1u64 << b),
        }
    }

    /// Record the latency of a page at `depth`.
    pub fn page(&mut self, depth: u32, latency: Duration) {
        let b = TraversalStats::bucket(depth);
        while self.depth.len() <= b {
            self.depth.push(new_part_histogram());
        }
        record(&mut self.depth[b], latency);
    }

    /// Add another endpoint-core's record of the same step.
    pub fn merge(&mut self, other: &TraversalStats) {
        self.completed += other.completed;
        self.stopped += other.stopped;
        self.pages += other.pages;
        self.items += other.items;
        self.bytes += other.bytes;
        self.duplicates += other.duplicates;
        self.unkeyed += other.unkeyed;
        let _ = self.time.add(&other.time);
        for (b, h) in other.depth.iter().enumerate() {
            while self.depth.len() <= b {
                self.depth.push(new_part_histogram());
            }
            let _ = self.depth[b].add(h);
        }
    }
}

impl PartStats {
    /// An empty part named `name`.
    pub fn new(name: &str) -> PartStats {
        PartStats {
            name: name.to_string(),
            requests: 0,
            errors: 0,
            failed_checks: 0,
            not_built: 0,
            skipped: 0,
            mismatched: 0,
            latency: new_part_histogram(),
            traversal: None,
        }
    }

    /// Record one finished request; `error` as [`PartStats::errors`]
    /// counts it.
    pub fn record(&mut self, outcome: &Outcome, error: bool) {
        if let Some(latency) = self.count(outcome, error) {
            record(&mut self.latency, latency);
        }
    }

    /// [`PartStats::record`] but for the latency of an answer, which it
    /// returns: for a caller that counts it in a [`Tallies`].
    #[inline(always)]
    pub fn count(&mut self, outcome: &Outcome, error: bool) -> Option<Duration> {
        self.requests += 1;
        self.errors += u64::from(error);
        outcome.result.is_ok().then_some(outcome.latency)
    }

    /// Add another record of the same part.
    pub fn merge(&mut self, other: &PartStats) {
        self.requests += other.requests;
        self.errors += other.errors;
        self.failed_checks += other.failed_checks;
        self.not_built += other.not_built;
        self.skipped += other.skipped;
        self.mismatched += other.mismatched;
        // Histograms resize themselves, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        if let Some(t) = &other.traversal {
            self.traversal.get_or_insert_with(Default::default).merge(t);
        }
    }
}

/// The part named `name` of `parts`, created while fewer than
/// [`MAX_PARTS`] exist (then `(other)`, so nothing goes uncounted).
pub fn part<'a>(parts: &'a mut Vec<PartStats>, name: &str) -> &'a mut PartStats {
    let i = part_index(parts, name);
    &mut parts[i]
}

/// Where [`part`] finds or puts `name` in `parts`. The look-up, made
/// for every request, is inlined; the rare first sight of a name is not.
#[inline]
pub fn part_index(parts: &mut Vec<PartStats>, name: &str) -> usize {
    match parts.iter().position(|p| p.name == name) {
        Some(i) => i,
        None => new_part(parts, name),
    }
}

/// [`part_index`] for a name not in `parts`.
#[cold]
#[inline(never)]
fn new_part(parts: &mut Vec<PartStats>, name: &str) -> usize {
    if parts.len() < MAX_PARTS || name == crate::model::OTHER {
        parts.push(PartStats::new(name));
        return parts.len() - 1;
    }
    part_index(parts, crate::model::OTHER)
}

/// Add `other`'s parts to `parts`, by name.
fn merge_parts(parts: &mut Vec<PartStats>, other: &[PartStats]) {
    for p in other {
        part(parts, &p.name).merge(p);
    }
}

/// Whole flow instances at one endpoint.
#[derive(Clone, Debug)]
pub struct FlowStats {
    /// The flow's name (empty for all flows of a run together).
    pub name: String,
    /// Instances that ended at this endpoint (every step done, or one
    /// failed).
    pub instances: u64,
    /// Of those, instances whose every step succeeded.
    pub succeeded: u64,
    /// Duration of the successful instances, from the first step's start
    /// (its due time in the open model) to the last step's end, µs.
    pub duration: Histogram<u64>,
}

impl Default for FlowStats {
    fn default() -> Self {
        FlowStats::named("")
    }
}

impl FlowStats {
    /// Empty figures of the flow named `name`.
    pub fn named(name: &str) -> FlowStats {
        FlowStats {
            name: name.to_string(),
            instances: 0,
            succeeded: 0,
            duration: new_histogram(),
        }
    }

    /// Record one instance that ended.
    pub fn record(&mut self, succeeded: bool, duration: Duration) {
        self.instances += 1;
        if succeeded {
            self.succeeded += 1;
            record(&mut self.duration, duration);
        }
    }

    /// Add another record.
    pub fn merge(&mut self, other: &FlowStats) {
        self.instances += other.instances;
        self.succeeded += other.succeeded;
        let _ = self.duration.add(&other.duration);
    }
}

impl Default for EndpointStats {
    fn default() -> Self {
        EndpointStats {
            sent: 0,
            responses: 0,
            failures: [0; Failure::ALL.len()],
            tls_reasons: [0; TlsReason::ALL.len()],
            status: vec![0; 1000],
            jsonrpc_errors: std::collections::BTreeMap::new(),
            grpc_errors: std::collections::BTreeMap::new(),
            bytes_in: 0,
            bytes_out: 0,
            latency: new_histogram(),
            ttfb: new_histogram(),
            connect: new_histogram(),
            tls: new_histogram(),
            uncorrected: new_histogram(),
            lag: new_histogram(),
            late: 0,
            unsent: 0,
            offered: 0,
            user_time: Duration::ZERO,
            sending: Duration::ZERO,
            mismatched: 0,
            reconnects: 0,
            connect_wait: new_histogram(),
            spare_failed: 0,
            abandoned: 0,
            held_back: Duration::ZERO,
            active: Duration::ZERO,
            failed_checks: 0,
            steps: Vec::new(),
            methods: Vec::new(),
            flows: FlowStats::default(),
            by_flow: Vec::new(),
            faults: std::collections::BTreeMap::new(),
            fault_errors: std::collections::BTreeMap::new(),
            sends: Sends::default(),
        }
    }
}

impl EndpointStats {
    /// Record one outcome.
    pub fn record(&mut self, outcome: &Outcome) {
        if let Some((latency, ttfb)) = self.count(outcome) {
            record(&mut self.latency, latency);
            record(&mut self.ttfb, ttfb);
        }
    }

    /// [`EndpointStats::record`] but for the latency and time to first
    /// byte of an answer, which it returns: for a caller that counts them
    /// in a [`Tallies`].
    #[inline(always)]
    pub fn count(&mut self, outcome: &Outcome) -> Option<(Duration, Duration)> {
        self.bytes_out += outcome.bytes_out;
        if let Some(c) = outcome.connect {
            record(&mut self.connect, c);
            self.reconnects += 1;
        }
        if let Some(lag) = outcome.lag {
            record(&mut self.lag, lag);
        }
        match &outcome.result {
            Ok(r) => {
                if outcome.lag.is_some() {
                    record(&mut self.uncorrected, outcome.uncorrected);
                }
                self.responses += 1;
                self.status[usize::from(r.status).min(999)] += 1;
                self.bytes_in += r.body_len;
                Some((outcome.latency, r.ttfb))
            }
            Err(f) => {
                self.failures[f.index()] += 1;
                if let Failure::Tls(r) = f {
                    self.tls_reasons[r.index()] += 1;
                }
                None
            }
        }
    }

    /// Record a connection opened before the run (its time, not a
    /// reconnect).
    pub fn record_connect(&mut self, took: Duration) {
        record(&mut self.connect, took);
    }

    /// The mean body size of a response, to the nearest byte (every
    /// report shows this one figure); `None` without responses.
    pub fn bytes_per_response(&self) -> Option<u64> {
        let half = self.responses / 2;
        (self.bytes_in.checked_add(half)?).checked_div(self.responses)
    }

    /// Requests that completed: a response or a failure.
    pub fn completed(&self) -> u64 {
        self.responses + self.failures.iter().sum::<u64>()
    }

    /// Requests completed per second of the time the endpoint ran
    /// ([`EndpointStats::active`]); 0 when it never ran. Failed connect
    /// attempts and requests not sent to a stopped endpoint are left out:
    /// they reached no server, and a slot backing off would otherwise count
    /// as a rate of requests.
    pub fn rate(&self) -> f64 {
        per_second(
            self.completed() - self.failed_connects() - self.stopped(),
            self.active,
        )
    }

    /// Requests not sent because the endpoint was stopped
    /// ([`Failure::Stopped`]): counted among the failures, not in the rate.
    pub fn stopped(&self) -> u64 {
        self.failures[Failure::Stopped.index()]
    }

    /// Failed connect attempts per second of the time the endpoint ran.
    pub fn failed_connect_rate(&self) -> f64 {
        per_second(self.failed_connects(), self.active)
    }

    /// Requests sent per second of the time the endpoint was sending
    /// ([`EndpointStats::sending`]).
    pub fn sent_rate(&self) -> f64 {
        per_second(self.sent, self.sending)
    }

    /// Open model: the share of requests sent within 1 ms of their due
    /// time (how true the schedule kept), in percent; `None` when none was
    /// sent on a schedule.
    pub fn on_time(&self) -> Option<f64> {
        let n = self.lag.len();
        (n > 0).then(|| self.lag.count_between(0, 1000) as f64 * 100.0 / n as f64)
    }

    /// Open model: requests that fell due per second of the time sending
    /// lasted (the load offered, on average).
    pub fn offered_rate(&self) -> f64 {
        per_second(self.offered, self.sending)
    }

    /// Closed model: the virtual users on average over the time the
    /// endpoint ran.
    pub fn mean_users(&self) -> f64 {
        match self.active.is_zero() {
            true => 0.0,
            false => self.user_time.as_secs_f64() / self.active.as_secs_f64(),
        }
    }

    /// Connect attempts that failed (counted among the failures): requests
    /// that never reached the server.
    pub fn failed_connects(&self) -> u64 {
        Failure::ALL
            .iter()
            .filter(|f| f.at_connect())
            .map(|f| self.failures[f.index()])
            .sum()
    }

    /// Whether no connection to the endpoint ever opened, though requests
    /// were tried.
    pub fn never_connected(&self) -> bool {
        self.connect.is_empty() && self.responses == 0 && self.completed() > 0
    }

    /// Whether every request the endpoint finished was an error (and it
    /// finished some): its figures are errors, not a benchmark.
    pub fn failed_every_request(&self) -> bool {
        let n = self.completed();
        n > 0 && self.errors() >= n
    }

    /// Responses with status 400 or above.
    pub fn error_statuses(&self) -> u64 {
        self.status[400..].iter().sum()
    }

    /// Errors: failures, responses with status 400 or above, JSON-RPC
    /// error answers, gRPC error statuses, and answers that failed a flow
    /// step's check.
    pub fn errors(&self) -> u64 {
        self.failures.iter().sum::<u64>()
            + self.error_statuses()
            + self.jsonrpc_errors.values().sum::<u64>()
            + self.grpc_errors.values().sum::<u64>()
            + self.failed_checks
    }

    /// The errors by kind, as every report lists them: failures by kind,
    /// statuses of 400 and above (`HTTP 503`), JSON-RPC error answers by
    /// code (`JSON-RPC error -32000`), answers that failed a flow step's
    /// check; only kinds seen, in that order. The counts add up to
    /// [`EndpointStats::errors`]. (TLS failures by reason, a finer split
    /// of one failure kind, are in `tls_reasons`.)
    pub fn error_kinds(&self) -> Vec<(String, u64)> {
        let failures = Failure::ALL
            .iter()
            .map(|f| (f.name().to_string(), self.failures[f.index()]));
        let statuses = self
            .status
            .iter()
            .enumerate()
            .skip(400)
            .map(|(code, n)| (status_error_name(code as u16), *n));
        let jsonrpc = self
            .jsonrpc_errors
            .iter()
            .map(|(code, n)| (jsonrpc_error_name(*code), *n));
        let grpc = self
            .grpc_errors
            .iter()
            .map(|(code, n)| (crate::grpc::error_name(*code), *n));
        let checks = std::iter::once(("failed check".to_string(), self.failed_checks));
        failures
            .chain(statuses)
            .chain(jsonrpc)
            .chain(grpc)
            .chain(checks)
            .filter(|(_, n)| *n > 0)
            .collect()
    }

    /// Add another core's stats of the same endpoint.
    pub fn merge(&mut self, other: &EndpointStats) {
        self.sent += other.sent;
        self.responses += other.responses;
        for (a, b) in self.failures.iter_mut().zip(other.failures) {
            *a += b;
        }
        for (a, b) in self.tls_reasons.iter_mut().zip(other.tls_reasons) {
            *a += b;
        }
        for (a, b) in self.status.iter_mut().zip(&other.status) {
            *a += b;
        }
        for (code, n) in &other.jsonrpc_errors {
            *self.jsonrpc_errors.entry(*code).or_default() += n;
        }
        for (code, n) in &other.grpc_errors {
            *self.grpc_errors.entry(*code).or_default() += n;
        }
        self.bytes_in += other.bytes_in;
        self.bytes_out += other.bytes_out;
        // The histograms resize themselves, so adding cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.ttfb.add(&other.ttfb);
        let _ = self.connect.add(&other.connect);
        let _ = self.tls.add(&other.tls);
        let _ = self.uncorrected.add(&other.uncorrected);
        let _ = self.lag.add(&other.lag);
        self.late += other.late;
        self.unsent += other.unsent;
        self.offered += other.offered;
        self.user_time += other.user_time;
        self.sending = self.sending.max(other.sending);
        self.mismatched += other.mismatched;
        self.reconnects += other.reconnects;
        let _ = self.connect_wait.add(&other.connect_wait);
        self.spare_failed += other.spare_failed;
        self.abandoned += other.abandoned;
        self.held_back = self.held_back.max(other.held_back);
        self.active = self.active.max(other.active);
        self.failed_checks += other.failed_checks;
        merge_parts(&mut self.steps, &other.steps);
        merge_parts(&mut self.methods, &other.methods);
        self.flows.merge(&other.flows);
        for f in &other.by_flow {
            match self.by_flow.iter_mut().find(|s| s.name == f.name) {
                Some(mine) => mine.merge(f),
                None => self.by_flow.push(f.clone()),
            }
        }
        for (name, n) in &other.faults {
            *self.faults.entry(name.clone()).or_default() += n;
        }
        for (key, n) in &other.fault_errors {
            *self.fault_errors.entry(key.clone()).or_default() += n;
        }
        self.sends.merge(&other.sends);
    }

    /// Who caused the `n` errors of `kind`: each fault that caused some
    /// with its count, then `endpoint` with the rest; empty when no fault
    /// caused any (they are all the endpoint's).
    pub fn causes(&self, kind: &str, n: u64) -> Vec<(String, u64)> {
        let mut out: Vec<(String, u64)> = self
            .fault_errors
            .iter()
            .filter(|((k, _), _)| k == kind)
            .map(|((_, fault), c)| (format!("fault {fault}"), *c))
            .collect();
        if !out.is_empty() {
            let faults: u64 = out.iter().map(|(_, c)| c).sum();
            out.push(("endpoint".to_string(), n.saturating_sub(faults)));
        }
        out
    }
}

/// How reports name the error of an answer with `status` (`HTTP 503`).
pub fn status_error_name(status: u16) -> String {
    format!("HTTP {status}")
}

/// How reports name JSON-RPC error answers with `code` (a batch holding
/// errors counts under [`BATCH_ERROR`]).
pub fn jsonrpc_error_name(code: i64) -> String {
    if code == BATCH_ERROR {
        "JSON-RPC batch with errors".to_string()
    } else {
        format!("JSON-RPC error {code}")
    }
}

/// Errors by kind across endpoints, for a table: each kind seen at some
/// endpoint (in the order [`EndpointStats::error_kinds`] gives, first
/// endpoint first) with its count at every endpoint.
pub fn error_table(endpoints: &[EndpointStats]) -> Vec<(String, Vec<u64>)> {
    let mut rows: Vec<(String, Vec<u64>)> = Vec::new();
    for (e, s) in endpoints.iter().enumerate() {
        for (kind, n) in s.error_kinds() {
            let i = match rows.iter().position(|(k, _)| *k == kind) {
                Some(i) => i,
                None => {
                    rows.push((kind, vec![0; endpoints.len()]));
                    rows.len() - 1
                }
            };
            rows[i].1[e] = n;
        }
    }
    rows
}

/// `n` per second of `time`; 0 when `time` is zero.
pub fn per_second(n: u64, time: Duration) -> f64 {
    if time.is_zero() {
        0.0
    } else {
        n as f64 / time.as_secs_f64()
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
    pub samples: Vec<crate::model::Malformed>,
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
    /// Errors grouped by request method, endpoint and kind (`field` holds
    /// the error kind, `kind` is `error`); bounded in number.
    pub error_groups: Vec<MismatchGroup>,
    /// Requests per method (JSON-RPC method, or HTTP method and path),
    /// bounded in number (the rest under `(other)`).
    pub methods: Vec<(String, u64)>,
    /// Requests whose bodies were not JSON and were compared as bytes.
    pub fell_back: u64,
    /// Noise mode: requests whose candidate differences were all noise.
    pub noise_only: u64,
    /// Noise mode: per field, reference-pair and candidate differences.
    pub noise: Vec<NoiseField>,
    /// Requests whose differing answers a timing core judged itself,
    /// because the judge thread had fallen behind: answers in flight on
    /// that core meanwhile may hold judging time.
    pub judged_on_core: u64,
    /// Requests whose differing answers were still waiting for the judge
    /// thread when the run was stopped and judging gave up: neither
    /// counted as mismatched nor as agreeing.
    pub not_judged: u64,
    /// The most bytes of differing answers waiting for the judge thread
    /// at once (a peak: merged by maximum).
    pub judge_queue_peak: u64,
}

/// Most methods counted by name.
pub const MAX_METHODS: usize = 200;

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
    /// A unified diff of the pretty-printed reference and candidate bodies.
    #[serde(default)]
    pub diff: String,
}

/// How one field fares in noise mode: how often the two reference answers
/// differ there, and how often a candidate does.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NoiseField {
    /// The grouped field.
    pub field: String,
    /// Requests where the two reference answers differ here.
    pub reference_pair: u64,
    /// Candidate differences here (noise or not).
    pub candidate: u64,
    /// Of those, cancelled as noise.
    pub cancelled: u64,
}

impl VerdictStats {
    /// Add another core's counters and groups.
    pub fn merge(&mut self, other: &VerdictStats) {
        self.compared += other.compared;
        self.mismatched += other.mismatched;
        self.incomplete += other.incomplete;
        for g in &other.groups {
            count_group(
                &mut self.groups,
                &g.method,
                &g.field,
                &g.kind,
                &g.endpoint,
                g.count,
                || g.samples.clone(),
            );
        }
        for g in &other.error_groups {
            count_group(
                &mut self.error_groups,
                &g.method,
                &g.field,
                &g.kind,
                &g.endpoint,
                g.count,
                || g.samples.clone(),
            );
        }
        for (m, n) in &other.methods {
            self.count_method(m, *n);
        }
        self.fell_back += other.fell_back;
        self.judged_on_core += other.judged_on_core;
        self.not_judged += other.not_judged;
        self.judge_queue_peak = self.judge_queue_peak.max(other.judge_queue_peak);
        self.noise_only += other.noise_only;
        for f in &other.noise {
            let mine = self.noise_field(&f.field);
            mine.reference_pair += f.reference_pair;
            mine.candidate += f.candidate;
            mine.cancelled += f.cancelled;
        }
    }

    /// Count `n` requests of `method`; returns where it was counted in
    /// [`VerdictStats::methods`].
    #[inline]
    pub fn count_method(&mut self, method: &str, n: u64) -> usize {
        match self.methods.iter().position(|(m, _)| m == method) {
            Some(i) => {
                self.methods[i].1 += n;
                i
            }
            None => self.count_new_method(method, n),
        }
    }

    /// [`VerdictStats::count_method`] for a method not counted yet (the
    /// rare case, kept out of line).
    #[cold]
    #[inline(never)]
    fn count_new_method(&mut self, method: &str, n: u64) -> usize {
        if self.methods.len() < MAX_METHODS || method == crate::model::OTHER {
            self.methods.push((method.to_string(), n));
            self.methods.len() - 1
        } else {
            self.count_method(crate::model::OTHER, n)
        }
    }

    /// Requests counted for `method`.
    pub fn method_count(&self, method: &str) -> u64 {
        self.methods
            .iter()
            .find(|(m, _)| m == method)
            .map_or(0, |(_, n)| *n)
    }

    /// The noise record of `field`, created when new (bounded like groups;
    /// beyond the bound, fields share an `(other)` record).
    pub fn noise_field(&mut self, field: &str) -> &mut NoiseField {
        let known = self.noise.iter().position(|f| f.field == field);
        let field = if known.is_none() && self.noise.len() >= MAX_GROUPS {
            crate::model::OTHER
        } else {
            field
        };
        let i = match self.noise.iter().position(|f| f.field == field) {
            Some(i) => i,
            None => {
                self.noise.push(NoiseField {
                    field: field.to_string(),
                    ..NoiseField::default()
                });
                self.noise.len() - 1
            }
        };
        &mut self.noise[i]
    }

    /// Mismatch groups, most frequent first (ties by method and field).
    pub fn sorted_groups(&self) -> Vec<&MismatchGroup> {
        sorted(&self.groups)
    }

    /// Error groups, most frequent first.
    pub fn sorted_error_groups(&self) -> Vec<&MismatchGroup> {
        sorted(&self.error_groups)
    }
}

fn sorted(groups: &[MismatchGroup]) -> Vec<&MismatchGroup> {
    let mut v: Vec<&MismatchGroup> = groups.iter().collect();
    v.sort_by(|a, b| {
        b.count.cmp(&a.count).then_with(|| {
            (&a.method, &a.field, &a.endpoint).cmp(&(&b.method, &b.field, &b.endpoint))
        })
    });
    v
}

/// Count `n` into the group with this key, creating it while fewer than
/// [`MAX_GROUPS`] exist (beyond that it is counted in an `(other)` group, so
/// nothing goes uncounted). `samples` is called only when the group has
/// room for more samples.
pub fn count_group(
    groups: &mut Vec<MismatchGroup>,
    method: &str,
    field: &str,
    kind: &str,
    endpoint: &str,
    n: u64,
    samples: impl FnOnce() -> Vec<MismatchSample>,
) {
    let other = crate::model::OTHER;
    let found = groups.iter().position(|h| {
        h.method == method && h.field == field && h.kind == kind && h.endpoint == endpoint
    });
    let i = match found {
        Some(i) => i,
        None if groups.len() < MAX_GROUPS || method == other => {
            groups.push(MismatchGroup {
                method: method.to_string(),
                field: field.to_string(),
                kind: kind.to_string(),
                endpoint: endpoint.to_string(),
                count: 0,
                samples: Vec::new(),
            });
            groups.len() - 1
        }
        None => return count_group(groups, other, other, other, other, n, Vec::new),
    };
    let g = &mut groups[i];
    g.count += n;
    if g.samples.len() < GROUP_SAMPLES {
        let room = GROUP_SAMPLES - g.samples.len();
        g.samples.extend(samples().into_iter().take(room));
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
    use crate::model::Response;

    /// An endpoint never connected when it tried requests and every one
    /// failed before a connection opened; not when it tried none.
    #[test]
    fn never_connected_needs_tried_requests_and_no_connection() {
        let mut s = RunStats::new(1).endpoints.remove(0);
        assert!(!s.never_connected(), "nothing tried");
        s.failures[Failure::Refused.index()] = 3;
        assert!(s.never_connected());
        s.record_connect(Duration::from_millis(1));
        assert!(!s.never_connected(), "a connection opened");
    }

    fn ok(status: u16, ms: u64) -> Outcome {
        Outcome {
            result: Ok(Response {
                status,
                headers: Vec::new(),
                body: bytes::Bytes::new(),
                body_len: 10,
                ttfb: Duration::from_millis(ms / 2),
                grpc: None,
            }),
            latency: Duration::from_millis(ms),
            start: std::time::Instant::now(),
            uncorrected: Duration::from_millis(ms),
            lag: None,
            connect: None,
            bytes_out: 3,
            port: 0,
        }
    }

    #[test]
    fn histograms_start_small_and_grow_to_the_clamp() {
        let mut h = new_histogram();
        assert!(
            h.high() < 10_000,
            "a fresh histogram covers {} µs",
            h.high()
        );
        record(&mut h, Duration::from_micros(150));
        record(&mut h, Duration::from_secs(7200));
        assert!(h.high() >= MAX_MICROS);
        assert!(h.equivalent(h.max(), MAX_MICROS), "{}", h.max());
        assert_eq!(h.value_at_quantile(0.5), 150);
        let mut small = new_histogram();
        small.add(&h).expect("a growing histogram takes any other");
        assert_eq!(small.len(), 2);
        assert!(small.equivalent(small.max(), MAX_MICROS));
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
            start: std::time::Instant::now(),
            uncorrected: Duration::from_secs(1),
            lag: None,
            connect: Some(Duration::from_micros(300)),
            bytes_out: 3,
            port: 0,
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

    /// The rate counts requests that reached a server: failed connect
    /// attempts and requests not sent to a stopped endpoint are left out.
    #[test]
    fn the_rate_leaves_out_failed_connects_and_requests_never_sent() {
        let mut s = EndpointStats {
            responses: 10,
            active: Duration::from_secs(2),
            ..EndpointStats::default()
        };
        s.failures[Failure::Refused.index()] = 4;
        s.failures[Failure::Stopped.index()] = 6;
        assert_eq!(s.completed(), 20);
        assert_eq!(s.rate(), 5.0);
        assert_eq!(s.failed_connect_rate(), 2.0);
    }
}
