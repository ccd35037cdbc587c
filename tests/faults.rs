//! Network faults (`--fault`): each measured against servers started here
//! on 127.0.0.1, through versus's own proxy, on real sockets.

mod common;

use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;
use versus::engine::RunOutput;
use versus::model::Failure;

/// A file of this test run's own.
fn temp(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("versus-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Run the scenario `text` (written to `name`) with `--stop-after=STOP`
/// in vegeta's layout; its report.
fn vegeta_scenario(name: &str, text: &str, stop: &str) -> String {
    let file = temp(name);
    std::fs::write(&file, text).unwrap();
    let stop = format!("--stop-after={stop}");
    let out = run_bin(
        &["run", file.to_str().unwrap(), &stop, "--format=vegeta"],
        b"",
    );
    let report = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{report}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    report
}

/// Percentile `q` of endpoint `i`'s latency, in milliseconds.
fn ms(out: &RunOutput, i: usize, q: f64) -> f64 {
    out.stats.endpoints[i].latency.value_at_quantile(q) as f64 / 1000.0
}

fn failures(out: &RunOutput, i: usize, f: Failure) -> u64 {
    out.stats.endpoints[i].failures[f.index()]
}

/// How often the fault `name` acted at endpoint `i`.
fn acted(out: &RunOutput, i: usize, name: &str) -> u64 {
    *out.stats.endpoints[i]
        .faults
        .get(name)
        .unwrap_or_else(|| panic!("no fault {name:?} in {:?}", out.stats.endpoints[i].faults))
}

#[test]
fn latency_on_one_endpoint_adds_its_setting_and_leaves_the_other_alone() {
    let _alone = alone();
    let server = Server::start(|_| Reply::ok("ok"));
    let fast = format!("fast={}", server.url());
    let slow = format!("slow={}", server.url());
    let (out, report) = run_lib(
        &[
            "--stop-after=30",
            "-c",
            "2",
            "--fault",
            "slow=latency 100ms",
            &fast,
            &slow,
        ],
        &lines(30),
    );
    let added = ms(&out, 1, 0.5) - ms(&out, 0, 0.5);
    assert!((added - 100.0).abs() <= 5.0, "added {added} ms\n{report}");
    // The endpoint without a fault is not behind a proxy: loopback speed.
    assert!(ms(&out, 0, 0.99) < 20.0, "{report}");
    assert!(out.stats.endpoints[0].faults.is_empty());
    assert!(acted(&out, 1, "latency 100ms") >= 1);
    // The report says which fault was set where, and how often it acted.
    assert!(report.contains("Faults injected:"), "{report}");
    assert!(report.contains("latency 100ms"), "{report}");
}

/// A repeated request (single-request mode, where lanes carry the slots'
/// work) through a latency fault: the proxy runs on the same core, so the
/// core must not sleep where the proxy's sockets go unseen (the wait in
/// the ring): the fault adds its setting and versus adds nothing.
#[test]
fn latency_on_a_repeated_request_adds_its_setting_and_no_more() {
    let _alone = alone();
    let server = Server::start(|_| Reply::ok("ok"));
    let (out, report) = run_lib(
        &[
            "--method",
            "GET",
            "--stop-after=100",
            "-c",
            "2",
            "--threads",
            "1",
            "--fault",
            "0=latency 20ms",
            &server.url(),
        ],
        b"",
    );
    assert_eq!(out.stats.endpoints[0].responses, 100, "{report}");
    let median = ms(&out, 0, 0.5);
    assert!((median - 20.0).abs() <= 5.0, "median {median} ms\n{report}");
    assert!(acted(&out, 0, "latency 20ms") >= 1);
}

#[test]
fn jitter_spreads_latency_around_its_setting() {
    let _alone = alone();
    let server = Server::start(|_| Reply::ok("ok"));
    let (out, report) = run_lib(
        &[
            "--stop-after=60",
            "--fault",
            "0=latency 60ms jitter 20ms",
            &server.url(),
        ],
        &lines(60),
    );
    // Uniform over 40..80 ms: nothing under 40, the median near 60, the
    // middle half about 20 ms wide. A busy machine only adds (CI saw the
    // whole spread 5 ms late under load), so the median may be later than
    // early: the sample median's spread is about 2.5 ms either way.
    let (min, p50) = (ms(&out, 0, 0.0), ms(&out, 0, 0.5));
    let middle = ms(&out, 0, 0.75) - ms(&out, 0, 0.25);
    assert!(min >= 39.5, "min {min}\n{report}");
    assert!((52.0..=72.0).contains(&p50), "p50 {p50}\n{report}");
    assert!(
        (12.0..28.0).contains(&middle),
        "middle half {middle}\n{report}"
    );
}

#[test]
fn bandwidth_limits_the_answer_to_its_rate_within_5_percent() {
    let _alone = alone();
    let body = vec![b'x'; 400 * 1024];
    let server = Server::start(move |_| Reply::ok(body.clone()));
    let (out, report) = run_lib(
        &[
            "--stop-after=2",
            "--fault",
            "0=bandwidth 400KB/s per 25ms",
            &server.url(),
        ],
        &lines(2),
    );
    assert_eq!(out.stats.endpoints[0].responses, 2, "{report}");
    // 400 KB at 10 KB per 25 ms: the first 10 KB at once, then 39 periods.
    let took = ms(&out, 0, 0.5) / 1000.0;
    let rate = 400.0 * 1024.0 * (39.0 / 40.0) / took / 1024.0;
    assert!(
        (rate - 400.0).abs() <= 20.0,
        "{rate} KB/s in {took} s\n{report}"
    );
}

/// When each read of a server took how many bytes.
type Reads = Arc<Mutex<Vec<(Instant, usize)>>>;

/// A server that reads requests and notes when each piece arrived.
fn timing_server() -> (std::net::SocketAddr, Reads) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let reads = Arc::new(Mutex::new(Vec::new()));
    let seen = reads.clone();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { return };
            let seen = seen.clone();
            std::thread::spawn(move || {
                let mut buf = Vec::new();
                let mut chunk = [0u8; 65536];
                loop {
                    let Ok(n) = s.read(&mut chunk) else { return };
                    if n == 0 {
                        return;
                    }
                    seen.lock().unwrap().push((Instant::now(), n));
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    let Some(head_end) = text.find("\r\n\r\n") else {
                        continue;
                    };
                    let len = content_length(&text[..head_end]);
                    if buf.len() >= head_end + 4 + len {
                        buf.drain(..head_end + 4 + len);
                        let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
                    }
                }
            });
        }
    });
    (addr, reads)
}

