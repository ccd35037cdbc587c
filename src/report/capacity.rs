//! A capacity search (`--find-capacity`): per endpoint, the highest rate
//! that meets every condition. Each endpoint starts at the first rate and
//! doubles it while every step holds; once one breaks, it bisects between
//! the last rate that held and the first that broke until they are within
//! the resolution. Each endpoint goes its own way: one that saturates
//! holds back no other. After a step that broke, an endpoint rests a step
//! (sent nothing), so that the backlog of an overload does not count
//! against the next, lower rate.
//!
//! The same decisions drive the live run (the search above the engine sets
//! each endpoint's rate between steps) and rebuild the result from a saved
//! run's steps, so `versus report` shows what the run found.

use crate::engine::shape::Search;
use crate::results::info::RunInfo;
use crate::results::steps::Steps;
use crate::stats::RunStats;

use super::threshold::{self, Metric, Threshold};

/// The conditions of `--find-capacity`, parsed.
///
/// # Errors
/// A condition that does not parse, or that measures what the search
/// sets (`rps`) or what no endpoint has alone (`mismatches`).
pub fn conditions(texts: &[String]) -> Result<Vec<Threshold>, String> {
    texts
        .iter()
        .map(|t| {
            let c: Threshold = t.parse().map_err(|e: String| e.replacen("--threshold", "--find-capacity", 1))?;
            match c.metric {
                Metric::Rps => Err(format!("--find-capacity {t:?}: the search sets the rate; give a latency (p99 < 100ms) or errors (errors < 1%) limit")),
                Metric::Mismatches => Err(format!("--find-capacity {t:?}: mismatches are counted across endpoints, not at one; give a latency or errors limit")),
                _ => Ok(c),
            }
        })
        .collect()
}

/// One step an endpoint ran.
#[derive(Clone, Debug, PartialEq)]
pub struct Tried {
    /// The rate offered.
    pub rate: f64,
    /// The first condition it broke, if any.
    pub broken_by: Option<String>,
    /// Its median latency, µs.
    pub p50: Option<u64>,
}

/// Where an endpoint's search stands.
#[derive(Clone, Debug, PartialEq)]
enum Phase {
    /// Doubling from this rate.
    Climb(f64),
    /// Between a rate that held and one that broke.
    Bisect { held: f64, broke: f64 },
    /// Found (or given up: below the first rate, or out of time).
    Done,
}

/// One endpoint's search.
#[derive(Clone, Debug)]
pub struct Searching {
    phase: Phase,
    /// Resting this step, after one that broke.
    resting: bool,
    /// Every step it ran, in order.
    pub tried: Vec<Tried>,
}

impl Searching {
    /// A search from `search`'s first rate.
    pub fn new(search: &Search) -> Searching {
        Searching {
            phase: Phase::Climb(search.start),
            resting: false,
            tried: Vec::new(),
        }
    }

    /// The rate to send it in the next step: 0 while it rests, or once
    /// its search is done.
    pub fn rate(&self) -> f64 {
        match self.resting {
            true => 0.0,
            false => self.next().unwrap_or(0.0),
        }
    }

    /// One step of its search: unless it rested, `judge` says what broke
    /// (if anything) at the step's rate and the median latency.
    pub fn take_step(
        &mut self,
        search: &Search,
        judge: impl FnOnce(f64) -> (Option<String>, Option<u64>),
    ) {
        if std::mem::take(&mut self.resting) {
            return;
        }
        let Some(rate) = self.next() else { return };
        let (broken_by, p50) = judge(rate);
        let broke = broken_by.is_some();
        self.record(
            search,
            Tried {
                rate,
                broken_by,
                p50,
            },
        );
        self.resting = broke && self.next().is_some();
    }

    /// The rate of its next step; `None` once it is done.
    pub fn next(&self) -> Option<f64> {
        match self.phase {
            Phase::Climb(rate) => Some(rate),
            Phase::Bisect { held, broke } => Some((held + broke) / 2.0),
            Phase::Done => None,
        }
    }

    /// Its step at `rate` broke `broken_by` (or held): decide the next.
    fn record(&mut self, search: &Search, tried: Tried) {
        let held = tried.broken_by.is_none();
        let rate = tried.rate;
        self.tried.push(tried);
        self.phase = match (&self.phase, held) {
            (Phase::Climb(_), true) if rate >= search.max => Phase::Done,
            (Phase::Climb(_), true) => Phase::Climb((rate * 2.0).min(search.max)),
            (Phase::Climb(_), false) => match self.best() {
                Some(held) => Phase::Bisect { held, broke: rate },
                None => Phase::Done,
            },
            (Phase::Bisect { broke, .. }, true) => Phase::Bisect {
                held: rate,
                broke: *broke,
            },
            (Phase::Bisect { held, .. }, false) => Phase::Bisect {
                held: *held,
                broke: rate,
            },
            (Phase::Done, _) => Phase::Done,
        };
        if let Phase::Bisect { held, broke } = self.phase {
            if (broke - held) / held <= search.resolution {
                self.phase = Phase::Done;
            }
        }
    }

