//! A sweep's steps (`--sweep`): each step's statistics, the intervals of
//! its counted time merged, so memory holds a histogram per step, never
//! samples. Built as a live run goes (an [`crate::engine::Observer`]) or
//! from a saved run's intervals, so shards merge step by step.

use std::time::Duration;

use crate::engine::shape::Sweep;
use crate::stats::RunStats;

/// One step: its rate and what every endpoint did in its counted time.
#[derive(Clone, Debug)]
pub struct Step {
    /// The rate offered, per second per endpoint (the whole run's).
    pub rate: f64,
    /// Its counted time so far, seconds (short of the step's when the run
    /// stopped in it).
    pub seconds: f64,
    /// The statistics of its counted intervals.
    pub stats: RunStats,
}

/// The steps a run reached, in order.
#[derive(Clone, Debug)]
pub struct Steps {
    sweep: Sweep,
    /// Interval length.
    interval: Duration,
    /// Per step, once one of its counted intervals was seen.
    pub steps: Vec<Option<Step>>,
}

impl Steps {
    /// No step seen yet, of intervals `interval` long.
    pub fn new(sweep: &Sweep, interval: Duration) -> Steps {
        Steps {
            sweep: sweep.clone(),
            interval,
            steps: vec![None; sweep.rates.len()],
        }
    }

    /// Add interval `index`'s statistics to its step, if it counts.
    pub fn add(&mut self, index: u64, delta: &RunStats) {
        let start = self.interval * u32::try_from(index).unwrap_or(u32::MAX);
        let Some(i) = self.sweep.step_of(start) else {
            return;
        };
        // Counted time from the step's counted start to this interval's
        // end (an interval with nothing in it is not handed over).
        let step = Duration::from_millis(self.sweep.settle_ms + self.sweep.hold_ms);
        let counted = step * u32::try_from(i).unwrap_or(u32::MAX)
            + Duration::from_millis(self.sweep.settle_ms);
        let seconds = (start + self.interval - counted).as_secs_f64();
        match &mut self.steps[i] {
            Some(s) => {
                s.stats.merge(delta);
                s.seconds = s.seconds.max(seconds);
            }
            slot @ None => {
                *slot = Some(Step {
                    rate: self.sweep.rates[i],
                    seconds,
                    stats: delta.clone(),
                });
            }
        }
    }

    /// The steps reached.
    pub fn reached(&self) -> impl Iterator<Item = &Step> {
        self.steps.iter().flatten()
    }
}

impl crate::engine::Observer for Steps {
    fn interval(&mut self, index: u64, delta: &RunStats, _total: &RunStats) {
        self.add(index, delta);
    }
}