#[test]
fn slow_read_is_seen_by_the_server_as_small_late_pieces() {
    let _alone = alone();
    let (addr, reads) = timing_server();
    let (out, report) = run_lib(
        &[
            "--stop-after=1",
            "--fault",
            "0=slow-read 1KB every 200ms",
            &format!("http://{addr}/"),
        ],
        &padded_lines(1, 3000),
    );
    assert_eq!(out.stats.endpoints[0].responses, 1, "{report}");
    let reads = reads.lock().unwrap();
    // About 3.1 KB in pieces of at most 1 KB, 200 ms apart.
    assert!(reads.len() >= 4, "{reads:?}");
    assert!(reads.iter().all(|(_, n)| *n <= 1024), "{reads:?}");
    let spread = reads.last().unwrap().0 - reads[0].0;
    assert!(spread >= Duration::from_millis(570), "{spread:?}");
    assert!(ms(&out, 0, 0.5) >= 570.0, "{report}");
}

#[test]
fn reset_and_timeout_are_classified_and_counted_as_injected() {
    let _alone = alone();
    let server = Server::start(|_| Reply::ok("a body longer than twenty bytes"));
    let (out, report) = run_lib(
        &[
            "--stop-after=4",
            "--timeout=300ms",
            "--fault",
            "0=reset after 20B",
            "--fault",
            "1=timeout",
            &format!("reset={}", server.url()),
            &format!("hole={}", server.url()),
        ],
        &lines(4),
    );
    assert_eq!(failures(&out, 0, Failure::Reset), 4, "{report}");
    assert_eq!(acted(&out, 0, "reset after 20B"), 4, "{report}");
    assert_eq!(failures(&out, 1, Failure::Timeout), 4, "{report}");
    assert!(acted(&out, 1, "timeout") >= 1, "{report}");
    assert!(report.contains("reset after 20B"), "{report}");
}

