//! The open model (`--rate`): requests start on a schedule and latency
//! counts from the time each was due, so a stalled server shows in the
//! latency instead of silently slowing the sender (no coordinated
//! omission).

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

#[test]
fn a_stall_shows_in_the_corrected_latency_and_not_in_the_uncorrected() {
    // The 100th request stalls the server for 500 ms; every request that
    // arrives meanwhile waits for the stall to end.
    let state = Arc::new(Mutex::new((0u64, None::<Instant>)));
    let s = state.clone();
    let server = Server::start(move |_| {
        let mut st = s.lock().unwrap();
        st.0 += 1;
        if st.0 == 100 {
            st.1 = Some(Instant::now() + Duration::from_millis(500));
        }
        let wait = st.1.map_or(Duration::ZERO, |until| {
            until.saturating_duration_since(Instant::now())
        });
        Reply::ok("{}").after(wait)
    });
    // One request in flight at most, as a closed-loop tool with one
    // connection would have: while the server stalls, requests that fall
    // due cannot start.
    let (out, report) = run_lib(
        &[
            "--rate",
            "200",
            "--stop-after",
            "2s",
            "--max-in-flight",
            "1",
            "--method",
            "GET",
            &server.url(),
        ],
        b"",
    );
    let e = &out.stats.endpoints[0];
    // 200 per second for 2 s: exactly 400 requests.
    assert_eq!(e.sent, 400, "{report}");
    assert_eq!(e.responses, 400, "{report}");
    let corrected_p99 = e.latency.value_at_quantile(0.99);
    let uncorrected_p99 = e.uncorrected.value_at_quantile(0.99);
    assert!(
        corrected_p99 >= 300_000,
        "corrected p99 {corrected_p99} µs\n{report}"
    );
    assert!(
        uncorrected_p99 < 100_000,
        "uncorrected p99 {uncorrected_p99} µs\n{report}"
    );
    assert!(e.late >= 50, "late {}\n{report}", e.late);
    assert!(
        report.contains("Rate:       200.00 per second scheduled"),
        "{report}"
    );
    assert!(report.contains("Uncorrected:"), "{report}");
    assert!(report.contains("Send lag:"), "{report}");
}

#[test]
fn each_request_goes_to_every_endpoint_at_its_scheduled_time() {
    let a = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(1)));
    let b = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(30)));
    let (out, report) = run_lib(
        &["--rate", "100/s", "--stop-after", "1s", &a.url(), &b.url()],
        &lines(1000),
    );
    assert_eq!(out.stats.endpoints[0].sent, 100, "{report}");
    assert_eq!(out.stats.endpoints[1].sent, 100, "{report}");
    // The slow endpoint does not delay the fast one's schedule.
    assert!(
        out.stats.endpoints[0].lag.value_at_quantile(0.5) < 5_000,
        "{report}"
    );
    assert_eq!(out.stats.verdicts.compared, 100);
    assert!(out.stats.endpoints[1].latency.value_at_quantile(0.5) >= 30_000);
}

#[test]
fn bad_rates_are_usage_errors() {
    for rate in ["0", "fast", "10/week"] {
        let out = run_bin(&["--rate", rate, "http://127.0.0.1:1/"], b"x\n");
        assert_eq!(out.status.code(), Some(2), "{rate}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--rate"));
    }
}

#[test]
fn the_rate_can_be_changed_while_the_run_goes() {
    let server = Server::start(|_| Reply::ok("{}"));
    let stop = versus::engine::Stop::new();
    let (url, handle) = (server.url(), stop.clone());
    let run = std::thread::spawn(move || {
        run_lib_with(
            &[
                "--rate",
                "100",
                "--stop-after",
                "2s",
                "--method",
                "GET",
                &url,
            ],
            b"",
            &mut versus::engine::Quiet,
            &handle,
        )
        .0
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while server.requests() < 50 {
        assert!(Instant::now() < deadline, "no requests");
        std::thread::sleep(Duration::from_millis(5));
    }
    // Four times the rate for the rest of the run: far more than the 200
    // requests 100/s for 2 s would send.
    assert_eq!(stop.scale_rate(4.0), 4.0);
    let out = run.join().unwrap();
    let sent = out.stats.endpoints[0].sent;
    assert!((400..=850).contains(&sent), "sent {sent}");
}

/// Records, at each interval of the run, how many connections the server
/// has seen end.
struct ClosedAt {
    server: Arc<Counters>,
    closed: Vec<u64>,
}

impl versus::engine::Observer for ClosedAt {
    fn interval(
        &mut self,
        _index: u64,
        _delta: &versus::stats::RunStats,
        _total: &versus::stats::RunStats,
    ) {
        let closed = self.server.closed.load(Ordering::SeqCst);
        self.closed.push(closed);
    }
}

#[test]
fn connections_opened_for_a_burst_are_closed_once_idle() {
    // The first 20 requests take 500 ms each: at 40 per second they
    // overlap, and the open model opens a connection for each. After them
    // every answer is immediate and one or two connections carry the load;
    // the rest sit idle and must be closed during the run, not kept to its
    // end (which held a burst's file descriptors for hours in a soak).
    let count = AtomicU64::new(0);
    let server = Server::start(move |_| {
        let slow = count.fetch_add(1, Ordering::SeqCst) < 20;
        Reply::ok("{}").after(if slow {
            Duration::from_millis(500)
        } else {
            Duration::ZERO
        })
    });
    let mut observer = ClosedAt {
        server: server.counters.clone(),
        closed: Vec::new(),
    };
    let (out, report) = run_lib_observed(
        &[
            "--rate",
            "40",
            "--stop-after",
            "8s",
            "--method",
            "GET",
            &server.url(),
        ],
        b"",
        &mut observer,
    );
    let e = &out.stats.endpoints[0];
    assert_eq!(e.responses, 320, "{report}");
    let opened = server.connections();
    assert!(
        opened >= 10,
        "the burst opened {opened} connections\n{report}"
    );
    // By the last full interval (7 s in; the burst ended at about 1 s),
    // the idle ones are closed while the run still goes.
    let before_end = observer.closed[6];
    assert!(
        before_end + 3 >= opened,
        "{before_end} of {opened} connections closed by 7 s: {:?}\n{report}",
        observer.closed
    );
    // And not before they had been idle a while: none in the first
    // seconds after the burst.
    assert_eq!(observer.closed[2], 0, "{:?}", observer.closed);
}
