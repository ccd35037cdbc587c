//! The core contract of a run, against real servers on 127.0.0.1: every
//! request reaches every endpoint byte-exact, concurrency is exact,
//! mismatches are counted once per request, a slow endpoint does not slow a
//! fast one, faults are counted by kind, and stopping is exact.

mod common;

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;

#[test]
fn mismatches_are_counted_once_per_request_however_many_endpoints_differ() {
    let reference =
        Server::start(|s| Reply::ok(format!(r#"{{"id":{},"result":"0x1"}}"#, id_of(&s.body))));
    let differs_on_tenth = |s: &Seen| {
        let id = id_of(&s.body);
        let result = if id % 10 == 3 { "0x2" } else { "0x1" };
        // Same JSON, other key order and spacing: not a difference.
        Reply::ok(format!(r#"{{ "result": "{result}", "id": {id} }}"#))
    };
    let b = Server::start(differs_on_tenth);
    let c = Server::start(differs_on_tenth);
    let input = lines(1000);

    let (out, report) = run_lib(&["-c", "8", &reference.url(), &b.url()], &input);
    assert_eq!(out.stats.verdicts.compared, 1000);
    assert_eq!(out.stats.verdicts.mismatched, 100);
    assert!(report.contains("   Mismatched: 100\n"), "{report}");
    assert!(
        report.contains("   Completed:  1000 results with 2000 total requests\n"),
        "{report}"
    );

    let (out, report) = run_lib(&["-c", "8", &reference.url(), &b.url(), &c.url()], &input);
    assert_eq!(out.stats.verdicts.mismatched, 100, "{report}");
    assert!(report.contains("** Summary for 3 endpoints:"), "{report}");
    assert_eq!(reference.requests(), 2000);
    assert_eq!(c.requests(), 1000);
}

#[test]
fn every_body_arrives_byte_exact_at_every_endpoint_under_concurrency() {
    for concurrency in [1usize, 20, 400] {
        // Lines of many lengths, each naming its own checksum.
        let mut input = Vec::new();
        let mut expected = HashSet::new();
        for i in 0..2000u64 {
            let pad: String = (0..(i * 7919 % 3000))
                .map(|k| (b'a' + (k % 26) as u8) as char)
                .collect();
            let line = format!(r#"{{"id":{i},"pad":"{pad}"}}"#);
            expected.insert(line.clone());
            input.extend_from_slice(line.as_bytes());
            input.push(b'\n');
        }
        let expected = Arc::new(expected);
        let bad = Arc::new(Mutex::new(Vec::new()));
        let make = |expected: Arc<HashSet<String>>, bad: Arc<Mutex<Vec<String>>>| {
            Server::start(move |s| {
                let body = String::from_utf8_lossy(&s.body).into_owned();
                if !expected.contains(&body) || s.method != "POST" {
                    bad.lock().unwrap().push(body.chars().take(80).collect());
                }
                Reply::ok(s.body.clone())
            })
        };
        let a = make(expected.clone(), bad.clone());
        let b = make(expected.clone(), bad.clone());
        let c = concurrency.to_string();
        let (out, report) = run_lib(&["-c", &c, &a.url(), &b.url()], &input);
        assert!(
            bad.lock().unwrap().is_empty(),
            "corrupted bodies at -c {c}: {:?}",
            bad.lock().unwrap()
        );
        assert_eq!(a.requests(), 2000, "-c {c}");
        assert_eq!(b.requests(), 2000, "-c {c}");
        assert_eq!(out.stats.verdicts.mismatched, 0, "-c {c}: {report}");
        assert_eq!(out.stats.endpoints[0].responses, 2000);
    }
}

#[test]
fn never_more_than_concurrency_requests_in_flight_per_endpoint() {
    for concurrency in [1u64, 3, 16] {
        let a = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(3)));
        let b = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(1)));
        let c = concurrency.to_string();
        let (out, _) = run_lib(&["-c", &c, &a.url(), &b.url()], &lines(300));
        assert_eq!(out.stats.endpoints[0].responses, 300);
        assert!(
            a.max_in_flight() <= concurrency,
            "{} > {concurrency}",
            a.max_in_flight()
        );
        assert!(
            b.max_in_flight() <= concurrency,
            "{} > {concurrency}",
            b.max_in_flight()
        );
        // And the concurrency is really used.
        assert_eq!(
            a.max_in_flight(),
            concurrency,
            "slow endpoint should fill every slot"
        );
    }
}

#[test]
fn stop_after_n_sends_exactly_n_per_endpoint() {
    let a = Server::start(|_| Reply::ok("{}"));
    let b = Server::start(|_| Reply::ok("{}"));
    let (out, report) = run_lib(
        &["--stop-after=137", "-c", "7", &a.url(), &b.url()],
        &lines(1000),
    );
    assert_eq!(a.requests(), 137);
    assert_eq!(b.requests(), 137);
    assert_eq!(out.stats.verdicts.compared, 137, "{report}");
    // Single-request mode splits N over the cores exactly too.
    let (out, _) = run_lib(
        &["--stop-after=101", "-c", "4", "--method", "GET", &a.url()],
        &[],
    );
    assert_eq!(out.stats.endpoints[0].sent, 101);
    assert_eq!(a.requests(), 137 + 101);
}

#[test]
fn throughput_is_measured_and_a_slow_endpoint_does_not_change_a_fast_ones_latency() {
    let fast = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(10)));
    let (alone, report) = run_lib(&["--stop-after=1000", "-c", "5", &fast.url()], &lines(1000));
    let rate = alone.stats.endpoints[0].rate();
    // 5 in flight, each ~10 ms (tokio's timer makes it 10-12 ms): about
    // 500 per second, and by Little's law exactly 5 / mean latency.
    let mean = alone.stats.endpoints[0].latency.mean() / 1e6;
    assert!(
        (rate - 5.0 / mean).abs() / rate < 0.1,
        "rate {rate} vs 5/{mean}\n{report}"
    );
    assert!((300.0..=520.0).contains(&rate), "rate {rate}\n{report}");
    assert!((number_after(&report, "Requests:") - rate).abs() < 0.01);

    let slow = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(100)));
    let (both, report) = run_lib(
        &[
            "--stop-after=2s",
            "-c",
            "5",
            "--lead",
            "200",
            &fast.url(),
            &slow.url(),
        ],
        &lines(100_000),
    );
    let f = &both.stats.endpoints[0];
    let s = &both.stats.endpoints[1];
    let (p50a, p99a) = (
        alone.stats.endpoints[0].latency.value_at_quantile(0.5),
        alone.stats.endpoints[0].latency.value_at_quantile(0.99),
    );
    let (p50b, p99b) = (
        f.latency.value_at_quantile(0.5),
        f.latency.value_at_quantile(0.99),
    );
    assert!(
        p50b < p50a + 3_000 && p99b < p99a + 10_000,
        "fast endpoint slowed: p50 {p50a}->{p50b} p99 {p99a}->{p99b}\n{report}"
    );
    assert!(s.latency.value_at_quantile(0.5) >= 100_000);
    // The fast endpoint ran ahead by the lead window, then waited: its
    // rate is what it completed over the run, the slow one's and the
    // window's worth more (held-back time is shown, not left out).
    assert!(f.completed() > s.completed(), "{report}");
    assert!(!f.held_back.is_zero(), "{report}");
    let over_run = f.completed() as f64 / both.elapsed.as_secs_f64();
    assert!(
        (f.rate() - over_run).abs() / over_run < 0.05,
        "fast rate {} against {over_run} over the run\n{report}",
        f.rate()
    );
    assert!(f.completed() - s.completed() <= 2 * 200 + 2 * 5, "{report}");
    assert!(
        (30.0..=52.0).contains(&s.rate()),
        "slow rate {}\n{report}",
        s.rate()
    );
}