#[test]
fn reset_after_a_delay_abort_and_limit_end_requests() {
    let _alone = alone();
    let arrived = Arc::new(AtomicU64::new(0));
    let count = arrived.clone();
    let server = Server::start(move |_| {
        count.fetch_add(1, Ordering::SeqCst);
        Reply::ok(vec![b'y'; 1000]).after(Duration::from_millis(300))
    });
    let (out, report) = run_lib(
        &[
            "--stop-after=3",
            "--fault",
            "0=reset after 100ms",
            "--fault",
            "1=abort",
            "--fault",
            "2=limit 500B",
            &server.url(),
            &format!("b={}", server.url()),
            &format!("c={}", server.url()),
        ],
        &lines(3),
    );
    for i in 0..3 {
        assert_eq!(
            failures(&out, i, Failure::Reset),
            3,
            "endpoint {i}\n{report}"
        );
    }
    assert_eq!(acted(&out, 1, "abort"), 3);
    assert_eq!(acted(&out, 2, "limit 500B"), 3);
    // Aborted requests never reach the server: 3 + 0 + 3.
    assert_eq!(arrived.load(Ordering::SeqCst), 6, "{report}");
}

#[test]
fn injected_statuses_are_counted_and_probability_holds_within_2_percent() {
    let _alone = alone();
    let server = Server::start(|_| Reply::ok("ok"));
    let (out, report) = run_lib(
        &[
            "--stop-after=10000",
            "-c",
            "8",
            "--fault",
            "0=status 503 body 'down for a test' prob 0.3",
            &server.url(),
        ],
        &lines(10_000),
    );
    let s = &out.stats.endpoints[0];
    let injected = acted(&out, 0, "status 503 body \"down for a test\" prob 0.3");
    assert_eq!(s.status[503], injected, "{report}");
    assert_eq!(s.status[200] + injected, 10_000);
    assert_eq!(server.requests(), s.status[200]);
    let share = injected as f64 / 10_000.0;
    assert!((share - 0.3).abs() <= 0.02, "{share}");
}

#[test]
fn rate_limit_answers_429_beyond_its_limit() {
    let _alone = alone();
    let server = Server::start(|_| Reply::ok("ok"));
    let (out, report) = run_lib(
        &[
            "--rate=100",
            "--stop-after=2s",
            "--fault",
            "0=rate-limit 20/s",
            &server.url(),
        ],
        &lines(1000),
    );
    let s = &out.stats.endpoints[0];
    // 20 a second over 2 s (3 periods at most, as the grid falls).
    assert!((30..=60).contains(&s.status[200]), "{report}");
    assert!(s.status[429] >= 130, "{report}");
    assert_eq!(acted(&out, 0, "rate-limit 20/1s"), s.status[429]);
}

#[test]
fn slicer_and_slow_open_delay_by_their_settings() {
    let _alone = alone();
    let server = Server::start(|_| Reply::ok(vec![b'z'; 1000]));
    let (out, report) = run_lib(
        &[
            "--stop-after=3",
            "--fault",
            "0=slicer 100B delay 10ms",
            "--fault",
            "1=slow-open 200ms",
            &server.url(),
            &format!("b={}", server.url()),
        ],
        &lines(3),
    );
    // The head and 1000 bytes in 100-byte slices: at least 10 pauses.
    assert!(ms(&out, 0, 0.0) >= 95.0, "{report}");
    // Slow open: the first request waits for the connection, not later ones.
    assert!(ms(&out, 1, 1.0) >= 190.0, "{report}");
    assert!(ms(&out, 1, 0.0) < 50.0, "{report}");
}

#[test]
fn a_time_window_shows_in_the_saved_intervals() {
    let _alone = alone();
    let server = Server::start(|_| Reply::ok("ok"));
    let file = temp("window.jsonl");
    let out = run_bin(
        &[
            "--rate=50",
            "--stop-after=4s",
            "--fault",
            "0=latency 200ms after 1s for 1s",
            "--output",
            file.to_str().unwrap(),
            &server.url(),
        ],
        &lines(1000),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let saved = versus::results::load(&[&file]).unwrap();
    let p50 = |k: usize| saved.series.points[k].endpoints[0].p50.unwrap() as f64 / 1000.0;
    assert!(p50(0) < 50.0, "interval 0: {}", p50(0));
    assert!(p50(1) >= 190.0, "interval 1: {}", p50(1));
    assert!(p50(3) < 50.0, "interval 3: {}", p50(3));
    // The fault's count is in the intervals it acted in, and in the totals.
    let text = std::fs::read_to_string(&file).unwrap();
    let name = "latency 200ms after 1s for 1s";
    let counts: Vec<u64> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "interval")
        .map(|v| v["endpoints"][0]["faults"][name].as_u64().unwrap())
        .collect();
    assert!(counts[0] == 0 && counts[1] > 0, "{counts:?}");
    assert!(saved.output.stats.endpoints[0].faults[name] > 0);
}

