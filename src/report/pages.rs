//! The pagination comparison of paged flow steps, the layout of the API
//! benchmark script versus takes over (one column per endpoint): page
//! latency (avg, p50, p95, p99, min, max), size per page, the full
//! traversal (items, pages, time), latency by page depth, and every
//! pair's improvement (`72.7% faster`, `77.3% smaller`) with a
//! Mann-Whitney test where there are samples. Computed once
//! ([`PagedStep::of`]) and rendered as text here and as JSON by
//! `report::json`.

use std::io::{self, Write};

use hdrhistogram::Histogram;

use super::micros;
use super::significance::{mann_whitney, ALPHA};
use crate::engine::RunOutput;
use crate::results::info::RunInfo;
use crate::stats::{PartStats, TraversalStats};

/// One paged step across the endpoints.
pub struct PagedStep<'a> {
    /// The step's name.
    pub name: &'a str,
    /// Per endpoint, in order: its label and the step's figures there.
    pub columns: Vec<(&'a str, &'a PartStats, &'a TraversalStats)>,
}

/// How one endpoint compares with another (`this` against `base`).
pub struct Improvement {
    /// Endpoint positions.
    pub this: usize,
    /// See [`Improvement::this`].
    pub base: usize,
    /// Mean page latency: positive when `this` is faster (in %).
    pub latency: Option<f64>,
    /// The test's p-value of the page latencies, if there were samples.
    pub latency_p: Option<f64>,
    /// Size per page: positive when `this` is smaller (in %).
    pub size: Option<f64>,
    /// Mean traversal time: positive when `this` is faster (in %).
    pub traversal: Option<f64>,
    /// The test's p-value of the traversal times.
    pub traversal_p: Option<f64>,
}

impl<'a> PagedStep<'a> {
    /// The paged steps of a run, in the order of the reference's steps.
    pub fn of(plan: &'a RunInfo, run: &'a RunOutput) -> Vec<PagedStep<'a>> {
        let eps = &run.stats.endpoints;
        let Some(first) = eps.first() else {
            return Vec::new();
        };
        let names = first
            .steps
            .iter()
            .chain(eps.iter().skip(1).flat_map(|s| s.steps.iter()))
            .filter(|p| p.traversal.is_some())
            .map(|p| p.name.as_str());
        let mut seen: Vec<&str> = Vec::new();
        for n in names {
            if !seen.contains(&n) {
                seen.push(n);
            }
        }
        seen.into_iter()
            .map(|name| PagedStep {
                name,
                columns: eps
                    .iter()
                    .zip(&plan.endpoints)
                    .filter_map(|(s, info)| {
                        let p = s.steps.iter().find(|p| p.name == name)?;
                        Some((info.label.as_str(), p, p.traversal.as_deref()?))
                    })
                    .collect(),
            })
            .collect()
    }

    /// Every pair's improvement: each later endpoint against each earlier.
    pub fn improvements(&self) -> Vec<Improvement> {
        let mut out = Vec::new();
        for this in 1..self.columns.len() {
            for base in 0..this {
                let (_, pa, ta) = self.columns[base];
                let (_, pb, tb) = self.columns[this];
                out.push(Improvement {
                    this,
                    base,
                    latency: gain(mean(&pa.latency), mean(&pb.latency)),
                    latency_p: test(&pa.latency, &pb.latency),
                    size: gain(size_per_page(ta), size_per_page(tb)),
                    traversal: gain(mean(&ta.time), mean(&tb.time)),
                    traversal_p: test(&ta.time, &tb.time),
                });
            }
        }
        out
    }
}

/// Bytes per page over the completed traversals.
pub fn size_per_page(t: &TraversalStats) -> Option<f64> {
    (t.pages > 0).then(|| t.bytes as f64 / t.pages as f64)
}

/// A per-traversal average of a count.
pub fn per_traversal(t: &TraversalStats, n: u64) -> Option<f64> {
    (t.completed > 0).then(|| n as f64 / t.completed as f64)
}

fn mean(h: &Histogram<u64>) -> Option<f64> {
    (!h.is_empty()).then(|| h.mean())
}

/// How much smaller `b` is than `a`, in % of `a` (negative: larger).
fn gain(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if a > 0.0 => Some((a - b) / a * 100.0),
        _ => None,
    }
}

/// The Mann-Whitney p-value of two histograms' values (each value as
/// often as it was recorded); `None` with fewer than 2 values a side or
/// more than can be ranked cheaply.
fn test(a: &Histogram<u64>, b: &Histogram<u64>) -> Option<f64> {
    const MOST: u64 = 20_000;
    let values = |h: &Histogram<u64>| -> Vec<f64> {
        h.iter_recorded()
            .flat_map(|v| {
                std::iter::repeat_n(v.value_iterated_to() as f64, v.count_at_value() as usize)
            })
            .collect()
    };
    if a.len() < 2 || b.len() < 2 || a.len() + b.len() > MOST {
        return None;
    }
    mann_whitney(&values(a), &values(b))
}

/// `72.7% faster` / `12.0% slower` (`smaller` / `larger` for sizes), with
/// the test's verdict when there is one.
pub fn describe(gain: Option<f64>, p: Option<f64>, better: &str, worse: &str) -> String {
    let Some(g) = gain else {
        return "-".to_string();
    };
    let text = if g >= 0.0 {
        format!("{g:.1}% {better}")
    } else {
        format!("{:.1}% {worse}", -g)
    };
    match p {
        Some(p) if p < ALPHA => format!("{text} (p={p:.3})"),
        Some(p) => format!("~ {text} (p={p:.3}, not significant)"),
        None => text,
    }
}

/// Bytes as `15.2 KB`.
pub fn bytes(b: f64) -> String {
    if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} KB", b / 1e3)
    } else {
        format!("{b:.0} B")
    }
}