#[test]
fn timeouts_refusals_and_5xx_are_counted_by_kind_and_the_run_goes_on() {
    let ok = Server::start(|s| {
        let id = id_of(&s.body);
        if id % 4 == 1 {
            Reply::ok("slow").after(Duration::from_millis(400))
        } else if id % 4 == 2 {
            Reply::ok("oops").status(503)
        } else {
            Reply::ok("fine")
        }
    });
    let refused = format!("http://127.0.0.1:{}/", closed_port());
    let (out, report) = run_lib(
        &["-c", "4", "--timeout", "150ms", &ok.url(), &refused],
        &lines(40),
    );
    let a = &out.stats.endpoints[0];
    assert_eq!(
        a.failures[versus::endpoint::Failure::Timeout.index()],
        10,
        "{report}"
    );
    assert_eq!(a.status[503], 10);
    assert_eq!(a.status[200], 20);
    assert_eq!(a.completed(), 40);
    assert!(report.contains("     timeout: 10\n"), "{report}");
    assert!(report.contains("     HTTP 503: 10\n"), "{report}");
    assert!(report.contains("   Errors: 50.00%\n"), "{report}");
    let b = &out.stats.endpoints[1];
    assert_eq!(
        b.failures[versus::endpoint::Failure::Refused.index()],
        40,
        "{report}"
    );
    assert!(report.contains("     connection refused: 40\n"), "{report}");
    // Every request differs from the refused endpoint's failure.
    assert_eq!(out.stats.verdicts.mismatched, 40);
}