#[test]
fn bad_faults_exit_2_with_the_reason() {
    let _alone = alone();
    let out = run_bin(&["--fault", "0=latency", "http://127.0.0.1:9/"], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--fault \"0=latency\": expected a duration after latency"),
        "{err}"
    );
    let out = run_bin(&["--fault", "nope=abort", "http://127.0.0.1:9/"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no endpoint is named \"nope\""));
    // An HTTP fault cannot see into TLS: refused before anything is sent.
    let out = run_bin(&["--fault", "0=status 500", "https://127.0.0.1:9/"], b"");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("TLS"), "{err}");
}

#[test]
fn a_scenario_file_sets_faults_per_endpoint_and_vegeta_reports_them() {
    let _alone = alone();
    let server = Server::start(|_| Reply::ok("Hello world!"));
    let report = vegeta_scenario(
        "faults.toml",
        &format!(
            r#"
[[endpoint]]
name = "plain"
url = "{url}"

[[endpoint]]
name = "slow"
url = "{url}"
faults = ["latency 100ms", "status 503 prob 0"]

[[step]]
name = "hello"
path = "/"
"#,
            url = server.url()
        ),
        "5",
    );
    // Two blocks in vegeta's layout, one per endpoint.
    let blocks: Vec<&str> = report.split("\n# ").collect();
    assert_eq!(blocks.len(), 2, "{report}");
    assert!(blocks[0].starts_with("# 0. plain"), "{report}");
    assert!(blocks[1].starts_with("1. slow"), "{report}");
    for b in &blocks {
        assert!(
            b.contains("Requests      [total, rate, throughput]         5, "),
            "{b}"
        );
        assert!(
            b.contains("Status Codes  [code:count]                      200:5  "),
            "{b}"
        );
    }
    // The 50th percentile (third latency) of the slow one is past 100 ms.
    // The third latency is the 50th percentile, in Go's notation.
    let p50_ms = |b: &str| {
        let line = b.lines().find(|l| l.starts_with("Latencies")).unwrap();
        let values = line.split(']').nth(1).unwrap();
        let v = values.split(',').nth(2).unwrap().trim();
        let at = v.find(|c: char| c.is_alphabetic() || c == 'µ').unwrap();
        let n: f64 = v[..at].parse().unwrap();
        n * match &v[at..] {
            "s" => 1000.0,
            "ms" => 1.0,
            "µs" => 0.001,
            u => panic!("unit {u}"),
        }
    };
    let (plain, slow) = (p50_ms(blocks[0]), p50_ms(blocks[1]));
    assert!((100.0..110.0).contains(&(slow - plain)), "{report}");
    assert!(
        blocks[1].contains("Faults injected by versus:\nlatency 100ms: "),
        "{report}"
    );
    assert!(blocks[1].contains("\nstatus 503 prob 0: 0"), "{report}");
}

