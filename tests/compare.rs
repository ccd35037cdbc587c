//! Comparison end to end, against real servers: noise cancellation with a
//! two-copy reference, mismatches grouped by method and field, JSON-RPC
//! errors inside HTTP 200, rules from flags and files, compared headers, the
//! mismatch log, and bodies that are not JSON.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::*;

fn method_of(body: &[u8]) -> String {
    let v: serde_json::Value = serde_json::from_slice(body).unwrap();
    v["method"].as_str().unwrap_or("").to_string()
}

fn rpc_lines(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        let m = if i % 2 == 0 {
            "eth_getBalance"
        } else {
            "eth_blockNumber"
        };
        out.extend_from_slice(
            format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"{m}","params":[]}}"#).as_bytes(),
        );
        out.push(b'\n');
    }
    out
}

#[test]
fn noise_on_a_two_copy_reference_is_not_a_mismatch_but_a_real_difference_is() {
    let clock = Arc::new(AtomicU64::new(0));
    let (c1, c2) = (clock.clone(), clock.clone());
    // Every answer carries a fresh timestamp: noise. The candidate also
    // answers every 10th request with another value: a real difference.
    let reference = Server::start(move |s| {
        let ts = c1.fetch_add(1, Ordering::SeqCst);
        Reply::ok(format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"value":"0x1","timestamp":{ts}}}}}"#,
            id_of(&s.body)
        ))
    });
    let candidate = Server::start(move |s| {
        let ts = c2.fetch_add(1, Ordering::SeqCst);
        let id = id_of(&s.body);
        let value = if id % 10 == 0 { "0x2" } else { "0x1" };
        Reply::ok(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"value":"{value}","timestamp":{ts}}}}}"#
        ))
    });
    let (out, report) = run_lib(
        &[
            "--noise",
            "-c",
            "4",
            &format!("ref={}", reference.url()),
            &format!("new={}", candidate.url()),
        ],
        &rpc_lines(1000),
    );
    let v = &out.stats.verdicts;
    assert_eq!(
        reference.requests(),
        2000,
        "the reference gets every request twice"
    );
    assert_eq!(v.mismatched, 100, "{report}");
    // Every 10th id is even: all of them are eth_getBalance calls.
    let groups = v.sorted_groups();
    assert_eq!(groups.len(), 1, "{groups:?}");
    let g = groups[0];
    assert_eq!(
        (
            g.method.as_str(),
            g.field.as_str(),
            g.kind.as_str(),
            g.endpoint.as_str()
        ),
        ("eth_getBalance", "$.result.value", "changed", "new")
    );
    assert_eq!(g.count, 100);
    assert!(
        report.contains("100  20.00%  new  eth_getBalance  $.result.value changed"),
        "{report}"
    );
    assert_eq!(v.noise_only, 900, "{report}");
    let ts = v
        .noise
        .iter()
        .find(|f| f.field == "$.result.timestamp")
        .expect("timestamp noise");
    assert_eq!(
        (ts.reference_pair, ts.candidate, ts.cancelled),
        (1000, 1000, 1000)
    );
    assert!(
        report.contains("noisy fields (every candidate difference there was noise)"),
        "{report}"
    );
    assert!(
        report.contains("$.result.timestamp  100.00%  100.00%"),
        "{report}"
    );
    // Without noise cancellation every request is a mismatch.
    let (out, _) = run_lib(
        &["-c", "4", &reference.url(), &candidate.url()],
        &rpc_lines(200),
    );
    assert_eq!(out.stats.verdicts.mismatched, 200);
}

