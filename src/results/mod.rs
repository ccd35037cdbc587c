//! Saved runs: the file a run writes with `--output` (JSON Lines, see
//! `docs/results-format.md`), read back for `versus report`, merged with
//! `versus merge`, compared with `versus compare`. `format` is the file's
//! lines, `writer` writes them as a run goes, `reader` reads them back,
//! `merge` combines shards, `series` keeps the per-interval figures.

pub mod format;
pub mod info;
pub mod merge;
pub mod reader;
pub mod series;
pub mod steps;
pub mod writer;

use std::path::Path;
use std::time::Duration;

use self::info::RunInfo;
use crate::engine::RunOutput;
use crate::input::reader::InputError;

pub use self::reader::ReadError;

/// One or more saved runs read back (merged when several): what the
/// reports render.
#[derive(Debug)]
pub struct SavedRun {
    /// The (merged) header.
    pub header: format::Header,
    /// The description reports need.
    pub info: RunInfo,
    /// The run, as the engine would have returned it.
    pub output: RunOutput,
    /// Per-interval figures.
    pub series: series::Series,
    /// A sweep's steps.
    pub steps: Option<steps::Steps>,
    /// Warnings (cut-off lines, missing totals).
    pub warnings: Vec<String>,
}

/// Read one or more files of the same endpoints, merged.
///
/// # Errors
/// A [`ReadError`] naming the file and the problem.
pub fn load(paths: &[impl AsRef<Path>]) -> Result<SavedRun, ReadError> {
    let shards = merge::Shards::open(paths)?;
    let interval = Duration::from_millis(shards.header.interval_ms).as_secs_f64();
    let mut s = series::Series {
        points: Vec::new(),
        interval,
    };
    let mut steps = steps::Steps::of(
        shards.header.sweep.as_ref(),
        shards.header.search.as_ref(),
        Duration::from_millis(shards.header.interval_ms),
    );
    let f = shards.merge(&mut |index, stats| {
        s.points.push(series::Point::of(index, interval, stats));
        if let Some(steps) = steps.as_mut() {
            steps.add(index, stats);
        }
    })?;
    s.close(f.elapsed.as_secs_f64());
    let mut warnings = f.warnings;
    if let Some(e) = &f.input_error {
        warnings.push(format!("the run's input failed: {e}"));
    }
    let info = RunInfo {
        endpoints: f.header.endpoints.clone(),
        window: f.header.lead,
        comparison: f.header.comparison,
        rate: f.header.rate,
        max_in_flight: f.header.max_in_flight,
        twin: f.header.twin,
        verbose: 0,
        logged: f.logged,
        recorded: f.recorded,
        notes: f.header.notes.clone(),
        warmup: f.header.warmup.clone(),
        stages: f.header.stages.clone(),
        sweep: f.header.sweep.clone(),
        search: f.header.search.clone(),
        io: f.header.io.clone(),
        record: Some(f.header.record),
    };
    Ok(SavedRun {
        info,
        output: RunOutput {
            stats: f.stats,
            input: f.input,
            input_error: f.input_error.map(InputError::Saved),
            elapsed: f.elapsed,
            interrupted: f.interrupted,
        },
        series: s,
        steps,
        warnings,
        header: f.header,
    })
}
