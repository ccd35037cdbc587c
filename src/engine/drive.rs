//! A core's slots: each claims its endpoint's next unit, carries it out
//! (a lane may carry the next ones where the answer landed) and hands
//! the result to be recorded.

use super::record::{record_and_deliver, record_step, record_traversal};
use super::state::{Core, Feed};
use super::unit::{self, Event, Unit, UnitResult};
use super::window::Claim;
use crate::endpoint::{carry, Slot, Units};
use crate::model::Outcome;
use crate::model::Request;
use crate::stats::{self};
use std::cell::RefCell;
use std::rc::Rc;
use std::time::Instant;

/// One slot: claim the endpoint's next unit of work, carry it out,
/// deliver the result. Not an `async fn`: one would keep its arguments
/// twice in the task, the `Slot` among them.
#[allow(clippy::manual_async_fn)]
pub(super) fn drive(
    core: Rc<Core>,
    e: usize,
    i: usize,
    mut slot: Slot,
) -> impl std::future::Future<Output = ()> {
    async move {
        // The slot's side of carrying requests: the unit it carries, and
        // those a lane claims after it.
        let units = Rc::new(SlotUnits {
            core: core.clone(),
            e,
            i,
            claimed: RefCell::new(None),
        });
        let dyn_units: Rc<dyn Units> = units.clone();
        // A unit claimed as a lane ended, begun there: carried next.
        let mut next: Option<Claimed> = None;
        loop {
            let claimed = match next.take() {
                Some(c) => Some(c),
                // Most claims find work at hand: only a wait needs a future.
                None => match look(&core, e, i) {
                    Claim::Got(place, unit, due, warmup) => {
                        Some(begin(&core, e, (place, unit, due, warmup)))
                    }
                    Claim::Done => None,
                    Claim::Wait => claim(&core, e, i, &mut slot)
                        .await
                        .map(|got| begin(&core, e, got)),
                },
            };
            let Some(claimed) = claimed else {
                break;
            };
            // Where the result is made and judged: a request's outcome is
            // written here and not moved (unless to wait in the window for
            // another endpoint's).
            let mut done = None;
            let Claimed {
                place,
                unit,
                warmup,
                ..
            } = match &claimed.unit {
                Unit::Request(req, _) => {
                    let (req, due) = (req.clone(), claimed.due);
                    *units.claimed.borrow_mut() = Some(claimed);
                    let (outcome, _) = UnitResult::request_places(&mut done);
                    // The endpoint's one call: its route is its own.
                    let carried = carry!(&mut slot, req, core.keep_body, due, outcome, &dyn_units);
                    let left = units.claimed.borrow_mut().take();
                    match left {
                        Some(c) if carried => c,
                        // Claimed as a lane ended, not a request it carries.
                        Some(c) => {
                            next = Some(c);
                            continue;
                        }
                        None => continue,
                    }
                }
                Unit::Flow(f, n) => {
                    done = Some(UnitResult::Flow(
                        run_flow(&core, e, &mut slot, *f, *n, &claimed).await,
                    ));
                    claimed
                }
            };
            record_and_deliver(&core, e, place, unit, warmup, &mut done);
        }
        core.live_slots.set(core.live_slots.get() - 1);
        core.done.notify_waiters();
    }
}

/// Flow `f`'s instance `n` at endpoint `e`, claimed as `claimed`: its
/// steps run on `slot`, each recorded as it ends, and the instance's
/// figures counted. Boxed: a flow's state (its steps' futures, the
/// answers so far) stays out of the slot's task, which a request stream
/// keeps small.
pub(super) async fn run_flow(
    core: &Core,
    e: usize,
    slot: &mut Slot,
    f: usize,
    n: u64,
    claimed: &Claimed,
) -> unit::FlowRun {
    let mix = core
        .mix
        .as_deref()
        .unwrap_or_else(|| unreachable!("flow work without a flow"));
    let flow = &mix.flows()[f];
    let warmup = claimed.warmup;
    let run = Box::pin(unit::run_flow(
        flow,
        slot,
        e,
        &core.labels[e],
        n,
        claimed.due,
        |k, event| {
            if !warmup {
                let name = &core.step_names[f][k];
                match event {
                    Event::Step(run) => record_step(core, e, name, run),
                    Event::Page(depth, run) => {
                        record_step(core, e, name, run);
                        if let Some(o) = &run.outcome {
                            let mut stats = core.stats.borrow_mut();
                            stats::part(&mut stats.endpoints[e].steps, name)
                                .traversal
                                .get_or_insert_with(Default::default)
                                .page(depth, o.latency);
                        }
                    }
                    Event::Traversal(run) => record_traversal(core, e, name, run),
                }
            }
        },
    ))
    .await;
    if !warmup {
        let s = &mut core.stats.borrow_mut().endpoints[e];
        s.flows.record(run.succeeded, run.duration);
        if let Some(one) = s.by_flow.get_mut(f) {
            one.record(run.succeeded, run.duration);
        }
    }
    run
}