#[test]
fn get_endpoints_join_the_line_to_the_url_and_headers_reach_their_endpoint() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s2 = seen.clone();
    let a = Server::start(move |s| {
        s2.lock()
            .unwrap()
            .push((s.method.clone(), s.path.clone(), s.headers.clone()));
        Reply::ok("ok")
    });
    let url = format!("http+get://{}/api/", a.addr);
    let (out, _) = run_lib(
        &[
            "-H",
            "X-All: 1",
            "--endpoint-header",
            "0=Authorization: Bearer k",
            &url,
        ],
        b"users?id=1\n/items/2\n",
    );
    assert_eq!(out.stats.endpoints[0].responses, 2);
    let mut seen = seen.lock().unwrap().clone();
    seen.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(seen[0].0, "GET");
    assert_eq!(seen[0].1, "/api/items/2");
    assert_eq!(seen[1].1, "/api/users?id=1");
    assert_eq!(seen[0].2["x-all"], "1");
    assert_eq!(seen[0].2["authorization"], "Bearer k");
    assert_eq!(seen[0].2["host"], a.addr.to_string());
}

#[test]
fn connections_are_reused() {
    let a = Server::start(|_| Reply::ok("{}"));
    let (out, _) = run_lib(&["-c", "4", "--threads", "2", &a.url()], &lines(500));
    assert_eq!(out.stats.endpoints[0].responses, 500);
    assert_eq!(a.connections(), 4);
    assert_eq!(out.stats.endpoints[0].reconnects, 0);
}

#[test]
fn interval_statistics_arrive_in_order_and_add_up_to_the_totals() {
    struct Collect {
        indices: Vec<u64>,
        responses: u64,
        compared: u64,
        histogram_count: u64,
    }
    impl versus::engine::Observer for Collect {
        fn interval(
            &mut self,
            index: u64,
            delta: &versus::stats::RunStats,
            total: &versus::stats::RunStats,
        ) {
            self.indices.push(index);
            self.responses += delta.endpoints[0].responses;
            self.compared += delta.verdicts.compared;
            self.histogram_count += delta.endpoints[1].latency.len();
            assert_eq!(
                total.endpoints[0].responses, self.responses,
                "totals so far include this interval"
            );
        }
    }
    let a = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(1)));
    let b = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(2)));
    let mut seen = Collect {
        indices: Vec::new(),
        responses: 0,
        compared: 0,
        histogram_count: 0,
    };
    let (out, _) = run_lib_observed(
        &["--stop-after=2500ms", "-c", "4", &a.url(), &b.url()],
        &lines(1_000_000),
        &mut seen,
    );
    assert!(seen.indices.len() >= 3, "{:?}", seen.indices);
    assert!(
        seen.indices.windows(2).all(|w| w[0] < w[1]),
        "{:?}",
        seen.indices
    );
    assert_eq!(seen.responses, out.stats.endpoints[0].responses);
    assert_eq!(seen.compared, out.stats.verdicts.compared);
    assert_eq!(seen.histogram_count, out.stats.endpoints[1].latency.len());
    assert!(out.stats.endpoints[0].responses > 500);
}

