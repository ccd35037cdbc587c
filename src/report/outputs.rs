//! What a run or `versus report` writes besides the statistics: the report
//! format, thresholds, the HTML file. Validated before anything is sent.

use std::io::{self, Write};

use super::info::Report;
use super::threshold::Threshold;

/// A report format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
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

impl Format {
    /// Parse `name`, allowing only `allowed`.
    ///
    /// # Errors
    /// A usage message naming the flag.
    pub fn parse(name: &str, allowed: &[Format]) -> Result<Format, String> {
        let f = match name {
            "text" => Some(Format::Text),
            "json" => Some(Format::Json),
            "markdown" | "md" => Some(Format::Markdown),
            "csv" => Some(Format::Csv),
            "html" => Some(Format::Html),
            "vegeta" => Some(Format::Vegeta),
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
            Format::Text => "text",
            Format::Json => "json",
            Format::Markdown => "markdown",
            Format::Csv => "csv",
            Format::Html => "html",
            Format::Vegeta => "vegeta",
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
pub fn render(out: &mut dyn Write, format: Format, r: &Report<'_>) -> io::Result<()> {
    match format {
        Format::Text => {
            super::text::write(out, r.info, r.run)?;
            super::threshold::write_text(out, r.checks)
        }
        Format::Json => super::json::write(out, r),
        Format::Markdown => super::markdown::write(out, r),
        Format::Csv => super::csv::write(out, r),
        Format::Html => super::html::write(out, r),
        Format::Vegeta => super::vegeta::write(out, r),
    }
}
