//! Load shapes: how much load is due at each moment of a run, as pure
//! functions of time, each tested by a table. The open model's schedule
//! (`engine::pace`) follows a [`Shape`]; the closed model's virtual users
//! follow [`Users`]. A new shape is a file here behind one of the two.

mod constant;
mod rate;
mod search;
mod stages;
mod sweep;
mod users;

use std::time::Duration;

pub use self::constant::Constant;
pub use self::rate::Rate;
pub use self::search::Search;
pub use self::stages::{parse_stages, Stage, Staged, Stages};
pub use self::sweep::{StepClock, Sweep, SweepShape};
pub use self::users::Users;

/// An open model's load: the rate requests fall due at over the whole run
/// (every shard and core together), as a function of the time since the
/// start of sending.
pub trait Shape: std::fmt::Debug + Send + Sync {
    /// Requests due in the first `t`: the integral of the rate.
    fn due_by(&self, t: Duration) -> f64;
    /// When `n` requests have fallen due (the inverse of
    /// [`Shape::due_by`]): request `k`, from 0, is due at `time_of(k)`.
    /// `None` when the shape ends first.
    fn time_of(&self, n: f64) -> Option<Duration>;
    /// The highest rate it reaches.
    fn peak(&self) -> Rate;
    /// How long it lasts; `None`: until the run is stopped.
    fn length(&self) -> Option<Duration>;
}

/// A duration in seconds, without the rounding of [`Duration::as_secs_f64`]
/// mattering at these scales.
fn secs(t: Duration) -> f64 {
    t.as_secs_f64()
}

/// Seconds as a [`Duration`], to the nanosecond.
fn from_secs(s: f64) -> Duration {
    Duration::from_nanos((s.max(0.0) * 1e9).round() as u64)
}
