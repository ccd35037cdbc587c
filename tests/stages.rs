//! `--stages`: load that changes over time. The server's own clock must
//! see the stages, interval by interval, and the saved run must carry the
//! load offered (or the users) of each interval.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

/// Requests the server saw per window of `width` from its first one.
fn per_window(arrivals: &[Instant], width: Duration) -> Vec<u64> {
    let first = arrivals[0];
    let mut counts = Vec::new();
    for a in arrivals {
        let k = (a.duration_since(first).as_secs_f64() / width.as_secs_f64()) as usize;
        counts.resize(counts.len().max(k + 1), 0);
        counts[k] += 1;
    }
    counts
}

#[test]
fn open_stages_ramp_hold_and_ramp_down_as_the_server_counts_them() {
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let seen = arrivals.clone();
    let server = Server::start(move |_| {
        seen.lock().unwrap().push(Instant::now());
        Reply::ok("{}")
    });
    let saved = std::env::temp_dir().join(format!("versus-stages-{}.jsonl", std::process::id()));
    // 100 to 300 a second over 1 s (200 due), 300 a second for 1 s (300),
    // 300 to 100 over 1 s (200): 700 in all, and then the run ends.
    let out = run_bin(
        &[
            "--stages",
            "1s:100..300/s,1s:300/s,1s:300..100/s",
            "--method",
            "GET",
            "-o",
            saved.to_str().unwrap(),
            &server.url(),
        ],
        b"",
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(server.requests(), 700, "{report}");
    assert!(
        report.contains("Stages:     1s:100..300/s,1s:300/s,1s:300..100/s"),
        "{report}"
    );
    assert!(report.contains("Offered:    2"), "{report}");
    // The server's own count, second by second, follows the stages.
    let counts = per_window(&arrivals.lock().unwrap(), Duration::from_secs(1));
    for (got, want) in counts.iter().zip([200u64, 300, 200]) {
        assert!(
            got.abs_diff(want) <= want / 50 + 1,
            "server saw {counts:?}\n{report}"
        );
    }
    // Within a ramp too: its first quarter second is due 31.25 requests
    // (100·0.25 + 200·0.25²/2), its last 68.75.
    let quarters = per_window(&arrivals.lock().unwrap(), Duration::from_millis(250));
    assert!(
        quarters[0].abs_diff(31) <= 2 && quarters[3].abs_diff(69) <= 2,
        "{quarters:?}"
    );
    // The saved run's intervals carry the load offered in each.
    let text = std::fs::read_to_string(&saved).unwrap();
    let offered: Vec<u64> = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["type"] == "interval")
        .map(|v| v["endpoints"][0]["offered"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(offered.iter().sum::<u64>(), 700, "{offered:?}");
    for (got, want) in offered.iter().zip([200u64, 300, 200]) {
        assert!(got.abs_diff(want) <= 1, "intervals offered {offered:?}");
    }
    assert!(text.contains(r#""stages":"1s:100..300/s,1s:300/s,1s:300..100/s""#));
    let _ = std::fs::remove_file(&saved);
}

#[test]
fn closed_stages_change_the_requests_in_flight() {
    // Each answer takes 40 ms, so the requests that arrived within the
    // 38 ms before one were all still in flight when it arrived.
    let arrivals = Arc::new(Mutex::new(Vec::new()));
    let seen = arrivals.clone();
    let server = Server::start(move |_| {
        seen.lock().unwrap().push(Instant::now());
        Reply::ok("{}").after(Duration::from_millis(40))
    });
    // 1 user, rising to 4 over 1 s, then 4 for 1 s.
    let (out, report) = run_lib(
        &["--stages", "1s:1..4,1s:4", "--method", "GET", &server.url()],
        b"",
    );
    let arrivals = arrivals.lock().unwrap();
    let first = arrivals[0];
    let most = |from: u64, to: u64| {
        let ms = |a: &Instant| a.duration_since(first).as_millis() as u64;
        arrivals
            .iter()
            .filter(|a| (from..to).contains(&ms(a)))
            .map(|a| {
                arrivals
                    .iter()
                    .filter(|b| *b <= a && a.duration_since(**b) < Duration::from_millis(38))
                    .count()
            })
            .max()
            .unwrap_or(0)
    };
    // One user until the ramp passes 1.5 users (1/6 s); all 4 in the
    // second second.
    assert_eq!(most(0, 150), 1, "{report}");
    assert_eq!(most(1100, 1900), 4, "{report}");
    // Over 2 s: about 2.5 users on average the first, 4 the second.
    let users = number_after(&report, "Users:");
    assert!((2.9..3.6).contains(&users), "{report}");
    let ran = out.stats.endpoints[0].active.as_secs_f64();
    assert!((1.9..2.3).contains(&ran), "ran {ran} s\n{report}");
}

#[test]
fn stages_that_do_not_parse_or_do_not_fit_are_refused_before_sending() {
    let server = Server::start(|_| Reply::ok("{}"));
    refused(
        &server,
        &[
            (vec!["--stages", "30s"], "--stages \"30s\""),
            (vec!["--stages", "10s:fast/s"], "expected a number"),
            (vec!["--stages", "10s:5/s,10s:5"], "some stages are rates"),
            (vec!["--stages", "10s:0/s"], "nothing would be sent"),
            (
                vec!["--stages", "10s:5/s", "--rate", "5"],
                "--rate with --stages",
            ),
            (
                vec!["--stages", "10s:5/s", "--warmup", "5"],
                "--warmup with --stages",
            ),
        ],
    );
}

#[test]
fn a_scenario_file_takes_its_stages() {
    let server = Server::start(|_| Reply::ok("{}"));
    let file = ping_scenario("stages.toml", "stages = \"1s:0..100/s\"\n");
    let url = format!("a={}", server.url());
    let report = run_scenario_json(&file, &[&url]);
    // 0 to 100 instances a second over 1 s: 50 due, one step each.
    assert_eq!(server.requests(), 50, "{report}");
    assert_eq!(report["run"]["stages"], "1s:0..100/s", "{report}");
    assert_eq!(report["endpoints"][0]["offered"], 50, "{report}");
}

#[test]
fn the_command_lines_sweep_takes_the_place_of_the_files_stages() {
    let server = Server::start(|_| Reply::ok("{}"));
    let file = ping_scenario("stages-swept.toml", "stages = \"1s:0..100/s\"\n");
    let url = format!("a={}", server.url());
    let report = run_scenario_json(
        &file,
        &[
            "--sweep",
            "20/s,40/s",
            "--step-duration",
            "1s",
            "--settle",
            "0s",
            &url,
        ],
    );
    // Two steps of 1 s: 20 and 40 instances, one request each; the run
    // lasts the sweep, not the file's stages nor a scenario's 10 s.
    assert_eq!(server.requests(), 60, "{report}");
    assert!(report["run"]["stages"].is_null(), "{report}");
    let steps = report["steps"].as_array().expect("steps");
    assert_eq!(steps.len(), 2, "{report}");
}

#[test]
fn a_scenario_files_bad_stages_header_or_fault_names_the_file() {
    let server = Server::start(|_| Reply::ok("{}"));
    let cases = [
        ("stages = \"30s\"\n", "the scenario file's stages \"30s\""),
        (
            "[[endpoint]]\nname = \"a\"\nurl = \"URL\"\nheaders = { \"bad header\" = \"x\" }\n",
            "the scenario file's header \"a=bad header: x\"",
        ),
        (
            "[[endpoint]]\nname = \"a\"\nurl = \"URL\"\nfaults = [\"melt\"]\n",
            "the scenario file's fault \"a=melt\"",
        ),
    ];
    for (i, (head, says)) in cases.iter().enumerate() {
        let file = ping_scenario(
            &format!("bad-{i}.toml"),
            &head.replace("URL", &server.url()),
        );
        let mut argv = vec!["run", file.to_str().unwrap()];
        let url = format!("a={}", server.url());
        if !head.contains("[[endpoint]]") {
            argv.push(&url);
        }
        let out = run_bin(&argv, b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{head}: {err}");
        assert!(err.contains(says), "{head}: {err}");
    }
    assert_eq!(server.requests(), 0);
}

/// A scenario file of `head` and one step, a GET of `/ping`.
fn ping_scenario(name: &str, head: &str) -> std::path::PathBuf {
    scenario_file(
        name,
        &format!("{head}\n[[step]]\nname = \"ping\"\npath = \"/ping\"\n"),
    )
}
