//! A sweep's steps (`--sweep`): each step's statistics, the intervals of
//! its counted time merged, so memory holds a histogram per step, never
//! samples. Built as a live run goes (an [`crate::engine::Observer`]) or
//! from a saved run's intervals, so shards merge step by step.

use std::time::Duration;

use crate::engine::shape::{Search, StepClock, Sweep};
use crate::stats::RunStats;

/// One step: its rate and what every endpoint did in its counted time.
#[derive(Clone, Debug)]
pub struct Step {
    /// The rate offered, per second per endpoint (the whole run's); `None`
    /// when each endpoint had its own (a capacity search).
    pub rate: Option<f64>,
    /// Its counted time so far, seconds (short of the step's when the run
    /// stopped in it).
    pub seconds: f64,
    /// The statistics of its counted intervals.
    pub stats: RunStats,
}

/// The steps a run reached, in order.
#[derive(Clone, Debug)]
pub struct Steps {
    clock: StepClock,
    /// Each step's rate, when every endpoint had the same.
    rates: Vec<Option<f64>>,
    /// Interval length.
    interval: Duration,
    /// Per step, once one of its counted intervals was seen.
    pub steps: Vec<Option<Step>>,
}

impl Steps {
    /// No step of `clock` seen yet, of intervals `interval` long; each
    /// step's rate, when one (`rates`, as many as the steps).
    pub fn new(clock: StepClock, rates: Vec<Option<f64>>, interval: Duration) -> Steps {
        Steps {
            clock,
            rates,
            interval,
            steps: vec![None; clock.count],
        }
    }

    /// The steps of a sweep (each at its rate) or of a capacity search
    /// (each endpoint at its own), if either.
    pub fn of(sweep: Option<&Sweep>, search: Option<&Search>, interval: Duration) -> Option<Steps> {
        match (sweep, search) {
            (Some(sweep), _) => {
                let rates = sweep.rates.iter().map(|r| Some(*r)).collect();
                Some(Steps::new(sweep.clock(), rates, interval))
            }
            (None, Some(search)) => {
                let clock = search.clock();
                Some(Steps::new(clock, vec![None; clock.count], interval))
            }
            (None, None) => None,
        }
    }

    /// When step `i`'s counted time starts.
    pub fn counted_from(&self, i: usize) -> Duration {
        self.clock.counted_from(i)
    }

    /// Add interval `index`'s statistics to its step, if it counts.
    pub fn add(&mut self, index: u64, delta: &RunStats) {
        let start = self.interval * u32::try_from(index).unwrap_or(u32::MAX);
        let Some(i) = self.clock.step_of(start) else {
            return;
        };
        // Counted time from the step's counted start to this interval's
        // end (an interval with nothing in it is not handed over).
        let seconds = (start + self.interval - self.clock.counted_from(i)).as_secs_f64();
        match &mut self.steps[i] {
            Some(s) => {
                s.stats.merge(delta);
                s.seconds = s.seconds.max(seconds);
            }
            slot @ None => {
                *slot = Some(Step {
                    rate: self.rates.get(i).copied().flatten(),
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
