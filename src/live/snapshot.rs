//! What the live views show, computed once per interval from the engine's
//! interval statistics on the collector thread: a small [`Snapshot`] of
//! numbers and recent history. No view ever touches a histogram or a core.

use std::collections::VecDeque;
use std::time::Duration;

use crate::engine::StopAfter;
use crate::stats::{MismatchGroup, MismatchSample, RunStats};

/// Points of history kept per endpoint (a sparkline shows the newest that
/// fit its width): a minute at 250 ms intervals.
pub const HISTORY: usize = 240;

/// Mismatch groups a snapshot keeps, most frequent first.
pub const TOP_GROUPS: usize = 10;

/// One endpoint in a snapshot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EndpointRow {
    /// The endpoint's label.
    pub label: String,
    /// Requests completed (answered or failed) so far.
    pub done: u64,
    /// Errors so far: failures and statuses of 400 and above.
    pub errors: u64,
    /// Requests completed per second in the latest interval.
    pub now_rps: f64,
    /// Requests completed per second since the start, paused time excluded.
    pub avg_rps: f64,
    /// Latency percentiles and maximum so far, µs (0 before any response).
    pub p50: u64,
    /// 95th percentile, µs.
    pub p95: u64,
    /// 99th percentile, µs.
    pub p99: u64,
    /// Highest latency, µs.
    pub max: u64,
    /// Requests where this endpoint disagreed with the reference; always 0
    /// for the reference.
    pub diffs: u64,
    /// Requests per second of each recent interval, oldest first.
    pub rps_history: VecDeque<u64>,
    /// 99th percentile latency (µs) of each recent interval, oldest first;
    /// 0 where the interval had no response.
    pub p99_history: VecDeque<u64>,
    /// Flows: instances that ended here so far.
    pub instances: u64,
    /// Flows: of those, the ones whose every step succeeded.
    pub succeeded: u64,
    /// Flows: each step so far, in step order.
    pub steps: Vec<StepRow>,
}

/// One flow step at one endpoint, so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepRow {
    /// The step's name.
    pub name: String,
    /// Requests finished.
    pub requests: u64,
    /// Of those, errors (failures, error statuses, failed checks).
    pub errors: u64,
    /// 99th percentile latency, µs (0 before any answer).
    pub p99: u64,
}

/// The newest mismatch sample seen, with its group.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatestSample {
    /// The group's method.
    pub method: String,
    /// The group's field.
    pub field: String,
    /// The group's kind of difference.
    pub kind: String,
    /// The endpoint that differed from the reference.
    pub endpoint: String,
    /// The sample.
    pub sample: MismatchSample,
}

/// Everything a live view shows at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    /// Time since the start of sending (wall time, pauses included).
    pub elapsed: Duration,
    /// Time spent paused so far.
    pub paused: Duration,
    /// Per endpoint, in command-line order.
    pub endpoints: Vec<EndpointRow>,
    /// Requests compared across endpoints so far.
    pub compared: u64,
    /// Requests where an endpoint disagreed with the reference.
    pub mismatched: u64,
    /// The most frequent mismatch groups (samples dropped).
    pub groups: Vec<MismatchGroup>,
    /// The newest mismatch sample.
    pub latest: Option<LatestSample>,
    /// Estimated time until the run ends by itself, when it can be known.
    pub left: Option<Duration>,
    /// Intervals observed so far.
    pub intervals: u64,
}

impl Snapshot {
    /// True when the run is a flow (some endpoint has steps).
    pub fn is_flow(&self) -> bool {
        self.endpoints.iter().any(|e| !e.steps.is_empty())
    }
}

/// Turns the engine's intervals into snapshots.
#[derive(Debug)]
pub struct Tracker {
    interval: Duration,
    stop_after: StopAfter,
    snapshot: Snapshot,
}

