//! A flow's figures in every report: a flow run through the library
//! against two in-process shops is saved with the results writer, read
//! back, and reported as text, JSON, Markdown, CSV and HTML; each shows
//! every step's figures and the successful instances as the statistics
//! hold them. `versus compare` of two saved flow runs lists the steps.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::Parser;
use common::{Reply, Server};
use hdrhistogram::Histogram;
use versus::cli::{Cli, CompareArgs, ReportArgs};
use versus::commands::{self, OutputFiles};
use versus::engine::{self, RunOutput, Stop, Workload};
use versus::flow::{Call, Flow};
use versus::plan::Plan;
use versus::report::{csv, html, markdown};
use versus::stats::RunStats;

/// The step whose name needs escaping in HTML and Markdown.
const ADD: &str = "add <item>";

/// Instances per run.
const INSTANCES: u64 = 40;

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("versus-flow-reports-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// A shop: `POST /login` hands out a token of its own (`prefix`), `POST
/// /cart` takes it and answers instance n's cart holding `item(n)` (or a
/// 500 when `fails(n)`), `GET /pay/N` pays cart N. A request without the
/// value the earlier answer gave is refused with 403.
fn shop(prefix: &'static str, item: fn(u64) -> &'static str, fails: fn(u64) -> bool) -> Server {
    Server::start(move |seen| {
        let refused = || Reply::ok("{}").status(403);
        match (seen.method.as_str(), seen.path.as_str()) {
            ("POST", "/login") => {
                let v: serde_json::Value = serde_json::from_slice(&seen.body).unwrap();
                Reply::ok(format!(r#"{{"token":"{prefix}-{}"}}"#, v["user"]))
            }
            ("POST", "/cart") => {
                let auth = seen
                    .headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                let n = auth
                    .strip_prefix(&format!("Bearer {prefix}-"))
                    .and_then(|n| n.parse::<u64>().ok());
                match n {
                    Some(n) if fails(n) => Reply::ok(r#"{"error":"full"}"#).status(500),
                    Some(n) => Reply::ok(format!(r#"{{"cart":"{n}","item":"{}"}}"#, item(n))),
                    None => refused(),
                }
            }
            ("GET", path) => match path.strip_prefix("/pay/").map(str::parse::<u64>) {
                Some(Ok(n)) => Reply::ok(format!(r#"{{"paid":"{n}"}}"#)),
                _ => refused(),
            },
            _ => refused(),
        }
    })
}

/// The reference shop, and a candidate that puts another item in odd
/// carts and fails every fifth cart.
fn shops() -> (Server, Server) {
    (
        shop("A", |_| "book", |_| false),
        shop(
            "B",
            |n| if n % 2 == 1 { "pen" } else { "book" },
            |n| n % 5 == 0,
        ),
    )
}

/// Log in, put an item in the cart with the token, pay the cart.
fn cart_flow() -> Flow {
    Flow::new("cart")
        .step("login", |ctx| async move {
            Ok(Call::post("/login").json(&serde_json::json!({ "user": ctx.instance })))
        })
        .step(ADD, |ctx| async move {
            let token = ctx.last()?.json_str("/token")?;
            Call::post("/cart")
                .header("authorization", &format!("Bearer {token}"))
                .map(|c| c.body("{}"))
        })
        .step("pay", |ctx| async move {
            let cart = ctx.last()?.json_str("/cart")?;
            Ok(Call::get(format!("/pay/{cart}")))
        })
}

/// Run the flow against `shops` and save it to `file` with the results
/// writer, as the binary does with `-o`.
fn save_flow_run(shops: &(Server, Server), file: &Path) -> RunOutput {
    let (a, b) = (
        format!("ref={}", shops.0.url()),
        format!("cand={}", shops.1.url()),
    );
    let stop_after = INSTANCES.to_string();
    let argv = [
        "versus",
        "-c",
        "4",
        "--stop-after",
        &stop_after,
        "--ignore",
        "$.token",
        "-o",
        file.to_str().unwrap(),
        &a,
        &b,
    ];
    let cli = Cli::try_parse_from(argv).expect("arguments");
    let plan = Arc::new(Plan::from_args(&cli.run, false).expect("plan"));
    let argv: Vec<String> = argv.iter().map(ToString::to_string).collect();
    let mut live = OutputFiles::prepare(&cli.run, &plan, &argv).expect("outputs");
    let input = live
        .attach(Workload::Flow(Arc::new(cart_flow())))
        .expect("output files");
    let out = live
        .observe(&mut engine::Quiet, |o| {
            engine::run(&plan.engine, input, &Stop::new(), o)
        })
        .expect("run");
    live.finish(&mut Vec::new(), &out).expect("finish");
    out
}

/// `versus report --format FORMAT FILE`.
fn report(file: &Path, format: &str) -> String {
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let args = ReportArgs {
        files: vec![file.to_path_buf()],
        format: format.into(),
        thresholds: Vec::new(),
        junit: None,
    };
    let code = commands::report(&args, &mut out, &mut err);
    assert_eq!(code.code(), 0, "{}", String::from_utf8_lossy(&err));
    String::from_utf8(out).unwrap()
}

/// What a report shows of a flow: per (endpoint, step) the requests,
/// errors, failed checks, not built, skipped and mismatched, and the p99
/// as the format writes it; per endpoint the instances and the
/// successful ones.
#[derive(Debug, Default, PartialEq)]
struct Shown {
    steps: BTreeMap<(String, String), ([u64; 6], String)>,
    flows: BTreeMap<String, (u64, u64)>,
}

/// What a format should show of `stats`, its step names written with
/// `name` and p99s with `p99`.
fn expected(
    stats: &RunStats,
    labels: &[&str],
    name: fn(&str) -> String,
    p99: fn(&Histogram<u64>) -> String,
) -> Shown {
    let mut shown = Shown::default();
    for (label, s) in labels.iter().zip(&stats.endpoints) {
        for p in &s.steps {
            let counts = [
                p.requests,
                p.errors,
                p.failed_checks,
                p.not_built,
                p.skipped,
                p.mismatched,
            ];
            shown.steps.insert(
                (label.to_string(), name(&p.name)),
                (counts, p99(&p.latency)),
            );
        }
        shown
            .flows
            .insert(label.to_string(), (s.flows.instances, s.flows.succeeded));
    }
    shown
}

fn number(s: &str) -> u64 {
    s.trim()
        .parse()
        .unwrap_or_else(|_| panic!("not a count: {s:?}"))
}

/// The text report: per endpoint block its `Flows:` line and `Steps:`
/// table.
fn text_shown(report: &str, labels: &[&str], names: &[&str]) -> Shown {
    let mut shown = Shown::default();
    let mut label = "";
    for line in report.lines() {
        if let Some(l) = labels.iter().find(|l| {
            line.split_once(". ")
                .is_some_and(|(i, rest)| i.parse::<usize>().is_ok() && rest.starts_with(*l))
        }) {
            label = l;
        }
        if let Some(rest) = line.strip_prefix("   Flows:      ") {
            let words: Vec<&str> = rest.split_whitespace().collect();
            shown
                .flows
                .insert(label.into(), (number(words[0]), number(words[2])));
        }
        let row = line.strip_prefix("     ").map(str::trim_start);
        let Some((name, rest)) =
            row.and_then(|r| names.iter().find_map(|n| Some((*n, r.strip_prefix(n)?))))
        else {
            continue;
        };
        let cells: Vec<&str> = rest.split_whitespace().collect();
        if cells.len() != 8 {
            continue;
        }
        let counts = [cells[0], cells[1], cells[4], cells[5], cells[6], cells[7]].map(number);
        shown
            .steps
            .insert((label.into(), name.into()), (counts, cells[3].to_string()));
    }
    shown
}

/// The JSON report: `endpoints[].steps` and `endpoints[].flows`.
fn json_shown(report: &str) -> Shown {
    let v: serde_json::Value = serde_json::from_str(report).unwrap();
    let mut shown = Shown::default();
    for e in v["endpoints"].as_array().unwrap() {
        let label = e["label"].as_str().unwrap().to_string();
        for p in e["steps"].as_array().unwrap() {
            let counts = [
                "requests",
                "errors",
                "failed_checks",
                "not_built",
                "skipped",
                "mismatched",
            ]
            .map(|k| p[k].as_u64().unwrap());
            shown.steps.insert(
                (label.clone(), p["name"].as_str().unwrap().to_string()),
                (counts, p["latency_ms"]["p99"].to_string()),
            );
        }
        let f = &e["flows"];
        shown.flows.insert(
            label,
            (
                f["instances"].as_u64().unwrap(),
                f["succeeded"].as_u64().unwrap(),
            ),
        );
    }
    shown
}

/// The body rows of the Markdown table under `heading`, as cells.
fn markdown_rows<'a>(report: &'a str, heading: &str) -> Vec<Vec<&'a str>> {
    let start = report
        .find(heading)
        .unwrap_or_else(|| panic!("no {heading:?} in\n{report}"));
    report[start + heading.len()..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|l| l.trim_matches('|').split(" | ").map(str::trim).collect())
        .collect()
}

/// The Markdown report: the `## Flows` and `## Steps` tables.
fn markdown_shown(report: &str) -> Shown {
    tables_shown(
        markdown_rows(report, "## Flows\n"),
        markdown_rows(report, "## Steps\n"),
    )
}

/// The rows of a flows table (endpoint, instances, `successful (share)`,
/// ...) and of a steps table (step, endpoint, requests, errors, p50, p99,
/// failed checks, not built, skipped, mismatched), as the Markdown and
/// HTML reports lay them out.
fn tables_shown(flows: Vec<Vec<&str>>, steps: Vec<Vec<&str>>) -> Shown {
    let mut shown = Shown::default();
    for r in flows {
        let ok = r[2].split_whitespace().next().unwrap();
        shown
            .flows
            .insert(r[0].to_string(), (number(r[1]), number(ok)));
    }
    for r in steps {
        let counts = [r[2], r[3], r[6], r[7], r[8], r[9]].map(number);
        shown.steps.insert(
            (r[1].to_string(), r[0].to_string()),
            (counts, r[5].to_string()),
        );
    }
    shown
}

/// The CSV report: rows whose `part` is `step` or `flow`.
fn csv_shown(report: &str) -> Shown {
    let mut lines = report.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let mut shown = Shown::default();
    for line in lines {
        let cells: Vec<&str> = line.split(',').collect();
        assert_eq!(cells.len(), header.len(), "{line}");
        let at = |column: &str| cells[header.iter().position(|c| *c == column).unwrap()];
        match at("part") {
            "step" => {
                let counts = [
                    "completed",
                    "errors",
                    "failed_checks",
                    "not_built",
                    "skipped",
                    "mismatched",
                ]
                .map(|c| number(at(c)));
                shown.steps.insert(
                    (at("label").to_string(), at("name").to_string()),
                    (counts, at("p99_ms").to_string()),
                );
            }
            "flow" => {
                shown.flows.insert(
                    at("label").to_string(),
                    (number(at("instances")), number(at("succeeded"))),
                );
            }
            _ => {}
        }
    }
    shown
}

/// The cells of each row of the HTML table with the element id `id`.
fn html_rows<'a>(page: &'a str, id: &str) -> Vec<Vec<&'a str>> {
    let start = page
        .find(&format!("<table id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no table {id}"));
    let end = start + page[start..].find("</table>").unwrap();
    page[start..end]
        .split("<tr>")
        .filter(|r| r.contains("<td"))
        .map(|r| {
            r.split("<td")
                .skip(1)
                .map(|c| &c[c.find('>').unwrap() + 1..c.find("</td>").unwrap()])
                .collect()
        })
        .collect()
}

/// The HTML report: the `flows` and `steps` tables.
fn html_shown(page: &str) -> Shown {
    tables_shown(html_rows(page, "flows"), html_rows(page, "steps"))
}

#[test]
fn every_report_format_shows_each_steps_figures_of_a_saved_flow_run() {
    let shops = shops();
    let file = temp("flow.jsonl");
    let live = save_flow_run(&shops, &file);
    let saved = versus::results::load(&[&file]).expect("saved run");
    let stats = &saved.output.stats;
    let labels = ["ref", "cand"];

    // The run is what the shops planted, and the file kept it.
    let cand = &stats.endpoints[1];
    assert_eq!((cand.flows.instances, cand.flows.succeeded), (40, 32));
    let step = |name: &str| cand.steps.iter().find(|p| p.name == name).unwrap();
    assert_eq!((step(ADD).errors, step(ADD).requests), (8, 40));
    assert_eq!((step("pay").requests, step("pay").skipped), (32, 8));
    assert!(step(ADD).mismatched >= 20, "{:?}", step(ADD));
    assert_eq!(stats.endpoints[0].flows.succeeded, 40);
    for (a, b) in live.stats.endpoints.iter().zip(&stats.endpoints) {
        assert_eq!(
            a.steps
                .iter()
                .map(|p| (&p.name, p.requests, p.mismatched))
                .collect::<Vec<_>>(),
            b.steps
                .iter()
                .map(|p| (&p.name, p.requests, p.mismatched))
                .collect::<Vec<_>>()
        );
    }

    let same = |s: &str| s.to_string();
    let names = ["login", ADD, "pay"];
    let text = report(&file, "text");
    assert_eq!(
        text_shown(&text, &labels, &names),
        expected(stats, &labels, same, |h| {
            versus::report::seconds(h.value_at_percentile(99.0))
        }),
        "{text}"
    );
    let json = report(&file, "json");
    assert_eq!(
        json_shown(&json),
        expected(stats, &labels, same, |h| {
            let us = h.value_at_quantile(0.99) as f64;
            serde_json::json!((us * 1000.0).round() / 1e6).to_string()
        }),
        "{json}"
    );
    let md = report(&file, "markdown");
    assert_eq!(
        markdown_shown(&md),
        expected(stats, &labels, markdown::cell, |h| versus::report::latency(
            h, 0.99
        )),
        "{md}"
    );
    let csv_report = report(&file, "csv");
    assert_eq!(
        csv_shown(&csv_report),
        expected(stats, &labels, csv::field, |h| {
            format!("{:.3}", h.value_at_quantile(0.99) as f64 / 1000.0)
        }),
        "{csv_report}"
    );
    let page = report(&file, "html");
    assert_eq!(
        html_shown(&page),
        expected(stats, &labels, html::escape, |h| {
            html::escape(&versus::report::latency(h, 0.99))
        }),
        "{page}"
    );
    assert!(!page.contains("<item>"), "a step name is escaped");
    assert!(!page.contains("id=\"methods\""), "a flow has no methods");
}

#[test]
fn compare_of_two_saved_flow_runs_lists_each_step() {
    let shops = shops();
    let (first, second) = (temp("before.jsonl"), temp("after.jsonl"));
    save_flow_run(&shops, &first);
    save_flow_run(&shops, &second);
    for format in ["text", "markdown"] {
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let args = CompareArgs {
            files: vec![first.clone(), second.clone()],
            format: format.into(),
        };
        assert_eq!(commands::compare(&args, &mut out, &mut err).code(), 0);
        let table = String::from_utf8(out).unwrap();
        let name = |n: &str| {
            if format == "markdown" {
                markdown::cell(n)
            } else {
                n.to_string()
            }
        };
        for step in ["login", ADD, "pay"] {
            for metric in ["p50", "p99", "errors"] {
                let row = format!("step {} {metric}", name(step));
                assert_eq!(
                    table.matches(&row).count(),
                    2,
                    "{row:?} once per endpoint:\n{table}"
                );
            }
        }
        // The candidate failed 8 of 40 carts in both runs.
        let cand = &table[table.find("endpoint cand").unwrap()..];
        let errors = cand
            .lines()
            .find(|l| l.contains(&format!("step {} errors", name(ADD))))
            .unwrap();
        assert_eq!(errors.matches("20.00%").count(), 2, "{errors}");
        assert!(errors.contains("+0.00 pp"), "{errors}");
        assert!(
            table.contains("Step and method rows (matched by name) compare the runs' totals"),
            "{table}"
        );
    }
}
