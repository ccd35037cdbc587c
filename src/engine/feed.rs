//! A core's feeders: the closed model's (units into the window as room
//! appears), the open model's (each released when it is due, as the
//! schedule and its rate changes say) and the closed model's virtual
//! users when `--stages` changes them.

use super::pace::Schedule;
use super::pacing::Pacing;
use super::shape::Users;
use super::state::{Core, CoreInput, Feed, Intervals};
use super::timer::PreciseTimer;
use super::unit::Unit;
use super::Stop;
use std::rc::Rc;
use std::task::Poll;
use std::time::{Duration, Instant};

/// Closed model with `--stages`: keep this core's share (`part`) of the
/// virtual users current, at most its `slots`: a slot beyond them ends its
/// request and waits, and those that join are woken.
pub(super) async fn follow_users(
    core: Rc<Core>,
    users: Users,
    part: crate::model::Share,
    slots: usize,
) {
    loop {
        let t = core.started.elapsed().saturating_sub(core.paused.get());
        let now = part.share_of(users.at(t)).min(slots);
        let before = core.users.get();
        if now != before {
            core.mark_users();
            core.users.set(now);
            if now > before {
                core.joined.notify_waiters();
            }
        }
        let Some(next) = users.next_change(t) else {
            break;
        };
        let at = core.started + core.paused.get() + next;
        let stopped = core.done.notified();
        if core.stopping.get().is_some() {
            break;
        }
        tokio::select! {
            _ = tokio::time::sleep_until(tokio::time::Instant::from_std(at)) => {}
            _ = stopped => break,
        }
    }
}

/// Wait until the feeder may add to the window (`open`: the window has
/// space; closed model: it also wants more ready requests); false when
/// stopping.
pub(super) async fn room(core: &Core, open: bool) -> bool {
    std::future::poll_fn(|cx| {
        if core.stopping.get().is_some() {
            return Poll::Ready(false);
        }
        if core.wants_input() || open && core.window.borrow().has_space() {
            return Poll::Ready(true);
        }
        // Registered only to wait: a waker left behind would wake the
        // feeder while it waits for input or its next due time. Every
        // wake-up comes from this core's thread, so none can come between
        // the look above and this.
        core.space.register(cx.waker());
        Poll::Pending
    })
    .await
}

/// Closed model: move requests from the input into the window as room
/// appears.
pub(super) async fn feed(core: Rc<Core>, input: CoreInput) {
    let mut feed = Feed::new(input);
    while room(&core, false).await {
        let mut pushed = 0;
        {
            let mut w = core.window.borrow_mut();
            while w.has_space() && w.unclaimed() < core.prefetch {
                let warmup = core.is_warmup();
                match feed.take_now(&core, !warmup) {
                    Some(r) => {
                        let warmup = core.warmup_of(&r, warmup);
                        core.released(warmup, None);
                        w.push(r, None, warmup);
                        pushed += 1;
                    }
                    None => break,
                }
            }
        }
        for _ in 0..pushed.min(core.prefetch) {
            core.wake_one_each();
        }
        if core.wants_input() && !feed.refill(&core).await {
            core.input_ended.set(core.stopping.get().is_none());
            break;
        }
    }
    core.window.borrow_mut().finish_input();
    core.wake_all();
}