#[test]
fn json_rpc_errors_in_http_200_are_errors_by_code_and_result_vs_error_is_its_own_kind() {
    let ok = Server::start(|s| {
        Reply::ok(format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":"0x1"}}"#,
            id_of(&s.body)
        ))
    });
    let flaky = Server::start(|s| {
        let id = id_of(&s.body);
        if id % 5 == 0 {
            Reply::ok(format!(
                r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32000,"message":"header not found"}}}}"#
            ))
        } else {
            Reply::ok(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"0x1"}}"#))
        }
    });
    let (out, report) = run_lib(
        &[
            "-c",
            "2",
            &format!("a={}", ok.url()),
            &format!("b={}", flaky.url()),
        ],
        &rpc_lines(100),
    );
    let b = &out.stats.endpoints[1];
    assert_eq!(b.jsonrpc_errors.get(&-32000), Some(&20), "{report}");
    assert_eq!(b.errors(), 20);
    assert!(
        report.contains("   Errors: 20.00%\n     JSON-RPC error -32000: 20\n"),
        "{report}"
    );
    assert!(
        report.contains("10  20.00%  b  eth_getBalance   JSON-RPC error -32000"),
        "{report}"
    );
    let g = out.stats.verdicts.sorted_groups();
    assert!(
        g.iter()
            .all(|g| g.kind == "result vs error" && g.field == "$"),
        "{g:?}"
    );
    assert_eq!(out.stats.verdicts.mismatched, 20);
}

/// A JSON-RPC batch answered with an error among its results is an
/// error answer, counted under the batch's own kind; one without is not.
#[test]
fn a_batch_with_an_error_among_its_results_is_an_error() {
    let server = Server::start(|s| {
        let body = String::from_utf8_lossy(&s.body).into_owned();
        let error = r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32000,"message":"x"}}"#;
        let result = r#"{"jsonrpc":"2.0","id":2,"result":"0x2"}"#;
        let second = if body.contains("\"fail\"") {
            error
        } else {
            result
        };
        Reply::ok(format!(
            r#"[{{"jsonrpc":"2.0","id":1,"result":"0x1"}},{second}]"#
        ))
    });
    let batch = |method: &str| {
        format!(
            r#"[{{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}},{{"jsonrpc":"2.0","id":2,"method":"{method}","params":[]}}]"#
        )
    };
    let input = format!(
        "{}\n{}\n{}\n",
        batch("fail"),
        batch("eth_chainId"),
        batch("fail")
    );
    let (out, report) = run_lib(&[&server.url()], input.as_bytes());
    let e = &out.stats.endpoints[0];
    assert_eq!(e.errors(), 2, "{report}");
    assert_eq!(
        e.jsonrpc_errors.get(&versus::stats::BATCH_ERROR),
        Some(&2),
        "{report}"
    );
}

