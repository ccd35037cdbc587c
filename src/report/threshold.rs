//! Thresholds (`--threshold 'p99 < 200ms'`): pass/fail conditions checked
//! at the end of a run (or of `versus report`), listed in the report; any
//! failure makes versus exit with code 3.
//!
//! Grammar: `[SCOPE:] METRIC OP VALUE`. SCOPE is an endpoint (a label or
//! a position from 0), a flow step's name (every endpoint's step), or
//! `ENDPOINT: STEP`. METRIC is `p50`, `p90`, `p95`,
//! `p99`, `p99.9`, `max`, `mean` (latency; VALUE a duration such as `200ms`,
//! `1.5s`, `800us`), `rps` (requests per second), `errors` or `mismatches`
//! (VALUE a percentage such as `1%`, or a count). OP is one of
//! `<`, `<=`, `>`, `>=`, `==`, `!=`. Without an ENDPOINT (a label or a
//! position from 0) the condition applies to every endpoint; `mismatches`
//! are counted per request across endpoints and take no ENDPOINT.

use std::io::{self, Write};

use super::micros;
use crate::exit::Exit;
use crate::results::info::RunInfo;
use crate::stats::RunStats;

/// What a threshold measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    /// A latency quantile (0.5, 0.99, 1.0 for the max).
    Quantile(f64),
    /// Mean latency.
    Mean,
    /// Requests per second.
    Rps,
    /// Errors (failures, statuses of 400 or above, JSON-RPC error answers).
    Errors,
    /// Mismatched requests.
    Mismatches,
}

/// How the value compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `==`
    Eq,
    /// `!=`
    Ne,
}

impl Op {
    fn holds(self, a: f64, b: f64) -> bool {
        match self {
            Op::Lt => a < b,
            Op::Le => a <= b,
            Op::Gt => a > b,
            Op::Ge => a >= b,
            Op::Eq => a == b,
            Op::Ne => a != b,
        }
    }
}

/// The limit: microseconds, a plain number, or a percentage.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// A duration in µs.
    Micros(f64),
    /// A number (rps, or a count).
    Number(f64),
    /// A percentage (of completed or compared requests).
    Percent(f64),
}

/// One parsed threshold.
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    /// As the user wrote it.
    pub text: String,
    /// What it is limited to, as written: an endpoint (label or
    /// position), a step, or `endpoint: step`.
    pub endpoint: Option<String>,
    /// What it measures.
    pub metric: Metric,
    /// The comparison.
    pub op: Op,
    /// The limit.
    pub limit: Limit,
}

/// The result of one threshold at one endpoint (or for the run).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Check {
    /// The threshold as written.
    pub threshold: String,
    /// The endpoint's label; `None` for a run-wide check.
    pub endpoint: Option<String>,
    /// The measured value, formatted (`p99 = 12.3ms`).
    pub actual: String,
    /// True when the condition held.
    pub passed: bool,
}

