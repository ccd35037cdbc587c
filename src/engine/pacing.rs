//! Where a core's open-model schedule stands while the run goes: the rate
//! changes it follows (the dashboard's `+` and `-`, and each endpoint's own
//! rate in a capacity search), and which endpoints take each request.

use std::time::Duration;

use tokio::sync::watch;

use super::pace::{Anchor, Schedule};
use super::Stop;

/// A core's schedule and the rate changes it follows.
pub(crate) struct Pacing {
    schedule: Schedule,
    /// From where the schedule goes on at the current scale.
    anchor: Anchor,
    /// The dashboard's factor.
    scale: watch::Receiver<f64>,
    /// Each endpoint's own rate, when set.
    rates: watch::Receiver<Option<Vec<f64>>>,
    /// The schedule's factor for the highest endpoint rate.
    highest: f64,
    split: Option<Split>,
}

impl Pacing {
    /// Core `schedule`, following the rate changes `stop` hands out.
    pub fn new(schedule: Schedule, stop: &Stop) -> Pacing {
        let mut scale = stop.rate_changes();
        let rates = stop.endpoint_rate_changes();
        let at = schedule.offset();
        let first = *scale.borrow_and_update();
        Pacing {
            anchor: Anchor {
                k: 0,
                at,
                scale: first,
            },
            schedule,
            scale,
            rates,
            highest: 1.0,
            split: None,
        }
    }

    /// When this core's first request is due, from the start.
    pub fn offset(&self) -> Duration {
        self.schedule.offset()
    }

    /// Before request `k`, at `now` into the schedule: a change of rate
    /// re-anchors the schedule, from request `k` due then (or now, if that
    /// has passed) at the new rate.
    pub fn follow(&mut self, k: u64, now: Duration) {
        let scaled = self.scale.has_changed().unwrap_or(false);
        let split = self.rates.has_changed().unwrap_or(false);
        if !scaled && !split {
            return;
        }
        if split {
            if let Some(rates) = self.rates.borrow_and_update().as_deref() {
                let peak = self.schedule.peak();
                let top = rates.iter().copied().fold(0.0, f64::max);
                self.highest = top / peak;
                self.split = Some(Split::new(rates));
            }
        }
        // After a pause of every endpoint (scale 0), the schedule goes on
        // from now.
        let next = match self.anchor.scale > 0.0 {
            true => self.schedule.due_after(&self.anchor, k),
            false => None,
        };
        self.anchor = Anchor {
            k,
            at: next.map_or(now, |next| next.max(now)),
            scale: *self.scale.borrow_and_update() * self.highest,
        };
    }

    /// Nothing falls due: every endpoint's own rate is 0.
    pub fn idle(&self) -> bool {
        self.highest == 0.0
    }

    /// Wait until a rate changes; the next [`Pacing::follow`] takes it.
    pub async fn changed(&mut self) {
        tokio::select! {
            _ = self.scale.changed() => self.scale.mark_changed(),
            _ = self.rates.changed() => self.rates.mark_changed(),
        }
    }

    /// When request `k` is due, into the schedule; `None` once it ended.
    pub fn due(&self, k: u64) -> Option<Duration> {
        self.schedule.due_after(&self.anchor, k)
    }

    /// The endpoints the next request goes to: `None`, every one.
    pub fn assign(&mut self) -> Option<&[bool]> {
        self.split.as_mut().map(Split::assign)
    }
}

/// Each endpoint at its own rate: the schedule runs at the highest, and
/// endpoint `e` takes `rate[e] / highest` of its requests, spread evenly
/// by a running credit (at half the highest rate, every second request).
pub(crate) struct Split {
    shares: Vec<f64>,
    credit: Vec<f64>,
    mask: Vec<bool>,
}

impl Split {
    /// The split of `rates` (per second; 0: none).
    pub fn new(rates: &[f64]) -> Split {
        let top = rates.iter().copied().fold(0.0, f64::max);
        Split {
            shares: rates
                .iter()
                .map(|r| if top > 0.0 { r / top } else { 0.0 })
                .collect(),
            credit: vec![0.0; rates.len()],
            mask: vec![false; rates.len()],
        }
    }

    /// Which endpoints take the next request.
    pub fn assign(&mut self) -> &[bool] {
        for ((share, credit), take) in self.shares.iter().zip(&mut self.credit).zip(&mut self.mask)
        {
            *credit += share;
            *take = *credit >= 1.0 - 1e-9;
            if *take {
                *credit -= 1.0;
            }
        }
        &self.mask
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_endpoint_takes_its_share_spread_evenly() {
        let mut s = Split::new(&[1000.0, 500.0, 250.0, 0.0]);
        let mut taken = Vec::new();
        for _ in 0..8 {
            taken.push(s.assign().to_vec());
        }
        let column = |e: usize| -> Vec<bool> { taken.iter().map(|m| m[e]).collect() };
        assert_eq!(column(0), [true; 8]);
        assert_eq!(
            column(1),
            [false, true, false, true, false, true, false, true]
        );
        assert_eq!(
            column(2),
            [false, false, false, true, false, false, false, true]
        );
        assert_eq!(column(3), [false; 8]);
        // A share that does not divide evenly still adds up: 0.62 of 1000.
        let mut s = Split::new(&[1000.0, 620.0]);
        let n = (0..1000).filter(|_| s.assign()[1]).count();
        assert_eq!(n, 620);
    }
}