/// A unit of work claimed at endpoint `e` (as [`look`] and [`claim`] give
/// it): in flight, and a counted request counted as sent (a flow's steps
/// are counted as they are sent).
pub(super) fn begin(core: &Core, e: usize, (place, unit, due, warmup): Got) -> Claimed {
    core.inflight.borrow_mut()[e] += 1;
    if !warmup && matches!(unit, Unit::Request(..)) {
        core.stats.borrow_mut().endpoints[e].sent += 1;
    }
    Claimed {
        place,
        unit,
        due,
        warmup,
    }
}

/// A unit of work as a claim finds it: its place in the window, the unit,
/// when it is due (open model), and whether it is warm-up work.
pub(super) type Got = (usize, Unit, Option<Instant>, bool);

/// A slot's side of carrying requests at endpoint `e` (see
/// [`crate::endpoint::carry`]): each answer a lane takes recorded and
/// delivered as [`drive`] does a request's, and the next unit claimed.
pub(super) struct SlotUnits {
    core: Rc<Core>,
    e: usize,
    /// The slot's number among the endpoint's on this core.
    i: usize,
    /// The unit being carried, or claimed after a lane's answer, begun.
    claimed: RefCell<Option<Claimed>>,
}

/// A unit of work claimed (see [`look`]).
pub(super) struct Claimed {
    place: usize,
    unit: Unit,
    due: Option<Instant>,
    warmup: bool,
}

impl Units for SlotUnits {
    fn answered(&self, outcome: Outcome) -> Option<Rc<Request>> {
        let (core, e) = (&*self.core, self.e);
        let Claimed {
            place,
            unit,
            warmup,
            ..
        } = self.claimed.take()?;
        let mut done = Some(UnitResult::Request {
            outcome: Some(outcome),
            error: false,
        });
        record_and_deliver(core, e, place, unit, warmup, &mut done);
        let Claim::Got(place, unit, due, warmup) = look(core, e, self.i) else {
            return None;
        };
        let claimed = begin(core, e, (place, unit, due, warmup));
        let next = match (&claimed.unit, claimed.due) {
            (Unit::Request(r, _), None) => Some(r.clone()),
            _ => None,
        };
        *self.claimed.borrow_mut() = Some(claimed);
        next
    }

    fn claimed(&self) -> Option<Rc<Request>> {
        match &self.claimed.borrow().as_ref()?.unit {
            Unit::Request(r, _) => Some(r.clone()),
            Unit::Flow(..) => None,
        }
    }
}

/// Endpoint `e`'s next unit of work for `slot`, waiting for one (the
/// slot's connection given back while it waits); `None` when the run ends.
/// For a slot whose [`look`] found none: most find some, and never make
/// this future.
pub(super) async fn claim(core: &Core, e: usize, i: usize, slot: &mut Slot) -> Option<Got> {
    loop {
        // A slot beyond the users `--stages` has now waits to join, apart
        // from the slots waiting for work, so that it takes no wake-up
        // meant for them.
        let joined = core.joined.notified();
        if i >= core.users.get() && core.stopping.get().is_none() {
            slot.release();
            joined.await;
            continue;
        }
        // Before the look, so that no release between the look and the
        // wait is missed.
        let notified = core.work[e].notified();
        match look(core, e, i) {
            Claim::Got(place, work, due, warmup) => return Some((place, work, due, warmup)),
            Claim::Done => return None,
            Claim::Wait => {
                slot.release();
                core.idle.borrow_mut()[e] += 1;
                notified.await;
                core.idle.borrow_mut()[e] -= 1;
            }
        }
    }
}

/// One look for endpoint `e`'s next unit of work for its slot `i`,
/// without waiting: `Done` once the run is stopping, `Wait` while paused
/// or while the slot is not among the users `--stages` has now.
pub(super) fn look(core: &Core, e: usize, i: usize) -> Claim<Unit> {
    if core.stopping.get().is_some() {
        return Claim::Done;
    }
    if core.paused_since.get().is_some() || i >= core.users.get() {
        return Claim::Wait;
    }
    if let Some(feed) = &core.direct {
        return take_direct(core, feed);
    }
    let claim = core.window.borrow_mut().claim(e);
    if let Claim::Got(..) = claim {
        if core.window.borrow().unclaimed() * 2 < core.prefetch {
            core.space.wake();
        }
        if let Some(since) = core.held_since.borrow_mut()[e].take() {
            core.held_back.borrow_mut()[e] += since.elapsed();
        }
    }
    claim
}

/// [`look`] without a window: the next unit made on the core, released
/// as the feeder would release it. Its place is never read (see
/// [`super::record::deliver`]).
pub(super) fn take_direct(core: &Core, feed: &RefCell<Feed>) -> Claim<Unit> {
    let warmup = core.is_warmup();
    match feed.borrow_mut().take_now(core, !warmup) {
        Some(work) => {
            let warmup = core.warmup_of(&work, warmup);
            core.released(warmup, None);
            Claim::Got(0, work, None, warmup)
        }
        None => {
            // The count ran out (`look` saw no stop).
            core.input_ended.set(true);
            Claim::Done
        }
    }
}
