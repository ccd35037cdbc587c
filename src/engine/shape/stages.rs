//! `--stages`: load that changes over time, a list of `DURATION:VALUE`.
//! A value with a rate unit (`0..500/s`, `500/s`) is the open model's rate,
//! ramped or held; a bare number (`1..50`, `50`) is the closed model's
//! virtual users ([`Users`]).

use std::time::Duration;

use super::{from_secs, secs, Rate, Shape, Users};

/// One stage: for `length`, a value going straight from `from` to `to`
/// (equal: held).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stage {
    pub length: Duration,
    pub from: f64,
    pub to: f64,
}

impl Stage {
    /// Its value `t` into it.
    pub(super) fn at(&self, t: Duration) -> f64 {
        let len = secs(self.length);
        if len == 0.0 {
            return self.to;
        }
        self.from + (self.to - self.from) * (secs(t) / len).min(1.0)
    }

    /// The integral of its value over its first `t`.
    fn area(&self, t: Duration) -> f64 {
        let (t, len) = (secs(t.min(self.length)), secs(self.length));
        if len == 0.0 {
            return 0.0;
        }
        self.from * t + (self.to - self.from) * t * t / (2.0 * len)
    }

    /// The time into it when its integral reaches `x` (at most its
    /// whole area): the root of `from·t + (to - from)·t²/(2·length) = x`,
    /// written so that it neither divides by a slope of 0 nor loses
    /// digits to one close to it.
    fn time_of_area(&self, x: f64) -> f64 {
        let len = secs(self.length);
        let c = (self.to - self.from) / (2.0 * len);
        let root = (self.from * self.from + 4.0 * c * x).max(0.0).sqrt();
        let t = if x <= 0.0 {
            0.0
        } else {
            2.0 * x / (self.from + root)
        };
        t.min(len)
    }
}

/// The open model's stages: a rate per second over time.
#[derive(Clone, Debug, PartialEq)]
pub struct Stages {
    stages: Vec<Stage>,
    /// Requests due before each stage.
    before: Vec<f64>,
}

impl Stages {
    /// Stages of rates per second.
    pub fn new(stages: Vec<Stage>) -> Stages {
        let mut before = Vec::with_capacity(stages.len());
        let mut n = 0.0;
        for s in &stages {
            before.push(n);
            n += s.area(s.length);
        }
        Stages { stages, before }
    }

    /// Each stage with the time it starts.
    fn starts(&self) -> impl Iterator<Item = (Duration, &Stage)> {
        self.stages.iter().scan(Duration::ZERO, |start, s| {
            let at = *start;
            *start += s.length;
            Some((at, s))
        })
    }

    /// The rate at `t` (0 past the end).
    pub fn rate_at(&self, t: Duration) -> f64 {
        self.starts()
            .find(|(start, s)| t < *start + s.length)
            .map_or(0.0, |(start, s)| s.at(t - start))
    }
}

impl Shape for Stages {
    fn due_by(&self, t: Duration) -> f64 {
        let mut n = 0.0;
        for ((start, s), before) in self.starts().zip(&self.before) {
            if t < start + s.length {
                return before + s.area(t - start);
            }
            n = before + s.area(s.length);
        }
        n
    }

    fn time_of(&self, n: f64) -> Option<Duration> {
        // The stage whose requests include the n-th: the first to end past
        // it (one of rate 0 holds none and is passed over).
        self.starts()
            .zip(&self.before)
            .find(|((_, s), before)| n < *before + s.area(s.length))
            .map(|((start, s), before)| start + from_secs(s.time_of_area(n - before)))
    }

    fn peak(&self) -> Rate {
        Rate(
            self.stages
                .iter()
                .map(|s| s.from.max(s.to))
                .fold(0.0, f64::max),
        )
    }

    fn length(&self) -> Option<Duration> {
        Some(self.stages.iter().map(|s| s.length).sum())
    }
}

/// What `--stages` describes.
#[derive(Clone, Debug, PartialEq)]
pub enum Staged {
    /// Rates: the open model.
    Open(Stages),
    /// Virtual users: the closed model.
    Closed(Users),
}

