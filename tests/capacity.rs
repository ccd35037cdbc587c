//! `--find-capacity`: each endpoint's capacity, found by a search that
//! steps its rate up and bisects, against servers whose capacity is known
//! (a server of a fixed number of workers, nginx's `limit_req`), apart
//! and as two endpoints of one run.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;

/// An HTTP/1.1 server whose `workers` threads each take `service` per
/// request, whatever the connections: its capacity is about
/// `workers / service`, less the timers' slack.
struct Workers {
    port: u16,
}

impl Workers {
    fn start(workers: usize, service: Duration) -> Workers {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (jobs, queue) = mpsc::channel::<mpsc::Sender<()>>();
        let queue = Arc::new(Mutex::new(queue));
        for _ in 0..workers {
            let queue = queue.clone();
            std::thread::spawn(move || loop {
                let Ok(done) = queue.lock().unwrap().recv() else {
                    return;
                };
                std::thread::sleep(service);
                let _ = done.send(());
            });
        }
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let jobs = jobs.clone();
                std::thread::spawn(move || serve(conn, &jobs));
            }
        });
        Workers { port }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

/// Answer each request on `conn` once a worker has served it.
fn serve(conn: TcpStream, jobs: &mpsc::Sender<mpsc::Sender<()>>) {
    let mut out = conn.try_clone().unwrap();
    let mut reader = BufReader::new(conn);
    loop {
        let mut line = String::new();
        // The head, to its empty line (GET: no body).
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" => break,
                Ok(_) => {}
            }
        }
        let (done, wait) = mpsc::channel();
        if jobs.send(done).is_err() || wait.recv().is_err() {
            return;
        }
        let _ = out.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}");
    }
}

/// The rate a saturating closed-model run achieves: the real capacity.
fn measured(url: &str) -> f64 {
    let (out, report) = run_lib(
        &["-c", "64", "--stop-after", "2s", "--method", "GET", url],
        b"",
    );
    let rate = out.stats.endpoints[0].rate();
    assert!(rate > 100.0, "{report}");
    rate
}

