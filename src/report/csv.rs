//! The CSV report (`versus report --format csv`), for spreadsheets: one
//! header, then a row per endpoint with the summary figures (latency,
//! first byte, connections and TLS handshakes among them), a `total` row
//! over every endpoint (requests, errors, latency), then per
//! endpoint a row per status code (`status`), error kind (`error`), TLS
//! failure reason (`tls reason`), fault and error cause, a row per error
//! group by method (`error by method`, named `METHOD: KIND`) and per
//! mismatch group (`mismatch`, named `METHOD: FIELD KIND`), in noise mode
//! a `noise` row per noisy field (named by it), then per
//! endpoint a row for its flow instances, one per flow step and one per
//! method (when some endpoint saw more than one), and each paged step's
//! table cell by cell (`page`) and improvements (`improvement`), their
//! text under `value`. The `part` column says which (empty for an
//! endpoint's row); a column a row has no figure for is left empty (the
//! reference's `mismatched`: it is what the others are compared with).
//! RFC 4180 quoting.

use std::io::{self, Write};

use hdrhistogram::Histogram;

use super::info::Report;
use crate::engine::shape::Sweep;
use crate::model::TlsReason;
use crate::results::info::Record;
use crate::stats::{EndpointStats, PartStats};

/// Quote a CSV field when needed.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The columns, in order.
pub const COLUMNS: [&str; 78] = [
    "label",
    "url",
    "rps",
    "sent",
    "completed",
    "responses",
    "errors",
    "error_rate",
    "mean_ms",
    "p50_ms",
    "p90_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "bytes_in",
    "bytes_out",
    "bytes_per_response",
    "compared",
    "mismatched",
    "part",
    "name",
    "failed_checks",
    "not_built",
    "skipped",
    "instances",
    "succeeded",
    "acted",
    "min_ms",
    "stdev_ms",
    "p25_ms",
    "p75_ms",
    "ttfb_mean_ms",
    "ttfb_p99_ms",
    "connects",
    "connects_during_run",
    "connect_mean_ms",
    "connect_max_ms",
    "tls_handshakes",
    "tls_mean_ms",
    "tls_max_ms",
    "failed_connects",
    "held_s",
    "abandoned",
    "incomplete",
    "value",
    "connect_waits",
    "connect_wait_mean_ms",
    "connect_wait_max_ms",
    "sent_rps",
    "uncorrected_p50_ms",
    "uncorrected_p99_ms",
    "uncorrected_max_ms",
    "lag_p50_ms",
    "lag_p99_ms",
    "on_time_percent",
    "late",
    "spare_connects_failed",
    "unsent",
    "offered",
    "user_seconds",
    "judged_on_core",
    "not_judged",
    "judge_queue_peak_bytes",
    "compared_as_bytes",
    "malformed",
    "interrupted",
    "noise_only",
    "noise_reference_pair",
    "noise_candidate",
    "noise_cancelled",
    "warmup",
    "stages",
    "sweep",
    "mismatches_seen",
    "mismatches_logged",
    "record",
    "recorded_seen",
    "recorded_written",
];

/// Microseconds as the milliseconds of the latency columns.
fn ms(us: f64) -> String {
    format!("{:.3}", us / 1000.0)
}

/// One row being filled: every column empty until set.
struct Row([String; COLUMNS.len()]);

impl Row {
    /// A row of the endpoint `label` at `url`.
    fn new(label: &str, url: &str) -> Row {
        let mut row = Row(std::array::from_fn(|_| String::new()));
        row.set("label", field(label)).set("url", field(url));
        row
    }

    /// Set `column`, one of [`COLUMNS`].
    fn set(&mut self, column: &str, value: impl ToString) -> &mut Row {
        let i = COLUMNS.iter().position(|c| *c == column);
        debug_assert!(i.is_some(), "no CSV column {column}");
        if let Some(i) = i {
            self.0[i] = value.to_string();
        }
        self
    }

    /// `errors` and their share of `of` (empty when `of` is 0).
    fn errors(&mut self, errors: u64, of: u64) -> &mut Row {
        if of > 0 {
            self.set("error_rate", format!("{:.6}", errors as f64 / of as f64));
        }
        self.set("errors", errors)
    }

