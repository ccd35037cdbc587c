//! The binary's contract: input edge cases, reports on stdout, messages on
//! stderr, exit codes, duration stops and Ctrl-C.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn blank_lines_crlf_oversized_and_invalid_lines() {
    let got = Arc::new(Mutex::new(Vec::new()));
    let g = got.clone();
    let server = Server::start(move |s| {
        g.lock().unwrap().push(s.body.clone());
        Reply::ok("{}")
    });
    let mut input = Vec::new();
    input.extend_from_slice(b"first\r\n\n   \r\nsecond\n");
    input.extend_from_slice(&[b'x'; 150]);
    input.extend_from_slice(b"\n\xff\xfeinvalid\nthird");
    let out = run_bin(&["--max-line", "100", &server.url()], &input);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    let mut bodies: Vec<String> = got.lock().unwrap().iter().map(|b| text(b)).collect();
    bodies.sort();
    assert_eq!(bodies, ["first", "second", "third"]);
    assert!(
        stdout.contains("   Input:      3 requests read, 2 malformed records skipped"),
        "{stdout}"
    );
    assert!(
        stdout.contains("line 5: longer than --max-line (100 bytes)\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("line 6: not valid UTF-8 (at byte 0)\n"),
        "{stdout}"
    );
}

#[test]
fn strict_mode_stops_at_the_first_malformed_line() {
    let server = Server::start(|_| Reply::ok("{}"));
    let out = run_bin(&["--strict", &server.url()], b"ok\n\xff\nnever\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("line 2: not valid UTF-8"),
        "{}",
        text(&out.stderr)
    );
    // Every request read before the malformed record is sent and
    // reported ("report so far"), none after it; none lost in between.
    let server = Server::start(|_| Reply::ok("{}"));
    let mut input: Vec<u8> = (0..100)
        .flat_map(|i| format!("{i}\n").into_bytes())
        .collect();
    input.extend_from_slice(b"\xff\nnever\n");
    let out = run_bin(&["--strict", "-c", "2", &server.url()], &input);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(server.requests(), 100);
    let report = text(&out.stdout);
    assert!(
        report.contains("100 results with 100 total requests"),
        "{report}"
    );
    assert!(
        report.contains("100 requests read, then a malformed record stopped the input (--strict)"),
        "{report}"
    );
    // A long line under --strict stopped the run: it is not called
    // skipped, on stderr or in the report (which once said `1 malformed
    // records skipped`), nor when the saved run is reported again.
    let saved = std::env::temp_dir().join(format!("versus-strict-{}.jsonl", std::process::id()));
    let out = run_bin(
        &[
            "--strict",
            "--max-line",
            "10",
            "-o",
            saved.to_str().unwrap(),
            &server.url(),
        ],
        b"ok\nthis line is far too long\nnever\n",
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("line 2: longer than --max-line (10 bytes) (--strict)"),
        "{err}"
    );
    assert!(!err.contains("skipped"), "{err}");
    let again = run_bin(
        &["report", "--format", "markdown", saved.to_str().unwrap()],
        b"",
    );
    for report in [text(&out.stdout), text(&again.stdout)] {
        assert!(
            report
                .contains("1 requests read, then a malformed record stopped the input (--strict)"),
            "{report}"
        );
        assert!(!report.contains("skipped"), "{report}");
    }
    let _ = std::fs::remove_file(saved);
}

#[test]
fn empty_input_is_a_clear_error_not_a_report_of_nan() {
    let server = Server::start(|_| Reply::ok("{}"));
    let out = run_bin(&[&server.url()], b"");
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no requests: the input had no requests"),
        "{stderr}"
    );
    assert!(!text(&out.stdout).contains("NaN"));
    assert_eq!(server.requests(), 0);
}

