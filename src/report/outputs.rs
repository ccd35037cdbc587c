//! What a run or `versus report` writes besides the statistics: the report
//! format, thresholds, the HTML file. Validated before anything is sent.

use std::io::{self, Write};

use super::info::Report;
use super::threshold::Threshold;

/// A report format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReportFormat {
    /// The original layout.
    Text,
    /// `docs/json-report.md`.
    Json,
    /// Tables.
    Markdown,
    /// One row per endpoint.
    Csv,
    /// One self-contained page.
    Html,
    /// vegeta's text report, per endpoint.
    Vegeta,
}

impl ReportFormat {
    /// Parse `name`, allowing only `allowed`.
    ///
    /// # Errors
    /// A usage message naming the flag.
    pub fn parse(name: &str, allowed: &[ReportFormat]) -> Result<ReportFormat, String> {
        let f = match name {
            "text" => Some(ReportFormat::Text),
            "json" => Some(ReportFormat::Json),
            "markdown" | "md" => Some(ReportFormat::Markdown),
            "csv" => Some(ReportFormat::Csv),
            "html" => Some(ReportFormat::Html),
            "vegeta" => Some(ReportFormat::Vegeta),
            _ => None,
        };
        match f {
            Some(f) if allowed.contains(&f) => Ok(f),
            _ => {
                let names: Vec<&str> = allowed.iter().map(|f| f.name()).collect();
                Err(format!(
                    "--format: {name:?} is not one of {}",
                    names.join(", ")
                ))
            }
        }
    }

    /// The flag value.
    pub fn name(self) -> &'static str {
        match self {
            ReportFormat::Text => "text",
            ReportFormat::Json => "json",
            ReportFormat::Markdown => "markdown",
            ReportFormat::Csv => "csv",
            ReportFormat::Html => "html",
            ReportFormat::Vegeta => "vegeta",
        }
    }
}

/// Parse every `--threshold`.
///
/// # Errors
/// The first that does not parse.
pub fn thresholds(list: &[String]) -> Result<Vec<Threshold>, String> {
    list.iter().map(|t| t.parse()).collect()
}

/// Render `r` in `format`.
///
/// # Errors
/// Only when writing fails.
pub fn render(out: &mut dyn Write, format: ReportFormat, r: &Report<'_>) -> io::Result<()> {
    match format {
        ReportFormat::Text => {
            super::text::write(out, r.info, r.run)?;
            if let Some(steps) = r.steps {
                super::text::load_curve(out, r.info, steps)?;
            }
            if let Some(c) = r.capacity {
                super::text::capacity(out, r.info, c)?;
            }
            super::threshold::write_text(out, r.checks)
        }
        ReportFormat::Json => super::json::write(out, r),
        ReportFormat::Markdown => super::markdown::write(out, r),
        ReportFormat::Csv => super::csv::write(out, r),
        ReportFormat::Html => super::html::write(out, r),
        ReportFormat::Vegeta => super::vegeta::write(out, r),
    }
}