impl std::str::FromStr for Threshold {
    type Err = String;
    fn from_str(text: &str) -> Result<Threshold, String> {
        let bad = |why: &str| {
            format!("--threshold {text:?}: {why} (examples: 'p99 < 200ms', 'errors < 1%', 'mismatches == 0', 'rps > 500', 'new: p95 <= 50ms')")
        };
        let (endpoint, rest) = match text.rsplit_once(':') {
            Some((e, r)) if !e.trim().is_empty() => (Some(e.trim().to_string()), r),
            Some(_) => return Err(bad("the endpoint before ':' is empty")),
            None => (None, text),
        };
        let rest = rest.trim();
        let at = rest
            .find(['<', '>', '=', '!'])
            .ok_or_else(|| bad("no comparison: use <, <=, >, >=, == or !="))?;
        let metric_s = rest[..at].trim().to_ascii_lowercase();
        let after = &rest[at..];
        let (op, value_s) = [
            ("<=", Op::Le),
            (">=", Op::Ge),
            ("==", Op::Eq),
            ("!=", Op::Ne),
            ("<", Op::Lt),
            (">", Op::Gt),
        ]
        .iter()
        .find_map(|(s, op)| after.strip_prefix(s).map(|v| (*op, v.trim())))
        .ok_or_else(|| bad("unknown comparison: use <, <=, >, >=, == or !="))?;
        let metric = match metric_s.as_str() {
            "p50" => Metric::Quantile(0.5),
            "p90" => Metric::Quantile(0.9),
            "p95" => Metric::Quantile(0.95),
            "p99" => Metric::Quantile(0.99),
            "p99.9" => Metric::Quantile(0.999),
            "max" => Metric::Quantile(1.0),
            "mean" | "avg" => Metric::Mean,
            "rps" => Metric::Rps,
            "errors" => Metric::Errors,
            "mismatches" => Metric::Mismatches,
            "" => return Err(bad("no metric before the comparison")),
            m => {
                return Err(bad(&format!(
                    "unknown metric {m:?}: use p50, p90, p95, p99, p99.9, max, mean, rps, errors or mismatches"
                )))
            }
        };
        if metric == Metric::Mismatches && endpoint.is_some() {
            return Err(bad(
                "mismatches are counted per request across endpoints: drop the endpoint",
            ));
        }
        let number = |s: &str| -> Result<f64, String> {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| bad(&format!("{s:?} is not a non-negative number")))
        };
        let limit = match metric {
            Metric::Quantile(_) | Metric::Mean => {
                let split = value_s
                    .find(|c: char| !(c.is_ascii_digit() || c == '.'))
                    .ok_or_else(|| bad("a latency needs a unit: us, ms or s (200ms)"))?;
                let (n, unit) = value_s.split_at(split);
                let scale = match unit.trim() {
                    "us" | "µs" => 1.0,
                    "ms" => 1e3,
                    "s" => 1e6,
                    "m" | "min" => 60e6,
                    u => return Err(bad(&format!("unknown unit {u:?}: use us, ms or s"))),
                };
                // To whole nanoseconds: `1.023ms`, as a report prints a
                // latency of 1023µs, is 1023µs, not 1022.9999999999999.
                Limit::Micros((number(n)? * scale * 1e3).round() / 1e3)
            }
            Metric::Rps => Limit::Number(number(value_s)?),
            Metric::Errors | Metric::Mismatches => match value_s.strip_suffix('%') {
                Some(p) => Limit::Percent(number(p)?),
                None => Limit::Number(number(value_s)?),
            },
        };
        Ok(Threshold {
            text: text.trim().to_string(),
            endpoint,
            metric,
            op,
            limit,
        })
    }
}

/// Where one threshold is checked: an endpoint, and maybe one of its
/// flow steps.
pub type Target = (usize, Option<String>);

impl Threshold {
    /// Where the threshold applies: endpoints (indices), each with the
    /// step it names, if any; `None` when it is run-wide. `steps` are the
    /// run's flow step names.
    ///
    /// # Errors
    /// When it names no endpoint or step of the run, or asks a step for a
    /// rate.
    pub fn targets(&self, info: &RunInfo, steps: &[String]) -> Result<Option<Vec<Target>>, String> {
        if self.metric == Metric::Mismatches {
            return Ok(None);
        }
        let endpoint = |name: &str| {
            let by_index = name
                .parse::<usize>()
                .ok()
                .filter(|i| *i < info.endpoints.len());
            info.endpoints
                .iter()
                .position(|e| e.label == name)
                .or(by_index)
        };
        let step = |name: &str| steps.iter().find(|s| *s == name).cloned();
        let all = 0..info.endpoints.len();
        let targets: Option<Vec<Target>> = match &self.endpoint {
            None => Some(all.map(|i| (i, None)).collect()),
            Some(scope) => endpoint(scope)
                .map(|i| vec![(i, None)])
                .or_else(|| step(scope).map(|s| all.map(|i| (i, Some(s.clone()))).collect()))
                .or_else(|| {
                    let (e, s) = scope.split_once(':')?;
                    Some(vec![(endpoint(e.trim())?, Some(step(s.trim())?))])
                }),
        };
        let Some(targets) = targets else {
            let names = |v: Vec<&str>| v.join(", ");
            return Err(format!(
                "--threshold {:?}: no endpoint or step is named {:?} (endpoints: {}; steps: {})",
                self.text,
                self.endpoint.as_deref().unwrap_or(""),
                names(info.endpoints.iter().map(|e| e.label.as_str()).collect()),
                if steps.is_empty() {
                    "none".to_string()
                } else {
                    names(steps.iter().map(String::as_str).collect())
                }
            ));
        };
        if self.metric == Metric::Rps && targets.iter().any(|(_, s)| s.is_some()) {
            return Err(format!(
                "--threshold {:?}: rps is per endpoint, not per step",
                self.text
            ));
        }
        Ok(Some(targets))
    }
}

