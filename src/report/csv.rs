//! The CSV report (`versus report --format csv`), for spreadsheets: one
//! header, then a row per endpoint with the summary figures, then per
//! endpoint a row for its flow instances, one per flow step and one per
//! method (when some endpoint saw more than one), then a row per error
//! kind of each endpoint (`error`) and per error group by method (`error
//! by method`, named `METHOD: KIND`), their count under `errors`. The
//! `part` column says which (empty for an endpoint's row); a column a row
//! has no figure for is left empty (the reference's `mismatched`: it is
//! what the others are compared with). RFC 4180 quoting.

use std::io::{self, Write};

use hdrhistogram::Histogram;

use super::info::Report;
use crate::stats::PartStats;

/// Quote a CSV field when needed.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The columns, in order.
pub const COLUMNS: [&str; 27] = [
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
];

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

    /// The latency columns (mean, percentiles, max) in ms; empty when the
    /// histogram is.
    fn latency(&mut self, h: &Histogram<u64>) -> &mut Row {
        if h.is_empty() {
            return self;
        }
        let ms = |us: f64| format!("{:.3}", us / 1000.0);
        self.set("mean_ms", ms(h.mean()));
        for (column, q) in [
            ("p50_ms", 0.5),
            ("p90_ms", 0.9),
            ("p95_ms", 0.95),
            ("p99_ms", 0.99),
            ("max_ms", 1.0),
        ] {
            if let Some(v) = super::quantile(h, q) {
                self.set(column, ms(v));
            }
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
    let v = &r.run.stats.verdicts;
    let eps = &r.run.stats.endpoints;
    for (e, s) in r.info.endpoints.iter().zip(eps) {
        let mut row = Row::new(&e.label, &e.url);
        row.set("rps", super::rate(s.rate()))
            .set("sent", s.sent)
            .set("completed", s.completed())
            .set("responses", s.responses)
            .errors(s.errors(), s.completed())
            .latency(&s.latency)
            .set("bytes_in", s.bytes_in)
            .set("bytes_out", s.bytes_out)
            .set(
                "bytes_per_response",
                s.bytes_in.checked_div(s.responses).unwrap_or(0),
            )
            .set("compared", v.compared)
            .set("failed_checks", s.failed_checks);
        // The reference is what the others are compared with: it has no
        // mismatches of its own.
        if !std::ptr::eq(s, &eps[0]) {
            row.set("mismatched", s.mismatched);
        }
        row.write(out)?;
    }
    for (e, s) in r.info.endpoints.iter().zip(eps) {
        for (kind, n) in s.error_kinds() {
            Row::new(&e.label, &e.url)
                .set("part", "error")
                .set("name", field(&kind))
                .set("errors", n)
                .write(out)?;
        }
    }
    for (e, s) in r.info.endpoints.iter().zip(eps) {
        for f in super::injected(s) {
            Row::new(&e.label, &e.url)
                .set("part", "fault")
                .set("name", field(f.name))
                .set("acted", f.acted)
                .write(out)?;
        }
        for (kind, cause, n) in super::cause_rows(s) {
            Row::new(&e.label, &e.url)
                .set("part", "error cause")
                .set("name", field(&format!("{kind}: {cause}")))
                .set("errors", n)
                .write(out)?;
        }
    }
    for g in v.sorted_error_groups() {
        let url = r
            .info
            .endpoints
            .iter()
            .find(|e| e.label == g.endpoint)
            .map_or("", |e| e.url.as_str());
        Row::new(&g.endpoint, url)
            .set("part", "error by method")
            .set("name", field(&format!("{}: {}", g.method, g.field)))
            .set("errors", g.count)
            .write(out)?;
    }
    let methods = super::shows_methods(eps);
    for (e, s) in r.info.endpoints.iter().zip(eps) {
        if s.flows.instances > 0 {
            // All instances, then (suites) each scenario's, named.
            for f in std::iter::once(&s.flows).chain(&s.by_flow) {
                Row::new(&e.label, &e.url)
                    .set("part", "flow")
                    .set("name", &f.name)
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
    Ok(())
}
