//! The load curve of a sweep (`--sweep`): a row per step, endpoint and
//! part (the endpoint as a whole, then each method or scenario step), as
//! every format shows it. One list, so the formats cannot drift apart.

use hdrhistogram::Histogram;

use crate::results::steps::Steps;

/// One row of the curve.
pub struct Point<'a> {
    /// The step's number, from 0.
    pub step: usize,
    /// The step's rate offered, per second per endpoint; `None` when each
    /// endpoint had its own (a capacity search).
    pub rate: Option<f64>,
    /// Where it stands on a curve: the step's rate, or this endpoint's
    /// offered in it.
    pub x: f64,
    /// Which endpoint.
    pub endpoint: usize,
    /// The method or scenario step; `None` for the endpoint as a whole.
    pub part: Option<&'a str>,
    /// Requests that fell due per second in the step's counted time
    /// (the endpoint as a whole only).
    pub offered: Option<f64>,
    /// Requests completed per second in it.
    pub achieved: f64,
    /// Their latency, µs.
    pub latency: &'a Histogram<u64>,
    pub errors: u64,
    pub mismatched: u64,
}

/// The rows of every step reached: per endpoint its whole, then its
/// methods (when it saw more than one) and its scenario steps.
pub fn points(steps: &Steps) -> Vec<Point<'_>> {
    let mut out = Vec::new();
    for (k, step) in steps.steps.iter().enumerate() {
        let Some(step) = step else {
            continue;
        };
        let per_second = |n: u64| n as f64 / step.seconds.max(1e-9);
        let methods = super::shows_methods(&step.stats.endpoints);
        for (e, s) in step.stats.endpoints.iter().enumerate() {
            let x = step.rate.unwrap_or_else(|| per_second(s.offered));
            out.push(Point {
                step: k,
                rate: step.rate,
                x,
                endpoint: e,
                part: None,
                offered: Some(per_second(s.offered)),
                achieved: per_second(s.completed()),
                latency: &s.latency,
                errors: s.errors(),
                mismatched: s.mismatched,
            });
            let parts = s.steps.iter().chain(s.methods.iter().filter(|_| methods));
            out.extend(parts.map(|p| Point {
                step: k,
                rate: step.rate,
                x,
                endpoint: e,
                part: Some(&p.name),
                offered: None,
                achieved: per_second(p.requests),
                latency: &p.latency,
                errors: p.errors,
                mismatched: p.mismatched,
            }));
        }
    }
    out
}

/// The columns every table of the curve has, after the endpoint's label
/// and the part: the rate offered, achieved, p50, p90, p99, errors,
/// mismatched; each cell as the text report shows it.
pub const COLUMNS: [&str; 7] = [
    "Offered/s",
    "Achieved/s",
    "p50",
    "p90",
    "p99",
    "Errors",
    "Mismatched",
];

impl Point<'_> {
    /// The cells of [`COLUMNS`].
    pub fn cells(&self) -> [String; 7] {
        [
            match self.offered {
                Some(o) => super::rate(o),
                None => "-".into(),
            },
            super::rate(self.achieved),
            super::latency(self.latency, 0.5),
            super::latency(self.latency, 0.9),
            super::latency(self.latency, 0.99),
            self.errors.to_string(),
            self.mismatched.to_string(),
        ]
    }

    /// The step's name, as every format shows it: its rate (`500.00/s`),
    /// or its number from 1 when each endpoint had its own.
    pub fn step(&self) -> String {
        match self.rate {
            Some(rate) => format!("{}/s", super::rate(rate)),
            None => format!("step {}", self.step + 1),
        }
    }
}