/// The flow step names of a run's stats (every endpoint lists the same).
pub fn step_names(stats: &RunStats) -> Vec<String> {
    stats
        .endpoints
        .first()
        .map(|s| s.steps.iter().map(|p| p.name.clone()).collect())
        .unwrap_or_default()
}

/// Check every threshold against a run.
///
/// # Errors
/// When a threshold names an endpoint the run does not have.
pub fn check(ts: &[Threshold], info: &RunInfo, stats: &RunStats) -> Result<Vec<Check>, String> {
    let mut out = Vec::new();
    let steps = step_names(stats);
    for t in ts {
        match t.targets(info, &steps)? {
            None => {
                let v = &stats.verdicts;
                let (actual, shown) = match t.limit {
                    Limit::Percent(_) => {
                        let p = if v.compared == 0 {
                            0.0
                        } else {
                            v.mismatched as f64 * 100.0 / v.compared as f64
                        };
                        (p, format!("mismatches = {p:.2}%"))
                    }
                    _ => (
                        v.mismatched as f64,
                        format!("mismatches = {}", v.mismatched),
                    ),
                };
                out.push(Check {
                    threshold: t.text.clone(),
                    endpoint: None,
                    passed: t.op.holds(actual, limit_value(t.limit)),
                    actual: shown,
                });
            }
            Some(list) => {
                for (i, step) in list {
                    let s = &stats.endpoints[i];
                    let part = step
                        .as_deref()
                        .and_then(|n| s.steps.iter().find(|p| p.name == n));
                    let mut label = info.endpoints.get(i).map(|e| e.label.clone());
                    if let (Some(l), Some(n)) = (&mut label, &step) {
                        *l = format!("{l}: {n}");
                    }
                    // A step's own latency and errors, or the endpoint's.
                    let (latency, errors, completed) = match part {
                        Some(p) => (&p.latency, p.errors, p.requests),
                        None => (&s.latency, s.errors(), s.completed()),
                    };
                    let measured: Option<(f64, String)> = match (t.metric, t.limit) {
                        (Metric::Quantile(q), _) => (!latency.is_empty()).then(|| {
                            let v = if q >= 1.0 {
                                latency.max()
                            } else {
                                latency.value_at_quantile(q)
                            };
                            let name = metric_name(t.metric);
                            (v as f64, format!("{name} = {}", micros(v as f64)))
                        }),
                        (Metric::Mean, _) => (!latency.is_empty()).then(|| {
                            let v = latency.mean();
                            (v, format!("mean = {}", micros(v)))
                        }),
                        (Metric::Rps, _) => Some((s.rate(), format!("rps = {:.2}", s.rate()))),
                        (Metric::Errors, Limit::Percent(_)) => {
                            let p = if completed == 0 {
                                0.0
                            } else {
                                errors as f64 * 100.0 / completed as f64
                            };
                            Some((p, format!("errors = {p:.2}%")))
                        }
                        (Metric::Errors, _) => Some((errors as f64, format!("errors = {errors}"))),
                        (Metric::Mismatches, _) => None,
                    };
                    let (passed, actual) = match measured {
                        Some((v, shown)) => (t.op.holds(v, limit_value(t.limit)), shown),
                        None => (false, "no responses".to_string()),
                    };
                    out.push(Check {
                        threshold: t.text.clone(),
                        endpoint: label,
                        actual,
                        passed,
                    });
                }
            }
        }
    }
    Ok(out)
}

fn limit_value(l: Limit) -> f64 {
    match l {
        Limit::Micros(v) | Limit::Number(v) | Limit::Percent(v) => v,
    }
}

fn metric_name(m: Metric) -> &'static str {
    match m {
        Metric::Quantile(q) if q >= 1.0 => "max",
        Metric::Quantile(q) if q >= 0.999 => "p99.9",
        Metric::Quantile(q) if q >= 0.99 => "p99",
        Metric::Quantile(q) if q >= 0.95 => "p95",
        Metric::Quantile(q) if q >= 0.9 => "p90",
        Metric::Quantile(_) => "p50",
        Metric::Mean => "mean",
        Metric::Rps => "rps",
        Metric::Errors => "errors",
        Metric::Mismatches => "mismatches",
    }
}

