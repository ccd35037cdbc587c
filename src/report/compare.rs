//! `versus compare`: saved runs side by side per endpoint label (or the
//! endpoints of one run), one row per metric, the change against the first
//! column ("50.0% faster", "12.5% smaller"), and a Mann-Whitney U test over
//! the per-interval samples so noise is shown as `~` with its p-value, as
//! benchstat does. Below them, per flow step and per method (matched by
//! name), the change in p50, p99 and error rate of the totals, untested:
//! the samples are kept per endpoint only.

use std::io::{self, Write};

use super::micros;
use super::quantile;
use super::significance::{can_tell, fewest_to_tell, mann_whitney, ALPHA};
use crate::results::series::EndpointPoint;
use crate::results::SavedRun;
use crate::stats::{EndpointStats, PartStats};

/// One interval of one column.
#[derive(Clone, Debug)]
struct Sample {
    seconds: f64,
    point: EndpointPoint,
    compared: u64,
    mismatched: u64,
}

/// One column: an endpoint of a run.
#[derive(Clone, Debug)]
pub struct Column {
    /// File, label, or `file: label`.
    pub title: String,
    stats: EndpointStats,
    compared: u64,
    mismatched: u64,
    /// Mismatches counted against this endpoint (one-run comparisons).
    own_mismatches: Option<u64>,
    /// False for a run's reference (or its only endpoint): nothing was
    /// compared against it, so it has no mismatch rate of its own.
    judged: bool,
    samples: Vec<Sample>,
}

/// The columns compared for one endpoint label (or one run).
#[derive(Clone, Debug)]
pub struct Table {
    /// What is compared.
    pub title: String,
    /// The first is the baseline.
    pub columns: Vec<Column>,
}

fn column(title: String, run: &SavedRun, e: usize, one_run: bool) -> Column {
    Column {
        title,
        stats: run.output.stats.endpoints[e].clone(),
        compared: run.output.stats.verdicts.compared,
        mismatched: run.output.stats.verdicts.mismatched,
        own_mismatches: one_run.then_some(run.output.stats.endpoints[e].mismatched),
        judged: e > 0,
        samples: run
            .series
            .full_points()
            .filter_map(|p| {
                p.endpoints.get(e).map(|ep| Sample {
                    seconds: p.seconds,
                    point: ep.clone(),
                    compared: p.compared,
                    mismatched: p.mismatched,
                })
            })
            .collect(),
    }
}

/// The tables to show: with one run, its endpoints against its first;
/// with several, each endpoint label of the first run across the runs
/// that have it.
///
/// Runs are paired by endpoint label. Runs of one endpoint each are paired
/// whatever their labels (a note says so); anything that cannot be paired
/// is left out with a note naming it and why, never silently.
pub fn columns(runs: &[(String, SavedRun)]) -> (Vec<Table>, Vec<String>) {
    let mut notes = Vec::new();
    let tables = match runs {
        [] => Vec::new(),
        [(name, run)] => vec![Table {
            title: format!("endpoints of {name}"),
            columns: (0..run.info.endpoints.len())
                .map(|e| column(run.info.endpoints[e].label.clone(), run, e, true))
                .collect(),
        }],
        [_, ..] if runs.iter().all(|(_, r)| r.info.endpoints.len() == 1) => {
            let labels: Vec<&str> = runs
                .iter()
                .map(|(_, r)| r.info.endpoints[0].label.as_str())
                .collect();
            let mut title = labels[0].to_string();
            if labels.iter().any(|l| *l != labels[0]) {
                notes.push(format!(
                    "runs of one endpoint each, paired whatever their labels ({})",
                    labels.join(", ")
                ));
                title = labels.join(" / ");
            }
            vec![Table {
                title: format!("endpoint {title}"),
                columns: runs
                    .iter()
                    .map(|(name, run)| column(name.clone(), run, 0, false))
                    .collect(),
            }]
        }
        [(first_name, first), ..] => {
            let known: Vec<&str> = first
                .info
                .endpoints
                .iter()
                .map(|e| e.label.as_str())
                .collect();
            for (name, run) in &runs[1..] {
                for ep in &run.info.endpoints {
                    if !known.contains(&ep.label.as_str()) {
                        notes.push(format!(
                            "{name}: endpoint {} has no endpoint of that label in {first_name} (labels: {}); not compared",
                            ep.label,
                            known.join(", ")
                        ));
                    }
                }
                for label in &known {
                    if !run.info.endpoints.iter().any(|e| e.label == *label) {
                        notes.push(format!(
                            "{name}: no endpoint {label}; its column is missing"
                        ));
                    }
                }
            }
            first
                .info
                .endpoints
                .iter()
                .map(|ep| Table {
                    title: format!("endpoint {}", ep.label),
                    columns: runs
                        .iter()
                        .filter_map(|(name, run)| {
                            run.info
                                .endpoints
                                .iter()
                                .position(|x| x.label == ep.label)
                                .map(|e| column(name.clone(), run, e, false))
                        })
                        .collect(),
                })
                .collect()
        }
    };
    (tables, notes)
}

