//! The text report, in the original versus layout (`Endpoints:`, per
//! endpoint `Requests:`, `Timing:`, `Percentiles:`, `Errors:`, then
//! `** Summary for N endpoints:`), so existing readers still parse it;
//! versus's additions come after the original lines of each block.

use std::io::{self, Write};

use super::{duration, escape_terminal, percent, seconds};
use crate::engine::RunOutput;
use crate::model::{Failure, TlsReason};
use crate::stats::{EndpointStats, MismatchGroup, VerdictStats};

use crate::results::info::RunInfo;

/// The percentiles the report lists.
const PERCENTILES: [f64; 6] = [25.0, 50.0, 75.0, 90.0, 95.0, 99.0];

/// Write the full report of a run described by `plan` (a live run's, or a
/// saved run's).
///
/// # Errors
/// Only when writing to `out` fails.
pub fn write(out: &mut dyn Write, plan: &RunInfo, run: &RunOutput) -> io::Result<()> {
    for note in &plan.notes {
        writeln!(out, "Note: {}", escape_terminal(note))?;
    }
    if !plan.notes.is_empty() {
        writeln!(out)?;
    }
    nothing_connected(out, plan, run)?;
    writeln!(out, "Endpoints:")?;
    for (i, (spec, s)) in plan.endpoints.iter().zip(&run.stats.endpoints).enumerate() {
        writeln!(out)?;
        writeln!(out, "{i}. {spec}")?;
        writeln!(out)?;
        let grpc = spec.url.starts_with("grpc://") || spec.url.starts_with("grpcs://");
        endpoint(out, plan, s, grpc)?;
    }
    super::pages::write(out, plan, run)?;
    summary(out, plan, run)
}

/// A sweep's load curve: a row per step, endpoint and part, in aligned
/// columns.
pub fn load_curve(
    out: &mut dyn Write,
    plan: &RunInfo,
    steps: &crate::results::steps::Steps,
) -> io::Result<()> {
    let mut rows = vec![["Step".to_string(), "Endpoint".to_string()]
        .into_iter()
        .chain(super::curve::COLUMNS.map(String::from))
        .collect::<Vec<_>>()];
    for p in super::curve::points(steps) {
        let label = &plan.endpoints[p.endpoint].label;
        let who = match p.part {
            Some(part) => format!("  {}", escape_terminal(part)),
            None => escape_terminal(label),
        };
        rows.push([p.step(), who].into_iter().chain(p.cells()).collect());
    }
    if rows.len() == 1 {
        writeln!(out)?;
        return writeln!(
            out,
            "** Load curve: no step reached its counted time (the run stopped while the first settled)"
        );
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    writeln!(out)?;
    let by = match plan.search {
        Some(_) => "--find-capacity",
        None => "--sweep",
    };
    writeln!(out, "** Load curve ({by}):")?;
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, w))| match c {
                0 | 1 => format!("{cell:<w$}"),
                _ => format!("{cell:>w$}"),
            })
            .collect();
        writeln!(out, "   {}", cells.join("  ").trim_end())?;
    }
    Ok(())
}

/// A capacity search's result: each endpoint's capacity, against the
/// reference's.
pub fn capacity(
    out: &mut dyn Write,
    plan: &RunInfo,
    found: &[super::capacity::Capacity],
) -> io::Result<()> {
    let conditions = plan
        .search
        .as_ref()
        .map(|s| s.conditions.join("', '"))
        .unwrap_or_default();
    writeln!(out)?;
    writeln!(
        out,
        "** Capacity (--find-capacity '{}'):",
        escape_terminal(&conditions)
    )?;
    for (e, line) in plan.endpoints.iter().zip(super::capacity::lines(found)) {
        writeln!(out, "   {}: {line}", escape_terminal(&e.label))?;
    }
    Ok(())
}

