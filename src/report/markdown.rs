//! The Markdown report (`--format markdown`): a table with a column per
//! endpoint, the summary, the mismatch groups and the thresholds. Text from
//! responses and requests is escaped so it cannot break the table or inject
//! HTML.

use std::io::{self, Write};

use super::info::Report;

/// Make text safe in a Markdown table cell.
pub fn cell(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '`' => out.push_str("\\`"),
            '*' | '_' | '[' | ']' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

/// Errors by kind (a row per kind, a column per endpoint) and by method;
/// nothing when there were none.
fn errors(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let table = crate::stats::error_table(&r.run.stats.endpoints);
    if !table.is_empty() {
        writeln!(out)?;
        writeln!(out, "## Errors by kind")?;
        writeln!(out)?;
        let labels: Vec<String> = r.info.endpoints.iter().map(|e| cell(&e.label)).collect();
        writeln!(out, "| kind | {} |", labels.join(" | "))?;
        writeln!(out, "|---|{}", "---:|".repeat(labels.len()))?;
        for (kind, counts) in &table {
            let counts: Vec<String> = counts.iter().map(u64::to_string).collect();
            row(out, &cell(kind), &counts)?;
        }
    }
    let groups = r.run.stats.verdicts.sorted_error_groups();
    if !groups.is_empty() {
        writeln!(out)?;
        writeln!(out, "## Errors by method")?;
        writeln!(out)?;
        writeln!(out, "| method | endpoint | kind | count |")?;
        writeln!(out, "|---|---|---|---:|")?;
        for g in groups {
            writeln!(
                out,
                "| {} | {} | {} | {} |",
                cell(&g.method),
                cell(&g.endpoint),
                cell(&g.field),
                g.count
            )?;
        }
    }
    faults(out, r)
}

/// The faults set on each endpoint and how often each acted, then the
/// errors they caused beside the endpoints' own; nothing without faults.
fn faults(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let eps = r.info.endpoints.iter().zip(&r.run.stats.endpoints);
    if eps.clone().all(|(_, s)| s.faults.is_empty()) {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "## Faults injected")?;
    writeln!(out)?;
    writeln!(out, "| endpoint | fault | acted on | counted as |")?;
    writeln!(out, "|---|---|---:|---|")?;
    for (e, s) in eps.clone() {
        for f in super::injected(s) {
            let counted = f.counted_as.as_deref().unwrap_or("-");
            writeln!(
                out,
                "| {} | {} | {} | {} |",
                cell(&e.label),
                cell(f.name),
                f.acted,
                cell(counted)
            )?;
        }
    }
    let causes: Vec<_> = eps
        .flat_map(|(e, s)| super::cause_rows(s).into_iter().map(move |c| (e, c)))
        .collect();
    if !causes.is_empty() {
        writeln!(out)?;
        writeln!(out, "## Errors by cause")?;
        writeln!(out)?;
        writeln!(out, "| endpoint | kind | cause | count |")?;
        writeln!(out, "|---|---|---|---:|")?;
        for (e, (kind, cause, n)) in causes {
            writeln!(
                out,
                "| {} | {} | {} | {n} |",
                cell(&e.label),
                cell(&kind),
                cell(&cause)
            )?;
        }
    }
    Ok(())
}

fn row(out: &mut dyn Write, name: &str, values: &[String]) -> io::Result<()> {
    writeln!(out, "| {name} | {} |", values.join(" | "))
}

/// Write the Markdown report.
///
/// # Errors
/// Only when writing fails.
pub fn write(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    writeln!(out, "# versus report")?;
    writeln!(out)?;
    writeln!(
        out,
        "Run on {} at {}, {} long{}.",
        cell(&r.header.host),
        cell(&r.header.start),
        super::duration(r.run.elapsed),
        if r.run.interrupted {
            ", interrupted"
        } else {
            ""
        }
    )?;
    writeln!(out)?;
    table(out, r)?;
    writeln!(out)?;
    summary(out, r)?;
    errors(out, r)?;
    flows(out, r)?;
    parts(out, r, "Steps", |s| &s.steps, true)?;
    pages(out, r)?;
    if super::shows_methods(&r.run.stats.endpoints) {
        parts(out, r, "By method", |s| &s.methods, false)?;
    }
    mismatches(out, r)?;
    noise(out, r)?;
    load_curve(out, r)?;
    capacity(out, r)?;
    thresholds(out, r)
}

/// A capacity search's result, an endpoint a line.
fn capacity(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let Some(found) = r.capacity else {
        return Ok(());
    };
    writeln!(out)?;
    writeln!(out, "## Capacity")?;
    writeln!(out)?;
    for (e, line) in r.info.endpoints.iter().zip(super::capacity::lines(found)) {
        writeln!(out, "- {}: {}", cell(&e.label), cell(&line))?;
    }
    Ok(())
}

/// A sweep's load curve: a row per step, endpoint and part.
fn load_curve(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let Some(steps) = r.steps else {
        return Ok(());
    };
    writeln!(out)?;
    writeln!(out, "## Load curve")?;
    writeln!(out)?;
    writeln!(
        out,
        "| Step | Endpoint | Part | {} |",
        super::curve::COLUMNS.join(" | ")
    )?;
    writeln!(out, "|---|---|---|---:|---:|---:|---:|---:|---:|---:|")?;
    for p in super::curve::points(steps) {
        writeln!(
            out,
            "| {} | {} | {} | {} |",
            p.step(),
            cell(&r.info.endpoints[p.endpoint].label),
            cell(p.part.unwrap_or("")),
            p.cells().join(" | ")
        )?;
    }
    Ok(())
}

/// The table of figures, a column per endpoint: the URL, then the
/// shared rows of `report::table` (rate, latency, errors, statuses,
/// bytes, first byte, connections, mismatched share).
fn table(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let labels: Vec<String> = r.info.endpoints.iter().map(|e| cell(&e.label)).collect();
    row(out, "", &labels)?;
    writeln!(out, "|---|{}", "---:|".repeat(labels.len()))?;
    let urls: Vec<String> = r.info.endpoints.iter().map(|e| cell(&e.url)).collect();
    row(out, "URL", &urls)?;
    for (name, cells) in super::table::rows(r) {
        let cells: Vec<String> = cells.iter().map(|c| cell(c)).collect();
        row(out, name, &cells)?;
    }
    Ok(())
}

/// The summary list: requests compared, requests, their average latency
/// and errors over every endpoint, the I/O driver, mismatched (or why
/// there is no such figure), incomplete, and the figures only some runs
/// have (`report::notes`).
fn summary(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let eps = &r.run.stats.endpoints;
    let v = &r.run.stats.verdicts;
    writeln!(out, "## Summary")?;
    writeln!(out)?;
    writeln!(out, "- Compared: {}", v.compared)?;
    let t = super::Totals::of(eps);
    writeln!(out, "- Requests: {}", t.requests)?;
    writeln!(out, "- Latency avg: {}", super::table::mean(&t.latency))?;
    writeln!(
        out,
        "- Errors: {} ({})",
        t.errors,
        super::percent(t.errors, t.requests)
    )?;
    if let Some(io) = &r.info.io {
        writeln!(out, "- I/O: {} (plain-TCP HTTP/1.1 connections)", cell(io))?;
    }
    if super::reference_silent(eps) {
        writeln!(
            out,
            "- Mismatched: - (the reference, {}, never answered: nothing to compare with)",
            cell(&r.info.endpoints[0].label)
        )?;
    } else if r.info.comparison || eps.len() < 2 {
        writeln!(
            out,
            "- Mismatched: {} ({})",
            v.mismatched,
            super::percent(v.mismatched, v.compared)
        )?;
    } else {
        writeln!(out, "- Mismatched: - (comparison off)")?;
    }
    if v.incomplete > 0 {
        writeln!(out, "- Incomplete: {}", v.incomplete)?;
    }
    for (name, value) in super::notes(r.info, r.run) {
        writeln!(out, "- {name}: {}", cell(&value))?;
    }
    if let Some(n) = super::noise(r.info, v) {
        writeln!(out, "- Noise: {}", cell(&n.sentence()))?;
    }
    Ok(())
}

/// Flows: per endpoint (and flow) the instances, the successful ones and
/// how long those took (avg, p50, p99); nothing for a request stream.
fn flows(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let eps = &r.run.stats.endpoints;
    if !eps.iter().any(|s| s.flows.instances > 0) {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "## Flows")?;
    writeln!(out)?;
    writeln!(
        out,
        "| endpoint | instances | successful | duration avg | duration p50 | duration p99 |"
    )?;
    writeln!(out, "|---|---:|---:|---:|---:|---:|")?;
    for (e, s) in r.info.endpoints.iter().zip(eps) {
        for (label, f) in super::flow_rows(&e.label, s) {
            writeln!(
                out,
                "| {} | {} | {} ({}) | {} | {} | {} |",
                cell(&label),
                f.instances,
                f.succeeded,
                super::percent(f.succeeded, f.instances),
                super::table::mean(&f.duration),
                super::latency(&f.duration, 0.5),
                super::latency(&f.duration, 0.99)
            )?;
        }
    }
    Ok(())
}

/// The mismatch groups, most frequent first, each with its first sample
/// request; nothing when there are none.
fn mismatches(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let groups = r.run.stats.verdicts.sorted_groups();
    if groups.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "## Mismatches")?;
    writeln!(out)?;
    writeln!(
        out,
        "| method | field | kind | endpoint | count | first request |"
    )?;
    writeln!(out, "|---|---|---|---|---:|---|")?;
    for g in groups {
        let sample = g
            .samples
            .first()
            .map(|s| format!("#{} {}", s.seq, cell(&s.request)))
            .unwrap_or_default();
        writeln!(
            out,
            "| {} | {} | {} | {} | {} | {sample} |",
            cell(&g.method),
            cell(&g.field),
            cell(&g.kind),
            cell(&g.endpoint),
            g.count
        )?;
    }
    Ok(())
}

