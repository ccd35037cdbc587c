//! The text report, in the original versus layout (`Endpoints:`, per
//! endpoint `Requests:`, `Timing:`, `Percentiles:`, `Errors:`, then
//! `** Summary for N endpoints:`), so existing readers still parse it;
//! versus's additions come after the original lines of each block.

use std::io::{self, Write};

use super::{go_duration, percent, seconds};
use crate::endpoint::Failure;
use crate::engine::RunOutput;
use crate::plan::Plan;
use crate::stats::EndpointStats;

use super::info::RunInfo;

/// The percentiles the report lists.
const PERCENTILES: [f64; 6] = [25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

/// Write the full report.
///
/// # Errors
/// Only when writing to `out` fails.
pub fn write(out: &mut dyn Write, plan: &Plan, run: &RunOutput) -> io::Result<()> {
    write_run(out, &RunInfo::from_plan(plan), run)
}

/// Write the full report of a run described by `plan` (a live run's, or a
/// saved run's).
///
/// # Errors
/// Only when writing to `out` fails.
pub fn write_run(out: &mut dyn Write, plan: &RunInfo, run: &RunOutput) -> io::Result<()> {
    writeln!(out, "Endpoints:")?;
    for (i, (spec, s)) in plan.endpoints.iter().zip(&run.stats.endpoints).enumerate() {
        writeln!(out)?;
        writeln!(out, "{i}. {spec}")?;
        writeln!(out)?;
        endpoint(out, plan, s)?;
    }
    summary(out, plan, run)
}

fn endpoint(out: &mut dyn Write, plan: &RunInfo, s: &EndpointStats) -> io::Result<()> {
    writeln!(out, "   Requests:   {:.2} per second", s.rate)?;
    let h = &s.latency;
    if h.is_empty() {
        writeln!(out, "   Timing:     - (no responses)")?;
    } else {
        writeln!(
            out,
            "   Timing:     {} avg, {} min, {} max",
            seconds(h.mean().round() as u64),
            seconds(h.min()),
            seconds(h.max())
        )?;
        writeln!(
            out,
            "               {} standard deviation",
            seconds(h.stdev().round() as u64)
        )?;
        writeln!(out)?;
        writeln!(out, "   Percentiles:")?;
        for p in PERCENTILES {
            writeln!(out, "     {p}% in {}", seconds(h.value_at_percentile(p)))?;
        }
    }
    writeln!(out)?;
    let completed = s.completed();
    writeln!(out, "   Errors: {}", percent(s.errors(), completed))?;
    for f in Failure::ALL {
        let n = s.failures[f.index()];
        if n > 0 {
            writeln!(out, "     {f}: {n}")?;
        }
    }
    for (code, n) in s.status.iter().enumerate().skip(400) {
        if *n > 0 {
            writeln!(out, "     HTTP {code}: {n}")?;
        }
    }
    writeln!(out)?;
    let statuses: Vec<String> = s
        .status
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .map(|(code, n)| format!("{code}: {n}"))
        .collect();
    if !statuses.is_empty() {
        writeln!(out, "   Status:     {}", statuses.join(", "))?;
    }
    let avg_in = s.bytes_in.checked_div(s.responses).unwrap_or(0);
    writeln!(
        out,
        "   Bytes:      {} in ({avg_in} avg per response), {} out",
        s.bytes_in, s.bytes_out
    )?;
    if !s.ttfb.is_empty() {
        writeln!(
            out,
            "   First byte: {} avg, {} p99",
            seconds(s.ttfb.mean().round() as u64),
            seconds(s.ttfb.value_at_percentile(99.0))
        )?;
    }
    if s.reconnects > 0 {
        writeln!(
            out,
            "   Connects:   {} during the run, {} avg",
            s.reconnects,
            seconds(s.connect.mean().round() as u64)
        )?;
    }
    if !s.held.is_zero() {
        writeln!(
            out,
            "   Held back:  {} a full lead window ({} requests) ahead of a slower endpoint; not counted in its rate",
            go_duration(s.held),
            plan.window
        )?;
    }
    if s.abandoned > 0 {
        writeln!(
            out,
            "   Abandoned:  {} requests still in flight when the run stopped",
            s.abandoned
        )?;
    }
    Ok(())
}

fn summary(out: &mut dyn Write, plan: &RunInfo, run: &RunOutput) -> io::Result<()> {
    let eps = &run.stats.endpoints;
    let total: u64 = eps.iter().map(EndpointStats::completed).sum();
    let errors: u64 = eps.iter().map(EndpointStats::errors).sum();
    let mut all = crate::stats::new_histogram();
    for s in eps {
        let _ = all.add(&s.latency);
    }
    let v = &run.stats.verdicts;
    writeln!(out)?;
    writeln!(out, "** Summary for {} endpoints:", eps.len())?;
    writeln!(
        out,
        "   Completed:  {} results with {total} total requests",
        v.compared
    )?;
    let avg = if all.is_empty() {
        "-".to_string()
    } else {
        go_duration(std::time::Duration::from_nanos(
            (all.mean() * 1000.0).round() as u64,
        ))
    };
    writeln!(
        out,
        "   Timing:     {avg} request avg, {} total run time",
        go_duration(run.elapsed)
    )?;
    writeln!(out, "   Errors:     {errors} ({})", percent(errors, total))?;
    if plan.comparison || eps.len() < 2 {
        writeln!(out, "   Mismatched: {}", v.mismatched)?;
    } else {
        writeln!(out, "   Mismatched: - (comparison off)")?;
    }
    if v.incomplete > 0 {
        writeln!(
            out,
            "   Incomplete: {} requests not answered by every endpoint when the run stopped",
            v.incomplete
        )?;
    }
    let input = &run.input;
    if input.malformed > 0 {
        writeln!(
            out,
            "   Input:      {} requests read, {} malformed records skipped",
            input.requests, input.malformed
        )?;
        for m in &input.samples {
            writeln!(
                out,
                "               {}: {}",
                m.location,
                super::escape_terminal(&m.reason)
            )?;
        }
        if input.malformed > input.samples.len() as u64 {
            writeln!(
                out,
                "               ... and {} more",
                input.malformed - input.samples.len() as u64
            )?;
        }
    }
    if let Some(summary) = &input.summary {
        writeln!(out, "   Source:     {}", super::escape_terminal(summary))?;
    }
    if run.interrupted {
        writeln!(
            out,
            "   Stopped:    interrupted; this report covers the run until then"
        )?;
    }
    Ok(())
}
