//! The progress line: one status line on stderr, redrawn in place once per
//! interval (from the observer, never per request), cleared when the run
//! ends so that the report starts on a clean line.
//!
//! ```text
//! 12.0s │ ref 12,345 done 1,020/s │ new 12,001 done 990/s │ errors 0 │ mismatched 12 │ 8.0s left
//! ```
//!
//! A flow adds each endpoint's successful instances of those ended
//! (`ref 600 done 120/s 198/200 ok`).

use std::io::Write;

use super::gauge::InputGauge;
use super::snapshot::{Snapshot, Tracker};
use crate::engine::Settings;
use crate::report::escape_terminal;
use crate::stats::RunStats;

/// The progress line of a run, drawn on stderr.
pub struct Progress {
    tracker: Tracker,
    gauge: Option<InputGauge>,
}

impl Progress {
    /// A progress line for a run with `settings`, with the input's `gauge`
    /// when it reads a file (nothing is drawn before the first interval).
    pub fn new(settings: &Settings, gauge: Option<InputGauge>) -> Progress {
        let labels: Vec<String> = settings.endpoints.iter().map(|e| e.label.clone()).collect();
        Progress {
            tracker: Tracker::new(&labels, settings.interval, settings.stop_after),
            gauge,
        }
    }

    /// Take in an interval and redraw the line.
    pub fn interval(&mut self, index: u64, delta: &RunStats, total: &RunStats) {
        let input = self.gauge.as_mut().and_then(InputGauge::fraction);
        self.tracker
            .observe(index, delta, total, std::time::Duration::ZERO, input);
        draw(&line(self.tracker.snapshot(), width(), None));
    }

    /// Sending has ended and `left` differing answers wait to be judged:
    /// say so, since no interval comes until they are.
    pub fn judging(&mut self, left: u64) {
        draw(&line(self.tracker.snapshot(), width(), Some(left)));
    }

    /// Clear the line: the run is over.
    pub fn finish(self) {
        super::terminal::restore_terminal();
    }
}

/// The terminal's width in columns (80 when it does not know: a pty of
/// `script` says 0).
fn width() -> usize {
    ratatui::crossterm::terminal::size()
        .ok()
        .map(|(w, _)| usize::from(w))
        .filter(|w| *w > 0)
        .unwrap_or(80)
}

/// Redraw the line as `text`.
fn draw(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r{text}\x1b[K");
    let _ = err.flush();
    super::terminal::set_progress(true);
}

/// The progress line for `s`, at most `width` characters (a wrapped line
/// could not be redrawn in place); with `judging`, the differing answers
/// still to judge once sending has ended, instead of the time left.
pub fn line(s: &Snapshot, width: usize, judging: Option<u64>) -> String {
    let mut parts = vec![super::clock(s.elapsed)];
    let flow = s.is_flow();
    for e in &s.endpoints {
        let mut part = format!(
            "{} {} done {}/s",
            escape_terminal(&e.label),
            super::count(e.done),
            super::rate(e.now_rps)
        );
        if flow {
            part.push_str(&format!(
                " {}/{} ok",
                super::count(e.succeeded),
                super::count(e.instances)
            ));
        }
        parts.push(part);
    }
    let errors: u64 = s.endpoints.iter().map(|e| e.errors).sum();
    parts.push(format!("errors {}", super::count(errors)));
    if s.endpoints.len() > 1 {
        parts.push(format!("mismatched {}", super::count(s.mismatched)));
    }
    match judging {
        Some(n) => parts.push(format!(
            "judging {} differing answers left… (Ctrl-C: report what is judged)",
            super::count(n)
        )),
        None => {
            if let Some(left) = s.left {
                parts.push(format!("{} left", super::clock(left)));
            }
        }
    }
    let full = parts.join(" │ ");
    let room = width.saturating_sub(1).max(1);
    if full.chars().count() <= room {
        return full;
    }
    let mut cut: String = full.chars().take(room.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::super::snapshot::{EndpointRow, StepRow};
    use super::*;
    use std::time::Duration;

    fn snapshot() -> Snapshot {
        let row = |label: &str, done, now_rps, errors| EndpointRow {
            label: label.into(),
            done,
            now_rps,
            errors,
            ..EndpointRow::default()
        };
        Snapshot {
            elapsed: Duration::from_secs(12),
            endpoints: vec![row("ref", 12_345, 1020.4, 0), row("new", 12_001, 990.0, 3)],
            mismatched: 12,
            left: Some(Duration::from_secs(8)),
            ..Snapshot::default()
        }
    }

    #[test]
    fn shows_counts_rates_errors_mismatches_and_time_left() {
        assert_eq!(
            line(&snapshot(), 200, None),
            "12.0s │ ref 12,345 done 1020/s │ new 12,001 done 990/s │ errors 3 │ mismatched 12 │ 8.0s left"
        );
    }

    #[test]
    fn a_flow_shows_the_successful_instances_of_each_endpoint() {
        let mut s = snapshot();
        for (e, (ok, ended)) in s.endpoints.iter_mut().zip([(4_115, 4_115), (3_990, 4_000)]) {
            e.succeeded = ok;
            e.instances = ended;
            e.steps = vec![StepRow {
                name: "login".into(),
                ..Default::default()
            }];
        }
        assert_eq!(
            line(&s, 200, None),
            "12.0s │ ref 12,345 done 1020/s 4,115/4,115 ok │ new 12,001 done 990/s 3,990/4,000 ok │ errors 3 │ mismatched 12 │ 8.0s left"
        );
    }

    #[test]
    fn after_sending_says_how_many_answers_are_left_to_judge() {
        assert_eq!(
            line(&snapshot(), 200, Some(1_234)),
            "12.0s │ ref 12,345 done 1020/s │ new 12,001 done 990/s │ errors 3 │ mismatched 12 │ judging 1,234 differing answers left… (Ctrl-C: report what is judged)"
        );
    }

    #[test]
    fn fits_the_terminal_and_escapes_labels() {
        let cut = line(&snapshot(), 30, None);
        assert_eq!(cut.chars().count(), 29, "{cut}");
        assert!(cut.ends_with('…'));
        let mut s = snapshot();
        s.endpoints.truncate(1);
        s.endpoints[0].label = "a\x1b[2Jb".into();
        s.left = None;
        let l = line(&s, 200, None);
        assert!(!l.contains('\x1b'), "{l:?}");
        assert!(!l.contains("mismatched"), "{l}");
    }
}
