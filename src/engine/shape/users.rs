//! The closed model's stages: virtual users (requests in flight at each
//! endpoint) over time, as `--stages 30s:1..50,2m:50` writes them.

use std::time::Duration;

use super::stages::Stage;
use super::{from_secs, secs};

/// Virtual users over time, ramped or held, for the whole run.
#[derive(Clone, Debug, PartialEq)]
pub struct Users {
    stages: Vec<Stage>,
}

impl Users {
    /// Stages of user counts.
    pub fn new(stages: Vec<Stage>) -> Users {
        Users { stages }
    }

    /// The users at `t`, rounded to the nearest whole one; past the end,
    /// the last stage's.
    pub fn at(&self, t: Duration) -> usize {
        let mut start = Duration::ZERO;
        for s in &self.stages {
            if t < start + s.length {
                return s.at(t - start).round() as usize;
            }
            start += s.length;
        }
        self.stages.last().map_or(0, |s| s.to.round() as usize)
    }

    /// The next time after `t` that [`Users::at`] changes: where a ramp
    /// crosses the next half user, or the next stage begins; `None` past
    /// the end.
    pub fn next_change(&self, t: Duration) -> Option<Duration> {
        let mut start = Duration::ZERO;
        for s in &self.stages {
            let end = start + s.length;
            if t < end {
                let now = s.at(t - start).round();
                let slope = (s.to - s.from) / secs(s.length);
                let crossing = if slope > 0.0 {
                    Some((now + 0.5 - s.from) / slope)
                } else if slope < 0.0 {
                    Some((now - 0.5 - s.from) / slope)
                } else {
                    None
                };
                // A nanosecond past the crossing, so that it has changed.
                let when = crossing.map(|c| start + from_secs(c) + Duration::from_nanos(1));
                return Some(when.filter(|w| *w > t).map_or(end, |w| w.min(end)));
            }
            start = end;
        }
        None
    }

    /// The most users at any time.
    pub fn peak(&self) -> usize {
        self.stages
            .iter()
            .map(|s| s.from.max(s.to).round() as usize)
            .max()
            .unwrap_or(0)
    }

    /// How long the stages last.
    pub fn length(&self) -> Duration {
        self.stages.iter().map(|s| s.length).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{parse_stages, Staged};
    use super::*;

    fn users(s: &str) -> Users {
        match parse_stages(s) {
            Ok(Staged::Closed(u)) => u,
            other => panic!("{s}: {other:?}"),
        }
    }

    #[test]
    fn users_ramp_hold_and_step_by_table() {
        let u = users("10s:1..11,5s:11,1s:3");
        assert_eq!((u.peak(), u.length()), (11, Duration::from_secs(16)));
        for (ms, want) in [
            (0, 1),
            (400, 1),
            (500, 2),
            (5000, 6),
            (9999, 11),
            (10_000, 11),
            (14_999, 11),
            (15_000, 3),
            (99_000, 3),
        ] {
            assert_eq!(u.at(Duration::from_millis(ms)), want, "{ms} ms");
        }
    }

    #[test]
    fn each_change_is_found_and_nothing_between() {
        let u = users("2s:0..4,1s:4,2s:4..0");
        let mut t = Duration::ZERO;
        let mut seen = vec![u.at(t)];
        while let Some(next) = u.next_change(t) {
            assert!(next > t);
            // Nothing changes between two changes.
            let mid = t + (next - t) / 2;
            assert_eq!(u.at(mid), u.at(t), "between {t:?} and {next:?}");
            t = next;
            if seen.last() != Some(&u.at(t)) {
                seen.push(u.at(t));
            }
        }
        assert_eq!(seen, [0, 1, 2, 3, 4, 3, 2, 1, 0]);
        // The first user arrives at a quarter of a second (0.5 of 4 over 2 s).
        let first = u.next_change(Duration::ZERO).unwrap();
        assert!(first.abs_diff(Duration::from_millis(250)) < Duration::from_micros(1));
    }
}
