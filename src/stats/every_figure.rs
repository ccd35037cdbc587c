//! Test fixture: statistics with every figure set, written out field by
//! field with no `..Default::default()`, so that a figure added to the
//! statistics does not compile here until it is set, and the tests that
//! save, read back and merge it then check it too.

use std::collections::BTreeMap;
use std::time::Duration;

use super::*;

/// A histogram holding `k` samples of `micros`.
fn holding(micros: u64, k: u64) -> Histogram<u64> {
    let mut h = new_histogram();
    h.record_n(micros, k).unwrap();
    h
}

/// A part's histogram (of coarser precision) holding `k` samples of
/// `micros`.
fn part_holding(micros: u64, k: u64) -> Histogram<u64> {
    let mut h = new_part_histogram();
    h.record_n(micros, k).unwrap();
    h
}

/// A run of two endpoints whose every counter is `k` times a base (and
/// whose every histogram holds `k` samples): two such runs merged are the
/// run of `2k`. Figures that merge as the largest (`active`, `held_back`,
/// `sending`, the judge queue's peak) or the earliest and latest
/// (`sends`) do not scale.
pub(crate) fn run(k: u64) -> RunStats {
    RunStats {
        endpoints: vec![endpoint(k, 1), endpoint(k, 2)],
        verdicts: verdicts(k),
    }
}

fn endpoint(k: u64, e: u64) -> EndpointStats {
    let mut status = vec![0; 1000];
    status[200] = 7 * k;
    status[503] = 2 * k;
    EndpointStats {
        sent: 20 * k * e,
        responses: 9 * k,
        failures: std::array::from_fn(|i| k * (i as u64 + 1)),
        tls_reasons: std::array::from_fn(|i| k * (i as u64 + 2)),
        status,
        jsonrpc_errors: BTreeMap::from([(-32000, k)]),
        grpc_errors: BTreeMap::from([(5, 2 * k)]),
        bytes_in: 1000 * k,
        bytes_out: 300 * k,
        latency: holding(1500, k),
        ttfb: holding(900, k),
        connect: holding(120, k),
        tls: holding(800, k),
        uncorrected: holding(700, k),
        lag: holding(40, k),
        late: 3 * k,
        unsent: 2 * k,
        offered: 40 * k,
        user_time: Duration::from_millis(2500 * k),
        sending: Duration::from_secs(9 + e),
        mismatched: 4 * k,
        reconnects: 5 * k,
        connect_wait: holding(60, k),
        spare_failed: 6 * k,
        abandoned: 7 * k,
        held_back: Duration::from_millis(250 * e),
        active: Duration::from_secs(10 + e),
        failed_checks: 8 * k,
        steps: vec![part("login", k, true)],
        methods: vec![part("eth_call", k, false)],
        flows: flow("", k),
        by_flow: vec![flow("checkout", k)],
        faults: BTreeMap::from([("reset".to_string(), 9 * k)]),
        fault_errors: BTreeMap::from([(("reset".to_string(), "reset".to_string()), 2 * k)]),
        sends: Sends {
            first: Duration::from_millis(10 * e),
            last: Duration::from_millis(900 + e),
            end: Duration::from_millis(1200 + e),
        },
    }
}

fn part(name: &str, k: u64, paged: bool) -> PartStats {
    PartStats {
        name: name.to_string(),
        requests: 10 * k,
        errors: 2 * k,
        failed_checks: k,
        not_built: 3 * k,
        skipped: 4 * k,
        mismatched: 5 * k,
        latency: part_holding(1100, k),
        traversal: paged.then(|| {
            Box::new(TraversalStats {
                completed: k,
                stopped: 2 * k,
                pages: 30 * k,
                items: 300 * k,
                bytes: 9000 * k,
                duplicates: 3 * k,
                unkeyed: 4 * k,
                time: part_holding(50_000, k),
                depth: vec![part_holding(1000, k), part_holding(2000, k)],
            })
        }),
    }
}

fn flow(name: &str, k: u64) -> FlowStats {
    FlowStats {
        name: name.to_string(),
        instances: 6 * k,
        succeeded: 5 * k,
        duration: holding(30_000, k),
    }
}

