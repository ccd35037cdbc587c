//! The capacity search above the engine (`--find-capacity`): after each
//! step it judges every endpoint's figures against the conditions and sets
//! each endpoint's rate for the next step, as the dashboard's `+` and `-`
//! set the rate; once every endpoint's search is done, it stops the run.
//! The decisions are `report::capacity`'s, which rebuild the result from
//! the same steps for the report.

use std::time::Duration;

use crate::engine::shape::Search;
use crate::engine::{Observer, Stop};
use crate::report::capacity::{self, Searching};
use crate::report::threshold::Threshold;
use crate::results::info::RunInfo;
use crate::results::steps::Steps;
use crate::stats::RunStats;

/// A search steering a run.
pub struct Steering {
    search: Search,
    conditions: Vec<Threshold>,
    info: RunInfo,
    stop: Stop,
    steps: Steps,
    each: Vec<Searching>,
    /// Steps judged so far.
    judged: usize,
    interval: Duration,
}

impl Steering {
    /// The search of `info`'s run, if it has one, steering `stop`.
    ///
    /// # Errors
    /// Conditions that do not parse (the plan checked them).
    pub fn new(
        info: &RunInfo,
        interval: Duration,
        stop: &Stop,
    ) -> Result<Option<Steering>, String> {
        let Some(search) = info.search.clone() else {
            return Ok(None);
        };
        let Some(steps) = info.steps(interval) else {
            return Ok(None);
        };
        Ok(Some(Steering {
            conditions: capacity::conditions(&search.conditions)?,
            each: info
                .endpoints
                .iter()
                .map(|_| Searching::new(&search))
                .collect(),
            search,
            info: info.clone(),
            stop: stop.clone(),
            steps,
            judged: 0,
            interval,
        }))
    }

    /// The steps so far, as the reports show them.
    pub fn steps(&self) -> &Steps {
        &self.steps
    }

    /// Judge step `k` at every endpoint still searching, and set the rates
    /// of the next (0 for an endpoint whose search is done).
    fn judge(&mut self, k: usize) {
        let step = self.steps.steps[k].as_ref();
        for (e, s) in self.each.iter_mut().enumerate() {
            s.take_step(&self.search, |_| match step {
                Some(step) if step.stats.endpoints[e].completed() > 0 => {
                    let broken = capacity::broken(&self.conditions, &self.info, &step.stats, e);
                    let p50 = crate::report::quantile(&step.stats.endpoints[e].latency, 0.5);
                    (broken.unwrap_or_else(Some), p50.map(|v| v as u64))
                }
                _ => (Some(capacity::SILENT.to_string()), None),
            });
        }
        if self.each.iter().all(|s| s.next().is_none()) {
            self.stop.finish();
        } else {
            self.stop
                .set_endpoint_rates(self.each.iter().map(Searching::rate).collect());
        }
    }
}

impl Observer for Steering {
    fn interval(&mut self, index: u64, delta: &RunStats, _total: &RunStats) {
        self.steps.add(index, delta);
        let ended = self.interval * u32::try_from(index + 1).unwrap_or(u32::MAX);
        let hold = Duration::from_millis(self.search.hold_ms);
        while self.judged < self.steps.steps.len()
            && ended >= self.steps.counted_from(self.judged) + hold
        {
            self.judge(self.judged);
            self.judged += 1;
        }
    }
}