#[test]
fn a_paused_run_sends_nothing_until_resumed() {
    let a = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(1)));
    let stop = versus::engine::Stop::new();
    let (url, handle) = (a.url(), stop.clone());
    let run = std::thread::spawn(move || {
        run_lib_with(
            &["--method", "GET", "--stop-after=1h", "-c", "4", &url],
            b"",
            &mut versus::engine::Quiet,
            &handle,
        )
        .0
    });
    let wait_for = |what: &str, cond: &dyn Fn() -> bool| {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !cond() {
            assert!(
                std::time::Instant::now() < deadline,
                "timed out waiting for {what}"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    wait_for("requests", &|| a.requests() > 50);
    stop.set_paused(true);
    wait_for("every core to pause", &|| stop.paused_everywhere());
    // Requests claimed before the pause may still be on their way: wait
    // until the server has had none in flight for a while.
    let quiet_since = std::cell::Cell::new(std::time::Instant::now());
    wait_for("in-flight requests to finish", &|| {
        if a.counters
            .in_flight
            .load(std::sync::atomic::Ordering::SeqCst)
            > 0
        {
            quiet_since.set(std::time::Instant::now());
        }
        quiet_since.get().elapsed() > Duration::from_millis(200)
    });
    let before = a.requests();
    // Absence can only be observed over time: nothing may arrive while paused.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(a.requests(), before, "requests were sent while paused");
    stop.set_paused(false);
    wait_for("requests after resuming", &|| a.requests() > before + 50);
    stop.stop();
    let out = run.join().unwrap();
    assert!(out.interrupted);
    assert_eq!(out.stats.endpoints[0].responses, a.requests());
}

/// A stream's warm-up is its first requests, whichever core takes them
/// (the cores take a stream's batches unevenly): with two cores, the
/// endpoints agree on exactly the warm-up lines and differ on every other,
/// so every counted request is a mismatch and no warm-up one is.
#[test]
fn a_streams_warm_up_is_its_first_requests_on_any_core() {
    let a = Server::start(|_| Reply::ok("{}"));
    let b = Server::start(|seen| {
        let body = String::from_utf8_lossy(&seen.body);
        let id: u64 = body
            .split("\"id\":")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .and_then(|n| n.parse().ok())
            .expect("a numbered line");
        Reply::ok(if id < 300 { "{}" } else { "{\"late\":1}" })
    });
    let (out, report) = run_lib(
        &[
            "--warmup",
            "300",
            "--stop-after",
            "200",
            "--threads",
            "2",
            "-c",
            "8",
            &a.url(),
            &b.url(),
        ],
        &lines(1000),
    );
    assert_eq!(a.requests(), 500, "{report}");
    assert_eq!(out.stats.verdicts.compared, 200, "{report}");
    assert_eq!(out.stats.verdicts.mismatched, 200, "{report}");
}

#[test]
fn warm_up_requests_are_sent_but_not_counted() {
    let a = Server::start(|_| Reply::ok("{}"));
    let b = Server::start(|_| Reply::ok("{}"));
    let (out, report) = run_lib(
        &[
            "--warmup",
            "50",
            "--stop-after",
            "100",
            "-c",
            "3",
            &a.url(),
            &b.url(),
        ],
        &lines(1000),
    );
    assert_eq!(a.requests(), 150, "{report}");
    assert_eq!(b.requests(), 150);
    let e = &out.stats.endpoints[0];
    assert_eq!(
        (e.sent, e.responses, e.latency.len()),
        (100, 100, 100),
        "{report}"
    );
    assert_eq!(out.stats.verdicts.compared, 100);
    assert!(
        report.contains("Completed:  100 results with 200 total requests"),
        "{report}"
    );
    // The report says a warm-up happened (it once did not).
    assert!(
        report.contains("Warm-up:    50 requests sent first at every endpoint, counted nowhere"),
        "{report}"
    );

    // A warm-up by count in single-request mode: 50 more, 100 counted.
    let d = Server::start(|_| Reply::ok("{}"));
    let (out, report) = run_lib(
        &[
            "--warmup",
            "50",
            "--stop-after",
            "100",
            "--method",
            "GET",
            "-c",
            "3",
            &d.url(),
        ],
        b"",
    );
    assert_eq!(d.requests(), 150, "{report}");
    assert_eq!(
        (
            out.stats.endpoints[0].sent,
            out.stats.endpoints[0].responses
        ),
        (100, 100),
        "{report}"
    );

    // A warm-up by time in single-request mode: the counted quota is whole.
    let c = Server::start(|_| Reply::ok("{}"));
    let (out, report) = run_lib(
        &[
            "--warmup",
            "200ms",
            "--stop-after",
            "300",
            "--method",
            "GET",
            &c.url(),
        ],
        b"",
    );
    assert_eq!(out.stats.endpoints[0].sent, 300, "{report}");
    assert!(c.requests() > 300, "no warm-up requests were sent");
}

#[test]
fn concurrency_above_the_lead_window_is_still_reached() {
    let a = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(50)));
    let (out, report) = run_lib(
        &["--lead", "4", "-c", "40", "--threads", "1", &a.url()],
        &lines(200),
    );
    assert_eq!(out.stats.endpoints[0].responses, 200, "{report}");
    assert_eq!(
        a.max_in_flight(),
        40,
        "the lead window capped the requests in flight"
    );
}

