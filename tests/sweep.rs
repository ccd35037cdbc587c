//! `--sweep`: load curves. Every step in every format and in the saved
//! run, steps that hold their rate by the server's own count, and shards
//! of a sweep that merge step by step into one run's.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

const SWEEP: [&str; 6] = [
    "--sweep",
    "100,200,300,400/s",
    "--step-duration",
    "1s",
    "--settle",
    "1s",
];

fn temp(name: &str) -> String {
    let dir = std::env::temp_dir().join(format!("versus-sweep-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).to_str().unwrap().to_string()
}

fn json_of(out: &std::process::Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// Per step, per endpoint: (offered per second, achieved per second).
fn curve(report: &serde_json::Value) -> Vec<Vec<(f64, f64)>> {
    report["steps"]
        .as_array()
        .unwrap_or_else(|| panic!("no steps: {report}"))
        .iter()
        .map(|s| {
            s["endpoints"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| {
                    (
                        e["offered_rps"].as_f64().unwrap(),
                        e["achieved_rps"].as_f64().unwrap(),
                    )
                })
                .collect()
        })
        .collect()
}

#[test]
fn a_sweep_of_four_rates_shows_every_step_in_every_format_and_the_saved_run() {
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let seen = arrivals.clone();
    let a = Server::start(move |_| {
        seen.lock().unwrap().push(Instant::now());
        Reply::ok("{}")
    });
    let b = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(2)));
    let (a, b) = (format!("a={}", a.url()), format!("b={}", b.url()));
    let saved = temp("four.jsonl");
    let mut args: Vec<&str> = SWEEP.to_vec();
    args.extend(["--method", "GET", "--format", "json", "-o", &saved, &a, &b]);
    let live = json_of(&run_bin(&args, b""));
    let steps = curve(&live);
    assert_eq!(steps.len(), 4, "{live}");
    for (step, rate) in steps.iter().zip([100.0, 200.0, 300.0, 400.0]) {
        assert_eq!(step.len(), 2);
        for (offered, achieved) in step {
            // The schedule makes exactly the step's rate due in its
            // counted second; what completed in it is within 5 %.
            assert!((offered - rate).abs() <= 1.0, "{live}");
            assert!((achieved - rate).abs() <= rate * 0.05, "{live}");
        }
    }
    // The server's own count: each step's 2 s at its rate, settling
    // included, 2,000 in all.
    let arrivals = arrivals.lock().unwrap();
    assert_eq!(arrivals.len(), 2000);
    let first = arrivals[0];
    for (k, rate) in [100u64, 200, 300, 400].iter().enumerate() {
        let within = |a: &&Instant| {
            let t = a.duration_since(first).as_secs_f64();
            t >= 2.0 * k as f64 + 0.1 && t < 2.0 * (k + 1) as f64 - 0.1
        };
        let n = arrivals.iter().filter(within).count() as u64;
        let want = rate * 18 / 10;
        assert!(n.abs_diff(want) <= want / 50 + 2, "step {k}: {n} of {want}");
    }
    // Read back, the saved run gives the same steps.
    let back = json_of(&run_bin(&["report", &saved, "--format", "json"], b""));
    assert_eq!(curve(&back), steps, "{back}");
    // Every format shows every step at every endpoint.
    for format in ["text", "markdown", "csv", "html"] {
        let out = run_bin(&["report", &saved, "--format", format], b"");
        let shown = String::from_utf8_lossy(&out.stdout);
        for rate in ["100.00/s", "200.00/s", "300.00/s", "400.00/s"] {
            let rows = shown.lines().filter(|l| l.contains(rate)).count();
            let want = if format == "html" { 0 } else { 2 };
            assert!(rows >= want, "{format} {rate}:\n{shown}");
        }
        if format == "html" {
            assert!(shown.contains("Load curve") && shown.contains("achieved against offered"));
            // Each endpoint's curve holds its own four steps, no other's.
            let at = shown.find("id=\"curve-0-rate\"").unwrap();
            let chart = &shown[at..at + shown[at..].find("</svg>").unwrap()];
            let line = chart.split("points=\"").nth(1).unwrap();
            let points = line[..line.find('"').unwrap()].split_whitespace().count();
            assert_eq!(points, 4, "{chart}");
        }
    }
}

#[test]
fn two_shards_of_a_sweep_merge_into_one_runs_steps() {
    let server = Server::start(|_| Reply::ok("{}"));
    let url = format!("a={}", server.url());
    let run = |shard: Option<&str>, file: &str| {
        let mut args: Vec<String> = SWEEP.iter().map(|s| s.to_string()).collect();
        if let Some(s) = shard {
            args.extend(["--shard".into(), s.into()]);
        }
        args.extend(["--method", "GET", "-q", "-o", file, &url].map(String::from));
        let out = run_bin(&args.iter().map(String::as_str).collect::<Vec<_>>(), b"");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let (one, s1, s2, merged) = (
        temp("one.jsonl"),
        temp("s1.jsonl"),
        temp("s2.jsonl"),
        temp("m.jsonl"),
    );
    std::thread::scope(|scope| {
        scope.spawn(|| run(Some("0/2"), &s1));
        scope.spawn(|| run(Some("1/2"), &s2));
    });
    run(None, &one);
    let out = run_bin(&["merge", &s1, &s2, "-o", &merged], b"");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let whole = json_of(&run_bin(&["report", &one, "--format", "json"], b""));
    let parts = json_of(&run_bin(&["report", &merged, "--format", "json"], b""));
    let (whole, parts) = (curve(&whole), curve(&parts));
    assert_eq!(whole.len(), 4);
    assert_eq!(parts.len(), 4);
    for (w, p) in whole.iter().zip(&parts) {
        // The shards' schedules make the whole's: the same requests due.
        assert_eq!(w[0].0, p[0].0, "{whole:?} {parts:?}");
        assert!(
            (w[0].1 - p[0].1).abs() <= w[0].1 * 0.05,
            "{whole:?} {parts:?}"
        );
    }
}

#[test]
fn sweeps_that_do_not_parse_or_do_not_fit_are_refused_before_sending() {
    let server = Server::start(|_| Reply::ok("{}"));
    refused(
        &server,
        &[
            (vec!["--sweep", "0,100/s"], "a rate of 0"),
            (vec!["--sweep", "fast"], "--sweep \"fast\""),
            (
                vec!["--sweep", "100/s", "--rate", "5"],
                "--sweep with --rate",
            ),
            (
                vec!["--sweep", "100/s", "--stages", "1s:5/s"],
                "--sweep with --stages",
            ),
            (
                vec!["--sweep", "100/s", "--step-duration", "1500ms"],
                "--step-duration 1s 500ms",
            ),
        ],
    );
}

/// The HTML load curves, seen in Chromium: every endpoint's charts drawn,
/// no console message, and a screenshot of the page.
#[test]
#[ignore = "needs chromium (installed by .ci/run)"]
fn the_html_load_curves_load_in_headless_chromium_and_draw() {
    let (a, b) = (
        Server::start(|_| Reply::ok("{}")),
        Server::start(|_| Reply::ok("{}")),
    );
    let (a, b) = (format!("a={}", a.url()), format!("b={}", b.url()));
    let saved = temp("chromium.jsonl");
    let mut args: Vec<&str> = SWEEP.to_vec();
    args.extend(["-q", "-o", &saved, &a, &b]);
    let out = run_bin(&args, &lines(3000));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = temp("curves.html");
    let html = run_bin(&["report", &saved, "--format", "html"], b"").stdout;
    std::fs::write(&page, html).unwrap();
    let profile = std::path::PathBuf::from(temp("chromium-profile"));
    let (dom, log) = chromium(std::path::Path::new(&page), &profile, &["--dump-dom"]);
    assert!(!log.contains(":CONSOLE"), "{log}");
    for id in [
        "curve-0-latency",
        "curve-0-rate",
        "curve-1-latency",
        "curve-1-rate",
    ] {
        let at = dom
            .find(&format!("id=\"{id}\""))
            .unwrap_or_else(|| panic!("no chart {id}"));
        // Each chart draws its lines: four steps a line.
        let chart = &dom[at..at + dom[at..].find("</svg>").unwrap()];
        assert!(chart.contains("<polyline"), "{id}: {chart}");
    }
    let shot = temp("curves.png");
    let screenshot = format!("--screenshot={shot}");
    chromium(
        std::path::Path::new(&page),
        &profile,
        &[&screenshot, "--window-size=1200,4000"],
    );
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 20_000,
        "{} bytes",
        png.len()
    );
}
