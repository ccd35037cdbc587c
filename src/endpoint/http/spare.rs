//! The open model's spare connections. A link keeps a few idle HTTP/1.1
//! connections ready beside those in use, and opens more in the
//! background (one at a time, at most one a millisecond) as the rate or
//! the latency grows, so that a due request takes a free connection
//! rather than wait for a connect in its own path. A connect there slows
//! the request, so more overlap, find none free and connect in turn: the
//! cascade a report would then call the server's latency.
//!
//! Also what a link measured of its connections between two looks: the
//! background's connects, and the waits of requests that found no
//! connection free.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::super::connect::Backoff;
use super::super::Failure;
use super::Link;
use crate::stats::{new_histogram, record};

/// Fewest idle connections kept ready.
const MIN_SPARE: usize = 2;

/// Idle connections kept ready: one for every this many in use (or
/// opening), so that the spare grows with the load.
const BUSY_PER_SPARE: usize = 4;

/// Least time between two connects of the background: a server that
/// slows down sees a bounded rate of new connections, not a storm.
const GAP: Duration = Duration::from_millis(1);

/// A link's spare connections and its connection figures.
pub(super) struct Spare {
    /// Most connections open or opening the background fills up to (the
    /// core's slots for the endpoint); 0: none (the closed model, whose
    /// slots each keep their own).
    ceiling: Cell<usize>,
    /// The background task is running.
    running: Cell<bool>,
    /// Connect times of the background's connections, µs, not yet taken.
    opened: RefCell<Histogram<u64>>,
    /// How long requests that found no connection free waited for one,
    /// µs, not yet taken.
    waits: RefCell<Histogram<u64>>,
    /// The background's connects that failed, not yet taken.
    failed: Cell<u64>,
}

impl Spare {
    pub(super) fn new() -> Spare {
        Spare {
            ceiling: Cell::new(0),
            running: Cell::new(false),
            opened: RefCell::new(new_histogram()),
            waits: RefCell::new(new_histogram()),
            failed: Cell::new(0),
        }
    }
}

/// The samples of `h` since the last call, taken out (`None`, at no cost,
/// when there were none).
pub(super) fn take(h: &RefCell<Histogram<u64>>) -> Option<Histogram<u64>> {
    let mut h = h.borrow_mut();
    if h.is_empty() {
        return None;
    }
    Some(std::mem::replace(&mut *h, new_histogram()))
}

impl Link {
    /// Open model: keep spare HTTP/1.1 connections ready, opening them in
    /// the background, up to `ceiling` open in all (and never past
    /// `--max-connections`).
    pub fn keep_spare(&self, ceiling: usize) {
        self.spare.ceiling.set(ceiling);
    }

    /// Whether the idle connections have run low, with room for another.
    fn wants_spare(&self) -> bool {
        let c = &self.capacity;
        let (open, idle) = (c.open.get(), self.pool.borrow().len());
        let busy = open.saturating_sub(idle);
        open < self.spare.ceiling.get().min(c.max)
            && idle < (busy / BUSY_PER_SPARE).max(MIN_SPARE)
            && !self.h2.borrow().negotiated
    }

    /// A request took an idle connection, or found none: start the
    /// background's connects if the spare ones ran low. Costs a look at a
    /// cell in the closed model.
    pub(super) fn top_up(self: &Rc<Link>) {
        if self.spare.ceiling.get() == 0 || self.spare.running.get() || !self.wants_spare() {
            return;
        }
        self.spare.running.set(true);
        tokio::task::spawn_local(fill(self.clone()));
    }

    /// A request waited `d` for a connection.
    pub(super) fn waited(&self, d: Duration) {
        record(&mut self.spare.waits.borrow_mut(), d);
    }

    /// The waits of requests for a connection since the last call, µs.
    pub fn take_waits(&self) -> Option<Histogram<u64>> {
        take(&self.spare.waits)
    }

    /// The connect times of the connections the background opened since
    /// the last call, µs (each a connection opened during the run).
    pub fn take_opened(&self) -> Option<Histogram<u64>> {
        take(&self.spare.opened)
    }

    /// The background's connects that failed since the last call.
    pub fn take_failed_spares(&self) -> u64 {
        self.spare.failed.replace(0)
    }
}

/// The background's connects: one at a time, [`GAP`] apart (longer after
/// failures, as a slot backs off), into the idle pool, until the spare
/// ones suffice.
async fn fill(link: Rc<Link>) {
    let mut backoff = Backoff::default();
    // A stopped endpoint gets no more connects (see `super::super::Halt`).
    while link.wants_spare() && link.dialer.halt.check().is_ok() {
        let Some(ticket) = link.reserve() else {
            break;
        };
        Backoff::wait(backoff.delay(link.opts.timeout)).await;
        let t0 = Instant::now();
        let connected = tokio::time::timeout(link.opts.timeout, link.dialer.connect())
            .await
            .unwrap_or(Err(Failure::Timeout));
        backoff.record(&connected);
        match connected {
            Ok(c) => {
                // Its connect time is reported here, not by its first request.
                record(&mut link.spare.opened.borrow_mut(), t0.elapsed());
                link.adopt(c, None, ticket);
            }
            Err(_) => link.spare.failed.set(link.spare.failed.get() + 1),
        }
        tokio::time::sleep(GAP).await;
    }
    link.spare.running.set(false);
}
