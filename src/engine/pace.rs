//! The open model's schedule: when each request is due. A pure function of
//! the request's number (no clock), so it is tested by a table.

use std::time::Duration;

use crate::model::Share;

/// A rate in requests per second per endpoint, parsed from `500`, `500/s`,
/// `30000/m`, `2/ms`, `1000/h`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate(pub f64);

/// How far ahead the connections opened before the clock reach (see
/// [`Rate::connections`]).
const AHEAD: Duration = Duration::from_millis(10);

impl Rate {
    /// The connections this rate needs open before the clock starts: one
    /// for each request due within [`AHEAD`], so that neither a burst that
    /// long (a late timer, a core the machine took away a while) nor
    /// answers that slow put a connect in a request's path. Answers slower
    /// than that need more, which open in the background as the free ones
    /// run low.
    pub fn connections(self) -> usize {
        (self.0 * AHEAD.as_secs_f64()).ceil() as usize
    }

    /// The most requests of a stream a batch holds when `cores` cores
    /// share this rate: what one core is due within [`AHEAD`]. Each core
    /// keeps its share of the schedule and takes the stream's batches as
    /// it needs them, so a batch is what a core may take beyond its share:
    /// 64 at 50 a second a core was 1.3 s, and a run of 200 lines at 100
    /// a second on two cores ended 0.57 s late, at 78 a second.
    pub fn batch(self, cores: usize) -> usize {
        ((self.0 * AHEAD.as_secs_f64() / cores.max(1) as f64).ceil() as usize).max(1)
    }
}

impl std::str::FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Rate, String> {
        let (n, per) = match s.trim().split_once('/') {
            Some((n, unit)) => (n.trim(), unit.trim()),
            None => (s.trim(), "s"),
        };
        let seconds = match per {
            "ms" => 0.001,
            "s" | "" => 1.0,
            "m" | "min" => 60.0,
            "h" => 3600.0,
            _ => {
                return Err(format!(
                    "--rate {s:?}: unknown unit {per:?}; use /ms, /s, /m or /h"
                ))
            }
        };
        match n.parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 => Ok(Rate(v / seconds)),
            _ => Err(format!(
                "--rate {s:?}: expected a positive number of requests, like 500, 500/s or 30000/m"
            )),
        }
    }
}

/// One core's share of a schedule: with `cores` cores, core `c` sends
/// requests `c, c + cores, c + 2·cores, ...` of its shard's schedule; and
/// of `--shard I/N`, requests `I, I + N, ...` of the whole run's, so N
/// shards at `rate` each send the whole run's schedule at `N · rate`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Schedule {
    /// Nanoseconds between two requests of the whole run's schedule.
    gap_ns: f64,
    /// Which requests of the whole run's schedule are this core's.
    part: Share,
}

impl Schedule {
    /// The schedule of core `core` of `cores` of `shard` sending `rate`
    /// requests per second (its shard's share of the whole rate).
    pub fn new(rate: Rate, shard: Share, core: usize, cores: usize) -> Schedule {
        Schedule {
            gap_ns: 1e9 / (rate.0 * shard.count as f64),
            part: shard.part(core, cores),
        }
    }

    /// When this core's `k`-th request (from 0) is due, from the start.
    pub fn due(&self, k: u64) -> Duration {
        let global = k * self.part.count + self.part.index;
        Duration::from_nanos((global as f64 * self.gap_ns).round() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_parse_with_units() {
        for (s, want) in [
            ("500", 500.0),
            ("500/s", 500.0),
            ("30000/m", 500.0),
            ("2/ms", 2000.0),
            ("3600/h", 1.0),
            (" 20000 ", 20000.0),
        ] {
            assert_eq!(s.parse::<Rate>(), Ok(Rate(want)), "{s}");
        }
        for s in ["0", "-5", "fast", "5/week", "NaN"] {
            assert!(s.parse::<Rate>().is_err(), "{s}");
        }
    }

    #[test]
    fn the_schedule_by_table() {
        // 1000 per second over 1 core: one request every 1 ms.
        let one = Schedule::new(Rate(1000.0), Share::WHOLE, 0, 1);
        for (k, ms) in [(0, 0), (1, 1), (2, 2), (1000, 1000)] {
            assert_eq!(one.due(k), Duration::from_millis(ms), "k={k}");
        }
        // 1000 per second over 2 cores: core 0 sends the even requests
        // (0, 2, 4 ms), core 1 the odd ones (1, 3, 5 ms).
        let c0 = Schedule::new(Rate(1000.0), Share::WHOLE, 0, 2);
        let c1 = Schedule::new(Rate(1000.0), Share::WHOLE, 1, 2);
        assert_eq!(
            [c0.due(0), c0.due(1), c0.due(2)],
            [0, 2, 4].map(Duration::from_millis)
        );
        assert_eq!(
            [c1.due(0), c1.due(1), c1.due(2)],
            [1, 3, 5].map(Duration::from_millis)
        );
        // 3 per second: gaps of 333.33 ms, rounded to the nanosecond.
        let third = Schedule::new(Rate(3.0), Share::WHOLE, 0, 1);
        assert_eq!(third.due(1), Duration::from_nanos(333_333_333));
        assert_eq!(third.due(3), Duration::from_secs(1));
        // 20000 per second: 50 µs apart, no millisecond rounding.
        let fast = Schedule::new(Rate(20000.0), Share::WHOLE, 0, 1);
        assert_eq!(fast.due(3), Duration::from_micros(150));
    }

    #[test]
    fn the_connections_a_rate_needs_are_those_due_within_ten_ms() {
        for (rate, want) in [
            (1.0, 1),
            (100.0, 1),
            (200.0, 2),
            (2000.0, 20),
            (20000.0, 200),
        ] {
            assert_eq!(Rate(rate).connections(), want, "{rate}");
        }
    }

    /// N shards of 1000/N per second, each over 1 to 3 cores, send the
    /// schedule of one run at 1000 per second: each due time once.
    #[test]
    fn shards_of_a_schedule_make_the_whole() {
        let whole: Vec<Duration> = (0..240)
            .map(|k| Schedule::new(Rate(1000.0), Share::WHOLE, 0, 1).due(k))
            .collect();
        for n in 1..8u64 {
            for cores in 1..4 {
                let mut union = Vec::new();
                for i in 0..n {
                    let shard = Share { index: i, count: n };
                    let rate = Rate(1000.0 / n as f64);
                    for c in 0..cores {
                        let s = Schedule::new(rate, shard, c, cores);
                        union.extend(
                            (0..)
                                .map(|k| s.due(k))
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
