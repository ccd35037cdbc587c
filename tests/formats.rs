//! One saved run, every report format: text, JSON, Markdown, CSV and HTML
//! render the same computed figures (rates, percentiles, errors by kind,
//! mismatches per endpoint, connections, flows, steps, pages), for a
//! request stream, a scenario, a paged step and gRPC endpoints. JSON-RPC
//! errors once showed in the text report alone, CSV gave the reference a
//! mismatch count of its own, and connection counts were in the text and
//! JSON reports only.

mod common;
#[path = "formats/figures.rs"]
mod figures;
#[path = "common/grpc_server.rs"]
mod grpc_server;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use common::*;
use figures::{html_row, md_row, Reports};

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("versus-formats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Run versus with `args` (a command such as `run FILE` first, if any) on
/// `input`, saving the run to `name`; a function rendering the saved run
/// in a format.
fn saved_run(name: &str, args: &[&str], input: &[u8]) -> impl Fn(&str) -> String {
    let saved = temp(name);
    let mut all = args.to_vec();
    all.extend(["-q", "-o", saved.to_str().unwrap()]);
    let out = run_bin(&all, input);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    rendered(saved)
}

/// A function rendering the saved run `saved` in a format.
fn rendered(saved: PathBuf) -> impl Fn(&str) -> String {
    move |format: &str| {
        let out = run_bin(
            &["report", "--format", format, saved.to_str().unwrap()],
            b"",
        );
        assert_eq!(out.status.code(), Some(0), "{format}");
        String::from_utf8(out.stdout).unwrap()
    }
}

/// The reports of [`saved_run`], after checking that the text report
/// holds each of `shown`: what the figures' check must see.
fn reports_showing(name: &str, args: &[&str], input: &[u8], shown: &[&str]) -> Reports {
    let reports = Reports::of(saved_run(name, args, input));
    for s in shown {
        assert!(reports.text.contains(s), "{s:?}\n{}", reports.text);
    }
    reports
}

/// Two methods, `n` requests.
fn two_methods(n: usize) -> Vec<u8> {
    let mut out = String::new();
    for i in 0..n {
        let method = if i % 2 == 0 {
            "eth_call"
        } else {
            "eth_getBalance"
        };
        out.push_str(&format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"{method}\",\"params\":[]}}\n"
        ));
    }
    out.into_bytes()
}