/// Noise mode: each field where the two reference answers differed, how
/// often there and at the candidates, and whether that was only noise.
fn noise(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    let Some(n) = super::noise(r.info, &r.run.stats.verdicts) else {
        return Ok(());
    };
    if n.fields.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "## Noise")?;
    writeln!(out)?;
    writeln!(
        out,
        "| field | reference vs reference | reference vs candidate | only noise |"
    )?;
    writeln!(out, "|---|---:|---:|---|")?;
    for f in &n.fields {
        writeln!(
            out,
            "| {} | {} | {} | {} |",
            cell(&f.counts.field),
            f.reference_pair,
            f.candidate,
            if f.only_noise { "yes" } else { "no" }
        )?;
    }
    Ok(())
}

/// The thresholds checked and whether each passed, failures in bold;
/// nothing when none were given.
fn thresholds(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    if r.checks.is_empty() {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "## Thresholds")?;
    writeln!(out)?;
    writeln!(out, "| result | threshold | endpoint | measured |")?;
    writeln!(out, "|---|---|---|---|")?;
    for c in r.checks {
        writeln!(
            out,
            "| {} | {} | {} | {} |",
            if c.passed { "passed" } else { "**FAILED**" },
            cell(&c.threshold),
            cell(c.endpoint.as_deref().unwrap_or("(run)")),
            cell(&c.actual)
        )?;
    }
    Ok(())
}

