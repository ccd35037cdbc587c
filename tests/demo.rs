//! `versus demo` and `versus gen`: the embedded default runs with no set-up
//! and shows a slower, sometimes different candidate; the generator keeps
//! its method mix exactly and follows a node's head.

mod common;

use std::collections::HashMap;

use common::*;

#[test]
fn the_demo_runs_offline_and_reports_both_endpoints() {
    let out = run_bin(&["demo", "--duration", "1s"], b"");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("0. reference \"http://127.0.0.1:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("1. candidate \"http://127.0.0.1:"),
        "{stdout}"
    );
    assert!(stdout.contains("** Summary for 2 endpoints:"));
    let compared = number_after(&stdout, "Completed:");
    let mismatched = number_after(&stdout, "Mismatched:");
    assert!(compared > 500.0, "{stdout}");
    // The candidate answers about 2% of requests differently.
    let share = mismatched / compared;
    assert!(
        (0.005..0.05).contains(&share),
        "mismatch share {share}\n{stdout}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("versus demo:"));
}

#[test]
fn the_demo_writes_an_html_report_and_a_saved_run_that_report_and_compare_read() {
    // A new user's next step after the demo: its HTML report, and its saved
    // run read back by `versus report` and `versus compare`.
    let dir = std::env::temp_dir().join(format!("versus-demo-out-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (html, run) = (dir.join("demo.html"), dir.join("demo.jsonl"));
    let out = run_bin(
        &[
            "demo",
            "--duration",
            "1s",
            "--html",
            html.to_str().unwrap(),
            "-o",
            run.to_str().unwrap(),
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(
        json["endpoints"].as_array().map(Vec::len),
        Some(2),
        "{json}"
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("<html") && page.contains("candidate"),
        "{page}"
    );
    let report = run_bin(&["report", run.to_str().unwrap()], b"");
    let text = String::from_utf8_lossy(&report.stdout);
    assert_eq!(report.status.code(), Some(0), "{text}");
    assert!(text.contains("1. candidate"), "{text}");
    let compare = run_bin(&["compare", run.to_str().unwrap()], b"");
    assert_eq!(compare.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&compare.stdout).contains("candidate"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `versus demo WHICH` for a second, which must succeed: its stdout and
/// stderr.
fn demo(which: &str) -> (String, String) {
    let out = run_bin(&["demo", which, "--duration", "1s"], b"");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    (stdout, stderr)
}

/// `versus demo shop`: the shop scenario walks both in-process shops end
/// to end; every instance succeeds at both, and the candidate's two
/// planted differences are found at their steps and fields.
#[test]
fn the_shop_demo_walks_both_shops_and_finds_the_planted_differences() {
    let (stdout, stderr) = demo("shop");
    for step in [
        "root",
        "products",
        "login",
        "user",
        "add to cart",
        "checkout",
    ] {
        assert!(
            stdout.contains(&format!("     {step} ")),
            "no step {step}:\n{stdout}"
        );
    }
    // Every instance succeeded at both endpoints.
    let flows: Vec<&str> = stdout.lines().filter(|l| l.contains("Flows:")).collect();
    assert_eq!(flows.len(), 2, "{stdout}");
    for line in flows {
        assert!(line.contains("successful (100.00%)"), "{line}");
    }
    assert!(
        stdout.contains("candidate  products  $.products[*].stock added"),
        "{stdout}"
    );
    assert!(
        stdout.contains("candidate  checkout  $.total changed"),
        "{stdout}"
    );
    assert!(stderr.contains("versus demo shop:"));
}

/// `versus demo pages` pages through the in-process catalog three ways,
/// every traversal whole and the items equal, and shows the comparison.
#[test]
fn the_pages_demo_compares_three_ways_through_one_catalog() {
    let (stdout, stderr) = demo("pages");
    assert!(stdout.contains("** Pages of step all items:"), "{stdout}");
    let row = |name: &str| {
        stdout
            .lines()
            .find(|l| l.trim_start().starts_with(name))
            .unwrap_or_else(|| panic!("no {name} row:\n{stdout}"))
            .split_whitespace()
            .skip(name.split_whitespace().count())
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(row("Items"), ["2000", "2000", "2000"], "{stdout}");
    assert_eq!(row("Pages"), ["20", "20", "20"], "{stdout}");
    assert!(stdout.contains("Mismatched: 0"), "{stdout}");
    assert!(stdout.contains("stream vs hateoas: latency"), "{stdout}");
    assert!(stderr.contains("versus demo pages:"));
}

fn method_counts(lines: &str) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for line in lines.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("valid JSON line");
        assert_eq!(v["jsonrpc"], "2.0");
        *counts
            .entry(v["method"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    counts
}

#[test]
fn gen_honours_the_method_weights_exactly() {
    let out = run_bin(
        &[
            "gen",
            "ethereum",
            "-n",
            "100000",
            "-m",
            "eth_call:40",
            "-m",
            "eth_getLogs:5",
            "-m",
            "eth_blockNumber:55",
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0));
    let counts = method_counts(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(counts.values().sum::<usize>(), 100_000);
    assert_eq!(counts.len(), 3);
    for (m, w) in [
        ("eth_call", 40.0),
        ("eth_getLogs", 5.0),
        ("eth_blockNumber", 55.0),
    ] {
        let share = counts[m] as f64 / 1000.0;
        assert!(
            (share - w).abs() / w < 0.01,
            "{m}: {share}% for weight {w}%"
        );
    }
    let bad = run_bin(&["gen", "ethereum", "-m", "eth_nothing:3"], b"");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("eth_nothing"));
    // A write that fails (a full disk) is a failure, not a bad argument.
    let full = std::fs::File::create("/dev/full").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_versus"))
        .args(["gen", "ethereum", "-n", "100000"])
        .stdout(full)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The demo's own bad settings are bad arguments.
    let out = run_bin(&["demo", "-c", "0"], b"");
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn gen_follows_a_nodes_head_and_only_warns_when_it_is_unreachable() {
    let node = Server::start(|_| Reply::ok(r#"{"jsonrpc":"2.0","id":1,"result":"0x1000000"}"#));
    let out = run_bin(
        &[
            "gen",
            "ethereum",
            "-n",
            "200",
            "-m",
            "eth_getBlockByNumber:1",
            "--rpc",
            &node.url(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let numbers: Vec<u64> = stdout
        .lines()
        .filter_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            let tag = v["params"][0].as_str()?.strip_prefix("0x")?.to_string();
            u64::from_str_radix(&tag, 16).ok()
        })
        .collect();
    assert!(!numbers.is_empty(), "{stdout}");
    assert!(
        numbers
            .iter()
            .all(|n| *n <= 0x100_0001 && *n > 0x100_0000 - 200_000),
        "{numbers:?}"
    );

    let closed = format!("http://127.0.0.1:{}/", closed_port());
    let out = run_bin(&["gen", "ethereum", "-n", "5", "--rpc", &closed], b"");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 5);
    assert!(String::from_utf8_lossy(&out.stderr).contains("warning: --rpc"));
}

/// A node that answers at first and fails later is warned about when it
/// fails, while generation goes on (the next poll is 4 s later, so this
/// test generates for 7 s).
#[test]
fn gen_warns_when_the_node_fails_after_answering() {
    let polls = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let p = polls.clone();
    let node = Server::start(move |_| {
        if p.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
            Reply::ok(r#"{"jsonrpc":"2.0","id":1,"result":"0x1000000"}"#)
        } else {
            Reply::ok("{}").status(503)
        }
    });
    let out = run_bin(
        &[
            "gen",
            "ethereum",
            "-n",
            "70",
            "--rate",
            "10",
            "--rpc",
            &node.url(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 70);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        polls.load(std::sync::atomic::Ordering::SeqCst) >= 2,
        "{stderr}"
    );
    assert!(
        stderr.contains("warning: --rpc") && stderr.contains("HTTP 503"),
        "{stderr}"
    );
}
