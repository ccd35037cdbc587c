//! One saved run, every report format: text, JSON, Markdown, CSV and HTML
//! render the same computed figures (rates, percentiles, errors by kind,
//! mismatches per endpoint). JSON-RPC errors once showed in the text
//! report alone, and CSV gave the reference a mismatch count of its own.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::*;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("versus-formats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Run versus with `args` on `input`, saving the run to `name`; a
/// function rendering the saved run in a format.
fn saved_run(name: &str, args: &[&str], input: &[u8]) -> impl Fn(&str) -> String {
    let saved = temp(name);
    let mut all = vec!["-q", "-o", saved.to_str().unwrap()];
    all.extend(args);
    let out = run_bin(&all, input);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    move |format: &str| {
        let out = run_bin(
            &["report", "--format", format, saved.to_str().unwrap()],
            b"",
        );
        assert_eq!(out.status.code(), Some(0), "{format}");
        String::from_utf8(out.stdout).unwrap()
    }
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

/// A latency as the formats print it (`850µs`, `1.250ms`, `0.0012s`), in µs.
fn micros(s: &str) -> f64 {
    let s = s.trim();
    let (n, scale) = if let Some(n) = s.strip_suffix("µs") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix("ms") {
        (n, 1e3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e6)
    } else {
        panic!("not a latency: {s:?}")
    };
    n.parse::<f64>().unwrap_or_else(|_| panic!("{s:?}")) * scale
}

/// Two latencies printed with different precision are the same figure.
fn same_latency(a: f64, b: f64, what: &str) {
    assert!(
        (a - b).abs() <= 1.0 + a.abs() * 0.001,
        "{what}: {a} µs against {b} µs"
    );
}

/// The cells of the Markdown row named `name`.
fn md_row(md: &str, name: &str) -> Vec<String> {
    let line = md
        .lines()
        .find(|l| l.starts_with(&format!("| {name} |")))
        .unwrap_or_else(|| panic!("no row {name:?}:\n{md}"));
    line.trim_matches('|')
        .split('|')
        .skip(1)
        .map(|c| c.trim().to_string())
        .collect()
}

/// The cells of the HTML row whose first cell is `name`.
fn html_row(html: &str, name: &str) -> Vec<String> {
    let start = format!("<tr><td>{name}</td>");
    let at = html
        .find(&start)
        .or_else(|| html.find(&format!("<tr><td class=\"text\">{name}</td>")))
        .unwrap_or_else(|| panic!("no row {name:?}"));
    let row = &html[at..at + html[at..].find("</tr>").unwrap()];
    row.split("<td")
        .skip(2)
        .map(|c| {
            let c = &c[c.find('>').unwrap() + 1..];
            c.trim_end_matches("</td>").to_string()
        })
        .collect()
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
    let render = saved_run("run.jsonl", &["-c", "3", &r, &c], &two_methods(600));
    let json: serde_json::Value = serde_json::from_str(&render("json")).unwrap();
    let text = render("text");
    let md = render("markdown");
    let csv = render("csv");
    let html = render("html");

    let eps = json["endpoints"].as_array().unwrap();
    let csv_rows: Vec<Vec<String>> = csv
        .lines()
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    let col = |name: &str| csv_rows[0].iter().position(|c| c == name).unwrap();
    let text_rates: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("   Requests:   "))
        .collect();
    let text_p = |p: &str| -> Vec<f64> {
        text.lines()
            .filter_map(|l| l.trim().strip_prefix(&format!("{p}% in ")))
            .map(micros)
            .collect()
    };
    let (text_p50, text_p99) = (text_p("50"), text_p("99"));
    let md_rates = md_row(&md, "Requests per second");
    let html_rates = html_row(&html, "Requests per second");
    let md_p99 = md_row(&md, "Latency p99");
    let html_p99 = html_row(&html, "Latency p99");
    // The HTML summary once had p90 but not p95.
    let (md_p95, html_p95) = (md_row(&md, "Latency p95"), html_row(&html, "Latency p95"));
    let md_mismatched = md_row(&md, "Mismatched");
    let html_mismatched = html_row(&html, "Mismatched");
    for (i, e) in eps.iter().enumerate() {
        let label = e["label"].as_str().unwrap();
        // Rates: one figure, one format.
        let rate = versus::report::rate(e["rps"].as_f64().unwrap());
        assert_eq!(text_rates[i], format!("{rate} per second"), "{label}");
        assert_eq!(md_rates[i], rate, "{label}");
        assert_eq!(html_rates[i], rate, "{label}");
        let row = &csv_rows[1 + i];
        assert_eq!(row[col("label")], label);
        assert_eq!(row[col("rps")], rate, "{label}");
        // Percentiles.
        let p50 = e["latency_ms"]["p50"].as_f64().unwrap() * 1000.0;
        let p99 = e["latency_ms"]["p99"].as_f64().unwrap() * 1000.0;
        same_latency(text_p50[i], p50, "text p50");
        same_latency(text_p99[i], p99, "text p99");
        same_latency(
            row[col("p99_ms")].parse::<f64>().unwrap() * 1000.0,
            p99,
            "csv p99",
        );
        same_latency(micros(&md_p99[i]), p99, "markdown p99");
        same_latency(micros(&html_p99[i]), p99, "html p99");
        let p95 = e["latency_ms"]["p95"].as_f64().unwrap() * 1000.0;
        same_latency(micros(&md_p95[i]), p95, "markdown p95");
        same_latency(micros(&html_p95[i]), p95, "html p95");
        // Errors by kind: the same kinds and counts everywhere.
        let kinds: BTreeMap<String, u64> = e["errors"]["kinds"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect();
        let total: u64 = kinds.values().sum();
        assert_eq!(total, e["errors"]["count"].as_u64().unwrap(), "{label}");
        let csv_kinds: BTreeMap<String, u64> = csv_rows
            .iter()
            .filter(|r| r[col("label")] == label && r[col("part")] == "error")
            .map(|r| (r[col("name")].clone(), r[col("errors")].parse().unwrap()))
            .collect();
        assert_eq!(csv_kinds, kinds, "csv {label}");
        for (kind, n) in &kinds {
            assert!(
                text.contains(&format!("     {kind}: {n}\n")),
                "text {kind}\n{text}"
            );
            let shown = versus::report::markdown::cell(kind);
            assert_eq!(md_row(&md, &shown)[i], n.to_string(), "markdown {kind}");
            assert_eq!(html_row(&html, kind)[i], n.to_string(), "html {kind}");
        }
        // Mismatches per endpoint; the reference has none of its own.
        let csv_mismatched = &row[col("mismatched")];
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
