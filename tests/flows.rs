//! Flows and the out-of-order engine: a hung request holds one place and
//! nothing behind it waits; the reported rate is completed requests over
//! the time the endpoint could send; flow instances run per endpoint with
//! that endpoint's own values, are judged step by step, and a step that
//! fails at one endpoint skips its later steps there.

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use common::{Reply, Server};
use versus::engine::{self, Observer, RunOutput, Workload};
use versus::flow::{Call, Flow, StepError};
use versus::plan::Plan;
use versus::stats::RunStats;

/// A server that answers at once, except its `hang`-th request (from 1),
/// which it holds for ten seconds.
fn hanging_server(hang: u64) -> Server {
    let n = AtomicU64::new(0);
    Server::start(move |_| {
        let i = n.fetch_add(1, Ordering::Relaxed) + 1;
        let reply = Reply::ok("ok");
        if i == hang {
            reply.after(Duration::from_secs(10))
        } else {
            reply
        }
    })
}

/// Requests completed per endpoint in each interval.
#[derive(Default)]
struct PerInterval(Vec<Vec<u64>>);

impl Observer for PerInterval {
    fn interval(&mut self, _index: u64, delta: &RunStats, _total: &RunStats) {
        self.0
            .push(delta.endpoints.iter().map(|e| e.completed()).collect());
    }
}

/// The plan of `args`, to adjust before it runs.
fn parse(args: &[&str]) -> Plan {
    let mut argv = vec!["versus"];
    argv.extend_from_slice(args);
    let cli = versus::cli::Cli::try_parse_from(argv).expect("arguments");
    Plan::from_args(&cli.run, false).expect("plan")
}

fn plan(args: &[&str]) -> Arc<Plan> {
    Arc::new(parse(args))
}

/// Single-request mode's input: the plan's request, over and over.
fn repeated(plan: &Plan) -> Workload {
    match &plan.mode {
        versus::plan::RequestMode::Single(r) => Workload::Repeat(r.clone()),
        versus::plan::RequestMode::Stream => panic!("single-request mode expected"),
    }
}

fn run(plan: &Arc<Plan>, input: Workload, observer: &mut dyn Observer) -> RunOutput {
    engine::run(&plan.engine, input, &engine::Stop::new(), observer).expect("run")
}

/// A single-request run (`--method GET`) of `args`, watched by `observer`.
fn single(args: &[&str], observer: &mut dyn Observer) -> (Arc<Plan>, RunOutput) {
    let mut all = vec!["--method", "GET"];
    all.extend_from_slice(args);
    let plan = plan(&all);
    let out = run(&plan, repeated(&plan), observer);
    (plan, out)
}

/// The rate an endpoint reports against what it completed over the run:
/// the 6 s of `--stop-after` (the hung request is in flight until the
/// stop), held-back time included (the report shows it beside the rate).
fn assert_rate_is_completed_over_the_run(out: &RunOutput, e: usize) {
    let s = &out.stats.endpoints[e];
    let sending = 6.0;
    let truth = s.completed() as f64 / sending;
    let off = (s.rate() - truth).abs() / truth;
    assert!(
        off < 0.03,
        "endpoint {e}: rate {:.1}/s, completed {} over {sending:.3} s = {truth:.1}/s",
        s.rate(),
        s.completed()
    );
}

/// Every interval after the hang began kept completing requests: none is
/// below a tenth of the busiest (the last, cut short by the stop, aside).
/// Before the engine judged out of order, they dropped to nothing.
fn assert_no_stall(intervals: &[Vec<u64>], e: usize) {
    let counts: Vec<u64> = intervals.iter().map(|i| i[e]).collect();
    let full = &counts[..counts.len().min(6)];
    let best = *full.iter().max().unwrap();
    assert!(
        full.iter().all(|&n| n * 10 >= best),
        "endpoint {e} stalled: completed per interval {counts:?}"
    );
}

#[test]
fn a_request_held_ten_seconds_holds_nothing_behind_it() {
    let server = hanging_server(100);
    let url = server.url();
    let mut seen = PerInterval::default();
    let (_, out) = single(
        &["--threads", "1", "-c", "50", "--stop-after", "6s", &url],
        &mut seen,
    );
    let s = &out.stats.endpoints[0];
    assert!(s.completed() > 2_000, "only {} completed", s.completed());
    assert_eq!(s.abandoned, 1, "the held request is abandoned at the stop");
    assert_no_stall(&seen.0, 0);
    assert_rate_is_completed_over_the_run(&out, 0);
}

