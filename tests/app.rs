//! The entry point of a run from the command line (`versus::app::run`),
//! in-process against servers on 127.0.0.1: how a run ends, and which
//! files it leaves.

mod common;

use std::path::PathBuf;

use common::*;
use versus::app::{self, Env};
use versus::engine::Stop;
use versus::exit::Exit;

/// What a run through the entry point gave: how it ended, stdout, stderr.
struct Ran {
    exit: Exit,
    out: String,
    err: String,
}

/// Run `args` through the entry point; `stream` is its input, or with
/// `None` stdin is taken for a terminal (single-request mode).
fn app(args: &[&str], stream: Option<&[u8]>) -> Ran {
    use clap::Parser;
    let mut argv = vec!["versus"];
    argv.extend_from_slice(args);
    let cli = versus::cli::Cli::try_parse_from(&argv).expect("arguments");
    let argv: Vec<String> = argv.iter().map(ToString::to_string).collect();
    let env = Env {
        argv: &argv,
        stdin_is_terminal: stream.is_none(),
        stderr_is_terminal: false,
        stream: stream.map(|s| -> Box<dyn versus::input::Source> {
            Box::new(versus::input::lines::LinesSource::new(
                std::io::Cursor::new(s.to_vec()),
                1 << 20,
            ))
        }),
        suite: None,
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let exit = app::run(&cli.run, env, &Stop::new(), &mut out, &mut err);
    Ran {
        exit,
        out: String::from_utf8_lossy(&out).into_owned(),
        err: String::from_utf8_lossy(&err).into_owned(),
    }
}

/// A directory of its own for test `name`.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("versus-app-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn echo() -> Server {
    Server::start(|r: &Seen| Reply::ok(r.body.clone()))
}

#[test]
fn an_input_without_requests_fails_saying_so() {
    let server = echo();
    let ran = app(&[&server.url()], Some(b"\n\n"));
    assert_eq!(ran.exit, Exit::Failed, "{}", ran.err);
    assert_eq!(
        ran.err,
        "versus: no requests: the input had no requests (0 malformed records skipped)\n"
    );
    assert_eq!(ran.out, "");
    assert_eq!(server.requests(), 0);
}

/// Run `args` with `-o`, `--mismatches` and `--html` naming files an
/// earlier run left, over `input`; checks that they are left as they
/// were, and returns the run.
fn leaves_earlier_files_alone(name: &str, args: &[&str], input: &[u8]) -> Ran {
    let d = dir(name);
    let files = [d.join("keep.jsonl"), d.join("keep.mm"), d.join("keep.html")];
    for f in &files {
        std::fs::write(f, "an earlier run\n").unwrap();
    }
    let [output, mismatches, html] = files.each_ref().map(|f| f.to_str().unwrap());
    let mut all = vec!["-o", output, "--mismatches", mismatches, "--html", html];
    all.extend_from_slice(args);
    let ran = app(&all, Some(input));
    for f in &files {
        assert_eq!(std::fs::read_to_string(f).unwrap(), "an earlier run\n");
    }
    let _ = std::fs::remove_dir_all(d);
    ran
}

/// An endpoint that cannot be prepared (here its Host header) is found
/// before any output file is created.
#[test]
fn a_run_that_cannot_start_fails_and_leaves_earlier_files_alone() {
    let server = echo();
    let url = server.url();
    let ran = leaves_earlier_files_alone("cannot-start", &["-H", "Host: café", &url], &lines(5));
    assert_eq!(ran.exit, Exit::Failed, "{}", ran.err);
    assert!(
        ran.err.contains("the Host header is not ASCII"),
        "{}",
        ran.err
    );
    assert_eq!(server.requests(), 0);
}