#[test]
fn exit_codes() {
    let server = Server::start(|_| Reply::ok("{}"));
    // 0: the run completed.
    let out = run_bin(&["--stop-after=5", &server.url()], &lines(10));
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("** Summary for 1 endpoint:"));
    // 2: bad arguments, with a one-line message and nothing sent.
    for args in [
        vec![],
        vec!["--concurrency=0", "http://127.0.0.1:1/"],
        vec!["--stop-after=soon", "http://127.0.0.1:1/"],
        vec!["ftp://127.0.0.1/"],
        vec!["--no-such-flag", "http://127.0.0.1:1/"],
    ] {
        let out = run_bin(&args, b"x\n");
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(!text(&out.stderr).trim().is_empty());
        assert!(text(&out.stdout).is_empty(), "{args:?}");
    }
    // 1: not one request could be answered.
    let refused = format!("http://127.0.0.1:{}/", closed_port());
    let out = run_bin(&[&refused], &lines(3));
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stdout).contains("connection refused: 3"),
        "{}",
        text(&out.stdout)
    );
    assert!(text(&out.stderr).contains("no endpoint answered"));
    // --version and --help are not errors.
    assert_eq!(run_bin(&["--version"], b"").status.code(), Some(0));
    assert_eq!(run_bin(&["--help"], b"").status.code(), Some(0));
}

