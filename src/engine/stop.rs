//! Steering a run from outside: stop (Ctrl-C, `q`, a failed input, a test)
//! and pause/resume (the live view). One [`Stop`] is shared by every core;
//! each core watches it from a task of its own and keeps a local copy, so
//! no request touches it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::watch;

/// A handle that stops or pauses a run. Stopping: sending ends, requests
/// in flight get the drain period, then the report is made. Pausing: no
/// new request starts until resumed; paused time does not count in rates.
#[derive(Clone, Debug)]
pub struct Stop {
    stop: Arc<watch::Sender<bool>>,
    /// When it was first stopped.
    stopped_at: Arc<OnceLock<Instant>>,
    pause: Arc<watch::Sender<bool>>,
    /// Cores running, and cores that have applied a pause.
    cores: Arc<(AtomicUsize, AtomicUsize)>,
    /// Open model: the factor the scheduled rate is multiplied by.
    rate_scale: Arc<watch::Sender<f64>>,
    /// Open model: each endpoint's own rate (a capacity search), when set.
    endpoint_rates: Arc<watch::Sender<Option<Vec<f64>>>>,
    /// Stopped because the run's work was done, not interrupted.
    done: Arc<std::sync::atomic::AtomicBool>,
}

impl Default for Stop {
    fn default() -> Self {
        Stop::new()
    }
}

impl Stop {
    /// A handle that has not fired.
    pub fn new() -> Stop {
        Stop {
            stop: Arc::new(watch::Sender::new(false)),
            stopped_at: Arc::new(OnceLock::new()),
            pause: Arc::new(watch::Sender::new(false)),
            cores: Arc::new((AtomicUsize::new(0), AtomicUsize::new(0))),
            rate_scale: Arc::new(watch::Sender::new(1.0)),
            endpoint_rates: Arc::new(watch::Sender::new(None)),
            done: Arc::new(std::sync::atomic::AtomicBool::new(false)),
        }
    }

    /// Stop the run. Idempotent.
    pub fn stop(&self) {
        self.stopped_at.get_or_init(Instant::now);
        self.stop.send_replace(true);
    }

    /// End the run because its work is done (a capacity search found
    /// every endpoint's): as [`Stop::stop`], but the run is not reported
    /// as interrupted.
    pub fn finish(&self) {
        self.done.store(true, Ordering::SeqCst);
        self.stop();
    }

    /// True when the run was stopped before its work was done.
    pub fn interrupted(&self) -> bool {
        self.is_stopped() && !self.done.load(Ordering::SeqCst)
    }

    /// How long ago the run was stopped; `None` while it goes.
    pub fn stopped_for(&self) -> Option<Duration> {
        self.stopped_at.get().map(Instant::elapsed)
    }

    /// True once [`Stop::stop`] was called.
    pub fn is_stopped(&self) -> bool {
        *self.stop.borrow()
    }

    /// Wait until the run is stopped.
    pub async fn stopped(&self) {
        let mut rx = self.stop.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Pause (`true`) or resume (`false`) sending.
    pub fn set_paused(&self, paused: bool) {
        self.pause.send_replace(paused);
    }

    /// True while paused.
    pub fn is_paused(&self) -> bool {
        *self.pause.borrow()
    }

    /// True when paused and every running core has stopped starting
    /// requests (those in flight may still finish).
    pub fn paused_everywhere(&self) -> bool {
        let (running, paused) = &*self.cores;
        self.is_paused() && paused.load(Ordering::SeqCst) >= running.load(Ordering::SeqCst)
    }

    /// A core starts (`true`) or ends (`false`) running.
    pub(crate) fn core_running(&self, running: bool) {
        if running {
            self.cores.0.fetch_add(1, Ordering::SeqCst);
        } else {
            self.cores.0.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// A core applied (`true`) or lifted (`false`) a pause.
    pub(crate) fn core_paused(&self, paused: bool) {
        if paused {
            self.cores.1.fetch_add(1, Ordering::SeqCst);
        } else {
            self.cores.1.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Open model: multiply the scheduled rate by `factor` (the schedule
    /// goes on from now at the new rate). Returns the new scale.
    pub fn scale_rate(&self, factor: f64) -> f64 {
        let mut scale = 1.0;
        self.rate_scale.send_modify(|s| {
            *s = (*s * factor).clamp(1e-3, 1e6);
            scale = *s;
        });
        scale
    }

    /// Open model: give each endpoint its own rate from now on (requests
    /// per second, the whole run's; 0 sends it nothing). The schedule runs
    /// at the highest, and each endpoint takes its share of its requests,
    /// evenly spread; the others' answers are compared with the
    /// reference's where both answered the same request.
    pub fn set_endpoint_rates(&self, rates: Vec<f64>) {
        self.endpoint_rates.send_replace(Some(rates));
    }

    /// A receiver of each endpoint's rate, for a core's feeder.
    pub(crate) fn endpoint_rate_changes(&self) -> watch::Receiver<Option<Vec<f64>>> {
        self.endpoint_rates.subscribe()
    }

    /// A receiver of rate changes, for a core's feeder.
    pub(crate) fn rate_changes(&self) -> watch::Receiver<f64> {
        self.rate_scale.subscribe()
    }

    /// A receiver of pause changes, for a core's watcher task.
    pub(crate) fn pause_changes(&self) -> watch::Receiver<bool> {
        self.pause.subscribe()
    }
}