/// Open model: release each request into the window at the time it is
/// due, whatever the endpoints are doing. A request that finds an endpoint
/// with no free slot (`--max-in-flight` reached) starts late there, and is
/// counted.
pub(super) async fn feed_open(
    core: Rc<Core>,
    input: CoreInput,
    schedule: Schedule,
    intervals: Rc<Intervals>,
    stop: Stop,
) {
    let started = intervals.started;
    let mut feed = Feed::new(input);
    let mut timer = PreciseTimer::new().ok();
    // The duration counts from the end of the warm-up.
    let end = || {
        let d = core.settings.stop_after.duration?;
        core.counting_since.get().map(|since| since + d)
    };
    // Time spent paused moves the rest of the schedule later. Times are
    // into the schedule: the start, plus the time paused (shift), is where
    // it stands on the clock. Core c of n starts at its own offset in the
    // schedule (c gaps after core 0).
    let mut shift = Duration::ZERO;
    let mut pacing = Pacing::new(schedule, &stop);
    let offset = pacing.offset();
    // Counting starts with the schedule, the same instant on every core
    // (not at this core's first request, which may be far off at a low
    // rate), or after the warm-up at the first counted request's place in
    // the schedule.
    if core.warmup_left.get() == 0 && core.warmup_until.is_none() {
        core.start_counting(started);
    }
    for k in 0u64.. {
        pacing.follow(k, Instant::now().saturating_duration_since(started + shift));
        if pacing.idle() {
            // No endpoint has a rate: wait for one, or the stop.
            let stopped = core.done.notified();
            tokio::select! {
                () = pacing.changed() => {}
                () = stopped => {}
            }
            if core.stopping.get().is_some() {
                break;
            }
            continue;
        }
        // Past the shape's end nothing more falls due.
        let due = pacing.due(k).map(|at| started + shift + at);
        let mut due = match due {
            Some(due) if end().is_none_or(|end| due < end + shift) => due,
            _ => {
                // The schedule is done but the run lasts its duration: the
                // stop watcher ends it then (a rate too low for another
                // request before the end still runs the whole time).
                loop {
                    let stopped = core.done.notified();
                    if core.stopping.get().is_some() {
                        break;
                    }
                    stopped.await;
                }
                break;
            }
        };
        let stopped = core.done.notified();
        match &mut timer {
            Some(t) => {
                tokio::select! {
                    _ = t.sleep_until(due) => {}
                    _ = stopped => {}
                }
            }
            None => {
                tokio::select! {
                    _ = tokio::time::sleep_until(tokio::time::Instant::from_std(due)) => {}
                    _ = stopped => {}
                }
            }
        }
        if core.stopping.get().is_some() {
            break;
        }
        if let Some(since) = core.paused_since.get() {
            while core.paused_since.get().is_some() && core.stopping.get().is_none() {
                core.work[0].notified().await;
            }
            let paused = since.elapsed();
            shift += paused;
            due += paused;
        }
        let warmup = core.is_warmup();
        let Some(work) = feed.next(&core, !warmup).await else {
            core.input_ended.set(core.stopping.get().is_none());
            // Sending ended when this request would have been due.
            core.sent_until.set(Some(due));
            break;
        };
        let warmup = core.warmup_of(&work, warmup);
        if !room(&core, true).await {
            // The window stayed full to the stop: this request and the
            // rest due before it (before the end of the duration, which the
            // stop watcher marks a little late) were never sent.
            if let (false, Some(stop)) = (warmup, core.stopping.get()) {
                let stop = end().map_or(stop, |end| stop.min(end + shift));
                let more = (k + 1..)
                    .map_while(|j| pacing.due(j))
                    .take_while(|at| started + shift + *at < stop)
                    .take(feed.at_hand())
                    .count() as u64;
                for s in &mut core.stats.borrow_mut().endpoints {
                    s.unsent += 1 + more;
                    s.offered += 1 + more;
                }
            }
            break;
        }
        let only = pacing.assign();
        release(&core, &intervals, (work, due, offset, warmup), only);
    }
    core.window.borrow_mut().finish_input();
    core.wake_all();
}

/// Open model: release `work`, due at `due` (`offset` after the start of
/// this core's schedule), into the window, after handing over the interval
/// it is due after, if any; marked late at each endpoint whose free slots
/// are fewer than the units waiting for them, this one included (counted
/// when it is sent).
pub(super) fn release(
    core: &Core,
    intervals: &Intervals,
    (work, due, offset, warmup): (Unit, Instant, Duration, bool),
    only: Option<&[bool]>,
) {
    while due >= intervals.end() {
        if !intervals.hand_over(core) {
            break;
        }
    }
    core.released(warmup, Some(due.checked_sub(offset).unwrap_or(due)));
    if !warmup {
        core.offered.set(core.offered.get() + 1);
        if let Some(only) = only {
            let mut skipped = core.skipped.borrow_mut();
            for (e, taken) in only.iter().enumerate() {
                skipped[e] += u64::from(!taken);
            }
        }
    }
    let idle = core.idle.borrow();
    let late = |e: usize, waiting: usize| idle[e] as usize <= waiting;
    core.window
        .borrow_mut()
        .push_marked(work, Some(due), warmup, late, only);
    drop(idle);
    core.wake_one_each();
}
