//! `--sweep`: load curves. A list of rates, each held for a step after a
//! settling time that is not counted; reports give each step's figures,
//! so latency and achieved rate can be drawn against the rate offered.

use std::time::Duration;

use super::stages::Stage;
use super::{Rate, Shape, Stages};

/// The steps of a sweep: each rate in turn, for `settle` (not counted)
/// then `hold` (counted). Saved runs keep it, so reports find the steps
/// in the intervals.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sweep {
    /// Each step's rate, per second per endpoint, for the whole run.
    pub rates: Vec<f64>,
    /// Time at each step's rate before its figures count, ms.
    pub settle_ms: u64,
    /// Time each step's figures count, ms.
    pub hold_ms: u64,
}

impl Sweep {
    /// `rates` as `--sweep` writes them (`500,1000,2000/s`, or a range
    /// `1000..8000/s+1000`), each settled for `settle` and held for `hold`,
    /// both whole multiples of `interval` (steps are made of intervals).
    pub fn parse(
        rates: &str,
        settle: Duration,
        hold: Duration,
        interval: Duration,
    ) -> Result<Sweep, String> {
        let whole = |d: Duration, flag: &str| {
            if d.is_zero() && flag == "--step-duration" || d.as_nanos() % interval.as_nanos() != 0 {
                Err(format!(
                    "{flag} {}: give a whole number of seconds (steps are counted in whole intervals)",
                    humantime::format_duration(d)
                ))
            } else {
                Ok(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            }
        };
        Ok(Sweep {
            rates: parse_rates(rates)?,
            settle_ms: whole(settle, "--settle")?,
            hold_ms: whole(hold, "--step-duration")?,
        })
    }

    /// As reports name it: `100, 200, 400/s, each 10s after 2s settling`.
    pub fn describe(&self) -> String {
        let rates: Vec<String> = self.rates.iter().map(|r| format!("{r}")).collect();
        format!(
            "{}/s, each {} after {} settling",
            rates.join(", "),
            humantime::format_duration(Duration::from_millis(self.hold_ms)),
            humantime::format_duration(Duration::from_millis(self.settle_ms))
        )
    }

    /// Its steps in time.
    pub fn clock(&self) -> StepClock {
        StepClock {
            settle_ms: self.settle_ms,
            hold_ms: self.hold_ms,
            count: self.rates.len(),
        }
    }

    /// One step's length, settling included.
    fn step(&self) -> Duration {
        self.clock().step()
    }

    /// The sweep as stages: each rate held for its step.
    fn stages(&self) -> Stages {
        Stages::new(
            self.rates
                .iter()
                .map(|r| Stage {
                    length: self.step(),
                    from: *r,
                    to: *r,
                })
                .collect(),
        )
    }

    /// The shape the schedule follows.
    pub fn shape(&self) -> SweepShape {
        SweepShape(self.stages())
    }
}

/// Steps in time (a sweep's, a capacity search's): each `settle_ms`
/// uncounted, then `hold_ms` counted, `count` of them; both whole intervals.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepClock {
    pub settle_ms: u64,
    pub hold_ms: u64,
    pub count: usize,
}

impl StepClock {
    /// One step's length, settling included.
    pub fn step(&self) -> Duration {
        Duration::from_millis(self.settle_ms + self.hold_ms)
    }

    /// The step whose counted time holds the interval starting at `start`
    /// (interval starts fall on step edges: both are whole intervals);
    /// `None` while settling or past the end.
    pub fn step_of(&self, start: Duration) -> Option<usize> {
        let step = self.step();
        let i = usize::try_from(start.as_nanos() / step.as_nanos()).ok()?;
        let into = start - step * u32::try_from(i).ok()?;
        (i < self.count && into >= Duration::from_millis(self.settle_ms)).then_some(i)
    }

    /// When step `i`'s counted time starts.
    pub fn counted_from(&self, i: usize) -> Duration {
        self.step() * u32::try_from(i).unwrap_or(u32::MAX) + Duration::from_millis(self.settle_ms)
    }
}

/// A sweep's schedule: its steps as held stages.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepShape(Stages);

impl Shape for SweepShape {
    fn due_by(&self, t: Duration) -> f64 {
        self.0.due_by(t)
    }
    fn time_of(&self, n: f64) -> Option<Duration> {
        self.0.time_of(n)
    }
    fn peak(&self) -> Rate {
        self.0.peak()
    }
    fn length(&self) -> Option<Duration> {
        self.0.length()
    }
}