/// How a change reads.
#[derive(Clone, Copy)]
enum Sense {
    /// Higher is more (rates): "x% higher / lower".
    Throughput,
    /// Lower is faster: "x% faster / slower".
    Latency,
    /// Lower is smaller: "x% smaller / larger".
    Size,
    /// A share: the difference in percentage points.
    Share,
}

struct Metric {
    name: &'static str,
    sense: Sense,
    total: fn(&Column) -> Option<f64>,
    sample: fn(&Sample) -> Option<f64>,
    show: fn(f64) -> String,
}

fn share(part: u64, whole: u64) -> Option<f64> {
    (whole > 0).then(|| part as f64 * 100.0 / whole as f64)
}

const METRICS: &[Metric] = &[
    Metric {
        name: "requests/s",
        sense: Sense::Throughput,
        total: |c| Some(c.stats.rate()),
        sample: |s| Some(s.point.completed as f64 / s.seconds),
        show: |v| format!("{v:.2}"),
    },
    Metric {
        name: "latency avg",
        sense: Sense::Latency,
        total: |c| (!c.stats.latency.is_empty()).then(|| c.stats.latency.mean()),
        sample: |s| s.point.mean,
        show: micros,
    },
    Metric {
        name: "latency p50",
        sense: Sense::Latency,
        total: |c| quantile(&c.stats.latency, 0.5),
        sample: |s| s.point.p50.map(|v| v as f64),
        show: micros,
    },
    Metric {
        name: "latency p95",
        sense: Sense::Latency,
        total: |c| quantile(&c.stats.latency, 0.95),
        sample: |s| s.point.p95.map(|v| v as f64),
        show: micros,
    },
    Metric {
        name: "latency p99",
        sense: Sense::Latency,
        total: |c| quantile(&c.stats.latency, 0.99),
        sample: |s| s.point.p99.map(|v| v as f64),
        show: micros,
    },
    Metric {
        name: "latency max",
        sense: Sense::Latency,
        total: |c| quantile(&c.stats.latency, 1.0),
        sample: |s| s.point.max.map(|v| v as f64),
        show: micros,
    },
    Metric {
        name: "response size",
        sense: Sense::Size,
        total: |c| c.stats.bytes_per_response().map(|b| b as f64),
        sample: |s| {
            (s.point.responses > 0).then(|| s.point.bytes_in as f64 / s.point.responses as f64)
        },
        show: |v| format!("{v:.0} B"),
    },
    Metric {
        name: "errors",
        sense: Sense::Share,
        total: |c| share(c.stats.errors(), c.stats.completed()),
        sample: |s| share(s.point.errors, s.point.completed),
        show: |v| format!("{v:.2}%"),
    },
    Metric {
        name: "mismatches",
        sense: Sense::Share,
        total: |c| match c.own_mismatches {
            _ if !c.judged => None,
            Some(n) => share(n, c.compared),
            None => share(c.mismatched, c.compared),
        },
        // Per-interval mismatches are per run, not per endpoint: only
        // tested when columns are runs.
        sample: |s| share(s.mismatched, s.compared),
        show: |v| format!("{v:.2}%"),
    },
];

