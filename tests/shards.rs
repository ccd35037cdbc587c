//! Sharded runs: N processes of the versus binary, each with its share of
//! one run's work, against servers on 127.0.0.1, merged with `versus merge`
//! and compared with one run of the same work; and the Kubernetes Job and
//! the Dockerfile that run shards elsewhere.

mod common;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use common::*;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("versus-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Run the binary with `args` and `stdin`; it must exit 0.
fn ok(args: &[String], stdin: &[u8]) -> std::process::Output {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run_bin(&args, stdin);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        text(&out.stderr)
    );
    out
}

/// N shards at once, each `args` plus `--shard I/N` and `-o`, all with
/// `stdin`; their saved runs.
fn shards(n: usize, args: &[String], stdin: &[u8], name: &str) -> Vec<PathBuf> {
    let runs: Vec<_> = (0..n)
        .map(|i| {
            let file = temp(&format!("{name}-{i}.jsonl"));
            let mut a = args.to_vec();
            a.extend([
                "--shard".into(),
                format!("{i}/{n}"),
                "-o".into(),
                file.to_str().unwrap().into(),
            ]);
            let stdin = stdin.to_vec();
            (file, std::thread::spawn(move || ok(&a, &stdin)))
        })
        .collect();
    runs.into_iter()
        .map(|(file, run)| {
            run.join().unwrap();
            file
        })
        .collect()
}

/// `versus merge` of `files` into a new file, loaded.
fn merge(files: &[PathBuf], name: &str) -> versus::results::SavedRun {
    let merged = temp(name);
    let mut args = vec!["merge".to_string()];
    args.extend(files.iter().map(|f| f.to_str().unwrap().to_string()));
    args.extend(["-o".into(), merged.to_str().unwrap().into()]);
    ok(&args, b"");
    versus::results::load(&[&merged]).unwrap()
}

/// The simulation: 3 shards of a 360-request stream against two servers
/// that answer after 200 ms, started together with --start-at, merged,
/// against one run of the same stream. Counts agree exactly; the merged
/// latencies are exactly the shards' own added together, and their median
/// is the one run's within 5% (two runs' scheduling noise); each server
/// saw each request once.
#[test]
fn three_shards_merged_equal_one_run() {
    let reply = |s: &Seen| Reply::ok(s.body.clone()).after(Duration::from_millis(200));
    let (a, b) = (Server::start(reply), Server::start(reply));
    let input = lines(360);
    let common: Vec<String> = vec![
        "-q".into(),
        "-c".into(),
        "18".into(),
        format!("a={}", a.url()),
        format!("b={}", b.url()),
    ];
    // Two seconds from now, to the second: the shards start together.
    let start_s = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 2;
    let at = humantime::format_rfc3339(SystemTime::UNIX_EPOCH + Duration::from_secs(start_s));
    let mut sharded = common.clone();
    sharded.extend(["--start-at".into(), at.to_string()]);
    let files = shards(3, &sharded, &input, "sim");
    assert_eq!(
        (a.requests(), b.requests()),
        (360, 360),
        "each request once"
    );
    let m = merge(&files, "sim-merged.jsonl");
    for f in &files {
        let one = versus::results::load(&[f]).unwrap();
        assert_eq!(
            one.header.start_unix_ms,
            start_s * 1000,
            "started at --start-at"
        );
        assert_eq!(one.header.late_ms, None);
        assert_eq!(one.header.concurrency, 6);
    }
    assert_eq!(m.header.shards.len(), 3);
    assert_eq!(m.header.concurrency, 18);

    let single = temp("sim-single.jsonl");
    let mut args = common.clone();
    args.extend(["-o".into(), single.to_str().unwrap().into()]);
    ok(&args, &input);
    assert_eq!((a.requests(), b.requests()), (720, 720));
    let w = versus::results::load(&[&single]).unwrap();

    assert_eq!(m.output.input.requests, 360);
    assert_eq!(m.output.input.requests, w.output.input.requests);
    assert_eq!(m.output.stats.verdicts.compared, 360);
    assert_eq!(
        m.output.stats.verdicts.compared,
        w.output.stats.verdicts.compared
    );
    let parts: Vec<_> = files
        .iter()
        .map(|f| versus::results::load(&[f]).unwrap())
        .collect();
    for e in 0..2 {
        let (got, want) = (&m.output.stats.endpoints[e], &w.output.stats.endpoints[e]);
        assert_eq!((got.sent, got.completed()), (360, 360), "endpoint {e}");
        assert_eq!((got.sent, got.completed()), (want.sent, want.completed()));
        assert_eq!(got.latency.len(), want.latency.len());
        // The merge adds the shards' histograms: every recorded latency
        // stays where it was, none lost or counted twice.
        let mut sum = parts[0].output.stats.endpoints[e].latency.clone();
        for p in &parts[1..] {
            sum.add(&p.output.stats.endpoints[e].latency).unwrap();
        }
        assert_eq!(got.latency.len(), sum.len(), "endpoint {e}");
        for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
            assert_eq!(
                got.latency.value_at_quantile(q),
                sum.value_at_quantile(q),
                "endpoint {e} p{q}: merged against the shards added"
            );
        }
        // Against a separate run only the median is compared: its tail
        // moves with any stall of a shared machine, and a merge that
        // mangled the values would be far off.
        let (x, y) = (
            got.latency.value_at_quantile(0.5) as f64,
            want.latency.value_at_quantile(0.5) as f64,
        );
        eprintln!("endpoint {e} p50: merged {x} µs, single {y} µs");
        assert!((x - y).abs() <= y * 0.05, "endpoint {e} p50: {x} vs {y}");
        assert!(got.latency.min() >= 200_000, "endpoint {e}: under 200 ms");
    }
}