#[test]
fn a_thousand_connections_complete_with_every_request_accounted_for() {
    // Both ends of every connection live in this process: make room.
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        lim.rlim_cur = lim.rlim_max.min(65536);
        libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
    }
    assert!(
        lim.rlim_cur >= 4096,
        "cannot open enough files here: limit {}",
        lim.rlim_cur
    );
    let a = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(20)));
    let (out, report) = run_lib(&["-c", "1000", &a.url()], &lines(5000));
    let e = &out.stats.endpoints[0];
    assert_eq!(e.sent, 5000, "{report}");
    assert_eq!(e.responses, 5000, "{report}");
    assert_eq!(e.completed(), 5000);
    assert_eq!(out.stats.verdicts.compared, 5000);
    assert_eq!(a.requests(), 5000);
    assert!(a.max_in_flight() <= 1000);
    assert!(
        a.max_in_flight() > 500,
        "the connections were not used: {}",
        a.max_in_flight()
    );
    assert_eq!(a.connections(), 1000, "{report}");
}

#[test]
fn requests_are_counted_under_their_own_method_even_when_they_look_alike() {
    let a = Server::start(|_| Reply::ok("{}"));
    let url = format!("http+get://{}/api/", a.addr);
    // Same length, different paths, alternating: each keeps its own name.
    let mut input = String::new();
    for i in 0..100 {
        input.push_str(if i % 2 == 0 { "users/1\n" } else { "items/2\n" });
    }
    let (out, _) = run_lib(&["-c", "2", &url], input.as_bytes());
    let mut methods = out.stats.verdicts.methods.clone();
    methods.sort();
    assert_eq!(
        methods,
        [
            ("GET /api/items/{id}".to_string(), 50),
            ("GET /api/users/{id}".to_string(), 50)
        ]
    );
}