/// Parse `--stages`, as `30s:0..500/s,2m:500/s,30s:500..0/s` (rates) or
/// `30s:1..50,2m:50` (virtual users).
pub fn parse_stages(s: &str) -> Result<Staged, String> {
    let bad = |part: &str, why: String| {
        format!("--stages {s:?}: {part:?}: {why}; write DURATION:VALUE, like 30s:0..500/s (a rate ramped), 2m:500/s (held) or 30s:1..50 (virtual users)")
    };
    let mut rates = Vec::new();
    let mut users = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let (length, value) = part
            .split_once(':')
            .ok_or_else(|| bad(part, "no ':' between the duration and the value".into()))?;
        let length = humantime::parse_duration(length.trim())
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| bad(part, format!("{:?} is not a duration", length.trim())))?;
        let (from, to) = value.split_once("..").unwrap_or((value, value));
        // A unit written once, at the end, is both ends': 0..500/s.
        let unit = to.find('/').map(|i| &to[i..]);
        let from = match (from.contains('/'), unit) {
            (false, Some(unit)) if from != to => format!("{from}{unit}"),
            _ => from.to_string(),
        };
        match (Rate::with_unit(&from), Rate::with_unit(to)) {
            (Some(a), Some(b)) => {
                let (a, b) = (a.map_err(|e| bad(part, e))?, b.map_err(|e| bad(part, e))?);
                rates.push(Stage {
                    length,
                    from: a.0,
                    to: b.0,
                });
            }
            (None, None) => {
                let count = |v: &str| {
                    v.trim().parse::<u32>().map_err(|_| {
                        bad(
                            part,
                            format!(
                                "{:?} is neither a rate (500/s) nor a number of virtual users",
                                v.trim()
                            ),
                        )
                    })
                };
                let (a, b) = (count(&from)?, count(to)?);
                users.push(Stage {
                    length,
                    from: f64::from(a),
                    to: f64::from(b),
                });
            }
            _ => return Err(bad(part, "one end is a rate, the other is not".into())),
        }
    }
    match (rates.is_empty(), users.is_empty()) {
        (false, true) if rates.iter().all(|s| s.from == 0.0 && s.to == 0.0) => {
            Err(format!("--stages {s:?}: every stage's rate is 0, so nothing would be sent"))
        }
        (false, true) => Ok(Staged::Open(Stages::new(rates))),
        (true, false) if users.iter().all(|s| s.from == 0.0 && s.to == 0.0) => {
            Err(format!("--stages {s:?}: every stage has 0 virtual users, so nothing would be sent"))
        }
        (true, false) => Ok(Staged::Closed(Users::new(users))),
        _ => Err(format!(
            "--stages {s:?}: some stages are rates (with /s) and some are virtual users (bare numbers); a run is one or the other"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(s: &str) -> Stages {
        match parse_stages(s) {
            Ok(Staged::Open(st)) => st,
            other => panic!("{s}: {other:?}"),
        }
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_ramp_a_hold_and_a_ramp_down_by_table() {
        // 0 to 1000/s over 2 s (1000 requests), 1000/s for 1 s (1000),
        // 1000 to 0 over 2 s (1000).
        let st = open("2s:0..1000/s,1s:1000/s,2s:1000..0/s");
        assert_eq!(st.length(), Some(ms(5000)));
        assert_eq!(st.peak(), Rate(1000.0));
        for (t, rate, due) in [
            (0, 0.0, 0.0),
            (1000, 500.0, 250.0),
            (2000, 1000.0, 1000.0),
            (2500, 1000.0, 1500.0),
            (3000, 1000.0, 2000.0),
            (4000, 500.0, 2750.0),
            (5000, 0.0, 3000.0),
            (9000, 0.0, 3000.0),
        ] {
            assert!((st.rate_at(ms(t)) - rate).abs() < 1e-9, "rate at {t} ms");
            assert!((st.due_by(ms(t)) - due).abs() < 1e-6, "due by {t} ms");
        }
        // On the ramp up the n-th request is due at sqrt(n/250) s: the
        // gaps shrink as the rate grows.
        for (n, t) in [
            (0.0, 0),
            (1.0, 63_245_553),
            (250.0, 1_000_000_000),
            (1000.0, 2_000_000_000),
        ] {
            let got = st.time_of(n).unwrap();
            assert!(
                got.abs_diff(Duration::from_nanos(t)) < Duration::from_nanos(2),
                "n={n}: {got:?}"
            );
        }
        assert_eq!(st.time_of(1500.0), Some(ms(2500)));
        assert_eq!(st.time_of(2750.0), Some(ms(4000)));
        // The schedule ends with the last stage.
        assert_eq!(st.time_of(3000.0), None);
    }

    #[test]
    fn due_by_and_time_of_are_inverses_everywhere() {
        let st = open("700ms:30..4000/s,300ms:4000/s,1s:4000..10/s,2s:0/s,1s:200/s");
        let total = st.due_by(st.length().unwrap());
        let mut n = 0.0;
        while n < total - 1.0 {
            let t = st.time_of(n).unwrap();
            assert!((st.due_by(t) - n).abs() < 1e-3, "n={n} t={t:?}");
            n += 1.0;
        }
        // Nothing falls due in the 2 s at 0/s: the request after it waits
        // for the last stage.
        let last = st.time_of(total - 200.0).unwrap();
        assert!(
            last.abs_diff(ms(4000)) < Duration::from_nanos(2),
            "{last:?}"
        );
    }

    #[test]
    fn users_and_mistakes_parse_by_table() {
        assert!(matches!(
            parse_stages("30s:1..50,2m:50"),
            Ok(Staged::Closed(_))
        ));
        assert_eq!(open("1s:0/s..2/ms"), open("1s:0..2000/s"));
        for (s, says) in [
            ("30s", "no ':'"),
            ("fast:10/s", "is not a duration"),
            ("0s:10/s", "is not a duration"),
            ("10s:1..5/s,10s:5", "some stages are rates"),
            ("10s:5/s..5", "one end is a rate"),
            ("10s:many", "neither a rate"),
            ("10s:-1/s", "0 or more"),
            ("10s:5/week", "unknown unit"),
            ("10s:0/s", "nothing would be sent"),
            ("10s:0..0", "nothing would be sent"),
        ] {
            let e = parse_stages(s).unwrap_err();
            assert!(e.contains(says) && e.starts_with("--stages"), "{s}: {e}");
        }
    }
}