fn json(args: &[&str]) -> serde_json::Value {
    let out = run_bin(args, b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

const SEARCH: [&str; 10] = [
    "--capacity-start",
    "100/s",
    "--capacity-max",
    "6400/s",
    "--step-duration",
    "2s",
    "--settle",
    "1s",
    "--format",
    "json",
];

#[test]
fn the_search_finds_a_fixed_worker_servers_capacity() {
    let _alone = alone();
    let server = Workers::start(4, Duration::from_millis(5));
    let url = server.url();
    let truth = measured(&url);
    let saved = std::env::temp_dir().join(format!("versus-workers-{}.jsonl", std::process::id()));
    let saved = saved.to_str().unwrap();
    let mut args = vec![
        "--find-capacity",
        "p99 < 100ms",
        "--method",
        "GET",
        "-o",
        saved,
    ];
    args.extend(SEARCH);
    args.push(&url);
    let report = json(&args);
    let c = &report["endpoints"][0]["capacity"];
    let found = c["rate"].as_f64().unwrap_or_else(|| panic!("{c}"));
    assert!(
        (found / truth - 1.0).abs() <= 0.10,
        "found {found}/s, capacity {truth}/s: {c}"
    );
    assert_eq!(c["broken_by"], "p99 < 100ms", "{c}");
    assert_eq!(c["settled"], true, "{c}");
    // The HTML curve marks the capacity and the knee.
    let html = run_bin(&["report", saved, "--format", "html"], b"").stdout;
    let html = String::from_utf8(html).unwrap();
    let capacity = format!("<title>capacity {}/s</title>", versus::report::rate(found));
    assert!(
        html.contains(&capacity) && html.contains("<title>knee "),
        "{html}"
    );
    let _ = std::fs::remove_file(saved);
}

/// nginx answering 503 above `rate` a second (`limit_req`, keyed by the
/// server's port: an empty key is never limited).
fn limited(name: &str, rate: u32) -> Nginx {
    let dir = std::env::temp_dir().join(format!("versus-capacity-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("ok.json"), "{}").unwrap();
    // Served from a file: `return` would answer before `limit_req` runs.
    Nginx::start(
        &dir,
        &format!("limit_req_zone $server_port zone=one:1m rate={rate}r/s;\n  limit_req_status 503;"),
        &format!(
            "    listen 127.0.0.1:@PORT@;\n    root {};\n    location / {{ limit_req zone=one burst=20 nodelay; try_files /ok.json =404; }}",
            dir.display()
        ),
    )
}

#[test]
#[ignore = "needs nginx: bash .ci/run installs it"]
fn the_search_finds_nginxs_limit_req_rate() {
    let _alone = alone();
    let nginx = limited("alone", 2000);
    let url = format!("http://127.0.0.1:{}/", nginx.port);
    let mut args = vec!["--find-capacity", "errors < 1%", "--method", "GET"];
    args.extend(SEARCH);
    args.push(&url);
    let report = json(&args);
    let c = &report["endpoints"][0]["capacity"];
    let found = c["rate"].as_f64().unwrap_or_else(|| panic!("{c}"));
    assert!(
        (found / 2000.0 - 1.0).abs() <= 0.10,
        "found {found}/s: {c}\n{}",
        report["steps"]
    );
    assert_eq!(c["broken_by"], "errors < 1%", "{c}");
}

/// Both servers as two endpoints of one run: each is searched at its own
/// rate and found, and answers are still compared where both answered.
#[test]
#[ignore = "needs nginx: bash .ci/run installs it"]
fn two_endpoints_of_one_run_each_find_their_own_capacity() {
    let _alone = alone();
    let nginx = limited("two", 2000);
    let workers = Workers::start(4, Duration::from_millis(5));
    let truth = measured(&workers.url());
    let a = format!("nginx=http://127.0.0.1:{}/", nginx.port);
    let b = format!("workers={}", workers.url());
    let saved = std::env::temp_dir().join(format!("versus-capacity-{}.jsonl", std::process::id()));
    let saved = saved.to_str().unwrap();
    let mut args = vec![
        "--find-capacity",
        "p99 < 100ms",
        "--find-capacity",
        "errors < 1%",
        "--method",
        "GET",
        "-o",
        saved,
    ];
    args.extend(SEARCH);
    args.extend([a.as_str(), b.as_str()]);
    let report = json(&args);
    let rate = |e: usize| report["endpoints"][e]["capacity"]["rate"].as_f64().unwrap();
    assert!((rate(0) / 2000.0 - 1.0).abs() <= 0.10, "{report}");
    assert!(
        (rate(1) / truth - 1.0).abs() <= 0.10,
        "capacity {truth}: {report}"
    );
    assert!(
        report["comparison"]["compared"].as_u64().unwrap() > 1000,
        "{}",
        report["comparison"]
    );
    // The saved run gives the same capacities, and the text report says
    // each with its ratio to the reference's.
    let back = json(&["report", saved, "--format", "json"]);
    for e in 0..2 {
        assert_eq!(
            back["endpoints"][e]["capacity"],
            report["endpoints"][e]["capacity"]
        );
    }
    let text = String::from_utf8(run_bin(&["report", saved], b"").stdout).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("   workers: "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("x reference"), "{text}");
    eprintln!("capacity {truth:.1}/s measured by a saturating run\n{text}");
    let _ = std::fs::remove_file(saved);
}

#[test]
fn searches_that_do_not_parse_or_do_not_fit_are_refused_before_sending() {
    let server = Server::start(|_| Reply::ok("{}"));
    refused(
        &server,
        &[
            (
                vec!["--find-capacity", "p42x < 1ms"],
                "--find-capacity \"p42x < 1ms\"",
            ),
            (
                vec!["--find-capacity", "rps > 5"],
                "the search sets the rate",
            ),
            (
                vec!["--find-capacity", "p99 < 1s", "--stages", "1s:5/s"],
                "--find-capacity with --stages",
            ),
            (
                vec!["--find-capacity", "p99 < 1s", "--sweep", "5/s"],
                "--find-capacity with --sweep",
            ),
            (
                vec!["--find-capacity", "p99 < 1s", "--capacity-max", "10/s"],
                "below --capacity-start",
            ),
            (
                vec!["--find-capacity", "p99 < 1s", "--resolution", "five"],
                "--resolution \"five\"",
            ),
            (
                vec!["--find-capacity", "p99 < 1s", "--capacity-time", "5s"],
                "shorter than one step",
            ),
        ],
    );
}

/// An endpoint that breaks at the first rate is below the first step,
/// with that step's figures, and is not searched further.
#[test]
fn an_endpoint_failing_at_the_first_rate_is_below_the_first_step() {
    let _alone = alone();
    let server = Server::start(|_| Reply::ok("{}").status(503));
    let url = server.url();
    let mut args = vec![
        "--find-capacity",
        "errors < 1%",
        "--allow-failures",
        "--method",
        "GET",
    ];
    args.extend(SEARCH);
    args.push(&url);
    let report = json(&args);
    let c = &report["endpoints"][0]["capacity"];
    assert!(c["rate"].is_null(), "{c}");
    assert_eq!(c["tried"].as_array().unwrap().len(), 1, "{c}");
    assert_eq!(
        report["steps"].as_array().unwrap().len(),
        1,
        "{}",
        report["steps"]
    );
    assert_eq!(report["run"]["interrupted"], false);
}

#[test]
fn a_scenario_is_searched_endpoint_by_endpoint() {
    let _alone = alone();
    let good = Server::start(|_| Reply::ok("{}"));
    let bad = Server::start(|_| Reply::ok("{}").status(503));
    let file = scenario_file(
        "capacity.toml",
        "stages = \"1s:5/s\"\n[[step]]\nname = \"ping\"\npath = \"/ping\"\n",
    );
    let (a, b) = (format!("a={}", good.url()), format!("b={}", bad.url()));
    let mut args = vec![
        "run",
        file.to_str().unwrap(),
        "--find-capacity",
        "errors < 1%",
        "--allow-failures",
    ];
    args.extend(SEARCH);
    // Up to 200/s: the search holds at 100 and 200 for `a`, and `b`
    // fails its first step; neither the file's stages nor a scenario's
    // default stop ends the run.
    let max = args.iter().position(|a| *a == "6400/s").unwrap();
    args[max] = "200/s";
    args.extend([a.as_str(), b.as_str()]);
    let report = json(&args);
    let (ca, cb) = (
        &report["endpoints"][0]["capacity"],
        &report["endpoints"][1]["capacity"],
    );
    assert_eq!(ca["rate"], 200.0, "{ca}");
    assert!(cb["rate"].is_null(), "{cb}");
    assert_eq!(report["steps"].as_array().unwrap().len(), 2, "{report}");
    // 100 and 200 instances a second, each held for 2 s after 1 s.
    let sent = good.requests();
    assert!((880..=920).contains(&sent), "{sent}");
}
