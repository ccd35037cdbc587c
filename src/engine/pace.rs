//! The open model's schedule: when each request is due. A pure function of
//! the request's number (no clock), so it is tested by a table; the load's
//! shape over time is a [`Shape`].

use std::sync::Arc;
use std::time::Duration;

pub use super::shape::Rate;
use super::shape::{Constant, Shape};
use crate::model::Share;

/// One core's share of a schedule: with `cores` cores, core `c` sends
/// requests `c, c + cores, c + 2·cores, ...` of its shard's schedule; and
/// of `--shard I/N`, requests `I, I + N, ...` of the whole run's, so N
/// shards at `rate` each send the whole run's schedule at `N · rate`.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// The whole run's load over time.
    shape: Arc<dyn Shape>,
    /// Which requests of the whole run's schedule are this core's.
    part: Share,
}

impl Schedule {
    /// The schedule of core `core` of `cores` of `shard`, of the whole
    /// run's `shape`.
    pub fn new(shape: Arc<dyn Shape>, shard: Share, core: usize, cores: usize) -> Schedule {
        Schedule {
            shape,
            part: shard.part(core, cores),
        }
    }

    /// The schedule of `rate`, this shard's share of a constant rate.
    pub fn constant(rate: Rate, shard: Share, core: usize, cores: usize) -> Schedule {
        let whole = Rate(rate.0 * shard.count as f64);
        Schedule::new(Arc::new(Constant(whole)), shard, core, cores)
    }

    /// The number of this core's `k`-th request (from 0) in the whole
    /// run's schedule.
    fn global(&self, k: u64) -> f64 {
        (k * self.part.count + self.part.index) as f64
    }

    /// When this core's first request is due, from the start.
    pub fn offset(&self) -> Duration {
        self.due(0).unwrap_or_default()
    }

    /// The shape's highest rate, per second.
    pub fn peak(&self) -> f64 {
        self.shape.peak().0
    }

    /// When this core's `k`-th request (from 0) is due, from the start;
    /// `None` once the shape has ended.
    pub fn due(&self, k: u64) -> Option<Duration> {
        self.shape.time_of(self.global(k))
    }

    /// When the `k`-th request is due after the rate was scaled at
    /// `anchor`: from there on, the shape's rate times the anchor's scale.
    pub fn due_after(&self, anchor: &Anchor, k: u64) -> Option<Duration> {
        let from = self.shape.due_by(anchor.at);
        let more = (self.global(k) - self.global(anchor.k)) / anchor.scale;
        self.shape.time_of(from + more).map(|t| t.max(anchor.at))
    }
}

/// Where a schedule was re-anchored by a change of rate (the dashboard's
/// `+` and `-`): from this core's request `k`, due at `at` (time into the
/// shape), requests follow at `scale` times the shape's rate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Anchor {
    pub k: u64,
    pub at: Duration,
    pub scale: f64,
}

#[cfg(test)]
mod tests {
    use super::super::shape::{Stage, Stages};
    use super::*;

    #[test]
    fn the_schedule_by_table() {
        // 1000 per second over 1 core: one request every 1 ms.
        let one = Schedule::constant(Rate(1000.0), Share::WHOLE, 0, 1);
        for (k, ms) in [(0, 0), (1, 1), (2, 2), (1000, 1000)] {
            assert_eq!(one.due(k).unwrap(), Duration::from_millis(ms), "k={k}");
        }
        // 1000 per second over 2 cores: core 0 sends the even requests
        // (0, 2, 4 ms), core 1 the odd ones (1, 3, 5 ms).
        let c0 = Schedule::constant(Rate(1000.0), Share::WHOLE, 0, 2);
        let c1 = Schedule::constant(Rate(1000.0), Share::WHOLE, 1, 2);
        assert_eq!(
            [c0.due(0).unwrap(), c0.due(1).unwrap(), c0.due(2).unwrap()],
            [0, 2, 4].map(Duration::from_millis)
        );
        assert_eq!(
            [c1.due(0).unwrap(), c1.due(1).unwrap(), c1.due(2).unwrap()],
            [1, 3, 5].map(Duration::from_millis)
        );
        // 3 per second: gaps of 333.33 ms, rounded to the nanosecond.
        let third = Schedule::constant(Rate(3.0), Share::WHOLE, 0, 1);
        assert_eq!(third.due(1).unwrap(), Duration::from_nanos(333_333_333));
        assert_eq!(third.due(3).unwrap(), Duration::from_secs(1));
        // 20000 per second: 50 µs apart, no millisecond rounding.
        let fast = Schedule::constant(Rate(20000.0), Share::WHOLE, 0, 1);
        assert_eq!(fast.due(3).unwrap(), Duration::from_micros(150));
    }