/// The faults set on an endpoint (`--fault`) and how often each acted:
/// the errors they caused are among the errors above, so a reader can
/// tell what versus broke from what broke by itself.
fn injected(out: &mut dyn Write, s: &crate::stats::EndpointStats) -> io::Result<()> {
    if s.faults.is_empty() {
        return Ok(());
    }
    writeln!(
        out,
        "   Faults injected: (connections acted on; requests for status, abort, rate-limit)"
    )?;
    for f in super::injected(s) {
        writeln!(out, "     {}", f.line())?;
    }
    Ok(())
}

/// Before everything else: a line when some endpoint never had a
/// connection (its numbers are connect attempts, not a benchmark), and one
/// per other endpoint that failed every request, with its main errors.
fn nothing_connected(out: &mut dyn Write, plan: &RunInfo, run: &RunOutput) -> io::Result<()> {
    let mut said = false;
    for (i, (spec, s)) in plan.endpoints.iter().zip(&run.stats.endpoints).enumerate() {
        if s.failed_every_request() && !s.never_connected() {
            let kinds: Vec<String> = s
                .error_kinds()
                .into_iter()
                .take(3)
                .map(|(k, n)| format!("{}: {n}", escape_terminal(&k)))
                .collect();
            writeln!(
                out,
                "Every request failed at {i}. {spec}: {} of {} ({}); its figures below are errors, not a benchmark.",
                s.errors().min(s.completed()),
                s.completed(),
                kinds.join(", ")
            )?;
            said = true;
        }
    }
    if said {
        writeln!(out)?;
    }
    connect_line(out, plan, run)
}

/// The line for endpoints that never had a connection.
fn connect_line(out: &mut dyn Write, plan: &RunInfo, run: &RunOutput) -> io::Result<()> {
    let never: Vec<(String, u64)> = plan
        .endpoints
        .iter()
        .zip(&run.stats.endpoints)
        .enumerate()
        .filter(|(_, (_, s))| s.never_connected())
        .map(|(i, (spec, s))| (format!("{i}. {spec}"), s.completed() - s.stopped()))
        .collect();
    if never.is_empty() {
        return Ok(());
    }
    let attempts: u64 = never.iter().map(|(_, n)| n).sum();
    let names: Vec<&str> = never.iter().map(|(name, _)| name.as_str()).collect();
    let whom = if never.len() == run.stats.endpoints.len() {
        "any endpoint".to_string()
    } else {
        names.join(", ")
    };
    writeln!(
        out,
        "Nothing connected to {whom}: all {attempts} attempts failed (see Errors), no request reached a server."
    )?;
    writeln!(out)
}