/// The text report's section for each paged step.
///
/// # Errors
/// Only when writing to `out` fails.
pub fn write(out: &mut dyn Write, plan: &RunInfo, run: &RunOutput) -> io::Result<()> {
    for step in PagedStep::of(plan, run) {
        section(out, &step)?;
    }
    Ok(())
}

impl PagedStep<'_> {
    /// The comparison table: a row name and a cell per endpoint; rows
    /// without cells are headings. Every format renders these rows.
    pub fn rows(&self) -> Vec<(String, Vec<String>)> {
        let cols = &self.columns;
        let mut rows: Vec<(String, Vec<String>)> = Vec::new();
        let mut row = |name: &str, f: &dyn Fn(&PartStats, &TraversalStats) -> String| {
            rows.push((
                name.to_string(),
                cols.iter().map(|(_, p, t)| f(p, t)).collect(),
            ));
        };
        let lat = |q: Option<f64>| q.map_or("-".to_string(), micros);
        let count = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0}"));
        row("Page latency", &|_, _| String::new());
        row("  Average", &|p, _| lat(mean(&p.latency)));
        row("  p50", &|p, _| lat(super::quantile(&p.latency, 0.5)));
        row("  p95", &|p, _| lat(super::quantile(&p.latency, 0.95)));
        row("  p99", &|p, _| lat(super::quantile(&p.latency, 0.99)));
        row("  Min", &|p, _| {
            lat((!p.latency.is_empty()).then(|| p.latency.min() as f64))
        });
        row("  Max", &|p, _| lat(super::quantile(&p.latency, 1.0)));
        row("Size per page", &|_, t| {
            size_per_page(t).map_or("-".into(), bytes)
        });
        row("Full traversal", &|_, _| String::new());
        row("  Items", &|_, t| count(per_traversal(t, t.items)));
        row("  Pages", &|_, t| count(per_traversal(t, t.pages)));
        row("  Time (avg)", &|_, t| lat(mean(&t.time)));
        row("  Time (p95)", &|_, t| lat(super::quantile(&t.time, 0.95)));
        row("  Completed", &|_, t| {
            format!("{} of {}", t.completed, t.completed + t.stopped)
        });
        if cols
            .iter()
            .any(|(_, _, t)| t.duplicates > 0 || t.unkeyed > 0)
        {
            row("  Repeated items", &|_, t| t.duplicates.to_string());
            row("  Items without key", &|_, t| t.unkeyed.to_string());
        }
        let depths = cols
            .iter()
            .map(|(_, _, t)| t.depth.len())
            .max()
            .unwrap_or(0);
        if depths > 0 {
            row("Latency by page depth (p50)", &|_, _| String::new());
            for b in 0..depths {
                let label = format!("  page {}", TraversalStats::bucket_label(b));
                row(&label, &|_, t| {
                    lat(t.depth.get(b).and_then(|h| super::quantile(h, 0.5)))
                });
            }
        }
        rows
    }

    /// Each pair's improvement as a line: `stream vs hateoas: latency
    /// 72.7% faster (p=0.001); size ...; traversal ...`.
    pub fn improvement_lines(&self) -> Vec<String> {
        self.improvements()
            .iter()
            .map(|g| {
                format!(
                    "{} vs {}: latency {}; size {}; traversal {}",
                    self.columns[g.this].0,
                    self.columns[g.base].0,
                    describe(g.latency, g.latency_p, "faster", "slower"),
                    describe(g.size, None, "smaller", "larger"),
                    describe(g.traversal, g.traversal_p, "faster", "slower"),
                )
            })
            .collect()
    }
}

fn section(out: &mut dyn Write, step: &PagedStep<'_>) -> io::Result<()> {
    let esc = super::escape_terminal;
    writeln!(out)?;
    writeln!(out, "** Pages of step {}:", esc(step.name))?;
    let mut rows = vec![(
        String::new(),
        step.columns
            .iter()
            .map(|(l, _, _)| esc(l))
            .collect::<Vec<_>>(),
    )];
    rows.extend(step.rows());
    let width = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..step.columns.len())
        .map(|c| {
            rows.iter()
                .map(|r| r.1[c].chars().count())
                .max()
                .unwrap_or(0)
                .max(10)
        })
        .collect();
    for (name, cells) in &rows {
        let mut line = format!("   {name:<width$}");
        for (cell, w) in cells.iter().zip(&widths) {
            line.push_str(&format!("  {cell:>w$}"));
        }
        writeln!(out, "{}", line.trim_end())?;
    }
    let lines = step.improvement_lines();
    if !lines.is_empty() {
        writeln!(out, "   Improvements:")?;
        for l in lines {
            writeln!(out, "     {}", esc(&l))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gains_read_as_the_seed_reads_them() {
        // 45.23 ms against 12.34 ms: 72.7% faster.
        assert_eq!(
            describe(gain(Some(45.23), Some(12.34)), None, "faster", "slower"),
            "72.7% faster"
        );
        assert_eq!(
            describe(gain(Some(10.0), Some(12.0)), None, "smaller", "larger"),
            "20.0% larger"
        );
        assert_eq!(describe(None, None, "faster", "slower"), "-");
    }

    #[test]
    fn depth_buckets_double() {
        let b: Vec<usize> = [1, 2, 3, 4, 5, 8, 9, 100]
            .iter()
            .map(|d| TraversalStats::bucket(*d))
            .collect();
        assert_eq!(b, [0, 1, 2, 2, 3, 3, 4, 7]);
        assert_eq!(TraversalStats::bucket_label(0), "1");
        assert_eq!(TraversalStats::bucket_label(3), "5-8");
        assert_eq!(TraversalStats::bucket_label(7), "65-128");
    }
}