#[test]
fn a_hang_at_the_second_endpoint_leaves_the_first_untouched() {
    let fast = Server::start(|_| Reply::ok("ok"));
    let hung = hanging_server(100);
    let (a, b) = (format!("a={}", fast.url()), format!("b={}", hung.url()));
    let mut seen = PerInterval::default();
    let (_, out) = single(
        &["--threads", "1", "-c", "50", "--stop-after", "6s", &a, &b],
        &mut seen,
    );
    for e in 0..2 {
        assert_no_stall(&seen.0, e);
        assert_rate_is_completed_over_the_run(&out, e);
    }
    let a = &out.stats.endpoints[0];
    assert_eq!(a.abandoned, 0);
    // The first endpoint never waited for the hung request: its slowest
    // answer is far from the ten seconds.
    let max_ms = a.latency.max() / 1000;
    assert!(
        max_ms < 1_000,
        "endpoint a's slowest answer took {max_ms} ms"
    );
    assert_eq!(out.stats.endpoints[1].abandoned, 1);
}

/// One shop: `login` hands out a token of its own (`prefix`), `create`
/// takes it and answers an order for the user, `read` returns the order
/// by the id `create` gave. Every request that does not carry the value
/// the previous answer gave is counted in `wrong` and refused.
fn shop(prefix: &'static str, item: &'static str, wrong: Arc<AtomicU64>) -> Server {
    Server::start(move |seen| {
        let refuse = || {
            wrong.fetch_add(1, Ordering::Relaxed);
            Reply::ok("{}").status(403)
        };
        match (seen.method.as_str(), seen.path.as_str()) {
            ("POST", "/login") => {
                let v: serde_json::Value = serde_json::from_slice(&seen.body).unwrap();
                let user = v["user"].as_str().unwrap().to_string();
                Reply::ok(format!(r#"{{"token":"{prefix}-{user}"}}"#))
            }
            ("POST", "/orders") => {
                let auth = seen
                    .headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("");
                let Some(user) = auth.strip_prefix(&format!("Bearer {prefix}-")) else {
                    return refuse();
                };
                let id = user.trim_start_matches('u');
                Reply::ok(format!(
                    r#"{{"id":"{id}","owner":"{user}","item":"{item}"}}"#
                ))
            }
            ("GET", path) if path.starts_with("/orders/") => {
                let id = &path["/orders/".len()..];
                if id.parse::<u64>().is_err() {
                    return refuse();
                }
                Reply::ok(format!(r#"{{"id":"{id}","state":"new"}}"#))
            }
            _ => refuse(),
        }
    })
}

/// The three-step order flow, written with the library API.
fn order_flow() -> Flow {
    Flow::new("order")
        .step("login", |ctx| async move {
            let user = format!("u{}", ctx.instance);
            Ok(Call::post("/login").json(&serde_json::json!({ "user": user })))
        })
        .step("create", |ctx| async move {
            let token = ctx.last()?.json_str("/token")?;
            Call::post("/orders")
                .header("authorization", &format!("Bearer {token}"))
                .map(|c| c.body("{}"))
        })
        .step("read", |ctx| async move {
            let id = ctx.last()?.json_str("/id")?;
            Ok(Call::get(format!("/orders/{id}")))
        })
}

/// A run of the order flow with `args`.
fn order_run(args: &[&str]) -> RunOutput {
    run(
        &plan(args),
        Workload::Flow(Arc::new(order_flow())),
        &mut engine::Quiet,
    )
}

fn step<'a>(out: &'a RunOutput, e: usize, name: &str) -> &'a versus::stats::PartStats {
    out.stats.endpoints[e]
        .steps
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("no step {name} at endpoint {e}"))
}

#[test]
fn a_three_step_flow_runs_per_endpoint_and_a_planted_difference_is_a_step_two_mismatch() {
    let wrong = Arc::new(AtomicU64::new(0));
    let a = shop("A", "book", wrong.clone());
    let b = shop("B", "pen", wrong.clone());
    let (a, b) = (format!("ref={}", a.url()), format!("cand={}", b.url()));
    let out = order_run(&[
        "-c",
        "4",
        "--stop-after",
        "200",
        "--ignore",
        "$.token",
        &a,
        &b,
    ]);
    assert_eq!(wrong.load(Ordering::Relaxed), 0, "a step lacked its value");
    for e in 0..2 {
        let s = &out.stats.endpoints[e];
        assert_eq!(s.flows.instances, 200, "endpoint {e}");
        assert_eq!(s.flows.succeeded, 200, "endpoint {e}");
        assert_eq!(s.completed(), 600, "endpoint {e}");
        let names: Vec<&str> = s.steps.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["login", "create", "read"]);
        for p in &s.steps {
            assert_eq!((p.requests, p.errors, p.skipped), (200, 0, 0), "{}", p.name);
        }
    }
    assert_eq!(step(&out, 1, "login").mismatched, 0);
    assert_eq!(step(&out, 1, "create").mismatched, 200);
    assert_eq!(step(&out, 1, "read").mismatched, 0);
    let groups = out.stats.verdicts.sorted_groups();
    assert_eq!(groups.len(), 1, "{groups:?}");
    assert_eq!(
        (groups[0].method.as_str(), groups[0].field.as_str()),
        ("create", "$.item")
    );
    assert_eq!(groups[0].count, 200);
    assert_eq!(out.stats.verdicts.compared, 600);
    assert_eq!(out.stats.verdicts.mismatched, 200);
}