    #[test]
    fn a_change_of_rate_goes_on_from_its_anchor() {
        // 1000 per second, doubled at request 10 (10 ms): 0.5 ms apart.
        let one = Schedule::constant(Rate(1000.0), Share::WHOLE, 0, 1);
        let at = |k, ms: u64, scale| Anchor {
            k,
            at: Duration::from_millis(ms),
            scale,
        };
        let doubled = at(10, 10, 2.0);
        for (k, us) in [(10, 10_000), (11, 10_500), (14, 12_000)] {
            assert_eq!(
                one.due_after(&doubled, k),
                Some(Duration::from_micros(us)),
                "k={k}"
            );
        }
        // Halved at request 10 when it was sent late, at 15 ms.
        let halved = at(10, 15, 0.5);
        assert_eq!(one.due_after(&halved, 12), Some(Duration::from_millis(19)));
        // On a ramp the scale multiplies the rate the shape has then:
        // 0..1000/s over 2 s has made 250 t² requests due by t s. At twice
        // its rate from request 250 (1 s), 375 more are due when the shape
        // has made half as many, 437.5: at the square root of 1.75 s.
        let ramp = Schedule::new(
            Arc::new(Stages::new(vec![Stage {
                length: Duration::from_secs(2),
                from: 0.0,
                to: 1000.0,
            }])),
            Share::WHOLE,
            0,
            1,
        );
        let twice = at(250, 1000, 2.0);
        let got = ramp.due_after(&twice, 250 + 375).unwrap();
        assert!(
            got.abs_diff(Duration::from_secs_f64(1.75f64.sqrt())) < Duration::from_micros(1),
            "{got:?}"
        );
        // A scale that outruns the shape's end ends the schedule.
        assert!(ramp.due_after(&twice, 250 + 1499).is_some());
        assert_eq!(ramp.due_after(&twice, 250 + 1500), None);
    }

    /// N shards of 1000/N per second, each over 1 to 3 cores, send the
    /// schedule of one run at 1000 per second: each due time once.
    #[test]
    fn shards_of_a_schedule_make_the_whole() {
        let whole: Vec<Duration> = (0..240)
            .map(|k| {
                Schedule::constant(Rate(1000.0), Share::WHOLE, 0, 1)
                    .due(k)
                    .unwrap()
            })
            .collect();
        for n in 1..8u64 {
            for cores in 1..4 {
                let mut union = Vec::new();
                for i in 0..n {
                    let shard = Share { index: i, count: n };
                    let rate = Rate(1000.0 / n as f64);
                    for c in 0..cores {
                        let s = Schedule::constant(rate, shard, c, cores);
                        union.extend(
                            (0..)
                                .map(|k| s.due(k).unwrap())
                                .take_while(|d| *d < whole[240 - 1] + Duration::from_nanos(1)),
                        );
                    }
                }
                union.sort();
                assert_eq!(union.len(), whole.len(), "n={n} cores={cores}");
                for (a, b) in union.iter().zip(&whole) {
                    assert!(
                        a.abs_diff(*b) <= Duration::from_nanos(1),
                        "n={n} cores={cores}: {a:?} {b:?}"
                    );
                }
            }
        }
    }
}
