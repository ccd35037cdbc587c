//! The constant rate of `--rate`.

use std::time::Duration;

use super::{from_secs, secs, Rate, Shape};

/// The same rate from start to stop.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Constant(pub Rate);

impl Shape for Constant {
    fn due_by(&self, t: Duration) -> f64 {
        self.0 .0 * secs(t)
    }

    fn time_of(&self, n: f64) -> Option<Duration> {
        Some(from_secs(n / self.0 .0))
    }

    fn peak(&self) -> Rate {
        self.0
    }

    fn length(&self) -> Option<Duration> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_fall_due_evenly() {
        let c = Constant(Rate(1000.0));
        for (n, ms) in [(0.0, 0), (1.0, 1), (2.0, 2), (1000.0, 1000)] {
            assert_eq!(c.time_of(n), Some(Duration::from_millis(ms)), "n={n}");
            assert_eq!(c.due_by(Duration::from_millis(ms)), n, "t={ms}ms");
        }
        // 3 per second: 333.33 ms apart, to the nanosecond.
        let third = Constant(Rate(3.0));
        assert_eq!(third.time_of(1.0), Some(Duration::from_nanos(333_333_333)));
        assert_eq!(third.time_of(3.0), Some(Duration::from_secs(1)));
        assert_eq!(third.length(), None);
    }
}