/// True when every check passed.
pub fn all_passed(checks: &[Check]) -> bool {
    checks.iter().all(|c| c.passed)
}

/// How a run or report with these checks ends: [`Exit::Threshold`] when
/// one failed.
pub fn exit(checks: &[Check]) -> Exit {
    if all_passed(checks) {
        Exit::Done
    } else {
        Exit::Threshold
    }
}

/// The checks as a block after the text report.
///
/// # Errors
/// Only when writing fails.
pub fn write_text(out: &mut dyn Write, checks: &[Check]) -> io::Result<()> {
    if checks.is_empty() {
        return Ok(());
    }
    let failed = checks.iter().filter(|c| !c.passed).count();
    writeln!(out)?;
    writeln!(
        out,
        "** Thresholds: {} passed, {failed} failed",
        checks.len() - failed
    )?;
    for c in checks {
        let mark = if c.passed { "passed" } else { "FAILED" };
        let who = c
            .endpoint
            .as_deref()
            .map(|e| format!(" [{}]", super::escape_terminal(e)))
            .unwrap_or_default();
        writeln!(out, "   {mark}  {}{who}: {}", c.threshold, c.actual)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        let t: Threshold = "p99 < 200ms".parse().unwrap();
        assert_eq!(
            (t.metric, t.op, t.limit),
            (Metric::Quantile(0.99), Op::Lt, Limit::Micros(200_000.0))
        );
        let t: Threshold = "p99 <= 1.023ms".parse().unwrap();
        assert_eq!(t.limit, Limit::Micros(1023.0));
        let t: Threshold = "new: p99.9 <= 1.5s".parse().unwrap();
        assert_eq!(t.endpoint.as_deref(), Some("new"));
        assert_eq!(t.limit, Limit::Micros(1_500_000.0));
        let t: Threshold = "errors < 1%".parse().unwrap();
        assert_eq!(t.limit, Limit::Percent(1.0));
        let t: Threshold = "errors<=10".parse().unwrap();
        assert_eq!((t.op, t.limit), (Op::Le, Limit::Number(10.0)));
        let t: Threshold = "mismatches == 0".parse().unwrap();
        assert_eq!((t.metric, t.op), (Metric::Mismatches, Op::Eq));
        let t: Threshold = "rps > 500".parse().unwrap();
        assert_eq!(
            (t.metric, t.op, t.limit),
            (Metric::Rps, Op::Gt, Limit::Number(500.0))
        );
        let t: Threshold = "http://127.0.0.1:8080/: mean != 800us".parse().unwrap();
        assert_eq!(t.endpoint.as_deref(), Some("http://127.0.0.1:8080/"));
        assert_eq!((t.op, t.limit), (Op::Ne, Limit::Micros(800.0)));
        for bad in [
            "p99 200ms",
            "p98 < 1ms",
            "p99 < 200",
            "rps > lots",
            "b: mismatches == 0",
            "p99 =< 1ms",
            ": p99 < 1ms",
            "errors < -1",
            "rps > inf",
        ] {
            assert!(bad.parse::<Threshold>().is_err(), "{bad}");
        }
    }

    /// A run of 100 answers at one endpoint in 1 s: 10 with status 500;
    /// 99 answered in 1 ms and one in 2 ms (p99 1 ms, max 2 ms, mean
    /// 1.01 ms); 100 compared, 10 mismatched. Its step `login` had 4
    /// requests, 2 errors, each answered in 200 µs.
    fn exact_run() -> (RunInfo, RunStats) {
        let mut stats = RunStats::new(1);
        let s = &mut stats.endpoints[0];
        s.sent = 100;
        s.responses = 100;
        s.status[200] = 90;
        s.status[500] = 10;
        s.latency.record_n(1000, 99).unwrap();
        s.latency.record(2000).unwrap();
        s.active = std::time::Duration::from_secs(1);
        let mut login = crate::stats::PartStats::new("login");
        login.requests = 4;
        login.errors = 2;
        login.latency.record_n(200, 4).unwrap();
        s.steps.push(login);
        stats.verdicts.compared = 100;
        stats.verdicts.mismatched = 10;
        let info = RunInfo {
            endpoints: vec![crate::results::info::EndpointInfo {
                label: "a".into(),
                named: true,
                url: "http://127.0.0.1:1/".into(),
            }],
            window: 1,
            comparison: true,
            rate: None,
            max_in_flight: 1,
            twin: None,
            verbose: 0,
            logged: None,
            notes: Vec::new(),
            warmup: None,
            stages: None,
            sweep: None,
            search: None,
            io: None,
            record: None,
            recorded: None,
        };
        (info, stats)
    }

    /// Every operator exactly at its limit, for each kind of limit: `<=`,
    /// `>=` and `==` hold there, `<`, `>` and `!=` do not.
    #[test]
    fn every_operator_holds_or_fails_exactly_at_its_limit() {
        let (info, stats) = exact_run();
        for at in [
            "p99 ? 1ms",
            "max ? 2000us",
            "mean ? 1010us",
            "login: p99 ? 200us",
            "login: errors ? 2",
            "login: errors ? 50%",
            "errors ? 10",
            "errors ? 10%",
            "rps ? 100",
            "mismatches ? 10",
            "mismatches ? 10%",
        ] {
            for (op, holds) in [
                ("<=", true),
                (">=", true),
                ("==", true),
                ("<", false),
                (">", false),
                ("!=", false),
            ] {
                let text = at.replace('?', op);
                let t: Threshold = text.parse().unwrap();
                let checks = check(&[t], &info, &stats).unwrap();
                assert_eq!(checks.len(), 1, "{text}");
                assert_eq!(checks[0].passed, holds, "{text}: {}", checks[0].actual);
            }
        }
    }

    /// A threshold's scope: an endpoint by label or by position, a step
    /// at every endpoint, or one endpoint's step; what the run lacks, and
    /// a rate asked of a step, are refused.
    #[test]
    fn a_threshold_applies_where_its_scope_names() {
        let (mut info, _) = exact_run();
        info.endpoints.push(crate::results::info::EndpointInfo {
            label: "b".into(),
            named: true,
            url: "http://127.0.0.1:2/".into(),
        });
        let stats = crate::stats::every_figure::run(1);
        let steps = step_names(&stats);
        assert_eq!(steps, ["login"]);
        let targets = |text: &str| text.parse::<Threshold>().unwrap().targets(&info, &steps);
        let login = || Some("login".to_string());
        assert_eq!(targets("p99 < 1ms"), Ok(Some(vec![(0, None), (1, None)])));
        assert_eq!(targets("b: p99 < 1ms"), Ok(Some(vec![(1, None)])));
        assert_eq!(targets("a: p99 < 1ms"), Ok(Some(vec![(0, None)])));
        assert_eq!(targets("1: p99 < 1ms"), Ok(Some(vec![(1, None)])));
        assert_eq!(
            targets("login: p99 < 1ms"),
            Ok(Some(vec![(0, login()), (1, login())]))
        );
        assert_eq!(targets("b:login: p99 < 1ms"), Ok(Some(vec![(1, login())])));
        assert_eq!(targets("mismatches == 0"), Ok(None));
        for (text, why) in [
            ("2: p99 < 1ms", "no endpoint or step is named \"2\""),
            ("c: p99 < 1ms", "no endpoint or step is named \"c\""),
            ("login: rps > 1", "rps is per endpoint, not per step"),
        ] {
            let err = targets(text).unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }

    /// A check shows the figure it measured under the threshold's own
    /// name (`p99.9 = 1.000ms`), whichever metric.
    #[test]
    fn a_check_names_the_figure_it_measured() {
        let (info, stats) = exact_run();
        for metric in [
            "p50", "p90", "p95", "p99", "p99.9", "max", "mean", "rps", "errors",
        ] {
            let limit = if matches!(metric, "rps" | "errors") {
                "1"
            } else {
                "1ms"
            };
            let t: Threshold = format!("{metric} < {limit}").parse().unwrap();
            let checks = check(&[t], &info, &stats).unwrap();
            let shown = &checks[0].actual;
            assert!(
                shown.starts_with(&format!("{metric} = ")),
                "{metric}: {shown}"
            );
        }
    }
}