impl Tracker {
    /// A tracker for a run with these endpoint labels, interval length and
    /// stop condition.
    pub fn new(labels: &[String], interval: Duration, stop_after: StopAfter) -> Tracker {
        let endpoints = labels
            .iter()
            .map(|l| EndpointRow {
                label: l.clone(),
                ..EndpointRow::default()
            })
            .collect();
        Tracker {
            interval,
            stop_after,
            snapshot: Snapshot {
                endpoints,
                ..Snapshot::default()
            },
        }
    }

    /// The latest snapshot.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// Take in interval `index` (its `delta` and the `total` so far).
    /// `paused` is the time paused so far; `input_done` the fraction of a
    /// finite input read so far, when known.
    pub fn observe(
        &mut self,
        index: u64,
        delta: &RunStats,
        total: &RunStats,
        paused: Duration,
        input_done: Option<f64>,
    ) {
        let s = &mut self.snapshot;
        let every = self.interval.as_secs_f64().max(1e-9);
        s.elapsed = self.interval * u32::try_from(index + 1).unwrap_or(u32::MAX);
        s.paused = paused.min(s.elapsed);
        s.intervals = index + 1;
        let running = s.elapsed.saturating_sub(s.paused).as_secs_f64();
        for (row, (d, t)) in s
            .endpoints
            .iter_mut()
            .zip(delta.endpoints.iter().zip(&total.endpoints))
        {
            let now = d.completed() as f64 / every;
            row.done = t.completed();
            row.errors = t.errors();
            row.now_rps = now;
            row.avg_rps = if running > 0.0 {
                row.done as f64 / running
            } else {
                0.0
            };
            if !t.latency.is_empty() {
                row.p50 = t.latency.value_at_quantile(0.50);
                row.p95 = t.latency.value_at_quantile(0.95);
                row.p99 = t.latency.value_at_quantile(0.99);
                row.max = t.latency.max();
            }
            let p99 = if d.latency.is_empty() {
                0
            } else {
                d.latency.value_at_quantile(0.99)
            };
            push(&mut row.rps_history, now.round() as u64);
            push(&mut row.p99_history, p99);
            row.instances = t.flows.instances;
            row.succeeded = t.flows.succeeded;
            row.steps = t
                .steps
                .iter()
                .map(|p| StepRow {
                    name: p.name.clone(),
                    requests: p.requests,
                    errors: p.errors,
                    p99: crate::report::quantile(&p.latency, 0.99).map_or(0, |v| v as u64),
                })
                .collect();
        }
        s.compared = total.verdicts.compared;
        s.mismatched = total.verdicts.mismatched;
        for (row, e) in s.endpoints.iter_mut().zip(&total.endpoints).skip(1) {
            row.diffs = e.mismatched;
        }
        s.groups = total
            .verdicts
            .sorted_groups()
            .into_iter()
            .take(TOP_GROUPS)
            .map(|g| MismatchGroup {
                samples: Vec::new(),
                ..g.clone()
            })
            .collect();
        let newest = delta
            .verdicts
            .groups
            .iter()
            .flat_map(|g| g.samples.iter().map(move |x| (g, x)))
            .max_by_key(|(_, x)| x.seq);
        if let Some((g, x)) = newest {
            s.latest = Some(LatestSample {
                method: g.method.clone(),
                field: g.field.clone(),
                kind: g.kind.clone(),
                endpoint: g.endpoint.clone(),
                sample: x.clone(),
            });
        }
        s.left = time_left(s, self.stop_after, input_done);
    }
}

fn push(h: &mut VecDeque<u64>, v: u64) {
    if h.len() == HISTORY {
        h.pop_front();
    }
    h.push_back(v);
}

