//! One core's share of the run: a single-threaded runtime whose tasks are
//! one feeder (input into the lead window), one task polling the slots of
//! every endpoint (each claims a unit of work, carries it out, delivers),
//! and the stop watcher. Everything here is local to the core: statistics
//! are recorded without locks and handed back when the core finishes.

use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::drive::drive;
use super::feed::{feed, feed_open, follow_users};
use super::judge_thread::ToJudge;
use super::pace::Schedule;
use super::slots::Slots;
use super::state::{begin_stop, Core, CoreInput, CoreMsg, CoreParts, CoreResult, Intervals};
use super::Settings;
use super::Stop;
use crate::endpoint::{park_in_ring, Link, Prepared, Slot};

/// Everything a core needs, moved into its thread.
pub(crate) struct CoreJob {
    pub settings: Arc<Settings>,
    pub links: Vec<Prepared>,
    /// Slots per endpoint on this core.
    pub slots: usize,
    /// Of those, how many open their connection before the clock starts.
    pub warm: usize,
    /// Open model: this core's share of the schedule.
    pub schedule: Option<Schedule>,
    /// This core's warm-up: requests or time not counted.
    pub warmup: super::StopAfter,
    /// A request stream's warm-up by position: the requests numbered below
    /// this (the input's first ones, whichever core takes them) are not
    /// counted. The cores do not take equal shares of a stream.
    pub warmup_below: Option<u64>,
    pub input: CoreInput,
    pub stop: Stop,
    pub start_barrier: Arc<std::sync::Barrier>,
    /// Where interval statistics go.
    pub ticks: std::sync::mpsc::Sender<CoreMsg>,
    /// Where answers that differ are judged; `None` when nothing is
    /// compared.
    pub judge: Option<ToJudge>,
    /// This core's number.
    pub core: usize,
    /// This core's part of the whole run's virtual users (`--stages`).
    pub part: crate::model::Share,
    /// Per endpoint with faults, the ledger that puts its errors down to
    /// the fault that caused them.
    pub ledgers: Vec<Option<crate::fault::Ledger>>,
    /// This core's fault proxies, run on its runtime.
    pub proxies: Option<crate::fault::CoreProxies>,
}

/// Connections a core opens at once before the run.
const WARM_WAVE: usize = 256;

/// Run one core to completion. Blocking; call on the core's own thread.
pub(crate) fn run(job: CoreJob) -> std::io::Result<CoreResult> {
    // While lanes carry every slot, the core waits in its ring rather
    // than the runtime's reactor; not where fault proxies serve their
    // sockets on that reactor.
    let mut builder = tokio::runtime::Builder::new_current_thread();
    if job.ledgers.iter().all(Option::is_none) {
        builder.on_thread_park(park_in_ring);
    }
    let rt = builder.enable_all().build()?;
    let local = tokio::task::LocalSet::new();
    let CoreJob {
        settings,
        links,
        slots: per_endpoint,
        warm,
        schedule,
        warmup,
        warmup_below,
        input,
        stop,
        start_barrier,
        ticks,
        judge,
        core: core_number,
        part,
        ledgers,
        proxies,
    } = job;
    let links: Vec<Rc<Link>> = links.into_iter().map(|p| Rc::new(Link::new(p))).collect();
    if schedule.is_some() {
        // A due request should find a connection free: spare ones are
        // kept ready, as many as the core's slots at most.
        for link in &links {
            link.keep_spare(per_endpoint);
        }
    }
    let (slots, connects) = local.block_on(&rt, async {
        if let Some(p) = proxies {
            p.spawn();
        }
        open_slots(&links, per_endpoint, warm).await
    });
    start_barrier.wait();
    let started = Instant::now();
    let (core, input) = Core::new(CoreParts {
        settings,
        links,
        ledgers,
        per_endpoint,
        direct: schedule.is_none(),
        input,
        warmup,
        warmup_below,
        started,
        connects: &connects,
        judge,
    });
    local.block_on(&rt, async {
        stop.core_running(true);
        tokio::task::spawn_local(watch_pause(core.clone(), stop.clone()));
        tokio::task::spawn_local(watch_stop(core.clone(), stop.clone()));
        let every = core.settings.interval;
        let intervals = Rc::new(Intervals::new(ticks, core_number, every, started));
        tokio::task::spawn_local(tick(core.clone(), intervals.clone()));
        if let Some(users) = core.settings.users.clone() {
            tokio::task::spawn_local(follow_users(core.clone(), users, part, per_endpoint));
        }
        serve(&core, slots, input, schedule, &intervals, &stop).await
    })?;
    if core.paused_since.get().is_some() {
        stop.core_paused(false);
    }
    stop.core_running(false);
    Ok(core.finish(started))
}

