//! Seeing a run while it goes: a progress line on stderr ([`progress`]) or
//! a full-screen dashboard (`-i`, [`dashboard`]). Both are fed by the
//! engine's [`Observer`] once per interval, on the collector thread, from
//! merged interval statistics: nothing here runs per request, and no core
//! ever waits for a view. [`terminal`] makes sure the terminal is put back
//! however the run ends (normally, `q`, a signal, a panic).

pub mod dashboard;
pub mod gauge;
pub mod progress;
pub mod snapshot;
pub mod terminal;

use std::io::IsTerminal;
use std::time::Duration;

use self::gauge::InputGauge;
use crate::engine::Settings;
use crate::engine::{Observer, Stop};
use crate::stats::RunStats;

pub use self::terminal::{announce, restore_terminal};

/// Interval of the statistics while the dashboard is on, so that it moves
/// a few times a second.
pub const DASHBOARD_INTERVAL: Duration = Duration::from_millis(250);

/// What the user sees while a run goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Nothing until the report.
    Quiet,
    /// A status line on stderr, redrawn once per interval.
    Progress,
    /// The full-screen dashboard.
    Dashboard,
}

impl Mode {
    /// Decide from the flags and whether stderr is a terminal.
    ///
    /// The progress line is shown only on a terminal, and not with `-v`
    /// (whose lines would tangle with it). The dashboard with `-v` needs
    /// stderr redirected, since both would draw on the same terminal.
    ///
    /// # Errors
    /// A usage message for `-i` with `-v` on a terminal.
    pub fn choose(
        interactive: bool,
        quiet: bool,
        verbose: u8,
        stderr_is_terminal: bool,
    ) -> Result<Mode, String> {
        if interactive {
            if verbose > 0 && stderr_is_terminal {
                return Err(
                    "-i/--interactive and -v both write to the terminal on stderr: \
                     redirect stderr (2>mismatches.log) to keep -v, or leave one out"
                        .into(),
                );
            }
            return Ok(Mode::Dashboard);
        }
        if quiet || verbose > 0 || !stderr_is_terminal {
            return Ok(Mode::Quiet);
        }
        Ok(Mode::Progress)
    }

    /// [`Mode::choose`] for this process's stderr.
    ///
    /// # Errors
    /// As [`Mode::choose`].
    pub fn for_this_terminal(interactive: bool, quiet: bool, verbose: u8) -> Result<Mode, String> {
        Mode::choose(interactive, quiet, verbose, std::io::stderr().is_terminal())
    }

    /// The statistics interval to run with, given the plan's.
    pub fn interval(self, planned: Duration) -> Duration {
        match self {
            Mode::Dashboard => planned.min(DASHBOARD_INTERVAL),
            _ => planned,
        }
    }
}

/// The live view of one run: the engine's observer. Call
/// [`LiveView::finish`] when the run returns, before printing the report.
pub struct LiveView {
    view: View,
}

enum View {
    Quiet,
    Progress(progress::Progress),
    Dashboard(dashboard::Dashboard),
}

impl LiveView {
    /// Start the view `mode` for `plan`. The dashboard takes over the
    /// terminal here.
    ///
    /// # Errors
    /// When the dashboard cannot open or set up a terminal.
    pub fn start(
        mode: Mode,
        settings: &Settings,
        gauge: Option<InputGauge>,
        stop: &Stop,
    ) -> std::io::Result<LiveView> {
        let view = match mode {
            Mode::Quiet => View::Quiet,
            Mode::Progress => View::Progress(progress::Progress::new(settings, gauge)),
            Mode::Dashboard => View::Dashboard(dashboard::Dashboard::start(settings, gauge, stop)?),
        };
        Ok(LiveView { view })
    }

    /// The run has returned: clear the progress line, or leave the
    /// dashboard's screen and give the terminal back.
    pub fn finish(self) {
        match self.view {
            View::Quiet => {}
            View::Progress(p) => p.finish(),
            View::Dashboard(d) => d.finish(),
        }
    }
}

impl Observer for LiveView {
    fn interval(&mut self, index: u64, delta: &RunStats, total: &RunStats) {
        match &mut self.view {
            View::Quiet => {}
            View::Progress(p) => p.interval(index, delta, total),
            View::Dashboard(d) => d.interval(index, delta, total),
        }
    }

    fn judging(&mut self, left: u64) {
        if let View::Progress(p) = &mut self.view {
            p.judging(left);
        }
    }
}

/// `12,345`.
pub fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate for a narrow column: `0`, `8.5`, `950`, `12.3k`, `1.20M`.
pub fn rate(r: f64) -> String {
    if !r.is_finite() || r <= 0.0 {
        "0".into()
    } else if r < 10.0 {
        format!("{r:.1}")
    } else if r < 10_000.0 {
        format!("{r:.0}")
    } else if r < 1_000_000.0 {
        format!("{:.1}k", r / 1e3)
    } else {
        format!("{:.2}M", r / 1e6)
    }
}

/// A latency in µs as the reports show it (at most 7 characters: `850µs`,
/// `12.35ms`, `1.25s`); `-` before any answer.
pub fn micros(us: u64) -> String {
    if us == 0 {
        "-".into()
    } else {
        crate::report::micros(us as f64)
    }
}

/// A clock reading: `7.5s`, `1m05s`, `2h03m`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{:.1}s", d.as_secs_f64())
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1234567), "1,234,567");
        assert_eq!(rate(0.0), "0");
        assert_eq!(rate(8.54), "8.5");
        assert_eq!(rate(950.4), "950");
        assert_eq!(rate(12_345.0), "12.3k");
        assert_eq!(rate(1_200_000.0), "1.20M");
        assert_eq!(micros(0), "-");
        assert_eq!(micros(850), "850µs");
        assert_eq!(micros(1234), "1.234ms");
        assert_eq!(micros(12_345), "12.35ms");
        assert_eq!(micros(1_250_000), "1.25s");
        assert_eq!(clock(Duration::from_millis(7_500)), "7.5s");
        assert_eq!(clock(Duration::from_secs(65)), "1m05s");
        assert_eq!(clock(Duration::from_secs(7_380)), "2h03m");
    }

    #[test]
    fn the_mode_follows_the_flags_and_the_terminal() {
        assert_eq!(Mode::choose(false, false, 0, true), Ok(Mode::Progress));
        assert_eq!(Mode::choose(false, false, 0, false), Ok(Mode::Quiet));
        assert_eq!(Mode::choose(false, true, 0, true), Ok(Mode::Quiet));
        assert_eq!(Mode::choose(false, false, 1, true), Ok(Mode::Quiet));
        assert_eq!(Mode::choose(true, false, 0, false), Ok(Mode::Dashboard));
        assert_eq!(Mode::choose(true, false, 1, false), Ok(Mode::Dashboard));
        assert!(Mode::choose(true, false, 1, true).is_err());
        assert_eq!(
            Mode::Dashboard.interval(Duration::from_secs(1)),
            DASHBOARD_INTERVAL
        );
        assert_eq!(
            Mode::Progress.interval(Duration::from_secs(1)),
            Duration::from_secs(1)
        );
    }
}