/// The soonest of the known ends: the duration limit, the request count at
/// each endpoint's average rate (the slowest decides), the rest of a finite
/// input at the rate it has been read.
fn time_left(s: &Snapshot, stop_after: StopAfter, input_done: Option<f64>) -> Option<Duration> {
    let mut left: Option<f64> = None;
    let mut soonest = |v: f64| {
        if v.is_finite() && v >= 0.0 {
            left = Some(left.map_or(v, |l: f64| l.min(v)));
        }
    };
    if let Some(d) = stop_after.duration {
        soonest(d.saturating_sub(s.elapsed).as_secs_f64());
    }
    let running = s.elapsed.saturating_sub(s.paused).as_secs_f64();
    if let Some(n) = stop_after.count {
        // A flow's count is of instances, a stream's of requests.
        let flow = s.is_flow();
        let slowest = s
            .endpoints
            .iter()
            .map(|r| {
                let done = if flow { r.instances } else { r.done };
                if done >= n {
                    0.0
                } else if done > 0 && running > 0.0 {
                    (n - done) as f64 * running / done as f64
                } else {
                    f64::INFINITY
                }
            })
            .fold(0.0, f64::max);
        soonest(slowest);
    }
    if let Some(f) = input_done.filter(|f| *f > 0.0) {
        soonest(running * (1.0 - f.min(1.0)) / f);
    }
    left.map(Duration::from_secs_f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Outcome, Response};

    fn answered(stats: &mut RunStats, e: usize, n: u64, micros: u64) {
        for _ in 0..n {
            stats.endpoints[e].sent += 1;
            stats.endpoints[e].record(&Outcome {
                result: Ok(Response {
                    status: 200,
                    headers: Vec::new(),
                    body: bytes::Bytes::new(),
                    body_len: 2,
                    ttfb: Duration::from_micros(micros / 2),
                    grpc: None,
                }),
                latency: Duration::from_micros(micros),
                start: std::time::Instant::now(),
                uncorrected: Duration::from_micros(micros),
                lag: None,
                connect: None,
                bytes_out: 2,
                port: 0,
            });
        }
    }

    #[test]
    fn rates_percentiles_history_and_time_left() {
        let labels = vec!["a".to_string(), "b".to_string()];
        let stop_after = StopAfter {
            count: Some(1000),
            duration: None,
        };
        let mut t = Tracker::new(&labels, Duration::from_millis(500), stop_after);
        let mut total = RunStats::new(2);
        for index in 0..2 {
            let mut delta = RunStats::new(2);
            answered(&mut delta, 0, 100, 1000);
            answered(&mut delta, 1, 50, 2000);
            total.merge(&delta);
            t.observe(index, &delta, &total, Duration::ZERO, None);
        }
        let s = t.snapshot();
        assert_eq!(s.elapsed, Duration::from_secs(1));
        assert_eq!(s.endpoints[0].done, 200);
        assert_eq!(s.endpoints[1].done, 100);
        assert!((s.endpoints[0].now_rps - 200.0).abs() < 1e-9);
        assert!((s.endpoints[1].avg_rps - 100.0).abs() < 1e-9);
        assert_eq!(s.endpoints[0].rps_history, [200, 200]);
        assert!((999..=1001).contains(&s.endpoints[0].p99));
        assert!((1998..=2002).contains(&s.endpoints[1].p99_history[1]));
        // The slowest endpoint decides: 900 left at 100/s.
        let left = s.left.unwrap().as_secs_f64();
        assert!((left - 9.0).abs() < 1e-6, "{left}");
    }

    #[test]
    fn duration_and_input_limits_and_paused_time() {
        let labels = vec!["a".to_string()];
        let stop_after = StopAfter {
            count: None,
            duration: Some(Duration::from_secs(10)),
        };
        let mut t = Tracker::new(&labels, Duration::from_secs(1), stop_after);
        let mut delta = RunStats::new(1);
        answered(&mut delta, 0, 10, 100);
        let total = delta.clone();
        t.observe(3, &delta, &total, Duration::from_secs(2), None);
        let s = t.snapshot();
        assert_eq!(s.left, Some(Duration::from_secs(6)));
        // 10 requests in 2 s of running time.
        assert!((s.endpoints[0].avg_rps - 5.0).abs() < 1e-9);
        // Half of the input read in 2 s of running: 2 s more, sooner than
        // the duration's 6 s.
        t.observe(3, &delta, &total, Duration::from_secs(2), Some(0.5));
        assert_eq!(t.snapshot().left, Some(Duration::from_secs(2)));
    }

    #[test]
    fn a_flow_shows_instances_and_steps_and_its_count_is_of_instances() {
        let labels = vec!["a".to_string()];
        let stop_after = StopAfter {
            count: Some(40),
            duration: None,
        };
        let mut t = Tracker::new(&labels, Duration::from_secs(1), stop_after);
        let mut delta = RunStats::new(1);
        // 10 instances of three steps; one failed at its second step.
        answered(&mut delta, 0, 29, 1000);
        let e = &mut delta.endpoints[0];
        for (name, requests, errors, micros) in [
            ("login", 10, 0, 500),
            ("add", 10, 1, 2000),
            ("pay", 9, 0, 800),
        ] {
            let p = crate::stats::part(&mut e.steps, name);
            p.requests = requests;
            p.errors = errors;
            crate::stats::record(&mut p.latency, Duration::from_micros(micros));
        }
        for i in 0..10 {
            e.flows.record(i != 3, Duration::from_millis(4));
        }
        let total = delta.clone();
        t.observe(1, &delta, &total, Duration::ZERO, None);
        let s = t.snapshot();
        assert!(s.is_flow());
        let row = &s.endpoints[0];
        assert_eq!((row.instances, row.succeeded), (10, 9));
        let steps: Vec<(&str, u64, u64)> = row
            .steps
            .iter()
            .map(|p| (p.name.as_str(), p.requests, p.errors))
            .collect();
        assert_eq!(steps, [("login", 10, 0), ("add", 10, 1), ("pay", 9, 0)]);
        // A step's histogram keeps 2 significant figures: within 1%.
        assert!(
            (1980..=2020).contains(&row.steps[1].p99),
            "{}",
            row.steps[1].p99
        );
        // 10 instances in 2 s: the other 30 of --stop-after 40 take 6 s
        // (its 29 requests are not what the count is of).
        assert_eq!(s.left, Some(Duration::from_secs(6)));
    }

    #[test]
    fn groups_and_the_latest_sample() {
        let labels = vec!["ref".to_string(), "new".to_string()];
        let mut t = Tracker::new(&labels, Duration::from_secs(1), StopAfter::default());
        let group = |method: &str, count, seq| MismatchGroup {
            method: method.into(),
            field: "$.result".into(),
            kind: "changed".into(),
            endpoint: "new".into(),
            count,
            samples: vec![MismatchSample {
                seq,
                request: format!("request {seq}"),
                values: vec!["1".into(), "2".into()],
                diff: String::new(),
            }],
        };
        let mut delta = RunStats::new(2);
        delta.verdicts.groups = vec![group("eth_call", 2, 7), group("eth_getBalance", 5, 3)];
        delta.verdicts.mismatched = 7;
        delta.endpoints[1].mismatched = 7;
        let total = delta.clone();
        t.observe(0, &delta, &total, Duration::ZERO, None);
        let s = t.snapshot();
        assert_eq!(s.groups[0].method, "eth_getBalance");
        assert!(s.groups[0].samples.is_empty());
        assert_eq!(s.endpoints[1].diffs, 7);
        assert_eq!(s.endpoints[0].diffs, 0);
        let latest = s.latest.as_ref().unwrap();
        assert_eq!((latest.method.as_str(), latest.sample.seq), ("eth_call", 7));
        assert_eq!(s.left, None);
        // An interval without samples keeps the latest one.
        let empty = RunStats::new(2);
        t.observe(1, &empty, &total, Duration::ZERO, None);
        assert_eq!(t.snapshot().latest.as_ref().unwrap().sample.seq, 7);
    }
}