/// Open every connection of this core before the clock starts: the
/// slots of each endpoint (of which the first `warm` connect), and the
/// connect times taken (recorded, not as reconnects). The first slot of
/// an endpoint connects alone so that an HTTP/2 endpoint shares it.
async fn open_slots(
    links: &[Rc<Link>],
    per_endpoint: usize,
    warm: usize,
) -> (Vec<Vec<Slot>>, Vec<Vec<Duration>>) {
    let mut connects: Vec<Vec<Duration>> = vec![Vec::new(); links.len()];
    let mut all = Vec::new();
    for (e, link) in links.iter().enumerate() {
        let mut first = Slot::new(link.clone());
        if let Ok(Some(took)) = first.warm().await {
            connects[e].push(took);
        }
        // In waves of a few hundred: a listen backlog is not flooded
        // (a dropped SYN costs a second), and only a wave's connect
        // futures (a few KiB each with TLS) are alive at once.
        let mut slots = vec![first];
        let mut n = 1;
        while n < per_endpoint {
            let wave = n..(n + WARM_WAVE).min(per_endpoint);
            n = wave.end;
            let warming: Vec<_> = wave
                .map(|n| {
                    let mut slot = Slot::new(link.clone());
                    tokio::task::spawn_local(async move {
                        let took = if n < warm {
                            slot.warm().await.ok().flatten()
                        } else {
                            None
                        };
                        (slot, took)
                    })
                })
                .collect();
            for w in warming {
                // A warm-up task cannot panic; a lost slot would only
                // mean less concurrency, so it is replaced by a cold one.
                let (slot, took) = w.await.unwrap_or_else(|_| (Slot::new(link.clone()), None));
                slots.push(slot);
                connects[e].extend(took);
            }
        }
        all.push(slots);
    }
    (all, connects)
}

/// Run the core's slots (every one in one task: a slot woken by its
/// answer is polled from the set's queue of woken slots, not scheduled as
/// a task of its own through the `LocalSet`) and its feeder until the
/// slots end. A slot that panicked (a bug) ends the core with an error
/// rather than leaving it waiting for the slot forever.
async fn serve(
    core: &Rc<Core>,
    slots: Vec<Vec<Slot>>,
    input: Option<CoreInput>,
    schedule: Option<Schedule>,
    intervals: &Rc<Intervals>,
    stop: &Stop,
) -> std::io::Result<()> {
    // Slots first, so they are waiting when the first request is due.
    let mut drives = Slots::new();
    for (e, endpoint_slots) in slots.into_iter().enumerate() {
        for (i, slot) in endpoint_slots.into_iter().enumerate() {
            drives.push(drive(core.clone(), e, i, slot));
        }
    }
    let drives = tokio::task::spawn_local(drives);
    match (input, schedule) {
        (Some(input), Some(schedule)) => {
            tokio::task::spawn_local(feed_open(
                core.clone(),
                input,
                schedule,
                intervals.clone(),
                stop.clone(),
            ));
        }
        (Some(input), None) => {
            tokio::task::spawn_local(feed(core.clone(), input));
        }
        (None, _) => {}
    }
    tokio::select! {
        () = wait_for_slots(core) => Ok(()),
        Err(e) = drives => Err(std::io::Error::other(format!(
            "its requests stopped on a panic: {}",
            panic_message(e)
        ))),
    }
}

/// What a task that ended abnormally said.
fn panic_message(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(p) => p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".to_string()),
        Err(e) => e.to_string(),
    }
}

/// Hand over each finished interval (see [`super::state::Intervals::hand_over`]) unless
/// the feeder did. The swap is the only cost to the run: no request waits
/// for it.
async fn tick(core: Rc<Core>, intervals: Rc<Intervals>) {
    loop {
        let at = intervals.end();
        tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
        if intervals.end() == at && !intervals.hand_over(&core) {
            return;
        }
    }
}

/// Wait for every slot to end; once the run is stopping, wait at most the
/// drain period.
async fn wait_for_slots(core: &Core) {
    loop {
        let notified = core.done.notified();
        if core.live_slots.get() == 0 {
            return;
        }
        match core.stopping.get() {
            Some(at) => {
                let deadline = tokio::time::Instant::from_std(at + core.settings.drain);
                if tokio::time::timeout_at(deadline, notified).await.is_err() {
                    return;
                }
            }
            None => notified.await,
        }
    }
}

/// Keep the core's copy of the pause flag; time paused is kept apart.
async fn watch_pause(core: Rc<Core>, stop: Stop) {
    let mut changes = stop.pause_changes();
    loop {
        let paused = *changes.borrow_and_update();
        match (paused, core.paused_since.get()) {
            (true, None) => {
                core.paused_since.set(Some(Instant::now()));
                stop.core_paused(true);
            }
            (false, Some(since)) => {
                core.paused_since.set(None);
                core.paused.set(core.paused.get() + since.elapsed());
                stop.core_paused(false);
                core.wake_all();
            }
            _ => {}
        }
        core.pause_changed.notify_waiters();
        if changes.changed().await.is_err() {
            return;
        }
    }
}

async fn watch_stop(core: Rc<Core>, stop: Stop) {
    match core.settings.stop_after.duration {
        // The duration counts from the end of the warm-up, when counting
        // starts (known only once the first counted request is released),
        // and time paused does not use it up.
        Some(d) => loop {
            let pause = core.pause_changed.notified();
            let since = core.counting_since.get();
            let at = since.unwrap_or_else(Instant::now) + d + core.paused.get();
            if core.paused_since.get().is_some() {
                tokio::select! {
                    _ = pause => continue,
                    _ = stop.stopped() => break,
                }
            }
            tokio::select! {
                _ = tokio::time::sleep_until(tokio::time::Instant::from_std(at)) => {
                    if since.is_some() && core.paused_since.get().is_none() {
                        break;
                    }
                }
                _ = pause => {}
                _ = stop.stopped() => break,
            }
        },
        None => stop.stopped().await,
    }
    begin_stop(&core);
}
