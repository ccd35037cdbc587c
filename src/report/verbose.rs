//! Verbose output on stderr: each mismatched request with every endpoint's
//! answer (`-v`), and a timing line per request (`-vv`). Bodies are pretty
//! printed when they are JSON, cut when long, and escaped for the terminal.
//! [`Printer`] is the engine tap that prints them.

use std::io::Write;

use super::{escape_terminal, go_duration};
use crate::compare::sample;
use crate::engine::Settings;
use crate::model::Outcome;
use crate::model::Request;

/// Longest body shown, in bytes.
const BODY_LIMIT: usize = 2000;

/// The `-v` (mismatches) and `-vv` (also a timing line per request)
/// printer, an engine tap writing to stderr.
#[derive(Debug)]
pub struct Printer {
    /// The `-v` count: 1 mismatches, 2 also timing lines.
    pub level: u8,
}

impl crate::engine::Tap for Printer {
    fn wants_outcomes(&self) -> bool {
        self.level >= 2
    }

    fn outcome(&self, settings: &Settings, endpoint: usize, req: &Request, outcome: &Outcome) {
        timing_line(
            &mut std::io::stderr().lock(),
            settings,
            endpoint,
            req,
            outcome,
        );
    }

    fn mismatch(
        &self,
        settings: &Settings,
        req: &Request,
        _group: &str,
        outcomes: &[Option<&Outcome>],
        _findings: &[crate::compare::Finding],
    ) {
        let mut err = std::io::stderr().lock();
        mismatch(&mut err, settings, req, outcomes);
        let _ = err.flush();
    }
}

/// Print one mismatched request and every endpoint's answer.
pub fn mismatch(
    out: &mut dyn Write,
    settings: &Settings,
    req: &Request,
    outcomes: &[Option<&Outcome>],
) {
    let _ = writeln!(out, "--- mismatch: request {}", req.seq);
    if let Some(m) = &req.method {
        let target = req.target.as_deref().unwrap_or("");
        let _ = writeln!(out, "    {m} {}", super::escape_terminal(target));
    }
    let _ = super::write_block(out, "    ", "request: ", &show_body(&req.body, false));
    for (i, (spec, o)) in settings.endpoints.iter().zip(outcomes).enumerate() {
        let Some(o) = o else { continue };
        match &o.result {
            Ok(r) => {
                let _ = writeln!(
                    out,
                    "  {i}. {}: HTTP {}, {} bytes",
                    spec.label, r.status, r.body_len
                );
                for line in show_body(&r.body, true).lines() {
                    let _ = writeln!(out, "    {line}");
                }
            }
            Err(f) => {
                let _ = writeln!(
                    out,
                    "  {i}. {}: {f} after {}",
                    spec.label,
                    super::duration(o.latency)
                );
            }
        }
    }
}

/// Print one request's timing at one endpoint.
pub fn timing_line(out: &mut dyn Write, settings: &Settings, e: usize, req: &Request, o: &Outcome) {
    let label = &settings.endpoints[e].label;
    let _ = match &o.result {
        Ok(r) => writeln!(
            out,
            "request={} endpoint={label} status={} latency={} bytes={}",
            req.seq,
            r.status,
            go_duration(o.latency),
            r.body_len
        ),
        Err(f) => writeln!(
            out,
            "request={} endpoint={label} error=\"{f}\" latency={}",
            req.seq,
            go_duration(o.latency)
        ),
    };
}

/// A body for display: pretty JSON when `pretty` and it parses, cut at
/// [`BODY_LIMIT`] bytes with a note, escaped for the terminal.
fn show_body(body: &[u8], pretty: bool) -> String {
    let text = if pretty {
        sample::pretty(body)
    } else {
        String::from_utf8_lossy(body).into_owned()
    };
    escape_terminal(&sample::cut(&text, BODY_LIMIT))
}