/// Each paged step's comparison (`report::pages`), a table and the
/// improvements.
fn pages(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    for step in super::pages::PagedStep::of(r.info, r.run) {
        writeln!(out)?;
        writeln!(out, "## Pages of step {}", cell(step.name))?;
        writeln!(out)?;
        let labels: Vec<String> = step.columns.iter().map(|(l, _, _)| cell(l)).collect();
        writeln!(out, "| | {} |", labels.join(" | "))?;
        writeln!(out, "|---|{}", "---:|".repeat(labels.len()))?;
        for (name, cells) in step.rows() {
            let name = match name.strip_prefix("  ") {
                Some(n) => cell(n),
                None => format!("**{}**", cell(&name)),
            };
            let cells: Vec<String> = cells.iter().map(|c| cell(c)).collect();
            writeln!(out, "| {name} | {} |", cells.join(" | "))?;
        }
        writeln!(out)?;
        for l in step.improvement_lines() {
            writeln!(out, "- {}", cell(&l))?;
        }
    }
    Ok(())
}

/// A table of every endpoint's parts (flow steps, or methods); `steps`
/// adds the columns only flow steps have.
fn parts(
    out: &mut dyn Write,
    r: &Report<'_>,
    title: &str,
    of: impl Fn(&crate::stats::EndpointStats) -> &Vec<crate::stats::PartStats>,
    steps: bool,
) -> io::Result<()> {
    let eps = &r.run.stats.endpoints;
    if eps.iter().all(|s| of(s).is_empty()) {
        return Ok(());
    }
    writeln!(out)?;
    writeln!(out, "## {title}")?;
    writeln!(out)?;
    let (head, rule) = match steps {
        true => (
            " failed checks | not built | skipped | mismatched |",
            "---:|---:|---:|---:|",
        ),
        false => ("", ""),
    };
    writeln!(
        out,
        "| name | endpoint | requests | errors | p50 | p99 |{head}"
    )?;
    writeln!(out, "|---|---|---:|---:|---:|---:|{rule}")?;
    for (e, s) in r.info.endpoints.iter().zip(eps) {
        for p in of(s) {
            let q = |q: f64| super::latency(&p.latency, q);
            write!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                cell(&p.name),
                cell(&e.label),
                p.requests,
                p.errors,
                q(0.5),
                q(0.99)
            )?;
            if steps {
                write!(
                    out,
                    " {} | {} | {} | {} |",
                    p.failed_checks, p.not_built, p.skipped, p.mismatched
                )?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}