fn verdicts(k: u64) -> VerdictStats {
    let sample = MismatchSample {
        seq: 17,
        request: r#"{"method":"eth_call"}"#.to_string(),
        values: vec!["1".to_string(), "2".to_string()],
        diff: "-1\n+2\n".to_string(),
    };
    let group = |field: &str, kind: &str| MismatchGroup {
        method: "eth_call".to_string(),
        field: field.to_string(),
        kind: kind.to_string(),
        endpoint: "b".to_string(),
        count: 3 * k,
        samples: vec![sample.clone(); k.min(GROUP_SAMPLES as u64) as usize],
    };
    VerdictStats {
        compared: 40 * k,
        mismatched: 4 * k,
        incomplete: 2 * k,
        groups: vec![group("$.result", "changed")],
        error_groups: vec![group("HTTP 503", "error")],
        methods: vec![("eth_call".to_string(), 40 * k)],
        fell_back: k,
        noise_only: 2 * k,
        noise: vec![NoiseField {
            field: "$.result.ts".to_string(),
            reference_pair: 3 * k,
            candidate: 4 * k,
            cancelled: 2 * k,
        }],
        judged_on_core: 5 * k,
        not_judged: 3 * k,
        judge_queue_peak: 4096,
    }
}

/// Every figure adds when runs merge (cores, shards): counters and
/// histograms add up, the longest time is kept.
/// Panics with the lines that differ when `got` and `want` differ in any
/// figure.
pub(crate) fn assert_same(got: &RunStats, want: &RunStats, what: &str) {
    let (got, want) = (figures(got), figures(want));
    if got != want {
        let diff = similar::TextDiff::from_lines(&want, &got);
        panic!(
            "{what}: figures differ (- expected, + got):\n{}",
            diff.unified_diff().context_radius(6)
        );
    }
}

/// Every figure of `s` as text: its `Debug` with each histogram set apart
/// as the values it holds (a histogram read back from a file is laid out
/// otherwise inside, with the same counts).
fn figures(s: &RunStats) -> String {
    let mut s = s.clone();
    let mut held = Vec::new();
    for e in &mut s.endpoints {
        for h in histograms(e) {
            let values: Vec<(u64, u64)> = h
                .iter_recorded()
                .map(|v| {
                    (
                        h.highest_equivalent(v.value_iterated_to()),
                        v.count_at_value(),
                    )
                })
                .collect();
            held.push(values);
            *h = Histogram::new(1).unwrap();
        }
    }
    format!("{s:#?}\n{held:?}")
}

/// Every histogram of `e`. The pattern names every field, so that a new
/// one does not compile here until it is placed.
fn histograms(e: &mut EndpointStats) -> Vec<&mut Histogram<u64>> {
    let EndpointStats {
        sent: _,
        responses: _,
        failures: _,
        tls_reasons: _,
        status: _,
        jsonrpc_errors: _,
        grpc_errors: _,
        bytes_in: _,
        bytes_out: _,
        latency,
        ttfb,
        connect,
        tls,
        uncorrected,
        lag,
        late: _,
        unsent: _,
        offered: _,
        user_time: _,
        sending: _,
        mismatched: _,
        reconnects: _,
        connect_wait,
        spare_failed: _,
        abandoned: _,
        held_back: _,
        active: _,
        failed_checks: _,
        steps,
        methods,
        flows,
        by_flow,
        faults: _,
        fault_errors: _,
        sends: _,
    } = e;
    let mut out = vec![latency, ttfb, connect, tls, uncorrected, lag, connect_wait];
    for p in steps.iter_mut().chain(methods.iter_mut()) {
        out.push(&mut p.latency);
        if let Some(t) = &mut p.traversal {
            let TraversalStats { time, depth, .. } = &mut **t;
            out.push(time);
            out.extend(depth.iter_mut());
        }
    }
    out.push(&mut flows.duration);
    out.extend(by_flow.iter_mut().map(|f| &mut f.duration));
    out
}

#[test]
fn every_figure_adds_up_when_runs_merge() {
    let mut merged = run(1);
    merged.merge(&run(1));
    assert_same(&merged, &run(2), "run(1) merged with run(1)");
}

#[test]
fn every_failure_kind_and_tls_reason_is_set() {
    let e = &run(1).endpoints[0];
    assert!(Failure::ALL.iter().all(|f| e.failures[f.index()] > 0));
    assert!(TlsReason::ALL.iter().all(|r| e.tls_reasons[r.index()] > 0));
}