    /// The highest rate that held.
    fn best(&self) -> Option<f64> {
        self.tried
            .iter()
            .filter(|t| t.broken_by.is_none())
            .map(|t| t.rate)
            .fold(None, |a: Option<f64>, r| Some(a.map_or(r, |a| a.max(r))))
    }

    /// What it found so far.
    pub fn capacity(&self) -> Capacity {
        let rate = self.best();
        let mut held_steps: Vec<f64> = self
            .tried
            .iter()
            .filter(|t| t.broken_by.is_none())
            .map(|t| t.rate)
            .collect();
        held_steps.sort_by(f64::total_cmp);
        // What broke first at a rate above the capacity.
        let broken_by = self
            .tried
            .iter()
            .filter(|t| rate.is_none_or(|r| t.rate > r))
            .find_map(|t| t.broken_by.clone());
        Capacity {
            rate,
            held_steps,
            broken_by,
            knee: knee(&self.tried),
            settled: self.phase == Phase::Done,
            tried: self.tried.clone(),
        }
    }
}

/// An endpoint's capacity.
#[derive(Clone, Debug, PartialEq)]
pub struct Capacity {
    /// The highest rate that met every condition; `None` below the first.
    pub rate: Option<f64>,
    /// The rates that held, lowest first.
    pub held_steps: Vec<f64>,
    /// The condition that broke first above it.
    pub broken_by: Option<String>,
    /// Where latency leaves its flat part: the highest rate tried up to
    /// which the median stays within twice the median at the lowest rate.
    pub knee: Option<f64>,
    /// The search ended by its resolution, its highest rate, or below its
    /// first rate; not by running out of time.
    pub settled: bool,
    /// Every step, in order.
    pub tried: Vec<Tried>,
}

/// The knee of `tried`: see [`Capacity::knee`].
fn knee(tried: &[Tried]) -> Option<f64> {
    let mut by_rate: Vec<(f64, u64)> = tried
        .iter()
        .filter_map(|t| Some((t.rate, t.p50?)))
        .collect();
    by_rate.sort_by(|a, b| a.0.total_cmp(&b.0));
    let base = by_rate.first()?.1.max(1);
    by_rate
        .iter()
        .take_while(|(_, p50)| *p50 <= 2 * base)
        .last()
        .map(|(rate, _)| *rate)
}

/// The first of `conditions` endpoint `e` broke in a step's `stats`.
///
/// # Errors
/// A condition that names no endpoint of the run.
pub fn broken(
    conditions: &[Threshold],
    info: &RunInfo,
    stats: &RunStats,
    e: usize,
) -> Result<Option<String>, String> {
    let label = &info.endpoints[e].label;
    let checks = threshold::check(conditions, info, stats)?;
    Ok(checks
        .into_iter()
        .find(|c| !c.passed && c.endpoint.as_deref() == Some(label))
        .map(|c| c.threshold))
}

/// Why a step broke where nothing completed.
pub const SILENT: &str = "no request completed in the step";

/// Each endpoint's capacity, as the search found it in `steps`: the same
/// decisions the live run made, step by step.
///
/// # Errors
/// A condition that does not parse or names no endpoint of the run.
pub fn replay(search: &Search, info: &RunInfo, steps: &Steps) -> Result<Vec<Capacity>, String> {
    let conditions = conditions(&search.conditions)?;
    let mut each: Vec<Searching> = info
        .endpoints
        .iter()
        .map(|_| Searching::new(search))
        .collect();
    for step in &steps.steps {
        let Some(step) = step else { break };
        for (e, s) in each.iter_mut().enumerate() {
            let broken_by = match step.stats.endpoints[e].completed() {
                0 => Some(SILENT.to_string()),
                _ => broken(&conditions, info, &step.stats, e)?,
            };
            let p50 = super::quantile(&step.stats.endpoints[e].latency, 0.5).map(|v| v as u64);
            s.take_step(search, |_| (broken_by, p50));
        }
    }
    Ok(each.iter().map(Searching::capacity).collect())
}

/// The capacity a run's search found, when it had one: from its steps.
///
/// # Errors
/// A condition that does not parse or names no endpoint of the run.
pub fn of_run(info: &RunInfo, steps: Option<&Steps>) -> Result<Option<Vec<Capacity>>, String> {
    match (&info.search, steps) {
        (Some(search), Some(steps)) => replay(search, info, steps).map(Some),
        _ => Ok(None),
    }
}

/// Each endpoint's [`line`], the others' against the reference's (the
/// first).
pub fn lines(found: &[Capacity]) -> Vec<String> {
    let reference = found.first();
    (found.iter().enumerate())
        .map(|(i, c)| line(c, reference.filter(|_| i > 0)))
        .collect()
}