#[test]
fn byte_stream_faults_act_on_tls_and_http2_alike() {
    let _alone = alone();
    // TLS verified against the certificate, through the proxy (the name
    // checked is the endpoint's, not the proxy's).
    let cert = TestCert::new();
    let tls = Server::start_tls(&cert, |_| Reply::ok("ok"));
    let ca = cert.pem_file();
    let url = format!("https://localhost:{}/", tls.addr.port());
    let (out, report) = run_lib(
        &[
            "--stop-after=5",
            "--cacert",
            ca.to_str().unwrap(),
            "--fault",
            "0=latency 50ms",
            &url,
        ],
        &lines(5),
    );
    assert_eq!(out.stats.endpoints[0].responses, 5, "{report}");
    assert!((ms(&out, 0, 0.5) - 50.0).abs() <= 5.0, "{report}");
    // HTTP/2 with prior knowledge on plain TCP.
    let h2 = Server::start(|s| Reply::ok(format!("{:?}", s.version)));
    let (out, report) = run_lib(
        &[
            "--stop-after=5",
            "--http2",
            "--fault",
            "0=latency 50ms",
            &h2.url(),
        ],
        &lines(5),
    );
    assert_eq!(out.stats.endpoints[0].responses, 5, "{report}");
    assert!((ms(&out, 0, 0.5) - 50.0).abs() <= 5.0, "{report}");
    // A reset on HTTP/2 ends every stream of the connection: each of their
    // failures is put down to it.
    let slow = Server::start(|_| Reply::ok("ok").after(Duration::from_millis(300)));
    let (out, report) = run_lib(
        &[
            "--stop-after=3",
            "--http2",
            "--fault",
            "0=reset after 100ms",
            &slow.url(),
        ],
        &lines(3),
    );
    let s = &out.stats.endpoints[0];
    let blamed: u64 = s.fault_errors.values().sum();
    assert!(s.errors() > 0, "{report}");
    assert_eq!(blamed, s.errors(), "{:?}\n{report}", s.fault_errors);
    assert!(
        s.fault_errors.keys().all(|(_, f)| f == "reset after 100ms"),
        "{:?}",
        s.fault_errors
    );
}

#[test]
fn the_toxy_example_runs_its_suites_side_by_side() {
    let _alone = alone();
    let server = Server::start(|_| Reply::ok("Hello world!"));
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/toxy.toml"))
        .unwrap()
        .replace("http://127.0.0.1:8080/", &server.url());
    let report = vegeta_scenario("toxy.toml", &text, "2");
    for name in ["0. plain", "1. bandwidth", "2. slow-read"] {
        assert!(report.contains(name), "{report}");
    }
    assert!(
        report.contains("Faults injected by versus:\nbandwidth 1KB/1s up: "),
        "{report}"
    );
    assert!(
        report.contains("Faults injected by versus:\nslow-read 1KB every 1s: "),
        "{report}"
    );
    // 1723 bytes under 1 KB/s: a second each; the plain one in milliseconds.
    let maxes: Vec<&str> = report
        .lines()
        .filter(|l| l.starts_with("Latencies"))
        .map(|l| l.rsplit(", ").next().unwrap())
        .collect();
    assert_eq!(maxes.len(), 3, "{report}");
    assert!(
        maxes[0].ends_with("ms") || maxes[0].ends_with("µs"),
        "{report}"
    );
    assert!(
        maxes[1].starts_with("1.0") && maxes[1].ends_with('s'),
        "{report}"
    );
    assert!(
        maxes[2].starts_with("1.0") && maxes[2].ends_with('s'),
        "{report}"
    );
}

