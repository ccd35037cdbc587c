//! The table of endpoints the Markdown and HTML reports share: a row per
//! figure of the text report's endpoint blocks, a cell per endpoint, in
//! the text report's order. One list, so the two formats cannot drift
//! apart from each other or from the text report.

use super::info::Report;
use super::{latency, micros};
use crate::stats::EndpointStats;
use hdrhistogram::Histogram;

/// A row: its name and a cell per endpoint.
pub type Row = (&'static str, Vec<String>);

/// The rows, plain text (each format escapes them its own way).
pub fn rows(r: &Report<'_>) -> Vec<Row> {
    let eps = &r.run.stats.endpoints;
    let mut rows: Vec<Row> = Vec::new();
    let mut row = |name: &'static str, f: &dyn Fn(&EndpointStats) -> String| {
        rows.push((name, eps.iter().map(f).collect()));
    };
    row("Requests per second", &|s| super::rate(s.rate()));
    if let Some(rate) = r.info.rate {
        match (r.info.search.is_some(), r.info.load_varies()) {
            (true, _) => row("Rate at the search's start", &|_| super::rate(rate)),
            (false, true) => row("Rate at the peak", &|_| super::rate(rate)),
            (false, false) => row("Rate scheduled", &|_| super::rate(rate)),
        }
        row("Rate sent", &|s| super::rate(s.sent_rate()));
        row("Uncorrected p50", &|s| latency(&s.uncorrected, 0.5));
        row("Uncorrected p99", &|s| latency(&s.uncorrected, 0.99));
        row("Uncorrected max", &|s| latency(&s.uncorrected, 1.0));
        row("Send lag p50", &|s| latency(&s.lag, 0.5));
        row("Send lag p99", &|s| latency(&s.lag, 0.99));
        row("Sent within 1ms", &|s| {
            s.on_time().map_or("-".into(), |p| format!("{p:.2}%"))
        });
        row("Late (max in flight)", &|s| s.late.to_string());
        row("Unsent (stopped)", &|s| s.unsent.to_string());
    }
    match (r.info.load_varies(), r.info.rate.is_some()) {
        (true, true) => row("Offered per second", &|s| super::rate(s.offered_rate())),
        (true, false) => row("Users (mean)", &|s| format!("{:.1}", s.mean_users())),
        _ => {}
    }
    row("Held back", &super::held);
    row("Completed", &|s| s.completed().to_string());
    row("Failed connects", &|s| s.failed_connects().to_string());
    row("Latency avg", &|s| mean(&s.latency));
    row("Latency min", &|s| figure(&s.latency, |h| h.min() as f64));
    row("Latency max", &|s| latency(&s.latency, 1.0));
    row("Latency stdev", &|s| figure(&s.latency, Histogram::stdev));
    for (name, q) in [
        ("Latency p25", 0.25),
        ("Latency p50", 0.5),
        ("Latency p75", 0.75),
        ("Latency p90", 0.9),
        ("Latency p95", 0.95),
        ("Latency p99", 0.99),
    ] {
        row(name, &|s| latency(&s.latency, q));
    }
    row("Errors", &|s| super::percent(s.errors(), s.completed()));
    row("Status", &|s| {
        s.status
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(c, n)| format!("{c}: {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    });
    row("Bytes in", &|s| s.bytes_in.to_string());
    row("Bytes per response", &|s| {
        s.bytes_per_response().unwrap_or(0).to_string()
    });
    row("Bytes out", &|s| s.bytes_out.to_string());
    row("First byte avg", &|s| mean(&s.ttfb));
    row("First byte p99", &|s| latency(&s.ttfb, 0.99));
    row("Connections", &|s| s.connect.len().to_string());
    row("Connect avg", &|s| mean(&s.connect));
    row("Connect max", &|s| latency(&s.connect, 1.0));
    row("Connections during the run", &|s| s.reconnects.to_string());
    if eps.iter().any(|s| !s.tls.is_empty()) {
        row("TLS handshakes", &|s| s.tls.len().to_string());
        row("TLS avg", &|s| mean(&s.tls));
        row("TLS max", &|s| latency(&s.tls, 1.0));
    }
    if eps.iter().any(|s| !s.connect_wait.is_empty()) {
        row("Connection waits", &|s| s.connect_wait.len().to_string());
        row("Connection wait avg", &|s| mean(&s.connect_wait));
        row("Connection wait max", &|s| latency(&s.connect_wait, 1.0));
    }
    if eps.iter().any(|s| s.spare_failed > 0) {
        row("Spare connects failed", &|s| s.spare_failed.to_string());
    }
    row("Abandoned", &|s| s.abandoned.to_string());
    if r.info.comparison && eps.len() > 1 {
        let compared = r.run.stats.verdicts.compared;
        let shown = eps
            .iter()
            .enumerate()
            .map(|(i, s)| super::mismatched(i, s, compared))
            .collect();
        rows.push(("Mismatched", shown));
    }
    rows
}

/// A histogram's mean as a latency; `-` when it is empty.
pub fn mean(h: &Histogram<u64>) -> String {
    figure(h, Histogram::mean)
}

/// `f` of a histogram as a latency; `-` when it is empty.
fn figure(h: &Histogram<u64>, f: fn(&Histogram<u64>) -> f64) -> String {
    if h.is_empty() {
        "-".to_string()
    } else {
        micros(f(h))
    }
}