/// How every format says one endpoint's capacity: `1850.00/s (errors < 1%
/// broke above it), 0.62x reference; knee 1200.00/s`.
pub fn line(c: &Capacity, reference: Option<&Capacity>) -> String {
    let rate = |r: f64| format!("{}/s", super::rate(r));
    let mut s = match (c.rate, &c.broken_by) {
        (Some(r), Some(b)) => format!("{} ({b} broke above it)", rate(r)),
        (Some(r), None) => format!("{} (the highest rate tried held)", rate(r)),
        (None, Some(b)) => format!(
            "below the first step ({b} broke at {})",
            c.tried.first().map_or("-".into(), |t| rate(t.rate))
        ),
        (None, None) => "not measured: the run ended before the first step counted".to_string(),
    };
    if let (Some(r), Some(Some(base))) = (c.rate, reference.map(|x| x.rate)) {
        s.push_str(&format!(", {:.2}x reference", r / base));
    }
    if let Some(k) = c.knee {
        s.push_str(&format!("; knee {}", rate(k)));
    }
    if !c.settled && !c.tried.is_empty() {
        s.push_str(
            "; the run ended (--capacity-time, or a stop) before the search reached its resolution",
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn search() -> Search {
        Search {
            conditions: vec!["p99 < 100ms".into()],
            start: 100.0,
            max: 10_000.0,
            resolution: 0.05,
            settle_ms: 1000,
            hold_ms: 2000,
            time_ms: 600_000,
        }
    }

    /// The search against an endpoint that holds up to `capacity`.
    fn run(capacity: f64) -> (Vec<f64>, Capacity) {
        let s = search();
        let mut e = Searching::new(&s);
        let mut rates = Vec::new();
        while e.next().is_some() {
            if e.rate() == 0.0 {
                // Rests a step after one that broke.
                assert!(rates.last().is_some_and(|r| *r > capacity), "{rates:?}");
            }
            e.take_step(&s, |rate| {
                rates.push(rate);
                let broken_by = (rate > capacity).then(|| "p99 < 100ms".to_string());
                (
                    broken_by,
                    Some(if rate > capacity / 2.0 { 5000 } else { 1000 }),
                )
            });
            assert!(rates.len() < 40, "{rates:?}");
        }
        (rates, e.capacity())
    }

    #[test]
    fn doubling_then_bisecting_finds_the_capacity_within_the_resolution() {
        let (rates, c) = run(1850.0);
        assert_eq!(&rates[..6], [100.0, 200.0, 400.0, 800.0, 1600.0, 3200.0]);
        let found = c.rate.unwrap();
        assert!(
            (1850.0 / 1.05..=1850.0).contains(&found),
            "{found} {rates:?}"
        );
        assert!(c.settled);
        assert_eq!(c.broken_by.as_deref(), Some("p99 < 100ms"));
        // The median doubled past half the capacity: the knee is below it.
        assert_eq!(c.knee, Some(800.0));
    }

    #[test]
    fn below_the_first_step_and_at_the_highest_rate_the_search_ends() {
        let (rates, c) = run(50.0);
        assert_eq!((rates, c.rate), (vec![100.0], None));
        assert!(line(&c, None).starts_with("below the first step (p99 < 100ms broke at 100.00/s)"));
        let (rates, c) = run(1e9);
        assert_eq!(rates.last(), Some(&10_000.0));
        assert_eq!(c.rate, Some(10_000.0));
        assert!(line(&c, None).starts_with("10000.00/s (the highest rate tried held)"));
        // Against the reference's: every endpoint but the reference.
        let (_, half) = run(5000.0);
        let shown = lines(&[c, half]);
        assert!(!shown[0].contains("reference"), "{shown:?}");
        assert!(shown[1].contains(", 0.50x reference"), "{shown:?}");
    }

    /// A step breaks the first condition the endpoint fails, and only at
    /// that endpoint.
    #[test]
    fn a_step_breaks_the_first_condition_its_endpoint_fails() {
        let label = |l: &str| crate::results::info::EndpointInfo {
            label: l.into(),
            named: true,
            url: String::new(),
        };
        let info = RunInfo {
            endpoints: vec![label("fast"), label("slow")],
            ..RunInfo::default()
        };
        let mut stats = RunStats::new(2);
        stats.endpoints[0].responses = 100;
        stats.endpoints[0].latency.record_n(5_000, 100).unwrap();
        stats.endpoints[1].responses = 100;
        stats.endpoints[1].latency.record_n(250_000, 100).unwrap();
        let c = conditions(&["errors < 1%".into(), "p99 < 100ms".into()]).unwrap();
        assert_eq!(broken(&c, &info, &stats, 0), Ok(None));
        assert_eq!(broken(&c, &info, &stats, 1), Ok(Some("p99 < 100ms".into())));
    }

    #[test]
    fn conditions_that_the_search_cannot_use_are_refused() {
        assert!(conditions(&["p99 < 100ms".into(), "errors < 1%".into()]).is_ok());
        for (c, says) in [
            ("rps > 5", "the search sets the rate"),
            ("mismatches == 0", "counted across endpoints"),
            ("p42x < 1ms", "--find-capacity \"p42x < 1ms\""),
        ] {
            let e = conditions(&[c.into()]).unwrap_err();
            assert!(e.contains(says), "{c}: {e}");
        }
    }
}