fn change(sense: Sense, base: Option<f64>, new: Option<f64>) -> String {
    let (Some(b), Some(n)) = (base, new) else {
        return "-".into();
    };
    if let Sense::Share = sense {
        return format!("{:+.2} pp", n - b);
    }
    if b == 0.0 {
        return if n == 0.0 { "same".into() } else { "-".into() };
    }
    let pct = (n - b) / b * 100.0;
    if pct == 0.0 {
        return "same".into();
    }
    let (up, down) = match sense {
        Sense::Throughput => ("higher", "lower"),
        Sense::Latency => ("slower", "faster"),
        _ => ("larger", "smaller"),
    };
    if pct > 0.0 {
        format!("{pct:.1}% {up}")
    } else {
        format!("{:.1}% {down}", -pct)
    }
}

fn samples(m: &Metric, c: &Column) -> Vec<f64> {
    if (m.total)(c).is_none() {
        return Vec::new();
    }
    c.samples.iter().filter_map(|s| (m.sample)(s)).collect()
}

/// A flow step's or a method's figures that are compared: name, how a
/// change reads, the figure, how it is shown.
type PartMetric = (
    &'static str,
    Sense,
    fn(&PartStats) -> Option<f64>,
    fn(f64) -> String,
);

const PART_METRICS: &[PartMetric] = &[
    ("p50", Sense::Latency, |p| quantile(&p.latency, 0.5), micros),
    (
        "p99",
        Sense::Latency,
        |p| quantile(&p.latency, 0.99),
        micros,
    ),
    (
        "errors",
        Sense::Share,
        |p| share(p.errors, p.requests),
        |v| format!("{v:.2}%"),
    ),
];

/// One row: `name`, then each column's value and, after the first, its
/// change against the first; tested when `samples` (per column) are given.
fn row(
    name: String,
    sense: Sense,
    show: fn(f64) -> String,
    values: &[Option<f64>],
    samples: Option<&[Vec<f64>]>,
) -> Vec<String> {
    let mut row = vec![name];
    let base = values.first().copied().flatten();
    for (i, v) in values.iter().enumerate() {
        row.push(v.map_or_else(|| "-".into(), show));
        if i == 0 {
            continue;
        }
        let delta = change(sense, base, *v);
        let Some(s) = samples else {
            row.push(delta);
            continue;
        };
        let (b, c) = (s[0].len(), s[i].len());
        row.push(match mann_whitney(&s[0], &s[i]) {
            _ if delta == "-" => delta,
            Some(p) if p < ALPHA => format!("{delta} (p={p:.3} n={b}+{c})"),
            // Runs too short for the test to reach ALPHA whatever the
            // figures: say so, and what would be enough.
            _ if !can_tell(b, c) => format!("{delta} (untested: n={b}+{c}, too few)"),
            Some(p) => format!("~ (p={p:.3} n={b}+{c})"),
            None => delta,
        });
    }
    row
}

/// Where an endpoint's parts of one kind are: its steps, or its methods.
type Parts = fn(&EndpointStats) -> &Vec<PartStats>;

/// The kinds of parts a table compares: flow steps, and methods when some
/// column saw more than one.
fn part_kinds(t: &Table) -> Vec<(&'static str, Parts)> {
    let mut kinds: Vec<(&str, Parts)> = vec![("step", |s| &s.steps)];
    if super::shows_methods(t.columns.iter().map(|c| &c.stats)) {
        kinds.push(("method", |s| &s.methods));
    }
    kinds
}

/// The names of the parts `of` the columns, the first column's order
/// first.
fn part_names(t: &Table, of: Parts) -> Vec<&str> {
    let mut names: Vec<&str> = Vec::new();
    for p in t.columns.iter().flat_map(|c| of(&c.stats)) {
        if !names.contains(&p.name.as_str()) {
            names.push(&p.name);
        }
    }
    names
}