/// Single-request mode: 3 shards of --stop-after 7 send 7 requests in all.
#[test]
fn shards_of_single_request_mode_send_the_count_once() {
    let server = Server::start(|_| Reply::ok("ok"));
    let args: Vec<String> = vec![
        "-q".into(),
        "-d".into(),
        "{}".into(),
        "--stop-after".into(),
        "7".into(),
        server.url(),
    ];
    let files = shards(3, &args, b"", "single");
    assert_eq!(server.requests(), 7);
    let m = merge(&files, "single-merged.jsonl");
    assert_eq!(m.output.stats.endpoints[0].completed(), 7);
}

/// A --start-at already past: the run starts at once, says so on stderr
/// and in its header. A merge refuses the same shard twice.
#[test]
fn a_late_shard_says_so_and_a_shard_is_merged_once() {
    let server = Server::start(|_| Reply::ok("ok"));
    let file = temp("late.jsonl");
    let out = ok(
        &[
            "-q".into(),
            "--start-at".into(),
            "2001-01-01T00:00:00Z".into(),
            "--shard".into(),
            "1/2".into(),
            "-o".into(),
            file.to_str().unwrap().into(),
            server.url(),
        ],
        &lines(10),
    );
    assert!(
        text(&out.stderr).contains("--start-at passed"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(server.requests(), 5);
    let run = versus::results::load(&[&file]).unwrap();
    assert!(run.header.late_ms.is_some_and(|ms| ms > 1000));
    assert_eq!(run.header.shard.map(|s| s.to_string()), Some("1/2".into()));
    let f = file.to_str().unwrap();
    let twice = run_bin(
        &["merge", f, f, "-o", temp("twice.jsonl").to_str().unwrap()],
        b"",
    );
    assert_eq!(twice.status.code(), Some(2));
    assert!(
        text(&twice.stderr).contains("count twice"),
        "{}",
        text(&twice.stderr)
    );
    let bad = run_bin(&["--shard", "2/2", "http://127.0.0.1:1/"], b"");
    assert_eq!(bad.status.code(), Some(2));
    assert!(text(&bad.stderr).contains("0 <= I < N"));
}

fn repo(path: &str) -> String {
    std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The Indexed Job runs shard $(JOB_COMPLETION_INDEX) of N in each pod,
/// writing where the shared volume is mounted.
#[test]
fn the_kubernetes_job_runs_each_shard_once() {
    let job: serde_json::Value = serde_json::from_str(&repo("deploy/kubernetes/job.json")).unwrap();
    assert_eq!(job["apiVersion"], "batch/v1");
    assert_eq!(job["kind"], "Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().unwrap();
    assert!(n >= 2);
    assert_eq!(spec["parallelism"].as_u64(), Some(n));
    let pod = &spec["template"]["spec"];
    assert_eq!(pod["restartPolicy"], "Never");
    let containers = pod["containers"].as_array().unwrap();
    assert_eq!(containers.len(), 1);
    let c = &containers[0];
    let command: Vec<&str> = c["command"]
        .as_array()
        .into_iter()
        .chain(c["args"].as_array())
        .flatten()
        .map(|v| v.as_str().unwrap())
        .collect();
    let arg = |flag: &str| {
        command
            .iter()
            .position(|a| *a == flag)
            .map(|i| command[i + 1])
            .unwrap_or_else(|| panic!("no {flag} in {command:?}"))
    };
    assert_eq!(command[0], "versus");
    assert_eq!(arg("--shard"), format!("$(JOB_COMPLETION_INDEX)/{n}"));
    assert!(
        arg("--start-at").starts_with("$("),
        "the start time from the environment"
    );
    let output = arg("-o");
    assert!(output.contains("$(JOB_COMPLETION_INDEX)"));
    let mount = c["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| output.starts_with(&format!("{}/", m["mountPath"].as_str().unwrap())))
        .unwrap_or_else(|| panic!("{output} is on no mounted volume"));
    let volume = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == mount["name"])
        .expect("the mounted volume is the pod's");
    assert!(volume["persistentVolumeClaim"]["claimName"].is_string());
    // Every $(VAR) the command uses is set: by the Job, or in env.
    let env: Vec<&str> = c["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    for a in &command {
        for var in a
            .split("$(")
            .skip(1)
            .filter_map(|s| s.split_once(')'))
            .map(|s| s.0)
        {
            assert!(
                var == "JOB_COMPLETION_INDEX" || env.contains(&var),
                "{var} unset"
            );
        }
    }

    let docker = repo("Dockerfile");
    let stages: Vec<&str> = docker.lines().filter(|l| l.starts_with("FROM ")).collect();
    assert_eq!(stages.len(), 2, "{stages:?}");
    assert!(stages[0].starts_with("FROM rust:") && stages[0].ends_with(" AS build"));
    assert!(stages[1].starts_with("FROM debian:") && stages[1].contains("slim"));
    assert!(docker.contains("COPY --from=build "));
    assert!(docker.contains("ENTRYPOINT") || docker.contains("CMD"));
}
