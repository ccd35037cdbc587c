//! A rate in requests per second, as `--rate`, `--stages` and `--sweep`
//! write it.

use std::time::Duration;

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

    /// A rate of 0 or more (a stage may ramp from 0); `None` unless `s`
    /// has a unit (`/s`, `/m`, ...), which tells a rate from a count of
    /// virtual users.
    pub fn with_unit(s: &str) -> Option<Result<Rate, String>> {
        s.contains('/').then(|| per_second(s, true))
    }
}

impl std::str::FromStr for Rate {
    type Err = String;
    fn from_str(s: &str) -> Result<Rate, String> {
        per_second(s, false).map_err(|e| format!("--rate {s:?}: {e}"))
    }
}

/// `s` in requests per second; 0 only when `zero` allows it.
fn per_second(s: &str, zero: bool) -> Result<Rate, String> {
    let (n, per) = match s.trim().split_once('/') {
        Some((n, unit)) => (n.trim(), unit.trim()),
        None => (s.trim(), "s"),
    };
    let seconds = match per {
        "ms" => 0.001,
        "s" | "" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("unknown unit {per:?}; use /ms, /s, /m or /h")),
    };
    match n.parse::<f64>() {
        Ok(v) if v.is_finite() && (v > 0.0 || zero && v == 0.0) => Ok(Rate(v / seconds)),
        _ if zero => Err(format!(
            "expected a number of requests of 0 or more, like 500/s or 30000/m, not {n:?}"
        )),
        _ => Err("expected a positive number of requests, like 500, 500/s or 30000/m".into()),
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
    fn a_stage_rate_needs_its_unit_and_may_be_zero() {
        assert_eq!(Rate::with_unit("0/s"), Some(Ok(Rate(0.0))));
        assert_eq!(Rate::with_unit("120/m"), Some(Ok(Rate(2.0))));
        assert_eq!(Rate::with_unit("50"), None);
        assert!(matches!(Rate::with_unit("-1/s"), Some(Err(_))));
        assert!(matches!(Rate::with_unit("5/week"), Some(Err(_))));
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
}