#[test]
fn a_failed_threshold_ends_the_run_with_exit_threshold_after_the_report() {
    let server = echo();
    let d = dir("threshold");
    let saved = d.join("run.vrs");
    let (saved, url) = (saved.to_str().unwrap(), server.url());
    for (threshold, exit) in [
        ("errors == 100", Exit::Threshold),
        ("errors == 0", Exit::Done),
    ] {
        let args = [
            "--stop-after",
            "10",
            "--threshold",
            threshold,
            "--record",
            "requests",
            "-o",
            saved,
            &url,
        ];
        let ran = app(&args, Some(&lines(10)));
        assert_eq!(ran.exit, exit, "{threshold}: {}", ran.err);
        let checks = if exit == Exit::Done {
            "1 passed, 0"
        } else {
            "0 passed, 1"
        };
        assert!(
            ran.out.contains(&format!("** Thresholds: {checks} failed")),
            "{}",
            ran.out
        );
        // The saved run is complete, its requests recorded for a replay.
        let file = std::fs::read_to_string(saved).unwrap();
        assert_eq!(file.matches(r#""type":"request""#).count(), 10, "{file}");
        assert!(file.contains(r#""type":"totals""#), "{file}");
    }
    let _ = std::fs::remove_dir_all(d);
}

/// With stdin a terminal and no input named, the run repeats one request.
#[test]
fn a_terminal_on_stdin_selects_single_request_mode() {
    let server = echo();
    let ran = app(&["--stop-after", "7", &server.url()], None);
    assert_eq!(ran.exit, Exit::Done, "{}", ran.err);
    assert_eq!(server.requests(), 7);
    assert!(ran.out.contains("Completed:"), "{}", ran.out);
}

/// An input that turns out to hold no request ends the run before any
/// output file is created: the earlier run's saved file, HTML page and
/// mismatch log are left as they were (they were once emptied, and the
/// saved file replaced by a stub that `report` called killed).
#[test]
fn an_input_without_requests_leaves_earlier_files_alone() {
    let server = echo();
    let ran = leaves_earlier_files_alone("empty-input", &[&server.url()], b"\n\n");
    assert_eq!(ran.exit, Exit::Failed, "{}", ran.err);
    assert!(ran.err.contains("no requests"), "{}", ran.err);
    assert_eq!(server.requests(), 0);
}

/// An endpoint that failed every request is named before everything else
/// and the run exits 4 (a wrong port once ran to the end, exit 0, its
/// 0.29% of the summary's errors hiding it); `--allow-failures` exits 0.
#[test]
fn an_endpoint_that_failed_every_request_is_named_first_and_exits_4() {
    let good = echo();
    let broken = Server::start(|_| Reply::ok("down").status(500));
    let (g, b) = (
        format!("good={}", good.url()),
        format!("broken={}", broken.url()),
    );
    let ran = app(&["--stop-after", "50", &g, &b], Some(&lines(100)));
    assert_eq!(ran.exit, Exit::EndpointFailed, "{}", ran.err);
    assert_eq!(ran.exit.code(), 4);
    let first = ran.out.lines().next().unwrap();
    assert!(
        first.starts_with("Every request failed at 1. broken") && first.contains("HTTP 500: 50"),
        "{}",
        ran.out
    );
    assert!(
        ran.err.contains("broken failed every request"),
        "{}",
        ran.err
    );
    let ran = app(
        &["--allow-failures", "--stop-after", "50", &g, &b],
        Some(&lines(100)),
    );
    assert_eq!(ran.exit, Exit::Done, "{}", ran.err);
}

/// A reference that never answered makes the comparison say so instead
/// of counting every answer of the others as a mismatch.
#[test]
fn a_reference_that_never_answered_is_not_counted_as_mismatches() {
    let good = echo();
    let dead = format!("ref=http://127.0.0.1:{}/", closed_port());
    let cand = format!("cand={}", good.url());
    let ran = app(&["--stop-after", "20", &dead, &cand], Some(&lines(20)));
    assert_eq!(ran.exit, Exit::EndpointFailed, "{}", ran.err);
    assert!(
        ran.out.contains("Mismatched: - (the reference, 0. ref"),
        "{}",
        ran.out
    );
    assert!(
        ran.out.starts_with("Nothing connected to 0. ref"),
        "{}",
        ran.out
    );
}

/// Answers all over `--max-body` are refused answers, not silence: the
/// message says so (it once said only "no endpoint answered").
#[test]
fn answers_over_max_body_are_named_as_the_reason_nothing_was_answered() {
    let server = Server::start(|_| Reply::ok("a body longer than ten bytes"));
    let ran = app(
        &["--max-body", "10", "--stop-after", "3", &server.url()],
        Some(&lines(3)),
    );
    assert_eq!(ran.exit, Exit::Failed, "{}", ran.err);
    assert!(
        ran.err
            .contains("(body too large: 3); every answer was larger than --max-body"),
        "{}",
        ran.err
    );
}