    /// The latency columns (mean, minimum, standard deviation,
    /// percentiles, max) in ms; empty when the histogram is.
    fn latency(&mut self, h: &Histogram<u64>) -> &mut Row {
        if h.is_empty() {
            return self;
        }
        self.set("mean_ms", ms(h.mean()))
            .set("min_ms", ms(h.min() as f64))
            .set("stdev_ms", ms(h.stdev()))
            .quantiles(
                h,
                &[
                    ("p25_ms", 0.25),
                    ("p50_ms", 0.5),
                    ("p75_ms", 0.75),
                    ("p90_ms", 0.9),
                    ("p95_ms", 0.95),
                    ("p99_ms", 0.99),
                    ("max_ms", 1.0),
                ],
            )
    }

    /// Quantiles of `h` in ms into their columns; empty when `h` is.
    fn quantiles(&mut self, h: &Histogram<u64>, at: &[(&str, f64)]) -> &mut Row {
        for (column, q) in at {
            if let Some(v) = super::quantile(h, *q) {
                self.set(column, ms(v));
            }
        }
        self
    }

    /// `h`'s mean in the column `mean` and its quantile `q` in the column
    /// `at`, in ms; both empty when `h` is.
    fn times(&mut self, h: &Histogram<u64>, mean: &str, (at, q): (&str, f64)) -> &mut Row {
        if let Some(v) = super::quantile(h, q) {
            self.set(mean, ms(h.mean())).set(at, ms(v));
        }
        self
    }

    /// A flow step's or a method's figures.
    fn part(&mut self, kind: &str, p: &PartStats) -> &mut Row {
        self.set("part", kind)
            .set("name", field(&p.name))
            .set("completed", p.requests)
            .errors(p.errors, p.requests)
            .latency(&p.latency)
            .set("mismatched", p.mismatched)
            .set("failed_checks", p.failed_checks)
            .set("not_built", p.not_built)
            .set("skipped", p.skipped)
    }

    fn write(&self, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "{}", self.0.join(","))
    }
}

/// Write the CSV report.
///
/// # Errors
/// Only when writing fails.
pub fn write(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    writeln!(out, "{}", COLUMNS.join(","))?;
    let eps = &r.run.stats.endpoints;
    for (i, (e, s)) in r.info.endpoints.iter().zip(eps).enumerate() {
        endpoint(r, &e.label, &e.url, s, i == 0).write(out)?;
    }
    let t = super::Totals::of(eps);
    Row::new("", "")
        .set("part", "total")
        .set("completed", t.requests)
        .errors(t.errors, t.requests)
        .latency(&t.latency)
        .write(out)?;
    for (e, s) in r.info.endpoints.iter().zip(eps) {
        counts(out, &e.label, &e.url, s)?;
    }
    groups(out, r)?;
    noise(out, r)?;
    let methods = super::shows_methods(eps);
    for (e, s) in r.info.endpoints.iter().zip(eps) {
        if s.flows.instances > 0 {
            // All instances, then (suites) each scenario's, named.
            for f in std::iter::once(&s.flows).chain(&s.by_flow) {
                Row::new(&e.label, &e.url)
                    .set("part", "flow")
                    .set("name", field(&f.name))
                    .latency(&f.duration)
                    .set("instances", f.instances)
                    .set("succeeded", f.succeeded)
                    .write(out)?;
            }
        }
        for p in &s.steps {
            Row::new(&e.label, &e.url).part("step", p).write(out)?;
        }
        if methods {
            for p in &s.methods {
                Row::new(&e.label, &e.url).part("method", p).write(out)?;
            }
        }
    }
    pages(out, r)?;
    load_curve(out, r)?;
    capacity(out, r)
}

/// A capacity search's result: a `capacity` row per endpoint, `value` the
/// rate found (empty below the first step), `name` the whole line.
fn capacity(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let Some(found) = r.capacity else {
        return Ok(());
    };
    let lines = super::capacity::lines(found);
    for ((e, c), line) in r.info.endpoints.iter().zip(found).zip(lines) {
        let mut row = Row::new(&e.label, &e.url);
        row.set("part", "capacity").set("name", field(&line));
        if let Some(rate) = c.rate {
            row.set("value", super::rate(rate));
        }
        row.write(out)?;
    }
    Ok(())
}