#[test]
fn every_format_renders_the_same_figures_of_one_saved_run() {
    let reference =
        Server::start(|s| Reply::ok(format!(r#"{{"id":{},"result":"0x1"}}"#, id_of(&s.body))));
    let candidate = Server::start(|s| {
        let id = id_of(&s.body);
        if id % 10 == 0 {
            Reply::ok(format!(
                r#"{{"id":{id},"error":{{"code":-32000,"message":"header not found"}}}}"#
            ))
        } else if id % 15 == 1 {
            Reply::ok("unavailable").status(503)
        } else if id % 7 == 3 {
            Reply::ok(format!(r#"{{"id":{id},"result":"0x2"}}"#))
        } else {
            Reply::ok(format!(r#"{{"id":{id},"result":"0x1"}}"#))
        }
    });
    let (r, c) = (
        format!("ref={}", reference.url()),
        format!("cand={}", candidate.url()),
    );
    // One connection a core for three requests in flight: requests wait
    // for it (`Conn. wait:`).
    let args = [
        "-c",
        "3",
        "--threads",
        "1",
        "--max-connections",
        "1",
        &r,
        &c,
    ];
    let render = saved_run("run.jsonl", &args, &two_methods(600));
    let reports = Reports::of(&render);
    assert!(reports.text.contains("   Conn. wait: "), "{}", reports.text);
    reports.check_every_figure();
    let json: serde_json::Value = serde_json::from_str(&render("json")).unwrap();
    let md = render("markdown");
    let csv = render("csv");
    let html = render("html");

    let eps = json["endpoints"].as_array().unwrap();
    let csv_rows: Vec<Vec<String>> = csv
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    let col = |name: &str| csv_rows[0].iter().position(|c| c == name).unwrap();
    let md_mismatched = md_row(&md, "Mismatched");
    let html_mismatched = html_row(&html, "Mismatched");
    for (i, e) in eps.iter().enumerate() {
        // Mismatches per endpoint; the reference has none of its own.
        let csv_mismatched = &csv_rows[1 + i][col("mismatched")];
        if i == 0 {
            assert!(e["mismatched"].is_null());
            assert_eq!(csv_mismatched, "");
            assert_eq!(md_mismatched[i], "-");
            assert_eq!(html_mismatched[i], "-");
        } else {
            let n = e["mismatched"].as_u64().unwrap();
            assert!(n > 0);
            assert_eq!(csv_mismatched, &n.to_string());
            assert!(
                md_mismatched[i].starts_with(&format!("{n} (")),
                "{}",
                md_mismatched[i]
            );
            assert!(html_mismatched[i].starts_with(&format!("{n} (")));
        }
    }
    // The candidate's JSON-RPC and HTTP errors are there, by kind and by
    // method, in every format.
    let cand = &eps[1]["errors"]["kinds"];
    assert_eq!(cand["JSON-RPC error -32000"].as_u64(), Some(60), "{cand}");
    assert_eq!(cand["HTTP 503"].as_u64(), Some(40), "{cand}");
    let by_method = json["errors_by_method"].as_array().unwrap();
    let sum: u64 = by_method.iter().map(|g| g["count"].as_u64().unwrap()).sum();
    assert_eq!(sum, 100, "{by_method:?}");
    for g in by_method {
        let (method, kind, n) = (
            g["method"].as_str().unwrap(),
            g["kind"].as_str().unwrap(),
            g["count"].as_u64().unwrap(),
        );
        assert!(
            md.contains(&format!(
                "| {} | cand | {} | {n} |",
                versus::report::markdown::cell(method),
                versus::report::markdown::cell(kind)
            )),
            "markdown by method {method} {kind}\n{md}"
        );
        assert!(
            html.contains(&format!(
                "<td class=\"text\">{method}</td><td class=\"text\">cand</td><td class=\"text\">{kind}</td><td>{n}</td>"
            )),
            "html by method {method} {kind}"
        );
        assert!(
            csv_rows.iter().any(|r| r[col("part")] == "error by method"
                && r[col("name")] == format!("{method}: {kind}")
                && r[col("errors")] == n.to_string()),
            "csv by method {method} {kind}"
        );
    }
}

/// The durations in `text`: a number directly followed by `ns`, `µs`, `ms`
/// or `s` and no further letter.
fn durations(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = chars[i].is_ascii_digit()
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || "._#-".contains(chars[i - 1])));
        if !starts {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
            i += 1;
        }
        let rest: String = chars[i..].iter().take(3).collect();
        if let Some(unit) = ["ns", "µs", "ms", "s"]
            .iter()
            .find(|u| rest.starts_with(*u))
        {
            let end = i + unit.chars().count();
            if chars.get(end).is_none_or(|c| !c.is_alphanumeric()) {
                found.push(chars[start..end].iter().collect());
            }
        }
    }
    found
}

/// Every duration a person reads (the text report and its summary,
/// Markdown, HTML, compare, the dashboard's messages) shows at most four
/// significant digits: `Held back: 1.170497137s` once stood beside
/// `619.05932ms`, headers said `3.006005882s long`, the summary's
/// `422.36µs` stood under `0.000418s` per endpoint.
#[test]
fn every_duration_a_person_reads_has_at_most_four_significant_digits() {
    let fast =
        Server::start(|s| Reply::ok(format!(r#"{{"id":{},"result":"0x1"}}"#, id_of(&s.body))));
    let slow = Server::start(|s| {
        Reply::ok(format!(r#"{{"id":{},"result":"0x1"}}"#, id_of(&s.body)))
            .after(std::time::Duration::from_millis(3))
    });
    let (saved, html) = (temp("digits.jsonl"), temp("digits.html"));
    let (f, s) = (
        format!("fast={}", fast.url()),
        format!("slow={}", slow.url()),
    );
    let args = [
        "-q",
        "-c",
        "2",
        "-o",
        saved.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
        &f,
        &s,
    ];
    let run = run_bin(&args, &two_methods(200));
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let file = saved.to_str().unwrap();
    let mut shown = vec![("text", String::from_utf8(run.stdout).unwrap())];
    for (name, args) in [
        ("markdown", vec!["report", "--format", "markdown", file]),
        ("compare", vec!["compare", file, file]),
    ] {
        let out = run_bin(&args, b"");
        assert_eq!(out.status.code(), Some(0), "{name}");
        shown.push((name, String::from_utf8(out.stdout).unwrap()));
    }
    shown.push(("html", std::fs::read_to_string(&html).unwrap()));
    for (name, text) in &shown {
        let found = durations(text);
        assert!(found.len() > 5, "{name}: {found:?}");
        for d in found {
            let digits: String = d.chars().filter(char::is_ascii_digit).collect();
            let significant = digits.trim_start_matches('0').len();
            assert!(significant <= 4, "{name}: {d}\n{text}");
        }
    }
    assert!(shown[0].1.contains(" total run time"), "{}", shown[0].1);
}

#[test]
fn every_format_shows_the_faults_and_the_errors_they_caused() {
    let server = Server::start(|s| {
        if id_of(&s.body) % 5 == 0 {
            Reply::ok("busy").status(503)
        } else {
            Reply::ok("ok")
        }
    });
    let (r, c) = (
        format!("ref={}", server.url()),
        format!("cand={}", server.url()),
    );
    let render = saved_run(
        "faults.jsonl",
        &[
            "--fault",
            "cand=status 503 prob 0.3",
            "--fault",
            "cand=latency 1ms",
            &r,
            &c,
        ],
        &two_methods(300),
    );
    let json: serde_json::Value = serde_json::from_str(&render("json")).unwrap();
    let (text, md, csv, html) = (
        render("text"),
        render("markdown"),
        render("csv"),
        render("html"),
    );
    let csv_rows: Vec<Vec<String>> = csv
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    let col = |name: &str| csv_rows[0].iter().position(|c| c == name).unwrap();
    let cand = &json["endpoints"][1];
    assert_eq!(json["endpoints"][0]["faults"], serde_json::json!([]));
    // The faults set, how often each acted, what it is counted as.
    let faults = cand["faults"].as_array().unwrap();
    assert_eq!(faults.len(), 2, "{faults:?}");
    for f in faults {
        let (name, acted) = (f["fault"].as_str().unwrap(), f["acted"].as_u64().unwrap());
        assert!(acted > 0, "{name}");
        let counted = f["counted_as"].as_str();
        let note = counted.map_or(String::new(), |c| format!(" (counted as {c})"));
        assert!(
            text.contains(&format!("     {name}: {acted}{note}\n")),
            "text {name}\n{text}"
        );
        let counted = counted.unwrap_or("-");
        assert!(
            md.contains(&format!("| cand | {name} | {acted} | {counted} |")),
            "markdown {name}\n{md}"
        );
        assert!(
            html.contains(&format!(
                "<tr><td class=\"text\">cand</td><td class=\"text\">{name}</td><td>{acted}</td><td class=\"text\">{counted}</td></tr>"
            )),
            "html {name}"
        );
        assert!(
            csv_rows.iter().any(|r| r[col("label")] == "cand"
                && r[col("part")] == "fault"
                && r[col("name")] == name
                && r[col("acted")] == acted.to_string()),
            "csv {name}\n{csv}"
        );
    }
    // The errors by cause: the fault's and the endpoint's own, adding up
    // to the kind's count, the same in every format.
    let causes = cand["errors"]["causes"]["HTTP 503"].as_object().unwrap();
    let total = cand["errors"]["kinds"]["HTTP 503"].as_u64().unwrap();
    let injected = causes["fault status 503 prob 0.3"].as_u64().unwrap();
    let own = causes["endpoint"].as_u64().unwrap();
    assert_eq!(injected + own, total);
    // The server answered 503 to every 5th request that reached it.
    assert!(own > 0 && injected > 0, "{causes:?}");
    assert!(
        text.contains(&format!(
            "     HTTP 503: {total} (fault status 503 prob 0.3: {injected}, endpoint: {own})\n"
        )),
        "text\n{text}"
    );
    for (cause, n) in causes {
        let n = n.as_u64().unwrap();
        assert!(
            md.contains(&format!("| cand | HTTP 503 | {cause} | {n} |")),
            "markdown {cause}\n{md}"
        );
        assert!(
            html.contains(&format!(
                "<tr><td class=\"text\">cand</td><td class=\"text\">HTTP 503</td><td class=\"text\">{cause}</td><td>{n}</td></tr>"
            )),
            "html {cause}"
        );
        assert!(
            csv_rows.iter().any(|r| r[col("label")] == "cand"
                && r[col("part")] == "error cause"
                && r[col("name")] == format!("HTTP 503: {cause}")
                && r[col("errors")] == n.to_string()),
            "csv {cause}\n{csv}"
        );
    }
}

/// A scenario of two steps: log in, then read the order the token names.
const ORDERS: &str = r#"
[[step]]
name = "login"
method = "POST"
path = "/login"
json = { user = "ann" }
extract = { token = "$.token" }
check = { status = 200 }

[[step]]
name = "read"
path = "/orders/{{ token }}"
check = { "$.state" = { exists = true } }
"#;

/// The orders service of [`ORDERS`]; the order's state is `state`, and
/// every `fail_every`th read answers 500 (never, at 0).
fn orders(state: &'static str, fail_every: u64) -> Server {
    let reads = AtomicU64::new(0);
    Server::start(move |s| match s.path.as_str() {
        "/login" => Reply::ok(r#"{"token":"t1"}"#),
        "/orders/t1" => {
            let n = reads.fetch_add(1, Ordering::Relaxed) + 1;
            if fail_every > 0 && n % fail_every == 0 {
                Reply::ok("{}").status(500)
            } else {
                Reply::ok(format!(r#"{{"state":"{state}"}}"#))
            }
        }
        _ => Reply::ok("{}").status(404),
    })
}

#[test]
fn every_format_shows_every_figure_of_a_scenario_run() {
    let (a, b) = (orders("new", 0), orders("old", 4));
    let file = scenario_file("formats-orders.toml", ORDERS);
    let (a, b) = (format!("a={}", a.url()), format!("b={}", b.url()));
    let args = [
        "run",
        file.to_str().unwrap(),
        "-c",
        "2",
        "--stop-after",
        "40",
        &a,
        &b,
    ];
    // Flows, steps, a mismatch group, a step's errors.
    let shown = [
        "   Flows:",
        "   Steps:",
        "by method and field",
        "Errors by method",
    ];
    reports_showing("scenario.jsonl", &args, b"", &shown).check_every_figure();
}

#[test]
fn every_format_shows_every_figure_of_a_pagination_run() {
    use versus::demo::catalog::{self, Catalog, Plants};
    let c = catalog::start(Catalog {
        items: 300,
        depth_cost: std::time::Duration::ZERO,
        plants: Plants::default(),
    })
    .unwrap();
    let file = scenario_file(
        "formats-pages.toml",
        r#"
[[step]]
name = "items"
path = "/items?page=0&size=40"
paginate = { items = "$.content", key = "id", next = "$._links.next.href" }
rules = { ignore = ["$.items.*._links"] }

[step.endpoint.stream]
path = "/items?limit=30"
paginate = { items = "$.items", cursor = "$.next_cursor", param = "after" }
"#,
    );
    let (h, s) = (
        format!("hateoas={}hateoas/", c.url()),
        format!("stream={}stream/", c.url()),
    );
    let args = [
        "run",
        file.to_str().unwrap(),
        "-c",
        "1",
        "--stop-after",
        "3",
        &h,
        &s,
    ];
    let shown = ["** Pages of step items:", "   Improvements:"];
    reports_showing("pages.jsonl", &args, b"", &shown).check_every_figure();
}

#[test]
fn every_format_shows_every_figure_of_a_grpc_run() {
    use grpc_server::{items_proto, GrpcServer, Options};
    let cert = TestCert::new();
    let (plain, tls) = (
        GrpcServer::start(Options::default()),
        GrpcServer::start_tls(Options::default(), cert.server_config(&[b"h2"])),
    );
    let proto = items_proto();
    let pem = cert.pem_file();
    let (p, t) = (
        format!("plain={}", plain.url("GetItem")),
        format!(
            "tls=grpcs://127.0.0.1:{}/items.Items/GetItem",
            tls.addr.port()
        ),
    );
    let input: String = (0..40)
        .map(|i| match i % 5 {
            0 => "{\"id\": \"missing\"}\n".to_string(),
            _ => format!("{{\"id\": \"{i}\"}}\n"),
        })
        .collect();
    let args = [
        "--proto",
        proto.to_str().unwrap(),
        "--cacert",
        pem.to_str().unwrap(),
        "-c",
        "2",
        &p,
        &t,
    ];
    // gRPC statuses by code name, TLS handshakes at one endpoint.
    let shown = ["gRPC NOT_FOUND: 8", "   TLS:        "];
    reports_showing("grpc.jsonl", &args, input.as_bytes(), &shown).check_every_figure();
}

#[test]
fn every_format_shows_every_figure_of_an_open_model_run() {
    let (a, b) = (
        Server::start(|_| Reply::ok("{}")),
        Server::start(|_| Reply::ok("{}").after(Duration::from_millis(2))),
    );
    let (a, b) = (format!("a={}", a.url()), format!("b={}", b.url()));
    let args = ["--rate", "200", &a, &b];
    let shown = ["   Rate:       200", "   Uncorrected: ", "   Send lag:   "];
    reports_showing("open.jsonl", &args, &two_methods(200), &shown).check_every_figure();
}

#[test]
fn every_format_shows_the_load_of_a_staged_run_in_both_models() {
    let (a, b) = (
        Server::start(|_| Reply::ok("{}")),
        Server::start(|_| Reply::ok("{}").after(Duration::from_millis(2))),
    );
    let (a, b) = (format!("a={}", a.url()), format!("b={}", b.url()));
    let open = ["--stages", "1s:50..250/s", &a, &b];
    let shown = [
        "   Stages:     1s:50..250/s",
        "   Offered:    150.00 per second",
    ];
    reports_showing("staged-open.jsonl", &open, &two_methods(400), &shown).check_every_figure();
    let sweep = [
        "--sweep",
        "100,200/s",
        "--step-duration",
        "1s",
        "--settle",
        "0s",
        &a,
        &b,
    ];
    let shown = [
        "   Sweep:      100, 200/s, each 1s after 0s settling",
        "   Offered:    150.00",
    ];
    reports_showing("sweep.jsonl", &sweep, &two_methods(400), &shown).check_every_figure();
    let closed = ["--stages", "1s:1..3", &a, &b];
    let shown = ["   Stages:     1s:1..3", "   Users:      "];
    reports_showing("staged-closed.jsonl", &closed, &two_methods(400), &shown).check_every_figure();
}

/// `--format csv` on a run prints on stdout, as the other formats do, the
/// CSV that `versus report --format csv` makes of the saved run.
#[test]
fn a_run_prints_its_csv_as_its_saved_run_gives_it() {
    let (a, b) = (
        Server::start(|s| Reply::ok(format!(r#"{{"id":{},"result":"0x1"}}"#, id_of(&s.body)))),
        Server::start(|s| Reply::ok(format!(r#"{{"id":{},"result":"0x2"}}"#, id_of(&s.body)))),
    );
    let (a, b) = (format!("a={}", a.url()), format!("b={}", b.url()));
    let saved = temp("live-csv.jsonl");
    let f = saved.to_str().unwrap();
    let live = run_bin(&["--format", "csv", "-q", "-o", f, &a, &b], &lines(40));
    assert_eq!(
        live.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&live.stderr)
    );
    let live = String::from_utf8(live.stdout).unwrap();
    assert!(live.starts_with("label,url,rps,"), "{live}");
    assert!(live.lines().nth(2).unwrap().starts_with("b,"), "{live}");
    let again = run_bin(&["report", "--format", "csv", f], b"");
    assert_eq!(String::from_utf8(again.stdout).unwrap(), live);
}

#[test]
fn every_format_shows_what_was_judged_on_the_cores_compared_as_bytes_and_malformed() {
    let reference = Server::start(|s| Reply::ok(format!(r#"{{"id":{}}}"#, id_of(&s.body))));
    let candidate = Server::start(|s| match id_of(&s.body) % 3 {
        0 => Reply::ok("not json"),
        1 => Reply::ok(r#"{"id":-1}"#),
        _ => Reply::ok(format!(r#"{{"id":{}}}"#, id_of(&s.body))),
    });
    let (r, c) = (
        format!("ref={}", reference.url()),
        format!("cand={}", candidate.url()),
    );
    // No room for the judge thread: every differing answer is judged on
    // its core. One line too long for --max-line is skipped.
    let log = temp("on-core-mismatches.jsonl");
    let args = [
        "--judge-memory",
        "1",
        "--max-line",
        "200",
        "--mismatches",
        log.to_str().unwrap(),
        &r,
        &c,
    ];
    let mut input = two_methods(90);
    input.extend_from_slice(format!("{}\n", "x".repeat(300)).as_bytes());
    let shown = [
        "   As bytes:   30 requests",
        "   Judged on a timing core: 60 requests (",
        "   Input:      90 requests read, 1 malformed",
        "   Logged:     60 of 60 mismatched requests written",
    ];
    reports_showing("on-core.jsonl", &args, &input, &shown).check_every_figure();
}

#[test]
fn every_format_shows_what_a_stop_left_unjudged() {
    let saved = temp("stopped-judging.jsonl");
    let out = stopped_while_judging(&["-q", "-o", saved.to_str().unwrap()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reports = Reports::of(rendered(saved));
    for s in [
        "   Judge queue peak: ",
        "   Not judged: ",
        "   Stopped:    ",
    ] {
        assert!(reports.text.contains(s), "{s:?}\n{}", reports.text);
    }
    reports.check_every_figure();
}

#[test]
fn every_format_shows_the_noise_of_a_two_copy_reference() {
    let clock = std::sync::Arc::new(AtomicU64::new(0));
    let (c1, c2) = (clock.clone(), clock.clone());
    // Every answer carries a fresh timestamp: only noise. The reference's
    // `value` sometimes differs between its two answers, and the
    // candidate's every 10th request: noisy, and also really different.
    let reference = Server::start(move |s| {
        let ts = c1.fetch_add(1, Ordering::SeqCst);
        let value = if ts % 7 == 0 { "0x0" } else { "0x1" };
        Reply::ok(format!(
            r#"{{"id":{},"value":"{value}","ts":{ts}}}"#,
            id_of(&s.body)
        ))
    });
    let candidate = Server::start(move |s| {
        let ts = c2.fetch_add(1, Ordering::SeqCst);
        let id = id_of(&s.body);
        let value = if id % 10 == 0 { "0x2" } else { "0x1" };
        Reply::ok(format!(r#"{{"id":{id},"value":"{value}","ts":{ts}}}"#))
    });
    let (r, c) = (
        format!("ref={}", reference.url()),
        format!("new={}", candidate.url()),
    );
    let args = ["--noise", "--warmup", "10", "-c", "2", &r, &c];
    let shown = [
        "   Warm-up:    10 requests sent first",
        "   Noise:      ",
        "     noisy fields",
        "     fields that are noisy and also really differ",
    ];
    reports_showing("noise.jsonl", &args, &two_methods(300), &shown).check_every_figure();
}
