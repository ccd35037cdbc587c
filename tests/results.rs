//! Saved runs, re-reports, merges, comparisons, thresholds and the HTML
//! report, against real servers on 127.0.0.1.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use versus::cli::{Cli, CompareArgs};
use versus::commands::{self, OutputFiles};
use versus::engine::{self, RunOutput, Stop};
use versus::plan::Plan;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("versus-results-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Run in-process with `interval` intervals, as the binary does (the
/// `--output` file, the report, thresholds); returns the run, the report
/// and the exit code of the thresholds.
fn save_run(args: &[&str], input: &[u8], interval: Duration) -> (RunOutput, String, u8) {
    use clap::Parser;
    let mut argv = vec!["versus"];
    argv.extend_from_slice(args);
    let cli = Cli::try_parse_from(&argv).expect("arguments");
    let mut plan = Plan::from_args(&cli.run, false).expect("plan");
    plan.engine_mut().interval = interval;
    let plan = Arc::new(plan);
    let argv: Vec<String> = argv.iter().map(ToString::to_string).collect();
    let mut live = OutputFiles::prepare(&cli.run, &plan, &argv).expect("outputs");
    let lines =
        versus::input::lines::LinesSource::new(std::io::Cursor::new(input.to_vec()), 1 << 20);
    let input = plan.input(Some(Box::new(lines))).expect("input");
    let input = live.attach(input).expect("output files");
    let out = live
        .observe(&mut engine::Quiet, |o| {
            engine::run(&plan.engine, input, &Stop::new(), o)
        })
        .expect("run");
    let mut report = Vec::new();
    let code = live.finish(&mut report, &out).expect("finish").code();
    (out, String::from_utf8(report).unwrap(), code)
}

fn versus(args: &[&str]) -> std::process::Output {
    run_bin(args, b"")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Echo the id; the second server differs on every tenth request and
/// fails every twentieth with 503.
fn servers() -> (Server, Server) {
    let a = Server::start(|s| Reply::ok(format!(r#"{{"id":{},"result":"0x1"}}"#, id_of(&s.body))));
    let b = Server::start(|s| {
        let id = id_of(&s.body);
        if id % 20 == 7 {
            return Reply::ok("down").status(503);
        }
        let r = if id % 10 == 3 { "0x2" } else { "0x1" };
        Reply::ok(format!(r#"{{"id":{id},"result":"{r}"}}"#))
    });
    (a, b)
}

#[test]
fn a_saved_run_re_reported_gives_the_same_report() {
    let (a, b) = servers();
    let file = temp("same.jsonl");
    let f = file.to_str().unwrap();
    let a_url = format!("a={}", a.url());
    let b_url = format!("b={}", b.url());
    let live = run_bin(&["-c", "4", "-o", f, &a_url, &b_url], &lines(2000));
    assert_eq!(live.status.code(), Some(0), "{}", text(&live.stderr));
    let again = versus(&["report", f]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(text(&live.stdout), text(&again.stdout));
    assert!(text(&again.stdout).contains("   Mismatched: 300\n"));

    // The JSON report holds the same numbers.
    let json = versus(&["report", "--format", "json", f]);
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["schema"], "versus-report");
    assert_eq!(v["endpoints"][1]["completed"], 2000);
    assert_eq!(v["endpoints"][1]["errors"]["count"], 100);
    assert_eq!(v["endpoints"][1]["status"]["503"], 100);
    assert_eq!(v["comparison"]["mismatched"], 300);
    let p99 = number_after(&text(&live.stdout), "99% in");
    let json_p99 = v["endpoints"][0]["latency_ms"]["p99"].as_f64().unwrap() / 1000.0;
    // The text report shows 4 or 6 decimals of the same histogram value.
    assert!((p99 - json_p99).abs() < 1e-4, "{p99} vs {json_p99}");

    // Markdown and CSV render the same run.
    let md = text(&versus(&["report", "--format", "markdown", f]).stdout);
    assert!(md.contains("| Completed | 2000 | 2000 |"), "{md}");
    let csv = text(&versus(&["report", "--format", "csv", f]).stdout);
    assert!(csv.starts_with("label,url,rps,"), "{csv}");
    assert!(csv.lines().nth(2).unwrap().starts_with("b,"), "{csv}");
}

#[test]
fn the_live_report_formats_are_json_and_markdown_too() {
    let (a, _b) = servers();
    let out = run_bin(
        &["--format", "json", "--stop-after", "50", &a.url()],
        &lines(50),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["endpoints"][0]["completed"], 50);
    let out = run_bin(
        &["--format", "markdown", "--stop-after", "50", &a.url()],
        &lines(50),
    );
    assert!(text(&out.stdout).starts_with("# versus report"));
    let out = run_bin(&["--format", "xml", &a.url()], &lines(5));
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("--format"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn two_shards_merged_equal_one_run_over_the_same_requests() {
    let (a, b) = servers();
    let a_url = format!("a={}", a.url());
    let b_url = format!("b={}", b.url());
    let all = lines(1200);
    let half = all
        .iter()
        .enumerate()
        .filter(|(_, c)| **c == b'\n')
        .nth(599)
        .map(|(i, _)| i + 1)
        .unwrap();
    let (one, two, whole) = (
        temp("shard1.jsonl"),
        temp("shard2.jsonl"),
        temp("whole.jsonl"),
    );
    let iv = Duration::from_millis(100);
    // Shards run side by side.
    let ((s1, _, _), (s2, _, _)) = std::thread::scope(|scope| {
        let first = scope.spawn(|| {
            save_run(
                &["-c", "3", "-o", one.to_str().unwrap(), &a_url, &b_url],
                &all[..half],
                iv,
            )
        });
        let second = save_run(
            &["-c", "2", "-o", two.to_str().unwrap(), &a_url, &b_url],
            &all[half..],
            iv,
        );
        (first.join().unwrap(), second)
    });
    let (w, _, _) = save_run(
        &["-c", "3", "-o", whole.to_str().unwrap(), &a_url, &b_url],
        &all,
        iv,
    );

    let merged = temp("merged.jsonl");
    let out = versus(&[
        "merge",
        one.to_str().unwrap(),
        two.to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let m = versus::results::load(&[&merged]).unwrap();
    let ms = &m.output.stats;
    for e in 0..2 {
        let (x, y, z) = (
            &s1.stats.endpoints[e],
            &s2.stats.endpoints[e],
            &w.stats.endpoints[e],
        );
        let got = &ms.endpoints[e];
        // Histograms add exactly: every bucket of the merge is the sum.
        let mut sum = x.latency.clone();
        sum.add(&y.latency).unwrap();
        assert_eq!(got.latency, sum, "endpoint {e}");
        assert_eq!(got.latency.len(), z.latency.len());
        assert_eq!(got.ttfb.len(), z.ttfb.len());
        assert_eq!(got.status, z.status);
        assert_eq!(got.failures, z.failures);
        assert_eq!(got.sent, z.sent);
        assert_eq!(got.bytes_in, z.bytes_in);
        assert_eq!(got.bytes_out, z.bytes_out);
        assert_eq!(got.active, x.active.max(y.active));
    }
    assert_eq!(ms.verdicts.compared, w.stats.verdicts.compared);
    assert_eq!(ms.verdicts.mismatched, w.stats.verdicts.mismatched);
    assert_eq!(m.output.input.requests, 1200);
    assert_eq!(m.header.shards.len(), 2);
    // The intervals add up to the totals.
    let per_interval: u64 = m
        .series
        .points
        .iter()
        .map(|p| p.endpoints[0].completed)
        .sum();
    assert_eq!(per_interval, 1200);
}

/// Runs made one after the other are not shards of one run: merge and a
/// report of both refuse them, naming the file (their rates once added up
/// to 19872.06 per second with no warning); so are runs of another
/// endpoint at one label, and of other endpoints.
#[test]
fn files_of_other_runs_are_not_merged_naming_the_file() {
    let (a, b) = servers();
    let a_url = format!("a={}", a.url());
    let b_url = format!("b={}", b.url());
    let iv = Duration::from_millis(100);
    let one = temp("refused-shard.jsonl");
    save_run(
        &["-c", "3", "-o", one.to_str().unwrap(), &a_url, &b_url],
        &lines(600),
        iv,
    );
    // A run made later: it starts more than an interval (the slack
    // shards are allowed) after the first ended.
    std::thread::sleep(iv * 3);
    let later = temp("later.jsonl");
    save_run(
        &["-c", "3", "-o", later.to_str().unwrap(), &a_url, &b_url],
        &lines(600),
        iv,
    );
    for args in [
        vec![
            "merge",
            one.to_str().unwrap(),
            later.to_str().unwrap(),
            "-o",
            temp("y.jsonl").to_str().unwrap(),
        ],
        vec!["report", one.to_str().unwrap(), later.to_str().unwrap()],
    ] {
        let out = versus(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("later.jsonl") && err.contains("not a shard of the same run"),
            "{err}"
        );
    }
    assert!(!temp("y.jsonl").exists());
    // One label at another URL is another run too.
    let elsewhere = temp("elsewhere.jsonl");
    let c = Server::start(|_| Reply::ok("{}"));
    save_run(
        &[
            "--stop-after",
            "5",
            "-o",
            elsewhere.to_str().unwrap(),
            &format!("a={}", c.url()),
            &b_url,
        ],
        &lines(5),
        iv,
    );
    let out = versus(&["report", one.to_str().unwrap(), elsewhere.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("endpoint a is"),
        "{}",
        text(&out.stderr)
    );

    // Files of other endpoints are refused, naming the file.
    let other = temp("other.jsonl");
    save_run(
        &["--stop-after", "5", "-o", other.to_str().unwrap(), &a_url],
        &lines(5),
        iv,
    );
    let out = versus(&[
        "merge",
        one.to_str().unwrap(),
        other.to_str().unwrap(),
        "-o",
        temp("x.jsonl").to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("other.jsonl"),
        "{}",
        text(&out.stderr)
    );
}

/// Two runs at once (so both see the same load on the machine), each
/// `stop_after` (2.5 s, say) of 250 ms intervals against its server;
/// returns the comparison.
fn compare_two(first: &Server, second: &Server, name: &str, stop_after: &'static str) -> String {
    let (fa, fb) = (
        temp(&format!("{name}-a.jsonl")),
        temp(&format!("{name}-b.jsonl")),
    );
    let iv = Duration::from_millis(250);
    let run = |s: String, f: PathBuf| {
        std::thread::spawn(move || {
            let url = format!("api={s}");
            save_run(
                &[
                    "-d",
                    "{}",
                    "-c",
                    "2",
                    "--stop-after",
                    stop_after,
                    "-o",
                    f.to_str().unwrap(),
                    &url,
                ],
                b"",
                iv,
            );
        })
    };
    let t1 = run(first.url(), fa.clone());
    let t2 = run(second.url(), fb.clone());
    t1.join().unwrap();
    t2.join().unwrap();
    let mut out = Vec::new();
    let mut err = Vec::new();
    let code = commands::compare(
        &CompareArgs {
            files: vec![fa, fb],
            format: "text".into(),
        },
        &mut out,
        &mut err,
    )
    .code();
    assert_eq!(code, 0, "{}", text(&err));
    text(&out)
}

fn row<'a>(table: &'a str, name: &str) -> &'a str {
    table
        .lines()
        .find(|l| l.trim_start().starts_with(name))
        .unwrap_or_else(|| panic!("no {name} row in\n{table}"))
}

#[test]
fn compare_of_two_runs_of_the_same_server_is_not_significant() {
    let s = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(5)));
    // At α = 0.05 a true "no difference" is called significant one time in
    // twenty by design; three independent pairs all doing so is 1 in 8000.
    let mut last = String::new();
    for attempt in 0..3 {
        last = compare_two(&s, &s, &format!("same{attempt}"), "2500ms");
        if row(&last, "latency avg").contains("~ (p=") {
            return;
        }
    }
    panic!("same server reported as different:\n{last}");
}

#[test]
fn compare_of_a_10ms_and_a_20ms_server_is_significant_with_direction_and_size() {
    let slow = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(20)));
    let fast = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(10)));
    let table = compare_two(&slow, &fast, "speed", "2500ms");
    let avg = row(&table, "latency avg");
    assert!(avg.contains("% faster (p="), "{table}");
    let pct: f64 = avg
        .split("% faster")
        .next()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    // 10 ms instead of 20 ms (plus the same overhead on both): ~50% faster.
    assert!((35.0..=55.0).contains(&pct), "{pct}: {table}");
    let rps = row(&table, "requests/s");
    assert!(rps.contains("% higher (p="), "{table}");
    assert!(table.contains("endpoint api:"), "{table}");

    // And the reverse reads as slower.
    let mut out = Vec::new();
    let code = commands::compare(
        &CompareArgs {
            files: vec![temp("speed-b.jsonl"), temp("speed-a.jsonl")],
            format: "markdown".into(),
        },
        &mut out,
        &mut Vec::new(),
    )
    .code();
    assert_eq!(code, 0);
    assert!(
        row(&text(&out), "| latency avg").contains("% slower (p="),
        "{}",
        text(&out)
    );
}

/// Run versus with `args` saving to `file`, and kill it (SIGKILL) once
/// `intervals` complete intervals are saved.
fn killed_after(args: &[&str], file: &std::path::Path, intervals: usize) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_versus"))
        .args(args)
        .args(["-o", file.to_str().unwrap()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let lines = std::fs::read(file).map_or(0, |b| b.iter().filter(|c| **c == b'\n').count());
        // The header, then the intervals.
        if lines > intervals {
            break;
        }
        assert!(Instant::now() < deadline, "no intervals written");
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
}

#[test]
fn a_run_killed_with_sigkill_leaves_a_file_that_report_reads() {
    let s = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(2)));
    let file = temp("killed.jsonl");
    killed_after(&["-d", "{}", "--stop-after", "1h", &s.url()], &file, 2);
    let out = versus(&["report", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("warning") && err.contains("no totals line"),
        "{err}"
    );
    assert!(
        number_after(&text(&out.stdout), "Requests:") > 0.0,
        "{}",
        text(&out.stdout)
    );

    // A cut-off last line is ignored with a warning.
    let mut bytes = std::fs::read(&file).unwrap();
    bytes.extend_from_slice(br#"{"type":"interval","index":99,"endpo"#);
    let cut = temp("cut.jsonl");
    std::fs::write(&cut, &bytes).unwrap();
    let out = versus(&["report", cut.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("is cut off"),
        "{}",
        text(&out.stderr)
    );
}

/// A killed open-model run's complete intervals hold the requests due in
/// them: read back, it shows the rate it sent at, 50 a second, not more
/// (the request due at an interval's end was counted in it, and 151 sent
/// in 3 s showed 50.33).
#[test]
fn a_killed_open_model_run_reads_back_the_rate_it_sent() {
    let s = Server::start(|_| Reply::ok("{}"));
    let file = temp("killed_open.jsonl");
    let args = ["--rate", "50", "--stop-after", "1h", "--threads", "1"];
    killed_after(
        &[&args[..], &["--method", "GET", &s.url()]].concat(),
        &file,
        3,
    );
    let out = versus(&["report", file.to_str().unwrap()]);
    let report = text(&out.stdout);
    assert!(
        report.contains("Rate:       50.00 per second scheduled, 50.00 per second sent"),
        "{report}"
    );
}

#[test]
fn bad_files_are_refused_naming_the_file_and_the_problem() {
    let (a, _) = servers();
    let good = temp("good.jsonl");
    save_run(
        &["--stop-after", "20", "-o", good.to_str().unwrap(), &a.url()],
        &lines(20),
        Duration::from_millis(100),
    );
    let content = std::fs::read_to_string(&good).unwrap();
    let cases: Vec<(&str, String, &str)> = vec![
        ("empty.jsonl", String::new(), "empty file"),
        (
            "foreign.txt",
            "hello world\n".into(),
            "not a saved versus run",
        ),
        (
            "other.json",
            "{\"format\":\"k6\"}\n".into(),
            "its format is \"k6\"",
        ),
        (
            "newer.jsonl",
            content.replacen("\"version\":1", "\"version\":2", 1),
            "format version 2 is newer",
        ),
        (
            "corrupt.jsonl",
            content
                .lines()
                .enumerate()
                .map(|(i, l)| match i {
                    1 => format!("{l} garbage\n"),
                    _ => format!("{l}\n"),
                })
                .collect(),
            "line 2: not valid JSON",
        ),
        (
            "badhist.jsonl",
            content.replacen("\"latency\":\"", "\"latency\":\"!!", 1),
            "histogram",
        ),
    ];
    for (name, body, want) in cases {
        let path = temp(name);
        std::fs::write(&path, body).unwrap();
        for cmd in [
            vec!["report", path.to_str().unwrap()],
            vec!["compare", path.to_str().unwrap()],
        ] {
            let out = versus(&cmd);
            assert_eq!(out.status.code(), Some(2), "{name}: {}", text(&out.stderr));
            let err = text(&out.stderr);
            assert!(err.contains(name) && err.contains(want), "{name}: {err}");
        }
    }
    let out = versus(&["report", "/nonexistent/run.jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("/nonexistent/run.jsonl"));
}

#[test]
fn thresholds_pass_and_fail_with_exit_code_3() {
    let (a, b) = servers();
    let file = temp("thresholds.jsonl");
    let a_url = format!("a={}", a.url());
    let b_url = format!("b={}", b.url());
    let (_, report, code) = save_run(
        &[
            "-c",
            "2",
            "--threshold",
            "p99 < 10s",
            "--threshold",
            "b: errors < 1%",
            "-o",
            file.to_str().unwrap(),
            &a_url,
            &b_url,
        ],
        &lines(400),
        Duration::from_millis(100),
    );
    assert_eq!(code, 3, "{report}");
    assert!(
        report.contains("** Thresholds: 2 passed, 1 failed"),
        "{report}"
    );
    assert!(
        report.contains("FAILED  b: errors < 1% [b]: errors = 5.00%"),
        "{report}"
    );
    let f = file.to_str().unwrap();
    // b: 20 errors (5%, also mismatched by status) and 40 other mismatched
    // requests: 60 of 400 (15%).
    for (t, pass) in [
        ("p50 < 10s", true),
        ("p50 > 10s", false),
        ("p90 <= 10s", true),
        ("p95 < 1us", false),
        ("p99.9 < 10s", true),
        ("max >= 1us", true),
        ("max < 1us", false),
        ("mean < 10s", true),
        ("mean == 0ms", false),
        ("rps > 1", true),
        ("rps > 100000000", false),
        ("a: errors == 0", true),
        ("errors == 0", false),
        ("b: errors <= 20", true),
        ("b: errors < 20", false),
        ("b: errors < 6%", true),
        ("errors < 5%", false),
        ("mismatches == 60", true),
        ("mismatches == 0", false),
        ("mismatches < 15.5%", true),
        ("mismatches != 15%", false),
        ("1: rps >= 1", true),
    ] {
        let out = versus(&["report", f, "--threshold", t]);
        let want = if pass { 0 } else { 3 };
        assert_eq!(
            out.status.code(),
            Some(want),
            "{t}: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
    }
    // Through the binary too, and usage errors exit 2 before anything runs.
    let out = run_bin(
        &["--stop-after", "10", "--threshold", "errors == 100", &a_url],
        &lines(10),
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    for bad in ["p99 < 200", "zz: p99 < 1s", "latency < 1s"] {
        let out = run_bin(&["--threshold", bad, &a_url], &lines(1));
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert!(
            text(&out.stderr).contains("--threshold"),
            "{bad}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn secrets_are_masked_in_saved_files() {
    let (a, _) = servers();
    let file = temp("secret.jsonl");
    let url = format!("{}v3/9aa3d95b3bc440fa88ea12eaa4456161", a.url());
    let out = run_bin(
        &[
            "--stop-after",
            "5",
            "-H",
            "Authorization: Bearer hunter2",
            "--record",
            "requests",
            "-o",
            file.to_str().unwrap(),
            &url,
        ],
        &lines(5),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let saved = std::fs::read_to_string(&file).unwrap();
    assert!(
        !saved.contains("hunter2") && !saved.contains("9aa3d95b3bc440fa88ea12eaa4456161"),
        "{saved}"
    );
    assert!(saved.contains("v3/..."));
}

/// A saved run whose mismatch group holds script bodies, in its own file
/// `name` (tests that run at once must not share one).
fn hostile_run(name: &str) -> PathBuf {
    let (a, b) = servers();
    let file = temp(name);
    let path = file.to_str().unwrap();
    let a_url = format!("a={}", a.url());
    // Intervals of 10 ms: the run lasts several of them however fast the
    // machine, so every time chart has full intervals to draw (a last
    // interval cut short by the stop is left out of them).
    save_run(
        &["-c", "2", "-o", path, &a_url, &format!("b={}", b.url())],
        &lines(300),
        Duration::from_millis(10),
    );
    // Put a group with script in it into the totals line, as the
    // comparison fills them.
    let content = std::fs::read_to_string(&file).unwrap();
    let group = r#"{"method":"<script>document.title='pwned-method'</script>","field":"$.result","kind":"changed","endpoint":"b","count":3,"samples":[{"seq":7,"request":"<img src=x onerror=\"document.title='pwned-img'\">","values":["\"0x1\"","<script>document.title='pwned'</script>"]}]}"#;
    let content = {
        // The replacement goes into the last (totals) line.
        let (head, last) = content.trim_end().rsplit_once('\n').unwrap();
        let last = if last.contains(r#""groups":[]"#) {
            last.replacen(r#""groups":[]"#, &format!(r#""groups":[{group}]"#), 1)
        } else {
            last.replacen(r#""groups":["#, &format!(r#""groups":[{group},"#), 1)
        };
        format!("{head}\n{last}\n")
    };
    std::fs::write(&file, content).unwrap();
    file
}

#[test]
fn the_html_report_escapes_every_body() {
    let file = hostile_run("hostile-escapes.jsonl");
    let out = versus(&["report", "--format", "html", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let html = text(&out.stdout);
    assert!(
        html.contains("&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;"),
        "{html}"
    );
    assert!(!html.contains("<script"), "{html}");
    assert!(!html.contains("<img"), "{html}");
    assert!(html.contains("<svg class=\"chart\" id=\"percentiles\""));
    assert!(html.contains("id=\"throughput-time\""));
    assert!(html.contains("id=\"errors-time\""));
}

#[test]
#[ignore = "needs chromium (installed by .ci/run)"]
fn the_html_report_loads_in_headless_chromium_without_errors_and_draws_charts() {
    let file = hostile_run("hostile-chromium.jsonl");
    let page = temp("hostile.html");
    let out = versus(&["report", "--format", "html", file.to_str().unwrap()]);
    std::fs::write(&page, &out.stdout).unwrap();
    let (dom, log) = chromium(&page, &temp("chromium-profile"), &["--dump-dom"]);
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "console messages: {console:?}");
    // The charts are in the rendered DOM, with lines drawn.
    for id in [
        "percentiles",
        "latency-time",
        "throughput-time",
        "errors-time",
    ] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "no chart {id}");
    }
    assert!(dom.matches("<polyline").count() >= 8, "{dom}");
    // The script bodies are text: shown escaped, never run.
    assert!(
        dom.contains("&lt;script&gt;document.title='pwned'&lt;/script&gt;"),
        "{dom}"
    );
    assert!(
        !dom.contains("pwned</title>") && !dom.contains("<title>pwned"),
        "{dom}"
    );
    assert!(
        dom.contains("<title>versus report: a vs b</title>"),
        "{dom}"
    );

    // A live run's --html page too.
    let (a, _) = servers();
    let live = temp("live.html");
    let out = run_bin(
        &[
            "--stop-after",
            "50",
            "--html",
            live.to_str().unwrap(),
            &a.url(),
        ],
        &lines(50),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let (dom, log) = chromium(&live, &temp("chromium-profile"), &["--dump-dom"]);
    assert!(!log.contains(":CONSOLE"), "{log}");
    assert!(dom.contains("id=\"percentiles\""));
}

/// A run that cannot start (its input file is missing, an endpoint does
/// not resolve) leaves the files of an earlier run as they were; a run that
/// does start replaces them.
#[test]
fn a_run_that_cannot_start_leaves_earlier_files_alone() {
    let (dir, paths) = earlier_run_files("keep");
    let [output, mismatches, html] = paths.each_ref().map(|p| p.to_str().unwrap());
    let server = Server::start(|r: &Seen| Reply::ok(r.body.clone()));
    let url = server.url();
    let files = ["-o", output, "--mismatches", mismatches, "--html", html];
    let missing = dir.join("no-such-input.jsonl");
    let mut no_input = files.to_vec();
    no_input.extend(["--input-file", missing.to_str().unwrap(), &url]);
    let mut no_host = files.to_vec();
    no_host.extend(["http://no-such-host.invalid/", &url]);
    // One output file that cannot be written: none is replaced.
    let mut no_html = files.to_vec();
    let bad_html = dir.join("no-such-dir").join("run.html");
    no_html[5] = bad_html.to_str().unwrap();
    no_html.push(&url);
    for (args, code) in [(no_input, 2), (no_host, 1), (no_html, 2)] {
        let out = versus(&args);
        assert_eq!(out.status.code(), Some(code), "{}", text(&out.stderr));
        assert_left_alone(&paths, &text(&out.stderr));
    }
    let mut ok = files.to_vec();
    ok.push(&url);
    let out = run_bin(&ok, &lines(3));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for p in &paths {
        assert_ne!(std::fs::read_to_string(p).unwrap(), "an earlier run\n");
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A directory of its own for test `name`, with the `-o`, `--mismatches`
/// and `--html` files of an earlier run in it.
fn earlier_run_files(name: &str) -> (PathBuf, [PathBuf; 3]) {
    let dir = std::env::temp_dir().join(format!("versus-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let paths = ["run.vrs", "mismatches.jsonl", "run.html"].map(|f| dir.join(f));
    for p in &paths {
        std::fs::write(p, "an earlier run\n").unwrap();
    }
    (dir, paths)
}

fn assert_left_alone(paths: &[PathBuf], stderr: &str) {
    for p in paths {
        assert_eq!(
            std::fs::read_to_string(p).unwrap(),
            "an earlier run\n",
            "{}: {stderr}",
            p.display(),
        );
    }
}

/// An input that turns out to hold no request, from a real pipe (empty,
/// blank lines, or `--strict` stopping at its first record) or an empty
/// `--input-file`, leaves an earlier run's
/// files as they were (a pipe's were once replaced before it was read:
/// the HTML page and mismatch log emptied, the saved run a stub that
/// `report` called killed).
#[test]
fn an_empty_pipe_or_input_file_leaves_earlier_files_alone() {
    let (dir, paths) = earlier_run_files("empty");
    let [output, mismatches, html] = paths.each_ref().map(|p| p.to_str().unwrap());
    let empty = dir.join("empty.txt");
    std::fs::write(&empty, "").unwrap();
    let server = Server::start(|r: &Seen| Reply::ok(r.body.clone()));
    let url = server.url();
    let files = ["-o", output, "--mismatches", mismatches, "--html", html];
    let from_file = ["--input-file", empty.to_str().unwrap()];
    for (input, stdin, why) in [
        (&[][..], &b""[..], "no requests"),
        (&[][..], b"\n\n", "no requests"),
        (&from_file[..], b"", "no requests"),
        (&["--strict"][..], b"\xff\n{}\n", "(--strict)"),
    ] {
        let mut args = files.to_vec();
        args.extend_from_slice(input);
        args.push(&url);
        let out = run_bin(&args, stdin);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{input:?} {stdin:?}: {stderr}");
        assert!(stderr.contains(why), "{stderr}");
        assert_left_alone(&paths, &stderr);
    }
    assert_eq!(server.requests(), 0);
    let _ = std::fs::remove_dir_all(dir);
}

/// A run whose input failed (`--strict` met a malformed line) says so when
/// its saved file is reported again, and after a merge.
#[test]
fn a_saved_run_remembers_that_its_input_failed() {
    let dir = std::env::temp_dir().join(format!("versus-inerr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (saved, merged) = (dir.join("run.vrs"), dir.join("merged.vrs"));
    let server = Server::start(|r: &Seen| Reply::ok(r.body.clone()));
    let out = run_bin(
        &["--strict", "-o", saved.to_str().unwrap(), &server.url()],
        b"{\"id\":1}\n\xff\n{\"id\":2}\n",
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let again = versus(&["report", saved.to_str().unwrap()]);
    assert!(
        text(&again.stderr).contains("warning: the run's input failed: line 2:"),
        "{}",
        text(&again.stderr)
    );
    let m = versus(&[
        "merge",
        "-o",
        merged.to_str().unwrap(),
        saved.to_str().unwrap(),
    ]);
    assert_eq!(m.status.code(), Some(0), "{}", text(&m.stderr));
    let again = versus(&["report", merged.to_str().unwrap()]);
    assert!(
        text(&again.stderr).contains("warning: the run's input failed: line 2:"),
        "{}",
        text(&again.stderr)
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `versus compare` never drops a run silently: runs of one endpoint each
/// are paired whatever their labels (and it says so); an endpoint with no
/// counterpart is named with the reason.
#[test]
fn compare_pairs_single_endpoint_runs_whatever_their_labels_and_names_what_it_cannot_pair() {
    let s = Server::start(|_| Reply::ok("{}"));
    let save = |name: &str, endpoints: &[String]| {
        let f = temp(name);
        let mut args = vec!["-d", "{}", "--stop-after", "20", "-o", f.to_str().unwrap()];
        args.extend(endpoints.iter().map(String::as_str));
        save_run(&args, b"", Duration::from_millis(250));
        f
    };
    let compare = |files: Vec<PathBuf>| {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let code = commands::compare(
            &CompareArgs {
                files,
                format: "text".into(),
            },
            &mut out,
            &mut err,
        )
        .code();
        assert_eq!(code, 0, "{}", text(&err));
        (text(&out), text(&err))
    };
    let fast = save("pair-fast.jsonl", &[format!("fast={}", s.url())]);
    let slow = save("pair-slow.jsonl", &[format!("slow={}", s.url())]);
    let (out, err) = compare(vec![fast, slow]);
    assert!(
        out.contains("pair-fast.jsonl") && out.contains("pair-slow.jsonl"),
        "{out}"
    );
    assert!(
        out.contains("paired whatever their labels (fast, slow)"),
        "{out}"
    );
    assert!(err.contains("versus: note:"), "{err}");
    let ab = save(
        "pair-ab.jsonl",
        &[format!("a={}", s.url()), format!("b={}", s.url())],
    );
    let ac = save(
        "pair-ac.jsonl",
        &[format!("a={}", s.url()), format!("c={}", s.url())],
    );
    let (out, _) = compare(vec![ab, ac]);
    assert!(
        out.contains("pair-ac.jsonl: endpoint c has no endpoint of that label in pair-ab.jsonl (labels: a, b); not compared"),
        "{out}"
    );
    assert!(
        out.contains("pair-ac.jsonl: no endpoint b; its column is missing"),
        "{out}"
    );
}

/// Runs of three intervals a side can never reach p < 0.05 (2 / C(6, 3)
/// = 0.1): a 2x slowdown once read `~ (p=0.100)`, as if there were none.
/// compare says the runs are too short, and what would be enough.
#[test]
fn compare_says_when_runs_are_too_short_for_a_test() {
    let fast = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(5)));
    let slow = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(10)));
    let out = compare_two(&fast, &slow, "short", "800ms");
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("latency p50"))
        .unwrap_or_else(|| panic!("no p50 row:\n{out}"));
    assert!(
        line.contains("(untested: n=") && line.contains("too few)"),
        "{out}"
    );
    assert!(!line.contains("~ (p="), "{out}");
    assert!(
        out.contains("runs of 4 intervals a side or more can"),
        "{out}"
    );
}

/// A JSON report given to `versus report` is named for what it is, and
/// a reader that stops reading (`| head`) is no failure.
#[test]
fn report_names_a_json_report_and_a_closed_pipe_is_not_a_failure() {
    let (a, _b) = servers();
    let saved = temp("pipe.jsonl");
    save_run(
        &[
            "--stop-after",
            "20",
            "-o",
            saved.to_str().unwrap(),
            &a.url(),
        ],
        &lines(20),
        Duration::from_millis(100),
    );
    let json = temp("report.json");
    let out = versus(&["report", "--format", "json", saved.to_str().unwrap()]);
    std::fs::write(&json, &out.stdout).unwrap();
    let out = versus(&["report", json.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("a JSON report (--format json), not a saved run"),
        "{}",
        text(&out.stderr)
    );
    // The reader is gone before versus writes a byte.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_versus"))
        .args(["report", saved.to_str().unwrap()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// The reference is what the others are compared with: `compare` gives it
/// no mismatch rate of its own, in one run or across two (it once showed
/// the run's rate under the reference too).
#[test]
fn compare_gives_the_reference_no_mismatch_rate() {
    let (a, b) = servers();
    let (x, y) = (temp("ref-x.jsonl"), temp("ref-y.jsonl"));
    let (a_url, b_url) = (format!("a={}", a.url()), format!("b={}", b.url()));
    for f in [&x, &y] {
        save_run(
            &[
                "--stop-after",
                "100",
                "-o",
                f.to_str().unwrap(),
                &a_url,
                &b_url,
            ],
            &lines(100),
            Duration::from_millis(100),
        );
    }
    let mismatches = |args: &[&str]| -> Vec<String> {
        let out = versus(args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let table = text(&out.stdout);
        table
            .lines()
            .filter(|l| l.trim_start().starts_with("mismatches"))
            .map(str::to_string)
            .collect()
    };
    // One run: its endpoints side by side; the reference's cell is `-`,
    // b's is its own (a tenth differs, a twentieth is a 503).
    let one = mismatches(&["compare", x.to_str().unwrap()]);
    assert_eq!(one.len(), 1, "{one:?}");
    let cells: Vec<&str> = one[0].split_whitespace().collect();
    assert_eq!(cells[1], "-", "{one:?}");
    assert_eq!(cells[2], "15.00%", "{one:?}");
    // Two runs: the table of the reference `a` has no mismatch rate.
    let two = mismatches(&["compare", x.to_str().unwrap(), y.to_str().unwrap()]);
    let a_row = two.first().unwrap();
    assert!(
        a_row.split_whitespace().skip(1).all(|c| c == "-"),
        "{two:?}"
    );
}

/// Two runs side by side at 50 per second each, merged, were scheduled at
/// 100 per second together and sent about that (the merge once said 50
/// scheduled, 100 sent, when the files were not made with --shard).
#[test]
fn merged_runs_at_a_rate_are_scheduled_at_their_sum() {
    let (a, _b) = servers();
    let (x, y, m) = (
        temp("rate-x.jsonl"),
        temp("rate-y.jsonl"),
        temp("rate-m.jsonl"),
    );
    let url = format!("a={}", a.url());
    let run = |f: &PathBuf| {
        let args = [
            "--rate",
            "50",
            "--stop-after",
            "1s",
            "--method",
            "GET",
            "-o",
            f.to_str().unwrap(),
            &url,
        ];
        save_run(&args, b"", Duration::from_millis(250))
    };
    std::thread::scope(|s| {
        let first = s.spawn(|| run(&x));
        run(&y);
        first.join().unwrap();
    });
    let out = versus(&[
        "merge",
        x.to_str().unwrap(),
        y.to_str().unwrap(),
        "-o",
        m.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report = text(&versus(&["report", m.to_str().unwrap()]).stdout);
    let line = report
        .lines()
        .find(|l| l.contains("per second scheduled"))
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        line.contains("Rate:       100.00 per second scheduled"),
        "{line}"
    );
    let sent = number_after(line, "scheduled,");
    assert!((90.0..=110.0).contains(&sent), "{line}");
}

/// Bytes per response is one figure, to the nearest byte, in the text
/// report, JSON, and `versus compare` (which rounded it while the others
/// floored it: 131 against 132 B for a mean of 131.5).
#[test]
fn bytes_per_response_is_rounded_alike_in_every_report() {
    let n = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let server = Server::start(move |_| {
        let odd = n.fetch_add(1, std::sync::atomic::Ordering::SeqCst) % 2;
        Reply::ok("x".repeat(131 + odd as usize))
    });
    let dir = std::env::temp_dir().join(format!("versus-bytes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("run.jsonl");
    let args = ["-c", "1", "--format", "json", "-o", saved.to_str().unwrap()];
    let out = run_bin(&[&args[..], &[&server.url()]].concat(), &lines(2));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["endpoints"][0]["bytes"]["per_response"], 132, "{json}");
    let text = run_bin(&["report", saved.to_str().unwrap()], b"");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("   Bytes:      263 in (132 avg per response)"),
        "{text}"
    );
    let compared = run_bin(&["compare", saved.to_str().unwrap()], b"");
    let compared = String::from_utf8_lossy(&compared.stdout);
    assert!(compared.contains("132 B"), "{compared}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A duration as vegeta prints one (`1.2s`, `380.123ms`, `45µs`, `0s`).
fn go_duration(s: &str) -> Duration {
    let split = s.find(|c: char| c.is_alphabetic()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: f64 = n
        .parse()
        .unwrap_or_else(|_| panic!("not a duration: {s:?}"));
    let scale = match unit {
        "s" => 1.0,
        "ms" => 1e-3,
        "µs" => 1e-6,
        "ns" => 1e-9,
        _ => panic!("not a duration: {s:?}"),
    };
    Duration::from_secs_f64(n * scale)
}

/// Each block of a vegeta report: its rate and throughput, and its total,
/// attack and wait.
fn vegeta_blocks(report: &str) -> Vec<([f64; 2], [Duration; 3])> {
    let fields = |l: &str, label: &str| -> Vec<String> {
        let (_, values) = l.split_at(l.find(']').unwrap() + 1);
        assert!(l.starts_with(label), "{l}");
        values.trim().split(", ").map(str::to_string).collect()
    };
    let requests = report.lines().filter(|l| l.starts_with("Requests "));
    let durations = report.lines().filter(|l| l.starts_with("Duration "));
    requests
        .zip(durations)
        .map(|(r, d)| {
            let r = fields(r, "Requests");
            let d = fields(d, "Duration");
            let num = |s: &String| s.parse::<f64>().unwrap();
            (
                [num(&r[1]), num(&r[2])],
                [go_duration(&d[0]), go_duration(&d[1]), go_duration(&d[2])],
            )
        })
        .collect()
}

#[test]
fn vegeta_blocks_hold_each_endpoints_own_attack_wait_and_throughput() {
    let fast = Server::start(|_| Reply::ok("ok"));
    let slow = Server::start(|_| Reply::ok("ok").after(Duration::from_millis(500)));
    let file = temp("vegeta.jsonl");
    let f = file.to_str().unwrap();
    let (fast_url, slow_url) = (
        format!("fast={}", fast.url()),
        format!("slow={}", slow.url()),
    );
    let args = [
        "--rate=50",
        "--format=vegeta",
        "-q",
        "-o",
        f,
        &fast_url,
        &slow_url,
    ];
    let live = run_bin(&args, &lines(20));
    assert_eq!(live.status.code(), Some(0), "{}", text(&live.stderr));
    let report = text(&live.stdout);
    let blocks = vegeta_blocks(&report);
    assert_eq!(blocks.len(), 2, "{report}");
    let ([_, fast_tp], [fast_total, fast_attack, fast_wait]) = blocks[0];
    let ([_, slow_tp], [slow_total, slow_attack, slow_wait]) = blocks[1];
    // Both sent the same requests at the same due times: one attack.
    assert_eq!(fast_attack, slow_attack, "{report}");
    // The slow endpoint's last request took its 500 ms; the fast one's
    // wait is its own last answer's, not the slow endpoint's.
    assert!(slow_wait >= Duration::from_millis(500), "{report}");
    assert!(fast_wait < Duration::from_millis(500), "{report}");
    // Throughput: the 20 successes over each one's own total.
    for (tp, total) in [(fast_tp, fast_total), (slow_tp, slow_total)] {
        let expected = 20.0 / total.as_secs_f64();
        assert!((tp - expected).abs() < 0.01 * expected, "{report}");
    }
    assert!(fast_tp > slow_tp, "{report}");
    // The saved run gives the same report.
    let again = versus(&["report", "--format", "vegeta", f]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(text(&again.stdout), report);
}

/// The `request` lines of a saved run: their numbers, in file order.
fn request_seqs(file: &std::path::Path) -> Vec<u64> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .filter(|l| l.contains(r#""type":"request""#))
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect()
}

/// The figures of a JSON report a saved run must keep whatever request
/// lines it keeps.
fn figures(v: &serde_json::Value) -> Vec<String> {
    let mut out = vec![
        format!("mismatched {}", v["comparison"]["mismatched"]),
        format!("compared {}", v["comparison"]["compared"]),
        format!("input {}", v["input"]["requests"]),
    ];
    for e in v["endpoints"].as_array().unwrap() {
        out.push(format!(
            "{}: completed {} errors {} status {} latency {}",
            e["label"], e["completed"], e["errors"]["count"], e["status"], e["latency_ms"]
        ));
    }
    out
}

/// Each `--record` mode keeps its request lines (every one; those of the
/// 300 requests that mismatched or met an error, numbered as read; none),
/// says so in its header and its reports, and gives `report`, `merge`,
/// `compare` and thresholds the live run's figures.
#[test]
fn every_record_mode_keeps_its_lines_and_the_figures_of_the_live_run() {
    let (a, b) = servers();
    let a_url = format!("a={}", a.url());
    let b_url = format!("b={}", b.url());
    // servers(): b differs where id % 10 == 3 and answers 503 where
    // id % 20 == 7, which is a mismatch and an error.
    let problems: Vec<u64> = (0..2000).filter(|i| i % 10 == 3 || i % 20 == 7).collect();
    for (mode, kept, note) in [
        ("requests", (0..2000).collect::<Vec<u64>>(), None),
        ("mismatches", problems.clone(), Some("--record mismatches")),
        ("none", Vec::new(), Some("--record none")),
    ] {
        let file = temp(&format!("record-{mode}.jsonl"));
        let f = file.to_str().unwrap();
        let args = ["-c", "4", "--record", mode, "-o", f, &a_url, &b_url];
        let live = run_bin(&args, &lines(2000));
        assert_eq!(live.status.code(), Some(0), "{}", text(&live.stderr));
        let mut seqs = request_seqs(&file);
        seqs.sort_unstable();
        assert_eq!(seqs, kept, "{mode}");
        let header: serde_json::Value = serde_json::from_str(
            std::fs::read_to_string(&file)
                .unwrap()
                .lines()
                .next()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(header["record"], mode);

        // The text report again, the same, saying what was left out.
        let again = versus(&["report", f]);
        assert_eq!(text(&live.stdout), text(&again.stdout), "{mode}");
        let saved_line = text(&again.stdout)
            .lines()
            .find(|l| l.trim_start().starts_with("Saved:"))
            .map(str::to_string);
        assert_eq!(
            saved_line.is_some(),
            note.is_some(),
            "{mode}: {saved_line:?}"
        );
        if let (Some(line), Some(note)) = (&saved_line, note) {
            assert!(line.contains(note), "{line}");
        }
        if mode == "mismatches" {
            let line = saved_line.unwrap_or_default();
            assert!(line.contains("kept for the 300 requests"), "{line}");
        }

        // JSON of the file, and of its merge, holds the live run's figures.
        let live_json = run_json(&["report", "--format", "json", f]);
        assert_eq!(figures(&live_json)[0], "mismatched 300");
        assert_eq!(live_json["run"]["record"], mode);
        let merged = temp(&format!("record-{mode}-merged.jsonl"));
        let m = merged.to_str().unwrap();
        let out = versus(&["merge", f, "-o", m]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let merged_json = run_json(&["report", "--format", "json", m]);
        assert_eq!(figures(&merged_json), figures(&live_json), "{mode}");
        // A merge carries the statistics, not the request lines.
        assert_eq!(merged_json["run"]["record"], "none");
        assert!(request_seqs(&merged).is_empty());

        // Thresholds and compare read every mode.
        let checked = versus(&["report", f, "--threshold", "mismatches == 0"]);
        assert_eq!(checked.status.code(), Some(3), "{mode}");
        assert!(text(&checked.stdout).contains("mismatches = 300"));
        let compared = versus(&["compare", f, m]);
        assert_eq!(
            compared.status.code(),
            Some(0),
            "{}",
            text(&compared.stderr)
        );
        assert!(text(&compared.stdout).contains("vs first"));
    }
}

fn run_json(args: &[&str]) -> serde_json::Value {
    let out = versus(args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// A `--record mismatches` run replays the requests that mismatched or
/// met an error, and nothing else; a `--record none` run has none to
/// replay and says why.
#[test]
fn a_saved_run_replays_what_its_record_mode_kept() {
    let (a, b) = servers();
    let (a_url, b_url) = (a.url(), b.url());
    let kept = temp("replay-mismatches.jsonl");
    let none = temp("replay-none.jsonl");
    for (mode, file) in [("mismatches", &kept), ("none", &none)] {
        let f = file.to_str().unwrap();
        let out = run_bin(&["--record", mode, "-o", f, &a_url, &b_url], &lines(400));
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    }
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = seen.clone();
    let target = Server::start(move |r| {
        s.lock().unwrap().push(id_of(&r.body));
        Reply::ok("{}")
    });
    let out = versus(&["--input-file", kept.to_str().unwrap(), &target.url()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut ids = seen.lock().unwrap().clone();
    ids.sort_unstable();
    let problems: Vec<u64> = (0..400).filter(|i| i % 10 == 3 || i % 20 == 7).collect();
    assert_eq!(ids, problems);

    let out = versus(&["--input-file", none.to_str().unwrap(), &target.url()]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("--record none"),
        "{}",
        text(&out.stderr)
    );
}

/// `--record mismatches` keeps a request that met an error wherever its
/// verdict is made: answers that agree (the same error at both), answers
/// that differ only where `--ignore` looks away (judged off the core, not
/// a mismatch), a mismatch, and a run of one endpoint; once each.
#[test]
fn record_mismatches_keeps_each_failed_or_mismatched_request_once_wherever_it_is_judged() {
    let answer = |candidate: bool| {
        move |s: &Seen| {
            let id = id_of(&s.body);
            let t = if candidate { 2 } else { 1 };
            if id % 7 == 0 {
                Reply::ok(r#"{"error":"same"}"#).status(500)
            } else if id % 11 == 0 {
                Reply::ok(format!(r#"{{"error":"x","t":{t}}}"#)).status(500)
            } else if id % 13 == 0 && candidate {
                Reply::ok(r#"{"r":2}"#)
            } else {
                Reply::ok(r#"{"r":1}"#)
            }
        }
    };
    let (a, b) = (Server::start(answer(false)), Server::start(answer(true)));
    let file = temp("record-paths.jsonl");
    let f = file.to_str().unwrap();
    let args = ["-c", "4", "--ignore", "$.t", "-o", f, &a.url(), &b.url()];
    let out = run_bin(&args, &lines(1000));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut seqs = request_seqs(&file);
    seqs.sort_unstable();
    let kept: Vec<u64> = (0..1000)
        .filter(|i| i % 7 == 0 || i % 11 == 0 || i % 13 == 0)
        .collect();
    assert_eq!(seqs, kept);
    // One endpoint: its errors alone.
    let out = run_bin(&["-o", f, &a.url()], &lines(1000));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut seqs = request_seqs(&file);
    seqs.sort_unstable();
    let errors: Vec<u64> = (0..1000).filter(|i| i % 7 == 0 || i % 11 == 0).collect();
    assert_eq!(seqs, errors);
}

/// `--record-limit` bounds the request lines `--record mismatches`
/// keeps; the reports say how many of how many, in the file too.
#[test]
fn record_limit_bounds_the_lines_kept_and_the_reports_say_so() {
    let (a, b) = servers();
    let file = temp("record-limit.jsonl");
    let f = file.to_str().unwrap();
    let args = ["--record-limit", "10", "-o", f, &a.url(), &b.url()];
    let live = run_bin(&args, &lines(2000));
    assert_eq!(live.status.code(), Some(0), "{}", text(&live.stderr));
    assert_eq!(request_seqs(&file).len(), 10);
    let again = versus(&["report", f]);
    assert_eq!(text(&live.stdout), text(&again.stdout));
    assert!(
        text(&again.stdout).contains(
            "Saved:      request lines kept for 10 of the 300 requests that mismatched or met an error (--record mismatches, --record-limit reached)"
        ),
        "{}",
        text(&again.stdout)
    );
    let json = run_json(&["report", "--format", "json", f]);
    assert_eq!(json["run"]["recorded"]["seen"], 300);
    assert_eq!(json["run"]["recorded"]["written"], 10);
}