/// A sweep's load curve: a `load step` row per step, endpoint and part,
/// named by the step's rate (`500.00/s`, `500.00/s eth_call`).
fn load_curve(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let Some(steps) = r.steps else {
        return Ok(());
    };
    for p in super::curve::points(steps) {
        let e = &r.info.endpoints[p.endpoint];
        let name = match p.part {
            Some(part) => format!("{} {part}", p.step()),
            None => p.step(),
        };
        let mut row = Row::new(&e.label, &e.url);
        row.set("part", "load step")
            .set("name", field(&name))
            .set("rps", super::rate(p.achieved))
            .latency(p.latency)
            .set("errors", p.errors)
            .set("mismatched", p.mismatched);
        if let Some(o) = p.offered {
            row.set("offered", super::rate(o));
        }
        row.write(out)?;
    }
    Ok(())
}

/// Noise mode: a `noise` row per field where the two reference answers
/// differed, under the reference's second copy, with its counts.
fn noise(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let Some(n) = super::noise(r.info, &r.run.stats.verdicts) else {
        return Ok(());
    };
    let twin = r.info.twin.map(|t| &r.info.endpoints[t]);
    for f in &n.fields {
        let (label, url) = twin.map_or(("", ""), |e| (e.label.as_str(), e.url.as_str()));
        Row::new(label, url)
            .set("part", "noise")
            .set("name", field(&f.counts.field))
            .set("noise_reference_pair", f.counts.reference_pair)
            .set("noise_candidate", f.counts.candidate)
            .set("noise_cancelled", f.counts.cancelled)
            .write(out)?;
    }
    Ok(())
}

/// An endpoint's row: its summary figures, and the run's `compared`,
/// `incomplete`, judging figures, requests compared as bytes, malformed
/// records and whether it was interrupted. The `reference` is what the others
/// are compared with: it has no mismatches of its own.
fn endpoint(r: &Report<'_>, label: &str, url: &str, s: &EndpointStats, reference: bool) -> Row {
    let v = &r.run.stats.verdicts;
    let mut row = Row::new(label, url);
    row.set("rps", super::rate(s.rate()))
        .set("sent_rps", super::rate(s.sent_rate()))
        .set("sent", s.sent)
        .set("completed", s.completed())
        .set("responses", s.responses)
        .errors(s.errors(), s.completed())
        .latency(&s.latency)
        .set("bytes_in", s.bytes_in)
        .set("bytes_out", s.bytes_out)
        .set("bytes_per_response", s.bytes_per_response().unwrap_or(0))
        .set("compared", v.compared)
        .set("incomplete", v.incomplete)
        .set("judged_on_core", v.judged_on_core)
        .set("not_judged", v.not_judged)
        .set("judge_queue_peak_bytes", v.judge_queue_peak)
        .set("compared_as_bytes", v.fell_back)
        .set("malformed", r.run.input.malformed)
        .set("interrupted", r.run.interrupted)
        .set("noise_only", v.noise_only)
        .set("warmup", field(r.info.warmup.as_deref().unwrap_or("")))
        .set("stages", field(r.info.stages.as_deref().unwrap_or("")))
        .set(
            "sweep",
            field(
                &r.info
                    .sweep
                    .as_ref()
                    .map(Sweep::describe)
                    .unwrap_or_default(),
            ),
        )
        .set("mismatches_seen", r.info.logged.map_or(0, |l| l.0))
        .set("mismatches_logged", r.info.logged.map_or(0, |l| l.1))
        .set("record", r.info.record.map_or("", Record::name))
        .set("recorded_seen", r.info.recorded.map_or(0, |c| c.0))
        .set("recorded_written", r.info.recorded.map_or(0, |c| c.1))
        .set("failed_checks", s.failed_checks)
        .times(&s.ttfb, "ttfb_mean_ms", ("ttfb_p99_ms", 0.99))
        .set("connects", s.connect.len())
        .set("connects_during_run", s.reconnects)
        .times(&s.connect, "connect_mean_ms", ("connect_max_ms", 1.0))
        .set("tls_handshakes", s.tls.len())
        .times(&s.tls, "tls_mean_ms", ("tls_max_ms", 1.0))
        .set("connect_waits", s.connect_wait.len())
        .times(
            &s.connect_wait,
            "connect_wait_mean_ms",
            ("connect_wait_max_ms", 1.0),
        )
        .quantiles(
            &s.uncorrected,
            &[
                ("uncorrected_p50_ms", 0.5),
                ("uncorrected_p99_ms", 0.99),
                ("uncorrected_max_ms", 1.0),
            ],
        )
        .quantiles(&s.lag, &[("lag_p50_ms", 0.5), ("lag_p99_ms", 0.99)])
        .set(
            "on_time_percent",
            s.on_time().map_or(String::new(), |p| format!("{p:.2}")),
        )
        .set("late", s.late)
        .set("spare_connects_failed", s.spare_failed)
        .set("unsent", s.unsent)
        .set("offered", s.offered)
        .set("user_seconds", s.user_time.as_secs_f64())
        .set("failed_connects", s.failed_connects())
        .set("held_s", s.held_back.as_secs_f64())
        .set("abandoned", s.abandoned);
    if !reference {
        row.set("mismatched", s.mismatched);
    }
    row
}

