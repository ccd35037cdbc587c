//! A capacity search (`--find-capacity`) as the engine and saved runs know
//! it: its steps in time, its bounds, and its conditions as written. The
//! search itself sits above the engine and sets each endpoint's rate
//! between steps (`report::capacity`).

use std::time::Duration;

use super::{Constant, Rate, StepClock};

/// What a capacity search runs.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Search {
    /// The conditions every step must meet, as written (`p99 < 100ms`).
    pub conditions: Vec<String>,
    /// The first rate tried, per second per endpoint.
    pub start: f64,
    /// The highest rate tried.
    pub max: f64,
    /// The search ends when the rate that held and the one that broke are
    /// this fraction apart (0.05: 5 %).
    pub resolution: f64,
    /// Each step's settling time (not counted), ms.
    pub settle_ms: u64,
    /// Each step's counted time, ms.
    pub hold_ms: u64,
    /// The most time the search takes, ms.
    pub time_ms: u64,
}

impl Search {
    /// Its steps in time: as many as fit in its time.
    pub fn clock(&self) -> StepClock {
        let step = (self.settle_ms + self.hold_ms).max(1);
        StepClock {
            settle_ms: self.settle_ms,
            hold_ms: self.hold_ms,
            count: usize::try_from(self.time_ms / step).unwrap_or(usize::MAX),
        }
    }

    /// The schedule's shape: the first rate, which the search then scales
    /// for each endpoint.
    pub fn shape(&self) -> Constant {
        Constant(Rate(self.start))
    }

    /// Its time, to the end of the last whole step.
    pub fn length(&self) -> Duration {
        self.clock().step() * u32::try_from(self.clock().count).unwrap_or(u32::MAX)
    }
}