/// One endpoint's section; `grpc`: a gRPC endpoint, whose failures also
/// name the status a gRPC client would report.
fn endpoint(out: &mut dyn Write, plan: &RunInfo, s: &EndpointStats, grpc: bool) -> io::Result<()> {
    requests(out, s)?;
    timing(out, s)?;
    writeln!(out)?;
    errors(out, s, grpc)?;
    injected(out, s)?;
    writeln!(out)?;
    responses(out, s)?;
    if let Some(rate) = plan.rate {
        schedule(out, plan, rate, s)?;
    } else if plan.load_varies() {
        writeln!(out, "   Users:      {:.1} on average", s.mean_users())?;
    }
    connections(out, s)?;
    connect_waits(out, plan, s)?;
    spare_failures(out, s)?;
    if !s.held_back.is_zero() {
        writeln!(
            out,
            "   Held back:  {} with a full lead window ({} open) waiting for a slower endpoint: its rate above is what it completed in that time (--lead lets it run further ahead)",
            super::held(s),
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
    flows(out, s)?;
    parts(out, "Steps", &s.steps, true)?;
    if s.methods.len() > 1 {
        parts(out, "By method", &s.methods, false)?;
    }
    Ok(())
}

/// The request rate, and the failed connects apart: they are attempts,
/// not requests, and are left out of the rate.
fn requests(out: &mut dyn Write, s: &EndpointStats) -> io::Result<()> {
    writeln!(out, "   Requests:   {} per second", super::rate(s.rate()))?;
    let failed = s.failed_connects();
    if failed > 0 {
        let then = match s.stopped() {
            0 => "each slot backing off",
            _ => "then the endpoint was stopped",
        };
        writeln!(
            out,
            "   Connect attempts: {failed} failed ({} per second, {then}), left out of the rate above",
            super::rate(s.failed_connect_rate())
        )?;
    }
    Ok(())
}

/// Latency: average, minimum, maximum, standard deviation and the
/// [`PERCENTILES`]; a dash without responses.
fn timing(out: &mut dyn Write, s: &EndpointStats) -> io::Result<()> {
    let h = &s.latency;
    if h.is_empty() {
        return writeln!(out, "   Timing:     - (no responses)");
    }
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
    Ok(())
}

/// The share of errors, then each kind with the faults that caused some
/// of it (and, at a gRPC endpoint, the status a gRPC client reports); TLS
/// failures by reason.
fn errors(out: &mut dyn Write, s: &EndpointStats, grpc: bool) -> io::Result<()> {
    writeln!(out, "   Errors: {}", percent(s.errors(), s.completed()))?;
    let tls = Failure::Tls(TlsReason::ALL[0]).name();
    for (kind, n) in s.error_kinds() {
        let shown = match Failure::ALL.iter().find(|f| f.name() == kind) {
            Some(f) if grpc => format!("{kind} ({})", crate::grpc::code_name(f.grpc_code())),
            _ => kind.clone(),
        };
        let causes = super::causes_note(s, &kind, n);
        writeln!(
            out,
            "     {}: {n}{}",
            escape_terminal(&shown),
            escape_terminal(&causes)
        )?;
        if kind == tls {
            for r in TlsReason::ALL {
                let n = s.tls_reasons[r.index()];
                if n > 0 {
                    writeln!(out, "       {}: {n}", r.name())?;
                }
            }
        }
    }
    Ok(())
}

/// What came back: the statuses, bytes in and out, and the time to the
/// first byte.
fn responses(out: &mut dyn Write, s: &EndpointStats) -> io::Result<()> {
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
    let avg_in = s.bytes_per_response().unwrap_or(0);
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
    Ok(())
}

/// Open model (`--rate`, scheduled `rate` per second): the rate sent
/// (over the time sending lasted, not the wait for the last answers), the
/// latency from the actual send (as a closed-loop tool reports it), how
/// far sending lagged behind the schedule, and the due requests the stop
/// left unsent. A scenario schedules instances and sends their steps'
/// requests: each figure is named for what it counts.
fn schedule(out: &mut dyn Write, plan: &RunInfo, rate: f64, s: &EndpointStats) -> io::Result<()> {
    let (scheduled, sent) = match s.steps.is_empty() {
        true => ("", ""),
        false => (" instances", " requests"),
    };
    // Stages and sweeps schedule a rate that changes: the line names its
    // peak, and `Offered:` the average.
    let how = match (plan.search.is_some(), plan.load_varies()) {
        (true, _) => "at the search's start",
        (false, true) => "at the peak",
        (false, false) => "scheduled",
    };
    writeln!(
        out,
        "   Rate:       {}{scheduled} per second {how}, {}{sent} per second sent",
        super::rate(rate),
        super::rate(s.sent_rate())
    )?;
    if plan.load_varies() {
        writeln!(
            out,
            "   Offered:    {} per second on average ({} due)",
            super::rate(s.offered_rate()),
            s.offered
        )?;
    }
    if !s.uncorrected.is_empty() {
        writeln!(
            out,
            "   Uncorrected: {} p50, {} p99, {} max (from the actual send, as a closed-loop tool reports)",
            seconds(s.uncorrected.value_at_percentile(50.0)),
            seconds(s.uncorrected.value_at_percentile(99.0)),
            seconds(s.uncorrected.max())
        )?;
    }
    if !s.lag.is_empty() {
        writeln!(
            out,
            "   Send lag:   {} p50, {} p99 behind the schedule; {} {} late because --max-in-flight ({}) was reached; {:.2}% sent within 1ms of their due time",
            seconds(s.lag.value_at_percentile(50.0)),
            seconds(s.lag.value_at_percentile(99.0)),
            s.late,
            super::scheduled_unit(s),
            plan.max_in_flight,
            s.on_time().unwrap_or(0.0)
        )?;
    }
    if s.unsent > 0 {
        writeln!(
            out,
            "   Unsent:     {} {} due but not sent: the run stopped while they waited for a free slot (--max-in-flight {}) or room in the lead window (--lead {})",
            s.unsent,
            super::scheduled_unit(s),
            plan.max_in_flight,
            plan.window
        )?;
    }
    Ok(())
}

/// The connections made, how long they took to connect and how many were
/// made during the run, then the TLS handshakes among them.
fn connections(out: &mut dyn Write, s: &EndpointStats) -> io::Result<()> {
    if !s.connect.is_empty() {
        writeln!(
            out,
            "   Connects:   {} connection{}, {} avg, {} max to connect ({}); {} of them during the run",
            s.connect.len(),
            if s.connect.len() == 1 { "" } else { "s" },
            seconds(s.connect.mean().round() as u64),
            seconds(s.connect.max()),
            if s.tls.is_empty() { "TCP" } else { "TCP and TLS" },
            s.reconnects
        )?;
    }
    if !s.tls.is_empty() {
        writeln!(
            out,
            "   TLS:        {} handshake{}, {} avg, {} max (part of the connect time)",
            s.tls.len(),
            if s.tls.len() == 1 { "" } else { "s" },
            seconds(s.tls.mean().round() as u64),
            seconds(s.tls.max())
        )?;
    }
    Ok(())
}

/// The requests that found no connection free and waited for one: in
/// the open model always (none is what it should be), else when some did.
fn connect_waits(out: &mut dyn Write, plan: &RunInfo, s: &EndpointStats) -> io::Result<()> {
    let w = &s.connect_wait;
    if w.is_empty() {
        if plan.rate.is_some() {
            writeln!(out, "   Conn. wait: no request waited for a connection")?;
        }
        return Ok(());
    }
    writeln!(
        out,
        "   Conn. wait: {} request{} waited for a connection, {} avg, {} max (part of their latency)",
        w.len(),
        if w.len() == 1 { "" } else { "s" },
        seconds(w.mean().round() as u64),
        seconds(w.max())
    )
}

/// The open model's background connects that failed, when some did: not
/// requests, but a fault of the endpoint's that no other line shows.
fn spare_failures(out: &mut dyn Write, s: &EndpointStats) -> io::Result<()> {
    if s.spare_failed == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "   Spare:      {} background connect{} failed (backing off; a request finding no connection free dials its own)",
        s.spare_failed,
        if s.spare_failed == 1 { "" } else { "s" }
    )
}

/// The whole flow instances of an endpoint, if it ran a flow (and of each
/// flow, when it ran several).
fn flows(out: &mut dyn Write, s: &EndpointStats) -> io::Result<()> {
    if s.flows.instances == 0 {
        return Ok(());
    }
    flow_line(out, "   Flows:      ", &s.flows)?;
    for f in &s.by_flow {
        let name = super::escape_terminal(&f.name);
        flow_line(out, &format!("     {name}: "), f)?;
    }
    Ok(())
}

/// One line of whole instances: how many, how many succeeded, how long
/// the successful ones took.
fn flow_line(out: &mut dyn Write, lead: &str, f: &crate::stats::FlowStats) -> io::Result<()> {
    write!(
        out,
        "{lead}{} instances, {} successful ({})",
        f.instances,
        f.succeeded,
        percent(f.succeeded, f.instances)
    )?;
    if !f.duration.is_empty() {
        write!(
            out,
            "; successful ones took {} avg, {} p50, {} p99",
            seconds(f.duration.mean().round() as u64),
            seconds(f.duration.value_at_percentile(50.0)),
            seconds(f.duration.value_at_percentile(99.0))
        )?;
    }
    writeln!(out)
}

/// A table of an endpoint's parts (flow steps, or methods), one line each,
/// in their order. `steps` adds the columns only flow steps have.
fn parts(
    out: &mut dyn Write,
    title: &str,
    parts: &[crate::stats::PartStats],
    steps: bool,
) -> io::Result<()> {
    if parts.is_empty() {
        return Ok(());
    }
    writeln!(out, "   {title}:")?;
    let width = parts
        .iter()
        .map(|p| super::escape_terminal(&p.name).chars().count())
        .max()
        .unwrap_or(0)
        .max(4);
    write!(
        out,
        "     {:<width$}  {:>9} {:>8} {:>10} {:>10}",
        "name", "requests", "errors", "p50", "p99"
    )?;
    if steps {
        write!(
            out,
            " {:>8} {:>9} {:>8} {:>10}",
            "chk fail", "not built", "skipped", "mismatched"
        )?;
    }
    writeln!(out)?;
    for p in parts {
        let (p50, p99) = if p.latency.is_empty() {
            ("-".to_string(), "-".to_string())
        } else {
            (
                seconds(p.latency.value_at_percentile(50.0)),
                seconds(p.latency.value_at_percentile(99.0)),
            )
        };
        write!(
            out,
            "     {:<width$}  {:>9} {:>8} {:>10} {:>10}",
            super::escape_terminal(&p.name),
            p.requests,
            p.errors,
            p50,
            p99
        )?;
        if steps {
            write!(
                out,
                " {:>8} {:>9} {:>8} {:>10}",
                p.failed_checks, p.not_built, p.skipped, p.mismatched
            )?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// The summary of every endpoint together: totals, mismatches (by group),
/// errors by method, noise, and what else the run has to say about its
/// comparison, its input and how it stopped.
fn summary(out: &mut dyn Write, plan: &RunInfo, run: &RunOutput) -> io::Result<()> {
    let eps = &run.stats.endpoints;
    let v = &run.stats.verdicts;
    totals(out, plan, run)?;
    if super::reference_silent(eps) {
        writeln!(
            out,
            "   Mismatched: - (the reference, 0. {}, never answered: nothing to compare with)",
            plan.endpoints[0]
        )?;
    } else if plan.comparison || eps.len() < 2 {
        writeln!(out, "   Mismatched: {}", v.mismatched)?;
        groups(out, plan, v)?;
    } else {
        writeln!(out, "   Mismatched: - (comparison off)")?;
    }
    error_groups(out, v)?;
    noise(out, plan, v)?;
    if v.fell_back > 0 {
        writeln!(
            out,
            "   As bytes:   {} requests compared byte for byte because a body was not JSON",
            v.fell_back
        )?;
    }
    judging(out, v)?;
    logged(out, plan)?;
    if let Some(s) = super::saved(plan) {
        writeln!(out, "   Saved:      {s}")?;
    }
    if v.incomplete > 0 {
        writeln!(
            out,
            "   Incomplete: {} requests (or flow instances) not finished by every endpoint when the run stopped",
            v.incomplete
        )?;
    }
    input(out, run)?;
    if run.interrupted {
        writeln!(
            out,
            "   Stopped:    interrupted; this report covers the run until then"
        )?;
    }
    Ok(())
}

/// The summary's heading and totals: results compared and requests
/// completed, the average latency over every endpoint and the run time,
/// errors, the I/O driver and the warm-up left out.
fn totals(out: &mut dyn Write, plan: &RunInfo, run: &RunOutput) -> io::Result<()> {
    let eps = &run.stats.endpoints;
    let super::Totals {
        requests: total,
        errors,
        latency: all,
    } = super::Totals::of(eps);
    let v = &run.stats.verdicts;
    writeln!(out)?;
    let plural = if eps.len() == 1 { "" } else { "s" };
    writeln!(out, "** Summary for {} endpoint{plural}:", eps.len())?;
    writeln!(
        out,
        "   Completed:  {} results with {total} total requests",
        v.compared
    )?;
    let avg = if all.is_empty() {
        "-".to_string()
    } else {
        seconds(all.mean().round() as u64)
    };
    writeln!(
        out,
        "   Timing:     {avg} request avg, {} total run time",
        duration(run.elapsed)
    )?;
    writeln!(out, "   Errors:     {errors} ({})", percent(errors, total))?;
    if let Some(io) = &plan.io {
        writeln!(
            out,
            "   I/O:        {} (plain-TCP HTTP/1.1 connections)",
            escape_terminal(io)
        )?;
    }
    if let Some(w) = &plan.warmup {
        writeln!(
            out,
            "   Warm-up:    {w} sent first at every endpoint, counted nowhere (the rates and run time start after it)"
        )?;
    }
    if let Some(s) = &plan.stages {
        writeln!(out, "   Stages:     {}", escape_terminal(s))?;
    }
    if let Some(s) = &plan.sweep {
        writeln!(out, "   Sweep:      {}", s.describe())?;
    }
    Ok(())
}

/// Where answers that differ were judged: on a timing core, how much
/// waited for the judge thread at most, and what was not judged.
fn judging(out: &mut dyn Write, v: &VerdictStats) -> io::Result<()> {
    for (name, value) in super::judging(v) {
        let why = match name {
            "Judged on a timing core" => "comparing fell behind; latencies on those cores may include comparison time",
            "Judge queue peak" => "of differing answers waiting to be judged at once; --judge-memory bounds it",
            _ => "their answers differ, and the run was stopped before they were judged: compared, counted neither as mismatched nor as agreeing",
        };
        writeln!(out, "   {name}: {value} ({why})")?;
    }
    Ok(())
}

/// `--mismatches`: how many mismatched requests were written, and why
/// not all when some were not.
fn logged(out: &mut dyn Write, plan: &RunInfo) -> io::Result<()> {
    match super::logged(plan) {
        Some(l) => writeln!(out, "   Logged:     {l}"),
        None => Ok(()),
    }
}

/// The input's malformed records (counts and the first few, with where
/// and why) and the source's own summary.
fn input(out: &mut dyn Write, run: &RunOutput) -> io::Result<()> {
    let input = &run.input;
    if input.malformed > 0 {
        writeln!(out, "   Input:      {}", super::input_counts(run))?;
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
    Ok(())
}

/// Most groups listed; the rest are summed up in one line.
const GROUPS_SHOWN: usize = 20;

/// Mismatches by method and field, most frequent first, with each group's
/// share of its method's requests; with `-v`, up to three samples each.
fn groups(out: &mut dyn Write, plan: &RunInfo, v: &VerdictStats) -> io::Result<()> {
    let title = "     by method and field (requests, share of the method's requests):";
    let what = |g: &MismatchGroup| format!("{} {}", g.field, g.kind);
    group_table(out, title, v.sorted_groups(), v, what, |out, g| {
        if plan.verbose >= 1 {
            samples(out, plan, g)?;
        }
        Ok(())
    })
}

/// Errors by method, endpoint and kind.
fn error_groups(out: &mut dyn Write, v: &VerdictStats) -> io::Result<()> {
    let title = "   Errors by method (requests, share of the method's requests):";
    let what = |g: &MismatchGroup| g.field.clone();
    // A flow step's failures keep a sample: the instance and its request.
    let sample = |out: &mut dyn Write, g: &MismatchGroup| match g.samples.first() {
        Some(s) => writeln!(
            out,
            "         e.g. instance {}: {}",
            s.seq,
            escape_terminal(&s.request)
        ),
        None => Ok(()),
    };
    group_table(out, title, v.sorted_error_groups(), v, what, sample)
}

/// A table of groups: requests, share of the method's requests, endpoint,
/// method and `what`, the first [`GROUPS_SHOWN`]; `after` writes below each
/// row.
fn group_table(
    out: &mut dyn Write,
    title: &str,
    groups: Vec<&MismatchGroup>,
    v: &VerdictStats,
    what: impl Fn(&MismatchGroup) -> String,
    mut after: impl FnMut(&mut dyn Write, &MismatchGroup) -> io::Result<()>,
) -> io::Result<()> {
    if groups.is_empty() {
        return Ok(());
    }
    writeln!(out, "{title}")?;
    let rows: Vec<[String; 5]> = groups
        .iter()
        .take(GROUPS_SHOWN)
        .map(|g| {
            [
                g.count.to_string(),
                percent(g.count, v.method_count(&g.method)),
                g.endpoint.clone(),
                g.method.clone(),
                what(g),
            ]
        })
        .collect();
    let widths = column_widths(&rows);
    for (row, g) in rows.iter().zip(&groups) {
        writeln!(out, "       {}", escape_terminal(&pad(row, &widths)))?;
        after(out, g)?;
    }
    if groups.len() > GROUPS_SHOWN {
        let rest: u64 = groups[GROUPS_SHOWN..].iter().map(|g| g.count).sum();
        writeln!(
            out,
            "       ... {} more groups with {rest} requests",
            groups.len() - GROUPS_SHOWN
        )?;
    }
    Ok(())
}

fn samples(out: &mut dyn Write, plan: &RunInfo, g: &MismatchGroup) -> io::Result<()> {
    for s in &g.samples {
        let head = format!("request {}: ", s.seq);
        super::write_block(out, "         ", &head, &s.request)?;
        let labels = plan.endpoints.iter().map(|e| &e.label);
        if s.values.iter().any(|v| v.trim_end().contains('\n')) {
            // Bodies of several lines: each endpoint's under its label.
            for (label, v) in labels.zip(&s.values) {
                super::write_block(out, "           ", &format!("{label}: "), v)?;
            }
        } else {
            let values: Vec<String> = labels
                .zip(&s.values)
                .map(|(label, v)| format!("{label}: {}", v.trim_end()))
                .collect();
            writeln!(out, "           {}", escape_terminal(&values.join("   ")))?;
        }
        for line in s.diff.lines() {
            writeln!(out, "           {}", escape_terminal(line))?;
        }
    }
    Ok(())
}

/// Noise mode: how often each field differs between the two reference
/// answers and at the candidates; fields that are only noise apart.
fn noise(out: &mut dyn Write, plan: &RunInfo, v: &VerdictStats) -> io::Result<()> {
    let Some(noise) = super::noise(plan, v) else {
        return Ok(());
    };
    writeln!(
        out,
        "   Noise:      {}",
        super::escape_terminal(&noise.sentence())
    )?;
    let row = |f: &super::NoisyField| {
        [
            f.counts.field.clone(),
            f.reference_pair.clone(),
            f.candidate.clone(),
        ]
    };
    let (noisy, mixed): (Vec<_>, Vec<_>) = noise.fields.iter().partition(|f| f.only_noise);
    for (title, list) in [
        (
            "noisy fields (every candidate difference there was noise)",
            noisy,
        ),
        ("fields that are noisy and also really differ", mixed),
    ] {
        if list.is_empty() {
            continue;
        }
        writeln!(
            out,
            "     {title}: field, reference vs reference, reference vs candidate"
        )?;
        let rows: Vec<[String; 3]> = list.iter().map(|f| row(f)).collect();
        let widths = column_widths(&rows);
        for r in &rows {
            writeln!(out, "       {}", escape_terminal(&pad(r, &widths)))?;
        }
    }
    Ok(())
}

fn column_widths<const N: usize>(rows: &[[String; N]]) -> [usize; N] {
    let mut w = [0; N];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    w
}

fn pad<const N: usize>(row: &[String; N], widths: &[usize; N]) -> String {
    let mut s = String::new();
    for (i, (c, w)) in row.iter().zip(widths).enumerate() {
        if i + 1 == N {
            s.push_str(c);
        } else {
            s.push_str(&format!("{c:<w$}  "));
        }
    }
    s
}