/// A server that fails requests itself: 503 for every 5th id, and closes
/// the connection without an answer for every 7th; with its counts of
/// each.
fn failing_server() -> (RawServer, Arc<AtomicU64>, Arc<AtomicU64>) {
    let own_503 = Arc::new(AtomicU64::new(0));
    let own_closes = Arc::new(AtomicU64::new(0));
    let (answered, closed) = (own_503.clone(), own_closes.clone());
    let server = RawServer::start(move |mut s, _| loop {
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        let (head_end, len) = loop {
            let text = String::from_utf8_lossy(&buf).to_string();
            if let Some(i) = text.find("\r\n\r\n") {
                break (i + 4, content_length(&text[..i]));
            }
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        while buf.len() < head_end + len {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        let id = id_of(&buf[head_end..head_end + len]);
        let reply: &[u8] = if id % 7 == 0 {
            closed.fetch_add(1, Ordering::SeqCst);
            return;
        } else if id % 5 == 0 {
            answered.fetch_add(1, Ordering::SeqCst);
            b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\nbusy"
        } else {
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"
        };
        if s.write_all(reply).is_err() {
            return;
        }
    });
    (server, own_503, own_closes)
}

#[test]
fn errors_are_put_down_to_the_fault_or_the_endpoint_exactly() {
    let _alone = alone();
    // Endpoint 0: HTTP faults (per request, before the server); endpoint
    // 1: a reset on half the connections, on the first byte of an answer.
    let (http, http_503, http_closes) = failing_server();
    let (tcp, _, tcp_closes) = failing_server();
    let saved = temp("blame.jsonl");
    let out = run_bin(
        &[
            "--stop-after=2000",
            "-c",
            "4",
            "-q",
            "--format=json",
            "-o",
            saved.to_str().unwrap(),
            "--fault",
            "0=status 503 prob 0.5",
            "--fault",
            "0=abort prob 0.2",
            "--fault",
            "1=reset after 1B prob 0.5",
            &http.url(),
            &tcp.url(),
        ],
        &lines(2000),
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let count = |c: &Arc<AtomicU64>| c.load(Ordering::SeqCst);
    let (own_503, own_closes, tcp_closes) =
        (count(&http_503), count(&http_closes), count(&tcp_closes));
    let errors = |e: usize, kind: &str, cause: &str| {
        let errors = &json["endpoints"][e]["errors"];
        let n = if cause.is_empty() {
            &errors["kinds"][kind]
        } else {
            &errors["causes"][kind][cause]
        };
        n.as_u64()
            .unwrap_or_else(|| panic!("{kind} {cause}: {errors}"))
    };
    let acted = |e: usize, fault: &str| {
        json["endpoints"][e]["faults"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["fault"] == fault)
            .and_then(|f| f["acted"].as_u64())
            .unwrap()
    };
    let fault_503 = errors(0, "HTTP 503", "fault status 503 prob 0.5");
    let aborts = errors(0, "connection reset", "fault abort prob 0.2");
    let resets = errors(1, "connection reset", "fault reset after 1B prob 0.5");
    // Both sides broke some; what the faults did not break, the endpoint
    // did, to the request.
    assert!(own_503 > 0 && own_closes > 0 && fault_503 > 0 && aborts > 0 && resets > 0);
    assert_eq!(errors(0, "HTTP 503", ""), fault_503 + own_503);
    assert_eq!(errors(0, "HTTP 503", "endpoint"), own_503);
    assert_eq!(errors(0, "connection reset", ""), aborts + own_closes);
    assert_eq!(errors(0, "connection reset", "endpoint"), own_closes);
    assert_eq!(errors(1, "connection reset", ""), resets + tcp_closes);
    assert_eq!(errors(1, "connection reset", "endpoint"), tcp_closes);
    assert_eq!(acted(0, "status 503 prob 0.5"), fault_503);
    assert_eq!(acted(0, "abort prob 0.2"), aborts);
    assert_eq!(acted(1, "reset after 1B prob 0.5"), resets);
    // A saved run keeps it: its report says so, and a merge sums it.
    let report = run_bin(&["report", saved.to_str().unwrap()], b"");
    let report = String::from_utf8_lossy(&report.stdout);
    let line = format!(
        "     connection reset: {} (fault abort prob 0.2: {aborts}, endpoint: {own_closes})\n",
        aborts + own_closes
    );
    assert!(report.contains(&line), "{line}\n{report}");
    let file = saved.to_str().unwrap();
    let merged = run_bin(&["report", "--format=json", file, file], b"");
    let merged: serde_json::Value = serde_json::from_slice(&merged.stdout).unwrap();
    let causes = &merged["endpoints"][0]["errors"]["causes"]["HTTP 503"];
    assert_eq!(
        causes["fault status 503 prob 0.5"],
        2 * fault_503,
        "{causes}"
    );
    assert_eq!(causes["endpoint"], 2 * own_503, "{causes}");
}

#[test]
fn slow_close_holds_the_close_back_by_its_setting() {
    let _alone = alone();
    // A server that answers and closes: versus sees the close (the end of
    // a close-delimited body) only after the fault's delay.
    let server = RawServer::start(|mut s, _| {
        if read_request(&mut s).is_some() {
            let _ = s.write_all(b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nclosed");
        }
    });
    let (out, report) = run_lib(
        &[
            "--stop-after=3",
            "--fault",
            "slow=slow-close 200ms",
            &format!("plain={}", server.url()),
            &format!("slow={}", server.url()),
        ],
        &lines(3),
    );
    assert_eq!(out.stats.endpoints[1].responses, 3, "{report}");
    assert_eq!(acted(&out, 1, "slow-close 200ms"), 3, "{report}");
    let added = ms(&out, 1, 0.5) - ms(&out, 0, 0.5);
    assert!((added - 200.0).abs() <= 10.0, "added {added} ms\n{report}");
}