#[test]
fn stop_after_a_duration_prints_the_full_report() {
    let server = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(2)));
    // Single-request mode.
    let started = Instant::now();
    let out = run_bin(
        &[
            "--stop-after=2s",
            "-c",
            "4",
            "--method",
            "GET",
            &server.url(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let run_time = stdout
        .lines()
        .find_map(|l| l.split("request avg, ").nth(1))
        .and_then(|r| humantime::parse_duration(r.trim_end_matches(" total run time")).ok())
        .unwrap_or_else(|| panic!("no run time in {stdout}"));
    assert!(
        run_time >= Duration::from_secs(2) && run_time < Duration::from_secs(4),
        "{run_time:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    for want in [
        "Requests:",
        "Percentiles:",
        "99% in",
        "Errors: 0.00%",
        "Completed:",
        "Mismatched: 0",
    ] {
        assert!(stdout.contains(want), "{want} missing:\n{stdout}");
    }
    // Stream mode, with an input that is never exhausted: stdin stays open.
    let mut child = Command::new(env!("CARGO_BIN_EXE_versus"))
        .args(["--stop-after=2s", &server.url()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&lines(100_000)).unwrap_or(());
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("** Summary for 1 endpoint:"));
}

#[test]
fn verbose_prints_each_mismatch_with_every_answer() {
    let a = Server::start(|s| Reply::ok(format!(r#"{{"id":{},"result":"0x1"}}"#, id_of(&s.body))));
    let b = Server::start(|s| {
        let id = id_of(&s.body);
        let r = if id == 2 { "0x\u{1b}[31m" } else { "0x1" };
        Reply::ok(format!(r#"{{"id":{id},"result":"{r}"}}"#))
    });
    let out = run_bin(
        &[
            "-v",
            &format!("ref={}", a.url()),
            &format!("new={}", b.url()),
        ],
        &lines(5),
    );
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("--- mismatch:").count(), 1, "{stderr}");
    assert!(stderr.contains("--- mismatch: request 2"), "{stderr}");
    assert!(
        stderr.contains(r#""id":2,"method":"eth_blockNumber""#),
        "{stderr}"
    );
    assert!(stderr.contains("0. ref: HTTP 200"), "{stderr}");
    assert!(stderr.contains("1. new: HTTP 200"), "{stderr}");
    // Pretty JSON, with the terminal escape shown, not sent to the terminal.
    assert!(stderr.contains("  \"result\": \"0x1\""), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "raw escape reached the terminal"
    );
    assert!(text(&out.stdout).contains("   Mismatched: 1\n"));
    // -vv: a timing line per request and endpoint.
    let out = run_bin(&["-vv", &a.url(), &b.url()], &lines(5));
    assert_eq!(
        text(&out.stderr).matches("request=").count(),
        10,
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn secrets_in_urls_are_masked_unless_asked() {
    let server = Server::start(|_| Reply::ok("{}"));
    let url = format!(
        "{}v3/9aa3d95b3bc440fa88ea12eaa4456161?apikey=hunter2",
        server.url()
    );
    let out = run_bin(&[&url], &lines(2));
    let stdout = text(&out.stdout);
    assert!(
        !stdout.contains("9aa3d95b3bc440fa88ea12eaa4456161") && !stdout.contains("hunter2"),
        "{stdout}"
    );
    assert!(stdout.contains("/v3/...?apikey=..."), "{stdout}");
    let out = run_bin(&["--show-secrets", &url], &lines(2));
    assert!(text(&out.stdout).contains("hunter2"));
}

/// Start versus on an endless single request against a slow server, wait
/// until requests are flowing, and return the child with its stderr lines.
fn start_endless(
    server: &Server,
    extra: &[&str],
) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    let mut args = vec!["--method", "GET", "--stop-after=1h", "-c", "4"];
    args.extend_from_slice(extra);
    let url = server.url();
    args.push(&url);
    let mut child = Command::new(env!("CARGO_BIN_EXE_versus"))
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.requests() < 20 {
        assert!(Instant::now() < deadline, "no requests reached the server");
        std::thread::sleep(Duration::from_millis(10));
    }
    (child, rx)
}

fn sigint(child: &std::process::Child) {
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) with a valid pid and signal has no memory effects.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
}

#[test]
fn ctrl_c_prints_a_partial_report_and_exits_0_with_a_complete_result_file() {
    let server = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(5)));
    let saved = std::env::temp_dir().join(format!("versus-ctrlc-{}.jsonl", std::process::id()));
    let (child, _stderr) = start_endless(&server, &["-o", saved.to_str().unwrap()]);
    sigint(&child);
    let out = child.wait_with_output().unwrap();
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("** Summary for 1 endpoint:"), "{stdout}");
    assert!(stdout.contains("Stopped:    interrupted"), "{stdout}");
    let completed = number_after(&stdout, "Completed:");
    assert!(completed >= 20.0, "{stdout}");
    // The result file was closed cleanly: it ends with its totals, and
    // re-reporting it gives the same report without a warning.
    let file = std::fs::read_to_string(&saved).unwrap();
    assert!(
        file.lines()
            .last()
            .unwrap_or("")
            .starts_with(r#"{"type":"totals""#),
        "{file}"
    );
    let again = run_bin(&["report", saved.to_str().unwrap()], b"");
    assert_eq!(again.status.code(), Some(0));
    assert!(text(&again.stderr).is_empty(), "{}", text(&again.stderr));
    assert_eq!(text(&again.stdout), stdout);
    let _ = std::fs::remove_file(saved);
}

/// Ctrl-C after sending, while answers still wait to be judged, prints
/// the report at once: what was judged, and how many requests were not.
#[test]
fn ctrl_c_while_answers_wait_to_be_judged_still_prints_the_report() {
    let out = stopped_while_judging(&[]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert!(stdout.contains("Stopped:    interrupted"), "{stdout}");
    let compared = number_after(&stdout, "Completed:");
    let mismatched = number_after(&stdout, "Mismatched:");
    let not_judged = number_after(&stdout, "Not judged:");
    assert!(not_judged > 0.0, "{stdout}");
    assert_eq!(mismatched + not_judged, compared, "{stdout}");
}

/// Ctrl-C while the input has given nothing yet (`tail -f x | versus`) is
/// still an interruption: the report and exit 0, not "no requests".
#[test]
fn ctrl_c_before_the_first_input_line_exits_0() {
    let server = Server::start(|_| Reply::ok("{}"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_versus"))
        .args(["--input", "lines", &server.url()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Connections are opened once the signal handlers are in place.
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.connections() == 0 {
        assert!(Instant::now() < deadline, "versus never connected");
        std::thread::sleep(Duration::from_millis(10));
    }
    let stdin = child.stdin.take();
    sigint(&child);
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.contains("Stopped:    interrupted"), "{stdout}");
    assert!(!text(&out.stderr).contains("no requests"));
}

#[test]
fn a_second_ctrl_c_exits_at_once_with_130() {
    let server = Server::start(|s| {
        if s.path.contains("slow") {
            Reply::ok("{}").after(Duration::from_secs(30))
        } else {
            Reply::ok("{}")
        }
    });
    // A fast endpoint gets requests flowing; a slow one keeps them in
    // flight so that the drain period (60 s) is what the first Ctrl-C waits.
    let slow = format!("{}slow", server.url());
    let (child, stderr) = start_endless(&server, &["--drain", "60s", &slow]);
    sigint(&child);
    let line = stderr
        .recv_timeout(Duration::from_secs(10))
        .expect("stopping message");
    assert!(line.contains("stopping"), "{line}");
    let t = Instant::now();
    sigint(&child);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    assert!(t.elapsed() < Duration::from_secs(10));
}

/// `--noise` takes a label, optionally: before the endpoints it takes the
/// first of them, and says so (it once said only `no endpoint is named`).
#[test]
fn noise_before_the_endpoints_says_it_took_one_as_its_label() {
    let out = run_bin(
        &[
            "--noise",
            "ref=http://127.0.0.1:1/",
            "cand=http://127.0.0.1:2/",
        ],
        b"{}\n",
    );
    assert_eq!(out.status.code(), Some(2));
    let err = text(&out.stderr);
    assert!(
        err.contains("--noise took \"ref=http://127.0.0.1:1/\" as its label")
            && err.contains("put the endpoints before --noise"),
        "{err}"
    );
}

#[test]
fn short_help_fits_a_screen_grouped_by_task_and_long_help_has_every_flag() {
    let run = |flag: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_versus"))
            .arg(flag)
            .output()
            .unwrap();
        assert!(out.status.success());
        text(&out.stdout)
    };
    let short = run("-h");
    let long = run("--help");
    assert!(
        short.lines().count() <= 72,
        "-h is {} lines:\n{short}",
        short.lines().count()
    );
    for heading in ["Load:", "Output:", "Requests:", "Comparison:"] {
        assert!(short.contains(heading), "-h has no {heading}\n{short}");
    }
    for common in [
        "--stop-after",
        "--rate",
        "--compare",
        "--threshold",
        "--output",
    ] {
        assert!(short.contains(common), "-h leaves out {common}");
    }
    // The rest are in --help, which shows every flag.
    use clap::CommandFactory;
    for arg in versus::cli::Cli::command().get_arguments() {
        if let Some(l) = arg.get_long() {
            if !arg.is_hide_set() {
                assert!(long.contains(&format!("--{l}")), "--help leaves out --{l}");
            }
        }
    }
    assert!(!short.contains("--max-in-flight") && long.contains("--max-in-flight"));
}

/// `--help` shows an option's one-line help and then its long text: the
/// long text goes on from the line, and does not start over with it
/// (`-o`, `--threshold`, `-i`, `--template`, `-m`, `--input` and `--fault`
/// said their first words twice).
#[test]
fn no_long_help_repeats_its_first_line() {
    use clap::CommandFactory;
    let root = versus::cli::Cli::command();
    let mut commands = vec![&root];
    commands.extend(root.get_subcommands());
    let mut repeated = Vec::new();
    for cmd in commands {
        let args = cmd.get_arguments().chain(cmd.get_positionals());
        for arg in args {
            let Some(long) = arg.get_long_help().map(|h| h.to_string()) else {
                continue;
            };
            let mut paragraphs = long.split("\n\n");
            let (Some(first), Some(second)) = (paragraphs.next(), paragraphs.next()) else {
                continue;
            };
            // The line's opening words, up to its first mark.
            let opening = first
                .split(['(', ':', ',', ';', '.'])
                .next()
                .unwrap_or("")
                .trim();
            let second = second.split_whitespace().collect::<Vec<_>>().join(" ");
            if opening.split_whitespace().count() >= 2 && second.starts_with(opening) {
                repeated.push(format!("{} {}: {first:?}", cmd.get_name(), arg.get_id()));
            }
        }
    }
    assert!(repeated.is_empty(), "{}", repeated.join("\n"));
}