#[test]
fn rules_from_flags_and_a_rules_file() {
    let a = Server::start(|s| {
        let id = id_of(&s.body);
        Reply::ok(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"hash":"0xAB","ts":1,"gas":100,"list":[1,2,3],"logs":[{{"i":1,"v":"x"}},{{"i":2,"v":"y"}}]}}}}"#
        ))
    });
    let b = Server::start(|s| {
        let id = id_of(&s.body);
        Reply::ok(format!(
            r#"{{"jsonrpc":"2.0","id":{id},"result":{{"hash":"0xab","ts":2,"gas":104,"list":[3,2,1],"logs":[{{"i":2,"v":"y"}},{{"i":1,"v":"x"}}],"extra":true}}}}"#
        ))
    });
    let (strict, _) = run_lib(&[&a.url(), &format!("b={}", b.url())], &rpc_lines(10));
    assert_eq!(strict.stats.verdicts.mismatched, 10);
    let fields: Vec<String> = strict
        .stats
        .verdicts
        .sorted_groups()
        .iter()
        .map(|g| g.field.clone())
        .collect();
    for f in [
        "$.result.hash",
        "$.result.ts",
        "$.result.gas",
        "$.result.extra",
    ] {
        assert!(fields.iter().any(|g| g == f), "{f} not in {fields:?}");
    }
    let relaxed = [
        "--ignore-hex-case",
        "--ignore",
        "$..ts",
        "--tolerance",
        "$.result.gas=5%",
        "--unordered",
        "$.result.list",
        "--array-key",
        "$.result.logs=i",
        "--subset",
    ];
    let mut args: Vec<&str> = relaxed.to_vec();
    let (ua, ub) = (a.url(), format!("b={}", b.url()));
    args.extend([ua.as_str(), ub.as_str()]);
    let (out, report) = run_lib(&args, &rpc_lines(10));
    assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");

    // The same from a file, with a section for one method only.
    let dir = std::env::temp_dir().join(format!("versus-rules-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rules = dir.join("rules.toml");
    std::fs::write(
        &rules,
        r#"
hex_case_insensitive = true
ignore = ["$..ts"]
subset = true
[method.eth_getBalance]
tolerance = { "$.result.gas" = "5%" }
unordered = ["$.result.list"]
array_keys = { "$.result.logs" = "i" }
"#,
    )
    .unwrap();
    let (out, report) = run_lib(
        &["--rules", rules.to_str().unwrap(), &ua, &ub],
        &rpc_lines(10),
    );
    // eth_getBalance (even ids) is relaxed by its section; eth_blockNumber is not.
    assert_eq!(out.stats.verdicts.mismatched, 5, "{report}");
    assert!(out
        .stats
        .verdicts
        .groups
        .iter()
        .all(|g| g.method == "eth_blockNumber"));

    // Bad rules fail before anything is sent, naming the path.
    std::fs::write(&rules, "ignore = [\"$.a[\"]\n").unwrap();
    let bad = run_bin(&["--rules", rules.to_str().unwrap(), &ua], b"x\n");
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("$.a["),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    let bad = run_bin(&["--ignore", "result.x", &ua], b"x\n");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--ignore \"result.x\""));
    let bad = run_bin(&["--tolerance", "$.a=lots", &ua], b"x\n");
    assert_eq!(bad.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_mismatch_log_holds_every_mismatch_up_to_the_limit_and_headers_can_be_compared() {
    let a = Server::start(|s| Reply::ok(format!(r#"{{"id":{},"v":1}}"#, id_of(&s.body))));
    let b = Server::start(|s| {
        let id = id_of(&s.body);
        Reply::ok(format!(
            r#"{{"id":{id},"v":{}}}"#,
            if id < 30 { 2 } else { 1 }
        ))
    });
    let dir = std::env::temp_dir().join(format!("versus-mlog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("m.jsonl");
    let (out, report) = run_lib(
        &[
            "--mismatches",
            log.to_str().unwrap(),
            "--mismatch-limit",
            "25",
            &a.url(),
            &format!("b={}", b.url()),
        ],
        &lines(100),
    );
    assert_eq!(out.stats.verdicts.mismatched, 30);
    assert!(report.contains("Logged:     25 of 30 mismatched requests written to --mismatches (--mismatch-limit reached)"), "{report}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 25);
    for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["method"], "eth_blockNumber");
        assert!(v["request"]["body"]
            .as_str()
            .unwrap()
            .contains("eth_blockNumber"));
        assert_eq!(v["endpoints"][1]["label"], "b");
        assert_eq!(v["endpoints"][1]["status"], 200);
        assert_eq!(v["differences"][0]["field"], "$.v");
        assert_eq!(v["differences"][0]["kind"], "changed");
    }
    let _ = std::fs::remove_dir_all(dir);
    let _ = method_of;
}

#[test]
fn bodies_that_are_not_json_fall_back_to_bytes_without_panic() {
    let deep = "[".repeat(100_000);
    let huge = format!("{{\"n\":1{}}}", "0".repeat(5000));
    let bodies: Vec<Vec<u8>> = vec![
        b"plain text".to_vec(),
        br#"{"truncated": [1, 2"#.to_vec(),
        deep.into_bytes(),
        huge.into_bytes(),
        b"\xff\xfe{\"a\":1}".to_vec(),
    ];
    let n = bodies.len();
    let bodies = Arc::new(bodies);
    let b1 = bodies.clone();
    let a = Server::start(move |s| Reply::ok(b1[id_of(&s.body) as usize % n].clone()));
    let b2 = bodies.clone();
    let b = Server::start(move |s| {
        let id = id_of(&s.body) as usize;
        let mut body = b2[id % n].clone();
        if id >= n {
            body.push(b' ');
        }
        Reply::ok(body)
    });
    let (out, report) = run_lib(&[&a.url(), &b.url()], &lines(2 * n));
    let v = &out.stats.verdicts;
    // The first n are byte-equal; the second n differ by a trailing space:
    // JSON-equal for the huge number, byte-different (and counted) for the rest.
    assert_eq!(v.compared, 2 * n as u64);
    assert_eq!(v.mismatched, n as u64 - 1, "{report}");
    assert_eq!(v.fell_back, n as u64 - 1, "{report}");
    assert!(
        report.contains("As bytes:   4 requests compared byte for byte"),
        "{report}"
    );
}

#[test]
fn verbose_reports_up_to_three_samples_per_group_with_a_diff() {
    let a = Server::start(|s| {
        Reply::ok(format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"balance":"0x10","n":1}}}}"#,
            id_of(&s.body)
        ))
    });
    let b = Server::start(|s| {
        Reply::ok(format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{{"balance":"0x11","n":1}}}}"#,
            id_of(&s.body)
        ))
    });
    let (a, b) = (format!("a={}", a.url()), format!("b={}", b.url()));
    // Samples are kept whatever the verbosity; -v shows them.
    let (out, report) = run_lib(&["-c", "1", &a, &b], &rpc_lines(10));
    assert_eq!(out.stats.verdicts.mismatched, 10);
    let g = out.stats.verdicts.sorted_groups();
    assert!(g.iter().all(|g| g.samples.len() == 3), "{g:?}");
    assert!(!report.contains("         request "), "{report}");
    let run = run_bin(&["-v", "-c", "1", &a, &b], &rpc_lines(10));
    let report = String::from_utf8_lossy(&run.stdout);
    assert_eq!(report.matches("         request ").count(), 6, "{report}");
    assert!(report.contains(r#"a: "0x10"   b: "0x11""#), "{report}");
    assert!(report.contains(r#"-    "balance": "0x10","#), "{report}");
    assert!(report.contains(r#"+    "balance": "0x11","#), "{report}");
}

#[test]
fn compared_headers_count_and_others_do_not() {
    let a = Server::start(|_| Reply::ok("{}"));
    let b = Server::start(|_| Reply::ok("{}"));
    // The test server sends a Date header that may tick between answers:
    // not compared by default; compared on request.
    let (out, _) = run_lib(&[&a.url(), &b.url()], &lines(5));
    assert_eq!(out.stats.verdicts.mismatched, 0);
    let (out, report) = run_lib(
        &["--compare-header", "content-length", &a.url(), &b.url()],
        &lines(5),
    );
    assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");
    // Over HTTP/2 too, where the header comes through HPACK (hyper's
    // encoder indexes and Huffman-codes it).
    let c = Server::start(|_| Reply::ok("{ }"));
    for protocol in ["--http1", "--http2"] {
        let (out, report) = run_lib(
            &[
                protocol,
                "--compare-header",
                "content-length",
                &a.url(),
                &c.url(),
            ],
            &lines(5),
        );
        let groups = out.stats.verdicts.sorted_groups();
        let fields: Vec<_> = groups.iter().map(|g| g.field.as_str()).collect();
        assert_eq!(fields, ["header content-length"], "{protocol}\n{report}");
        assert_eq!(groups[0].count, 5, "{protocol}\n{report}");
    }
}

/// An endpoint's mismatched requests count each request once, however many
/// fields differ in it (the groups count fields).
#[test]
fn mismatches_per_endpoint_count_requests_not_fields() {
    let a = Server::start(|_| Reply::ok(r#"{"x":1,"y":1}"#));
    let b = Server::start(|_| Reply::ok(r#"{"x":2,"y":2}"#));
    let (out, report) = run_lib(
        &[&format!("ref={}", a.url()), &format!("new={}", b.url())],
        &lines(5),
    );
    let v = &out.stats.verdicts;
    assert_eq!(v.mismatched, 5, "{report}");
    let fields: u64 = v
        .groups
        .iter()
        .filter(|g| g.endpoint == "new")
        .map(|g| g.count)
        .sum();
    assert_eq!(fields, 10, "{report}");
    assert_eq!(out.stats.endpoints[1].mismatched, 5, "{report}");
    assert_eq!(out.stats.endpoints[0].mismatched, 0, "{report}");
}

/// A group counts requests: however many elements of one field differ in
/// an answer, its group counts that request once.
#[test]
fn a_group_counts_a_request_once_however_many_elements_of_its_field_differ() {
    let a = Server::start(|_| Reply::ok(r#"{"items":[1,2,3,4,5,6]}"#));
    let b = Server::start(|_| Reply::ok(r#"{"items":[7,8,9,10,11,12]}"#));
    let (out, report) = run_lib(
        &[&format!("ref={}", a.url()), &format!("new={}", b.url())],
        &lines(5),
    );
    let v = &out.stats.verdicts;
    assert_eq!(v.mismatched, 5, "{report}");
    assert!(!v.groups.is_empty(), "{report}");
    for g in &v.groups {
        assert_eq!(g.count, 5, "{}: {report}", g.field);
    }
}

/// "Where several `tolerance` or `array_keys` entries select the same
/// path, the last one applies": two sections match eth_getBalance, and
/// their order decides; eth_blockNumber matches only the first.
#[test]
fn the_last_matching_rule_applies_for_tolerance_and_array_keys() {
    let answer = |gas: u32, logs: &'static str| {
        Server::start(move |s| {
            let id = id_of(&s.body);
            Reply::ok(format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"gas":{gas},"logs":{logs}}}}}"#
            ))
        })
    };
    let a = answer(100, r#"[{"i":1,"v":"x"},{"i":2,"v":"y"}]"#);
    let b = answer(104, r#"[{"i":2,"v":"y"},{"i":1,"v":"x"}]"#);
    let (ua, ub) = (a.url(), format!("b={}", b.url()));
    let dir = std::env::temp_dir().join(format!("versus-last-rule-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let rules = dir.join("rules.toml");
    // The gas differs by 4%; the logs are in another order, matched by `i`
    // and not by `none` (no element has it: compared in order).
    let tolerance = |first: &str, last: &str| {
        format!(
            "array_keys = {{ \"$.result.logs\" = \"i\" }}\n\
             [method.\"eth_*\"]\ntolerance = {{ \"$.result.gas\" = \"{first}\" }}\n\
             [method.eth_getBalance]\ntolerance = {{ \"$.result.gas\" = \"{last}\" }}\n"
        )
    };
    let keys = |first: &str, last: &str| {
        format!(
            "tolerance = {{ \"$.result.gas\" = \"5%\" }}\n\
             [method.\"eth_*\"]\narray_keys = {{ \"$.result.logs\" = \"{first}\" }}\n\
             [method.eth_getBalance]\narray_keys = {{ \"$.result.logs\" = \"{last}\" }}\n"
        )
    };
    for (file, method, field) in [
        (tolerance("5%", "1%"), "eth_getBalance", "$.result.gas"),
        (tolerance("1%", "5%"), "eth_blockNumber", "$.result.gas"),
        (keys("i", "none"), "eth_getBalance", "$.result.logs"),
        (keys("none", "i"), "eth_blockNumber", "$.result.logs"),
    ] {
        std::fs::write(&rules, &file).unwrap();
        let (out, report) = run_lib(
            &["--rules", rules.to_str().unwrap(), &ua, &ub],
            &rpc_lines(10),
        );
        let v = &out.stats.verdicts;
        assert_eq!(v.mismatched, 5, "{file}\n{report}");
        for g in &v.groups {
            assert_eq!(g.method, method, "{file}\n{report}");
            assert!(g.field.starts_with(field), "{file}\n{report}");
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// A JSON array of `n` objects; `shift` changes every value.
fn big_answer(n: usize, shift: usize) -> String {
    let items: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"i":{i},"v":{},"s":"item {i}"}}"#, i + shift))
        .collect();
    format!("[{}]", items.join(","))
}

/// How long the run's own comparer takes to judge two answers and make
/// the sample a report shows of their first difference.
fn time_to_judge(args: &[&str], a: &str, b: &str) -> std::time::Duration {
    use clap::Parser;
    let mut argv = vec!["versus"];
    argv.extend_from_slice(args);
    let cli = versus::cli::Cli::try_parse_from(argv).unwrap();
    let plan = versus::plan::Plan::from_args(&cli.run, false).unwrap();
    let outcome = |body: &str| versus::model::Outcome {
        result: Ok(versus::model::Response {
            status: 200,
            headers: Vec::new(),
            body: bytes::Bytes::from(body.to_string()),
            body_len: body.len() as u64,
            ttfb: std::time::Duration::ZERO,
            grpc: None,
        }),
        latency: std::time::Duration::ZERO,
        start: std::time::Instant::now(),
        uncorrected: std::time::Duration::ZERO,
        lag: None,
        connect: None,
        bytes_out: 0,
        port: 0,
    };
    let (a, b) = (outcome(a), outcome(b));
    let kind = || versus::compare::method::MethodName::step("big");
    let started = std::time::Instant::now();
    let outcomes = [Some(&a), Some(&b)];
    let verdict = plan.engine.comparer.judge(&kind, &outcomes);
    let req = versus::model::Request::line(0, bytes::Bytes::from_static(b"big"));
    versus::compare::sample::sample(&req, &outcomes, &verdict.findings[0], ("a", "b"));
    started.elapsed()
}

#[test]
fn a_slow_comparison_is_not_timed_as_the_endpoints_latency() {
    // One request's answers differ in every one of 2,000 items: judging
    // them is slow. The other requests are answered at once, and are in
    // flight while that comparison runs.
    let (big_a, big_b) = (big_answer(2_000, 0), big_answer(2_000, 1));
    let (a, b) = (
        bytes::Bytes::from(big_a.clone()),
        bytes::Bytes::from(big_b.clone()),
    );
    let serve = |big: bytes::Bytes| {
        move |s: &Seen| match &s.body[..] {
            b"big" => Reply::ok(big.clone()),
            _ => Reply::ok(r#"{"ok":true}"#),
        }
    };
    let (one, two) = (Server::start(serve(a)), Server::start(serve(b)));
    let mut input = Vec::new();
    for i in 0..400 {
        input.extend_from_slice(if i == 20 { b"big\n" } else { b"small\n" });
    }
    let (e1, e2) = (format!("a={}", one.url()), format!("b={}", two.url()));
    let args = ["--threads", "1", "-c", "4", "--compare", "json", &e1, &e2];
    let judging = time_to_judge(&args, &big_a, &big_b);
    let (out, report) = run_lib(&args, &input);
    assert_eq!(out.stats.verdicts.compared, 400, "{report}");
    assert_eq!(out.stats.verdicts.mismatched, 1, "{report}");
    // No answer waited behind the comparison: each endpoint's slowest is
    // well under the time the comparison took.
    for (e, s) in out.stats.endpoints.iter().enumerate() {
        let max = std::time::Duration::from_micros(s.latency.max());
        assert!(
            max * 4 < judging,
            "endpoint {e}: max latency {max:?}, judging {judging:?}\n{report}"
        );
    }
}

/// Single-request mode numbers its repeats as a stream numbers its
/// requests (it numbered every one 0): in `--mismatches`, in `-v`'s
/// mismatch samples and in `-vv`'s lines.
#[test]
fn single_request_mode_numbers_each_repeat() {
    let n = Arc::new(AtomicU64::new(0));
    let a = Server::start(|_| Reply::ok(r#"{"v":1}"#));
    let b = Server::start(move |_| {
        Reply::ok(format!(r#"{{"v":{}}}"#, n.fetch_add(1, Ordering::SeqCst)))
    });
    let dir = std::env::temp_dir().join(format!("versus-repeat-seq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("m.jsonl");
    let (a, b) = (a.url(), b.url());
    let one = [
        "-c",
        "1",
        "--threads",
        "1",
        "--method",
        "GET",
        "--stop-after",
        "6",
    ];
    let mut args = one.to_vec();
    args.extend(["-v", "--mismatches", log.to_str().unwrap(), &a, &b]);
    let out = run_bin(&args, b"");
    let text = std::fs::read_to_string(&log).unwrap();
    let mut seqs: Vec<u64> = text
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                .as_u64()
                .unwrap()
        })
        .collect();
    seqs.sort_unstable();
    // Every answer but the one with v = 1 differs.
    assert_eq!(seqs.len(), 5, "{text}");
    seqs.dedup();
    assert_eq!(seqs.len(), 5, "numbered alike: {text}");
    assert!(seqs.iter().all(|&s| s < 6), "{text}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut shown: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("--- mismatch: request "))
        .collect();
    shown.sort_unstable();
    shown.dedup();
    assert!(shown.len() > 1, "{stderr}");

    let mut args = one.to_vec();
    args.extend(["-vv", &a]);
    let out = run_bin(&args, b"");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let numbers: Vec<&str> = stderr
        .lines()
        .filter_map(|l| l.strip_prefix("request=")?.split(' ').next())
        .collect();
    assert_eq!(numbers, ["0", "1", "2", "3", "4", "5"], "{stderr}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `-v`'s mismatch samples keep their indentation through bodies of
/// several lines ending in a line end (their later lines started at the
/// margin, and the report's next lines after them).
#[test]
fn verbose_samples_keep_their_indentation_after_a_body_ending_in_a_newline() {
    let a = Server::start(|_| Reply::ok("line one\nline two\n"));
    let b = Server::start(|_| Reply::ok("line one\nline 2\n"));
    let out = run_bin(&["-v", "-c", "1", &a.url(), &b.url()], b"req one\n");
    let text = String::from_utf8_lossy(&out.stdout);
    let sample: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("request 0: req one"))
        .take_while(|l| !l.starts_with("   As bytes"))
        .collect();
    assert!(sample.len() > 4, "{text}");
    for line in &sample {
        assert!(line.starts_with("         "), "{line:?} in\n{text}");
    }
    assert!(
        sample.iter().any(|l| l.trim() == "line two") && !sample.iter().any(|l| l.is_empty()),
        "{text}"
    );
    // -v on stderr: a request body of several lines stays under its label.
    let record = b"{\"method\": \"POST\", \"path\": \"/\", \"body\": \"first\\nsecond\\n\"}\n";
    let out = run_bin(
        &["--input", "jsonl", "-v", "-c", "1", &a.url(), &b.url()],
        record,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("    request: first\n             second\n  0. "),
        "{stderr}"
    );
}

/// A tap that holds a judge thread at the first mismatch it judges
/// until opened: the cores go on, and what they hand over piles up
/// behind it (a core judging a unit itself passes).
#[derive(Debug, Default)]
struct Gate {
    open: std::sync::Mutex<bool>,
    opened: std::sync::Condvar,
}

impl Gate {
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.opened.notify_all();
    }
}

impl versus::engine::Tap for Gate {
    fn mismatch(
        &self,
        _: &versus::engine::Settings,
        _: &versus::model::Request,
        _: &str,
        _: &[Option<&versus::model::Outcome>],
        _: &[versus::compare::Finding],
    ) {
        if !std::thread::current()
            .name()
            .is_some_and(|n| n.starts_with("versus-judge"))
        {
            return;
        }
        let mut open = self.open.lock().unwrap();
        while !*open {
            open = self.opened.wait(open).unwrap();
        }
    }
}

/// Once every core has ended with answers left to judge: note how many,
/// stop the run when asked to (as Ctrl-C does), and open the gate.
struct Backlog {
    gate: Arc<Gate>,
    stop: Option<versus::engine::Stop>,
    left: Option<u64>,
}

impl versus::engine::Observer for Backlog {
    fn judging(&mut self, left: u64) {
        if self.left.is_none() {
            self.left = Some(left);
            if let Some(s) = &self.stop {
                s.stop();
            }
            self.gate.open();
        }
    }
}

/// Two endpoints whose ~2 KB answers differ in one field for every
/// request, and `n` requests.
fn differing(n: usize) -> (Server, Server, Vec<u8>) {
    let pad = "x".repeat(2_000);
    let answer = move |v: u32| {
        let body = bytes::Bytes::from(format!(r#"{{"v":{v},"pad":"{pad}"}}"#));
        move |_: &Seen| Reply::ok(body.clone())
    };
    let one = Server::start(answer(1));
    let two = Server::start(answer(2));
    (one, two, lines(n))
}

/// Run `n` differing requests with `--judge-memory 64K` while the judge
/// thread is held at its first unit until every core has ended; `stop`
/// stops the run then. Returns the run, its report and how many units
/// were left to judge when the cores ended.
fn held_judge(n: usize, extra: &[&str], stop: bool) -> (versus::engine::RunOutput, String, u64) {
    let (one, two, input) = differing(n);
    let (e1, e2) = (format!("a={}", one.url()), format!("b={}", two.url()));
    let mut args = vec![
        "--threads",
        "1",
        "--judges",
        "1",
        "-c",
        "4",
        "--judge-memory",
        "64K",
    ];
    args.extend_from_slice(extra);
    args.extend([e1.as_str(), e2.as_str()]);
    let gate = Arc::new(Gate::default());
    let handle = versus::engine::Stop::new();
    let mut seen = Backlog {
        gate: gate.clone(),
        stop: stop.then(|| handle.clone()),
        left: None,
    };
    let tap: Arc<dyn versus::engine::Tap> = gate;
    let (out, report) = run_lib_tapped(&args, &input, &mut seen, &handle, Some(tap));
    let left = seen
        .left
        .expect("the cores ended with answers left to judge");
    (out, report, left)
}

/// When judging falls behind, the queue holds at most `--judge-memory` of
/// answers; past it the cores judge themselves, and every verdict is
/// counted exactly once, on the core or off it.
#[test]
fn when_judging_falls_behind_the_queue_stays_in_its_bytes_and_every_verdict_counts_once() {
    let (out, report, left) = held_judge(300, &[], false);
    let v = &out.stats.verdicts;
    assert_eq!((v.compared, v.mismatched), (300, 300), "{report}");
    assert_eq!(v.not_judged, 0, "{report}");
    // The queue filled to its bound (each unit holds about 4 KB of
    // answers), and the rest were judged on the core.
    assert!(v.judge_queue_peak <= 64 * 1024, "{}", v.judge_queue_peak);
    assert!(v.judge_queue_peak > 32 * 1024, "{}", v.judge_queue_peak);
    assert!(v.judged_on_core > 0 && v.judged_on_core < 300, "{report}");
    assert_eq!(left, 300 - v.judged_on_core, "{report}");
    assert_eq!(out.stats.endpoints[1].mismatched, 300, "{report}");
    let peak = versus::report::size(v.judge_queue_peak);
    assert!(
        report.contains(&format!("   Judge queue peak: {peak} (")),
        "{report}"
    );
    assert!(
        report.contains(&format!(
            "   Judged on a timing core: {} requests (",
            v.judged_on_core
        )),
        "{report}"
    );
}

/// Stopped (Ctrl-C) while answers wait to be judged, the run judges for
/// the drain period at most, and reports what it judged and how many
/// requests it did not.
#[test]
fn a_stop_during_the_judging_backlog_reports_what_was_judged_and_counts_the_rest() {
    let (out, report, left) = held_judge(300, &["--drain", "0s"], true);
    let v = &out.stats.verdicts;
    assert!(out.interrupted, "{report}");
    assert_eq!(v.compared, 300, "{report}");
    // The unit the judge thread held was judged; with no drain period,
    // every one behind it was not.
    assert!(left > 1, "{report}");
    assert_eq!(v.not_judged, left - 1, "{report}");
    assert_eq!(v.mismatched, v.judged_on_core + 1, "{report}");
    assert_eq!(v.mismatched + v.not_judged, v.compared, "{report}");
    assert!(
        report.contains(&format!("   Not judged: {} requests (", v.not_judged)),
        "{report}"
    );
    assert!(report.contains("Stopped:    interrupted"), "{report}");
}

#[test]
fn several_judge_threads_count_every_mismatch_once() {
    let a = Server::start(|s| Reply::ok(format!(r#"{{"id":{},"v":1}}"#, id_of(&s.body))));
    let b = Server::start(|s| {
        let id = id_of(&s.body);
        Reply::ok(format!(r#"{{"id":{id},"v":{}}}"#, id % 3))
    });
    let dir = std::env::temp_dir().join(format!("versus-judges-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("m.jsonl");
    let (out, _) = run_lib(
        &[
            "--judges",
            "3",
            "--mismatches",
            log.to_str().unwrap(),
            "-c",
            "16",
            &a.url(),
            &format!("b={}", b.url()),
        ],
        &lines(3000),
    );
    // `v` is 1 at the reference, id % 3 at b: two requests in three differ.
    let v = &out.stats.verdicts;
    assert_eq!(v.mismatched, 2000);
    assert_eq!(v.judged_on_core, 0);
    // One group, $.v changed at b, counted once per request, merged from
    // every thread's statistics.
    assert_eq!(v.groups.len(), 1);
    assert_eq!(
        (v.groups[0].field.as_str(), v.groups[0].count),
        ("$.v", 2000)
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.lines().count(), 2000);
    let _ = std::fs::remove_dir_all(dir);
}