/// The grid of one table: a header row, one row per metric, then per
/// flow step and per method (matched by name) its p50, p99 and errors.
fn grid(t: &Table) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    let mut head = vec![String::new()];
    for (i, c) in t.columns.iter().enumerate() {
        head.push(c.title.clone());
        if i > 0 {
            head.push("vs first".into());
        }
    }
    rows.push(head);
    let one_run = t.columns.iter().any(|c| c.own_mismatches.is_some());
    for m in METRICS {
        let values: Vec<Option<f64>> = t.columns.iter().map(|c| (m.total)(c)).collect();
        let samples: Vec<Vec<f64>> = t.columns.iter().map(|c| samples(m, c)).collect();
        let tested = !(one_run && m.name == "mismatches");
        rows.push(row(
            m.name.to_string(),
            m.sense,
            m.show,
            &values,
            tested.then_some(&samples[..]),
        ));
    }
    for (kind, of) in part_kinds(t) {
        for name in part_names(t, of) {
            for (metric, sense, value, show) in PART_METRICS {
                let values: Vec<Option<f64>> = t
                    .columns
                    .iter()
                    .map(|c| of(&c.stats).iter().find(|p| p.name == name).and_then(value))
                    .collect();
                rows.push(row(
                    format!("{kind} {name} {metric}"),
                    *sense,
                    *show,
                    &values,
                    None,
                ));
            }
        }
    }
    rows
}

/// True when a table compares runs and has rows of flow steps or
/// methods, which are not tested: the series of a saved run has no
/// per-interval figures of them, so their change is of the totals.
fn untested_parts(t: &Table) -> bool {
    t.columns.len() > 1
        && part_kinds(t)
            .into_iter()
            .any(|(_, of)| !part_names(t, of).is_empty())
}

/// The note under the tables about step and method rows, if any has them.
fn parts_note(tables: &[Table]) -> Option<&'static str> {
    tables.iter().any(untested_parts).then_some(
        "Step and method rows (matched by name) compare the runs' totals: no per-interval figures are kept for them, so they are not tested.",
    )
}

/// Write the comparison as aligned text tables.
///
/// # Errors
/// Only when writing fails.
pub fn write_text(out: &mut dyn Write, tables: &[Table]) -> io::Result<()> {
    for (k, t) in tables.iter().enumerate() {
        if k > 0 {
            writeln!(out)?;
        }
        writeln!(out, "{}:", super::escape_terminal(&t.title))?;
        let rows = grid(t);
        let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..cols)
            .map(|i| {
                rows.iter()
                    .filter_map(|r| r.get(i))
                    .map(|s| s.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        for r in &rows {
            let mut line = String::from("  ");
            for (i, cell) in r.iter().enumerate() {
                let pad = widths[i] - cell.chars().count();
                if i == 0 {
                    line.push_str(cell);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str("  ");
                    line.push_str(&" ".repeat(pad));
                    line.push_str(cell);
                }
            }
            writeln!(out, "{}", super::escape_terminal(line.trim_end()))?;
        }
    }
    if tables.iter().any(|t| t.columns.len() > 1) {
        writeln!(out)?;
        writeln!(
            out,
            "Changes are against the first column; ~ means not significant (Mann-Whitney U over per-interval samples, p >= {ALPHA}); n is samples per side; untested: too few intervals for the test to tell at all (runs of {} intervals a side or more can).",
            fewest_to_tell()
        )?;
    }
    if let Some(note) = parts_note(tables) {
        writeln!(out, "{note}")?;
    }
    Ok(())
}

/// Write the comparison as Markdown tables.
///
/// # Errors
/// Only when writing fails.
pub fn write_markdown(out: &mut dyn Write, tables: &[Table]) -> io::Result<()> {
    for t in tables {
        writeln!(out, "## {}", super::markdown::cell(&t.title))?;
        writeln!(out)?;
        let rows = grid(t);
        for (i, r) in rows.iter().enumerate() {
            let cells: Vec<String> = r.iter().map(|c| super::markdown::cell(c)).collect();
            writeln!(out, "| {} |", cells.join(" | "))?;
            if i == 0 {
                writeln!(out, "|---|{}", "---:|".repeat(r.len() - 1))?;
            }
        }
        writeln!(out)?;
    }
    writeln!(
        out,
        "Changes are against the first column; ~ means not significant (Mann-Whitney U over per-interval samples, p >= {ALPHA}; untested: too few intervals for the test to tell at all, runs of {} intervals a side or more can).",
        fewest_to_tell()
    )?;
    if let Some(note) = parts_note(tables) {
        writeln!(out)?;
        writeln!(out, "{note}")?;
    }
    Ok(())
}