/// `500,1000,2000/s` (a unit written once, at the end, is every rate's)
/// or `1000..8000/s+1000` (from, to, step), in requests per second.
fn parse_rates(s: &str) -> Result<Vec<f64>, String> {
    let bad = |why: String| {
        format!("--sweep {s:?}: {why}; write rates like 500,1000,2000/s or a range like 1000..8000/s+1000")
    };
    // A rate written without a unit takes the last one written.
    let unit = s.rfind('/').map_or("/s", |i| {
        let unit = &s[i..];
        unit[..unit.find(['+', ',']).unwrap_or(unit.len())].trim()
    });
    let rate = |v: &str| -> Result<f64, String> {
        let v = v.trim();
        let v = match v.contains('/') {
            true => v.to_string(),
            false => format!("{v}{unit}"),
        };
        // The unit makes it a rate: `with_unit` always answers.
        match Rate::with_unit(&v).unwrap_or(Ok(Rate(0.0))) {
            Ok(Rate(r)) if r > 0.0 => Ok(r),
            Ok(_) => Err(bad(format!("a rate of 0 ({v:?}) sends nothing"))),
            Err(e) => Err(bad(e)),
        }
    };
    let rates = match s.split_once("..") {
        Some((from, rest)) => {
            let (to, by) = rest
                .split_once('+')
                .ok_or_else(|| bad("a range needs its step, as +1000".into()))?;
            let (from, to, by) = (rate(from)?, rate(to)?, rate(by)?);
            if to < from {
                return Err(bad("the range goes down".into()));
            }
            let n = ((to - from) / by + 1e-9).floor() as usize + 1;
            if n > 1000 {
                return Err(bad(format!("{n} steps; at most 1,000")));
            }
            (0..n).map(|k| from + by * k as f64).collect()
        }
        None => s.split(',').map(rate).collect::<Result<Vec<_>, _>>()?,
    };
    Ok(rates)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn rates_parse_as_lists_and_ranges() {
        for (s, want) in [
            ("500,1000,2000,4000/s", vec![500.0, 1000.0, 2000.0, 4000.0]),
            ("500, 1000", vec![500.0, 1000.0]),
            ("60,120/m", vec![1.0, 2.0]),
            ("1000..4000/s+1000", vec![1000.0, 2000.0, 3000.0, 4000.0]),
            ("1000..3500/s+1000", vec![1000.0, 2000.0, 3000.0]),
            ("1..2/ms+1", vec![1000.0, 2000.0]),
            ("500/s,1000/s", vec![500.0, 1000.0]),
            ("1/ms, 2000/s", vec![1000.0, 2000.0]),
            ("1, 2/ms", vec![1000.0, 2000.0]),
            ("1000/s..3000/s+1000/s", vec![1000.0, 2000.0, 3000.0]),
        ] {
            let got = Sweep::parse(s, secs(2), secs(10), secs(1)).unwrap().rates;
            assert_eq!(got, want, "{s}");
        }
        for (s, says) in [
            ("0,100/s", "a rate of 0"),
            ("fast", "expected a number"),
            ("100..50/s+10", "goes down"),
            ("100..500/s", "needs its step"),
            ("1..100000/s+1", "at most 1,000"),
            ("5/week", "unknown unit"),
        ] {
            let e = Sweep::parse(s, secs(2), secs(10), secs(1)).unwrap_err();
            assert!(e.starts_with("--sweep") && e.contains(says), "{s}: {e}");
        }
        let e = Sweep::parse("100", secs(2), Duration::from_millis(1500), secs(1)).unwrap_err();
        assert!(e.starts_with("--step-duration 1s 500ms"), "{e}");
        let e = Sweep::parse("100", Duration::from_millis(300), secs(1), secs(1)).unwrap_err();
        assert!(e.starts_with("--settle 300ms"), "{e}");
        assert!(Sweep::parse("100", Duration::ZERO, secs(1), secs(1)).is_ok());
    }

    #[test]
    fn each_interval_belongs_to_its_step_or_to_settling() {
        // 2 s settling, 3 s counted, three steps: 15 s in all.
        let sweep = Sweep::parse("100,200,300/s", secs(2), secs(3), secs(1)).unwrap();
        let steps: Vec<Option<usize>> = (0..16).map(|s| sweep.clock().step_of(secs(s))).collect();
        let (n, a, b, c) = (None, Some(0), Some(1), Some(2));
        assert_eq!(steps, [n, n, a, a, a, n, n, b, b, b, n, n, c, c, c, n]);
        // The schedule holds each rate for its whole step.
        let shape = sweep.shape();
        assert_eq!(shape.length(), Some(secs(15)));
        assert_eq!(shape.due_by(secs(5)), 500.0);
        assert_eq!(shape.due_by(secs(10)), 1500.0);
        assert_eq!(shape.time_of(500.0), Some(secs(5)));
        assert_eq!(shape.peak(), Rate(300.0));
    }
}
