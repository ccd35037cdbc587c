//! The CSV report (`versus report --format csv`): one row per endpoint
//! with the summary figures, for spreadsheets. RFC 4180 quoting.

use std::io::{self, Write};

use super::info::Report;

/// Quote a CSV field when needed.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The columns, in order.
pub const COLUMNS: &str = "label,url,rps,sent,completed,responses,errors,error_rate,mean_ms,p50_ms,p90_ms,p95_ms,p99_ms,max_ms,bytes_in,bytes_out,bytes_per_response,compared,mismatched";

/// Write the CSV report.
///
/// # Errors
/// Only when writing fails.
pub fn write(out: &mut dyn Write, r: &Report<'_>) -> io::Result<()> {
    writeln!(out, "{COLUMNS}")?;
    let v = &r.run.stats.verdicts;
    for (e, s) in r.info.endpoints.iter().zip(&r.run.stats.endpoints) {
        let h = &s.latency;
        let ms = |x: f64| format!("{:.3}", x / 1000.0);
        let (mean, p50, p90, p95, p99, max) = if h.is_empty() {
            Default::default()
        } else {
            (
                ms(h.mean()),
                ms(h.value_at_quantile(0.5) as f64),
                ms(h.value_at_quantile(0.9) as f64),
                ms(h.value_at_quantile(0.95) as f64),
                ms(h.value_at_quantile(0.99) as f64),
                ms(h.max() as f64),
            )
        };
        let rate = if s.completed() == 0 {
            String::new()
        } else {
            format!("{:.6}", s.errors() as f64 / s.completed() as f64)
        };
        writeln!(
            out,
            "{},{},{:.2},{},{},{},{},{rate},{mean},{p50},{p90},{p95},{p99},{max},{},{},{},{},{}",
            field(&e.label),
            field(&e.url),
            s.rate,
            s.sent,
            s.completed(),
            s.responses,
            s.errors(),
            s.bytes_in,
            s.bytes_out,
            s.bytes_in.checked_div(s.responses).unwrap_or(0),
            v.compared,
            v.mismatched
        )?;
    }
    Ok(())
}