#[test]
fn a_flow_failing_at_step_one_skips_its_later_steps_without_mismatches() {
    let wrong = Arc::new(AtomicU64::new(0));
    let good = shop("A", "book", wrong.clone());
    // The candidate refuses every login.
    let bad = Server::start(|_| Reply::ok(r#"{"error":"no"}"#).status(500));
    let (a, b) = (format!("ref={}", good.url()), format!("cand={}", bad.url()));
    let out = order_run(&["-c", "2", "--stop-after", "50", &a, &b]);
    let cand = &out.stats.endpoints[1];
    assert_eq!(cand.flows.instances, 50);
    assert_eq!(cand.flows.succeeded, 0);
    assert_eq!(step(&out, 1, "login").errors, 50);
    for later in ["create", "read"] {
        let p = step(&out, 1, later);
        assert_eq!((p.requests, p.skipped, p.mismatched), (0, 50, 0), "{later}");
    }
    assert_eq!(cand.completed(), 50, "only the logins were sent");
    // The reference went all the way.
    assert_eq!(out.stats.endpoints[0].flows.succeeded, 50);
    // Only step 1 was compared (a 500 against a 200): later steps were not.
    assert_eq!(out.stats.verdicts.compared, 50);
    assert!(out
        .stats
        .verdicts
        .groups
        .iter()
        .all(|g| g.method == "login"));
    // The failure is counted by step and reason.
    let failed = out
        .stats
        .verdicts
        .error_groups
        .iter()
        .find(|g| g.method == "login" && g.endpoint == "cand" && g.field == "HTTP 500")
        .expect("login failures grouped");
    assert_eq!(failed.count, 50, "{failed:?}");
}

#[test]
fn a_value_missing_from_an_answer_fails_the_instance_at_that_step() {
    // The candidate's login answers without a token: `create` cannot be
    // built there, and `read` is skipped.
    let wrong = Arc::new(AtomicU64::new(0));
    let good = shop("A", "book", wrong);
    let tokenless = Server::start(|_| Reply::ok(r#"{"user":"x"}"#));
    let (a, b) = (
        format!("ref={}", good.url()),
        format!("cand={}", tokenless.url()),
    );
    let out = order_run(&[
        "-c",
        "2",
        "--stop-after",
        "20",
        "--ignore",
        "$.token",
        "--ignore",
        "$.user",
        &a,
        &b,
    ]);
    let create = step(&out, 1, "create");
    assert_eq!((create.requests, create.not_built), (0, 20));
    assert_eq!(step(&out, 1, "read").skipped, 20);
    let reasons: Vec<&str> = out
        .stats
        .verdicts
        .error_groups
        .iter()
        .filter(|g| g.endpoint == "cand")
        .map(|g| g.field.as_str())
        .collect();
    assert_eq!(reasons, ["not built: nothing at /token in the answer"]);
    // The group keeps samples: the instance and what it could not send.
    let group = &out.stats.verdicts.error_groups[0];
    assert_eq!(group.samples.len(), 3);
    assert_eq!(group.samples[0].request, "(not built)");
    assert!(group.samples[0].seq < 20);
}

/// The check of a step replaces the default one: a 404 can be the answer
/// a step expects, and a 200 can fail it.
#[test]
fn a_step_check_decides_success() {
    let server = Server::start(|seen| match seen.path.as_str() {
        "/gone" => Reply::ok("{}").status(404),
        _ => Reply::ok(r#"{"state":"broken"}"#),
    });
    let flow = Flow::new("checks")
        .step("gone", |_| async { Ok(Call::get("/gone")) })
        .check(|r| {
            if r.status == 404 {
                Ok(())
            } else {
                Err(StepError::from("expected 404"))
            }
        })
        .step("state", |_| async { Ok(Call::get("/state")) })
        .check(|r| match r.json_str("/state")?.as_str() {
            "ok" => Ok(()),
            other => Err(StepError(format!("state is {other}"))),
        });
    let url = server.url();
    let plan = plan(&["-c", "1", "--stop-after", "10", &url]);
    let out = run(&plan, Workload::Flow(Arc::new(flow)), &mut engine::Quiet);
    let s = &out.stats.endpoints[0];
    assert_eq!(
        step(&out, 0, "gone").errors,
        0,
        "the expected 404 is no error"
    );
    assert_eq!(step(&out, 0, "state").failed_checks, 10);
    assert_eq!(s.failed_checks, 10);
    assert_eq!(s.flows.succeeded, 0);
    let reasons: Vec<String> = out
        .stats
        .verdicts
        .error_groups
        .iter()
        .map(|g| format!("{} {}", g.method, g.field))
        .collect();
    assert!(
        reasons.contains(&"state check failed: state is broken".to_string()),
        "{reasons:?}"
    );
}

/// A rules-file section named after a step applies to that step only: the
/// planted difference at `create` is ignored there, and nowhere else.
#[test]
fn a_rules_section_named_after_a_step_applies_to_that_step() {
    let wrong = Arc::new(AtomicU64::new(0));
    let a = shop("A", "book", wrong.clone());
    let b = shop("B", "pen", wrong);
    let rules = std::env::temp_dir().join(format!("versus-step-rules-{}.toml", std::process::id()));
    std::fs::write(
        &rules,
        "ignore = [\"$.token\"]\n[step.create]\nignore = [\"$.item\"]\n",
    )
    .unwrap();
    let (a, b) = (format!("ref={}", a.url()), format!("cand={}", b.url()));
    let rules_arg = rules.to_string_lossy().to_string();
    let out = order_run(&[
        "-c",
        "2",
        "--stop-after",
        "20",
        "--rules",
        &rules_arg,
        &a,
        &b,
    ]);
    let _ = std::fs::remove_file(&rules);
    assert_eq!(
        out.stats.verdicts.mismatched, 0,
        "{:?}",
        out.stats.verdicts.groups
    );
    assert_eq!(out.stats.verdicts.compared, 60);
}

/// Open model: instances start on the schedule, whatever the endpoint is
/// doing, and the first step's latency counts from when the instance was
/// due. A server that takes 50 ms per step, at 40 instances a second with
/// room for them all, runs 40 instances a second; each instance's three
/// steps take 150 ms.
#[test]
fn flow_instances_start_on_the_schedule_in_the_open_model() {
    // Each step's answer carries what the next step takes.
    let slow = Server::start(|seen| {
        let body = match seen.path.as_str() {
            "/login" => r#"{"token":"t"}"#,
            "/orders" => r#"{"id":"1"}"#,
            _ => r#"{"state":"new"}"#,
        };
        Reply::ok(body).after(Duration::from_millis(50))
    });
    let url = slow.url();
    let args = [
        "--rate",
        "40",
        "--max-in-flight",
        "20",
        "--stop-after",
        "2s",
    ];
    let plan = plan(&[&args[..], &[&url]].concat());
    let out = run(
        &plan,
        Workload::Flow(Arc::new(order_flow())),
        &mut engine::Quiet,
    );
    let s = &out.stats.endpoints[0];
    // The rate line names its units: instances are scheduled, their
    // steps' requests sent (three an instance), not one beside the other
    // under one name.
    let mut report = Vec::new();
    versus::report::text::write(&mut report, &plan.run_info(), &out).unwrap();
    let report = String::from_utf8(report).unwrap();
    let sent = format!(
        "{} requests per second sent",
        versus::report::rate(s.sent_rate())
    );
    assert!(
        report.contains(&format!(
            "Rate:       40.00 instances per second scheduled, {sent}"
        )),
        "{report}"
    );
    assert!((100.0..=121.0).contains(&s.sent_rate()), "{report}");
    // 2 s at 40/s: 80 instances, give or take the edges.
    assert!(
        (76..=81).contains(&s.flows.instances),
        "{} instances",
        s.flows.instances
    );
    assert_eq!(s.flows.succeeded, s.flows.instances);
    assert_eq!(s.late, 0, "no instance should wait for a free slot");
    let p50 = s.flows.duration.value_at_quantile(0.5) / 1000;
    assert!(
        (150..250).contains(&p50),
        "an instance took {p50} ms at p50"
    );
    let login = step(&out, 0, "login").latency.value_at_quantile(0.5) / 1000;
    assert!((50..100).contains(&login), "login took {login} ms at p50");
}

/// An endpoint a full window ahead of a slower one is held back: the
/// report says for how long, of how long it ran, and its rate is what it
/// completed over the whole run, held-back time included: a rate over
/// the few moments it was not held back read 0.00 or 122278.60 per second.
#[test]
fn held_back_time_is_shown_beside_a_rate_over_the_whole_run() {
    let fast = Server::start(|_| Reply::ok("ok"));
    let slow = Server::start(|_| Reply::ok("ok").after(Duration::from_millis(20)));
    let (a, b) = (format!("a={}", fast.url()), format!("b={}", slow.url()));
    let (plan, out) = single(
        &[
            "--threads",
            "1",
            "-c",
            "2",
            "--lead",
            "4",
            "--stop-after",
            "2s",
            &a,
            &b,
        ],
        &mut engine::Quiet,
    );
    let s = &out.stats.endpoints[0];
    assert!(
        s.held_back > Duration::from_millis(500),
        "held {:?}",
        s.held_back
    );
    let mut text = Vec::new();
    versus::report::text::write(&mut text, &plan.run_info(), &out).unwrap();
    let text = String::from_utf8(text).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains("Held back:"))
        .unwrap_or_else(|| panic!("no held-back line:\n{text}"));
    assert!(
        line.contains(&format!("of {}", versus::report::duration(s.active))),
        "{line}"
    );
    let whole = s.completed() as f64 / out.elapsed.as_secs_f64();
    assert!(
        (s.rate() - whole).abs() / whole < 0.02,
        "rate {} against {whole} over the run",
        s.rate()
    );
    // The fast endpoint completes what the slow one does, plus at most
    // the window: their rates are close, as they really were.
    let slow_rate = out.stats.endpoints[1].rate();
    assert!(s.rate() < slow_rate * 1.5, "{} vs {slow_rate}", s.rate());
}

/// A stream's latency by method counts errors as the endpoint's totals
/// do: a JSON-RPC error answer inside HTTP 200 is an error of its method.
#[test]
fn errors_by_method_count_json_rpc_error_answers() {
    let server = Server::start(|seen| {
        if String::from_utf8_lossy(&seen.body).contains("eth_call") {
            Reply::ok(r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"no"}}"#)
        } else {
            Reply::ok(r#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#)
        }
    });
    let url = server.url();
    let plan = plan(&["-c", "2", &url]);
    let mut lines = Vec::new();
    for i in 0..30 {
        let method = if i % 3 == 0 {
            "eth_call"
        } else {
            "eth_blockNumber"
        };
        lines.extend_from_slice(
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"{method}\",\"params\":[]}}\n")
                .as_bytes(),
        );
    }
    let source = versus::input::lines::LinesSource::new(std::io::Cursor::new(lines), 1 << 20);
    let out = run(
        &plan,
        Workload::Stream(Box::new(source)),
        &mut engine::Quiet,
    );
    let s = &out.stats.endpoints[0];
    let by = |name: &str| s.methods.iter().find(|p| p.name == name).unwrap();
    assert_eq!((by("eth_call").requests, by("eth_call").errors), (10, 10));
    assert_eq!(
        (by("eth_blockNumber").requests, by("eth_blockNumber").errors),
        (20, 0)
    );
    assert_eq!(s.errors(), 10);
}

/// Per interval: responses, requests counted under a method at the
/// endpoint, and requests counted by method in the verdicts.
#[derive(Default)]
struct MethodsPerInterval(Vec<(u64, u64, u64)>);

impl Observer for MethodsPerInterval {
    fn interval(&mut self, _index: u64, delta: &RunStats, _total: &RunStats) {
        let e = &delta.endpoints[0];
        let parts = e.methods.iter().map(|p| p.requests).sum();
        let judged = delta.verdicts.methods.iter().map(|(_, n)| n).sum();
        self.0.push((e.responses, parts, judged));
    }
}

/// Single-request mode judges the same request every time, and counts it
/// where the last one was counted (`judge::MethodCache`): across intervals,
/// whose statistics start empty, every answer is still counted once under
/// its method, in the interval it came in.
#[test]
fn a_repeated_request_is_counted_under_its_method_in_every_interval() {
    let server = Server::start(|_| Reply::ok("ok").after(Duration::from_millis(2)));
    let url = server.url();
    let mut plan = parse(&["--method", "GET", "-c", "2", "--stop-after", "300", &url]);
    plan.engine_mut().interval = Duration::from_millis(20);
    let plan = Arc::new(plan);
    let mut seen = MethodsPerInterval::default();
    let out = run(&plan, repeated(&plan), &mut seen);
    assert!(seen.0.len() >= 3, "too few intervals: {:?}", seen.0);
    for (responses, parts, judged) in &seen.0 {
        assert_eq!((parts, judged), (responses, responses), "{:?}", seen.0);
    }
    let e = &out.stats.endpoints[0];
    assert_eq!(e.responses, 300);
    assert_eq!((e.methods.len(), e.methods[0].requests), (1, 300));
    assert_eq!(out.stats.verdicts.methods.len(), 1);
    assert_eq!(out.stats.verdicts.method_count(&e.methods[0].name), 300);
}

/// Per interval: for each endpoint, responses and requests counted under
/// a method; and requests counted by method in the verdicts.
#[derive(Default)]
struct PartsPerInterval(Vec<(Vec<(u64, u64)>, u64)>);

impl Observer for PartsPerInterval {
    fn interval(&mut self, _index: u64, delta: &RunStats, _total: &RunStats) {
        let endpoints = delta.endpoints.iter().map(|e| {
            let parts = e.methods.iter().map(|p| p.requests).sum();
            (e.responses, parts)
        });
        let judged = delta.verdicts.methods.iter().map(|(_, n)| n).sum();
        self.0.push((endpoints.collect(), judged));
    }
}

/// A compared stream of JSON-RPC calls is counted where each method was
/// counted before (`judge::MethodCache`'s names, found by the method's
/// bytes): across intervals, whose statistics start empty, with more
/// methods than an endpoint names in one (the rest are `(other)`), every
/// answer is counted once under its method at each endpoint, alike at
/// both, and every request once in the verdicts.
#[test]
fn a_stream_of_many_methods_is_counted_under_each_in_every_interval() {
    let a = Server::start(|_| {
        Reply::ok(r#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#).after(Duration::from_millis(1))
    });
    let b = Server::start(|_| Reply::ok(r#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#));
    let (methods, rounds) = (60, 20);
    let mut plan = parse(&["-c", "4", &a.url(), &b.url()]);
    plan.engine_mut().interval = Duration::from_millis(20);
    let plan = Arc::new(plan);
    let mut lines = Vec::new();
    for i in 0..methods * rounds {
        let call = format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"m_{}\",\"params\":[]}}\n",
            i % methods
        );
        lines.extend_from_slice(call.as_bytes());
    }
    let source = versus::input::lines::LinesSource::new(std::io::Cursor::new(lines), 1 << 20);
    let mut seen = PartsPerInterval::default();
    let out = run(&plan, Workload::Stream(Box::new(source)), &mut seen);
    assert!(seen.0.len() >= 3, "too few intervals: {:?}", seen.0);
    // An answer is counted under its method when its request is judged,
    // with the other endpoint's (a fast endpoint's answers come first).
    for (endpoints, judged) in &seen.0 {
        for &(_, parts) in endpoints {
            assert_eq!(parts, *judged, "{:?}", seen.0);
        }
    }
    let total = (methods * rounds) as u64;
    let judged: u64 = seen.0.iter().map(|(_, judged)| judged).sum();
    assert_eq!(judged, total, "{:?}", seen.0);
    let v = &out.stats.verdicts;
    assert_eq!(v.compared, total);
    assert_eq!(v.methods.len(), methods);
    for m in 0..methods {
        assert_eq!(v.method_count(&format!("m_{m}")), rounds as u64, "m_{m}");
    }
    let reference = &out.stats.endpoints[0].methods;
    for e in &out.stats.endpoints {
        assert_eq!(e.responses, total);
        assert_eq!(e.methods.iter().map(|p| p.requests).sum::<u64>(), total);
        let by = |name: &str| {
            e.methods
                .iter()
                .find(|p| p.name == name)
                .map(|p| p.requests)
        };
        for p in reference {
            assert_eq!(by(&p.name), Some(p.requests), "{}", p.name);
        }
    }
}