/// An endpoint's counted things, a row each: statuses, error kinds, TLS
/// failure reasons, faults and the errors they caused.
fn counts(out: &mut dyn Write, label: &str, url: &str, s: &EndpointStats) -> io::Result<()> {
    for (code, n) in s.status.iter().enumerate().filter(|(_, n)| **n > 0) {
        Row::new(label, url)
            .set("part", "status")
            .set("name", code)
            .set("responses", n)
            .write(out)?;
    }
    let reasons = TlsReason::ALL
        .iter()
        .map(|r| (r.name().to_string(), s.tls_reasons[r.index()]))
        .filter(|(_, n)| *n > 0);
    let rows = s
        .error_kinds()
        .into_iter()
        .map(|k| ("error", k))
        .chain(reasons.map(|k| ("tls reason", k)));
    for (part, (name, n)) in rows {
        Row::new(label, url)
            .set("part", part)
            .set("name", field(&name))
            .set("errors", n)
            .write(out)?;
    }
    for f in super::injected(s) {
        Row::new(label, url)
            .set("part", "fault")
            .set("name", field(f.name))
            .set("acted", f.acted)
            .write(out)?;
    }
    for (kind, cause, n) in super::cause_rows(s) {
        Row::new(label, url)
            .set("part", "error cause")
            .set("name", field(&format!("{kind}: {cause}")))
            .set("errors", n)
            .write(out)?;
    }
    Ok(())
}

/// The error groups by method (`errors`) and the mismatch groups
/// (`mismatched`), a row each under the endpoint the group names.
fn groups(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let v = &r.run.stats.verdicts;
    for g in v.sorted_error_groups() {
        Row::new(&g.endpoint, url(r, &g.endpoint))
            .set("part", "error by method")
            .set("name", field(&format!("{}: {}", g.method, g.field)))
            .set("errors", g.count)
            .write(out)?;
    }
    for g in v.sorted_groups() {
        let name = format!("{}: {} {}", g.method, g.field, g.kind);
        Row::new(&g.endpoint, url(r, &g.endpoint))
            .set("part", "mismatch")
            .set("name", field(&name))
            .set("mismatched", g.count)
            .write(out)?;
    }
    Ok(())
}

/// The URL of the endpoint labelled `label`.
fn url<'a>(r: &'a Report<'_>, label: &str) -> &'a str {
    r.info
        .endpoints
        .iter()
        .find(|e| e.label == label)
        .map_or("", |e| e.url.as_str())
}

/// Each paged step's table (`report::pages`), a `page` row per cell named
/// `STEP: ROW` (`STEP: HEADING: ROW` below a heading), and a row per
/// improvement under the endpoint it is of, named `STEP against OTHER`.
fn pages(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    for step in super::pages::PagedStep::of(r.info, r.run) {
        let mut heading = String::new();
        for (name, cells) in step.rows() {
            let name = match name.strip_prefix("  ") {
                Some(sub) => format!("{}: {heading}: {sub}", step.name),
                None => {
                    heading = name.clone();
                    format!("{}: {name}", step.name)
                }
            };
            // A heading's cells are empty.
            let columns = step
                .columns
                .iter()
                .zip(&cells)
                .filter(|(_, c)| !c.is_empty());
            for ((label, _, _), cell) in columns {
                Row::new(label, url(r, label))
                    .set("part", "page")
                    .set("name", field(&name))
                    .set("value", field(cell))
                    .write(out)?;
            }
        }
        for (g, line) in step.improvements().iter().zip(step.improvement_lines()) {
            let (this, base) = (step.columns[g.this].0, step.columns[g.base].0);
            Row::new(this, url(r, this))
                .set("part", "improvement")
                .set("name", field(&format!("{} against {base}", step.name)))
                .set("value", field(&line))
                .write(out)?;
        }
    }
    Ok(())
}
