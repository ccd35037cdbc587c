//! One core's share of the run: a single-threaded runtime whose tasks are
//! one feeder (input into the lead window), one task polling the slots of
//! every endpoint (each claims a unit of work, carries it out, delivers),
//! and the stop watcher. Everything here is local to the core: statistics
//! are recorded without locks and handed back when the core finishes.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Poll, Waker};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use super::judge;
use super::judge_thread::ToJudge;
use super::pace::Schedule;
use super::pacing::Pacing;
use super::shape::Users;
use super::slots::Slots;
use super::timer::PreciseTimer;
use super::unit::{self, Event, StepFailure, StepRun, Unit, UnitResult};
use super::window::{Claim, LeadWindow};
use super::Settings;
use super::Stop;
use crate::endpoint::{carry, park_in_ring, Link, Prepared, Slot, Units};
use crate::flow::Mix;
use crate::model::Outcome;
use crate::model::Request;
use crate::stats::{self, RunStats};

/// Where a core's requests come from.
pub(crate) enum CoreInput {
    /// The same request, `remaining` more times (`None`: until stopped),
    /// numbered `next`, then every `step`-th number.
    Repeat {
        request: Request,
        next: u64,
        step: u64,
        remaining: Option<u64>,
    },
    /// Batches from the input thread.
    Batches(async_channel::Receiver<Vec<Request>>),
    /// Instances of a flow: `next`, then every `step`-th number, `remaining`
    /// more (`None`: until stopped).
    Flow {
        mix: Arc<Mix>,
        next: u64,
        step: u64,
        remaining: Option<u64>,
    },
}

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

/// What a core hands back at its end: the statistics since its last tick,
/// with the end-of-run figures (rate, held-back time, abandoned and
/// incomplete requests) filled in.
pub(crate) struct CoreResult {
    pub stats: RunStats,
    /// The tick the final statistics belong to.
    pub index: u64,
    pub started: Instant,
    pub ended: Instant,
    /// Time this core spent paused (not part of the run's time).
    pub paused: Duration,
}

/// What a core sends to the collector.
pub(crate) enum CoreMsg {
    /// The statistics of one finished interval of core `core`.
    Tick {
        core: usize,
        index: u64,
        stats: RunStats,
    },
    /// Core `core` finished.
    Done {
        core: usize,
        result: std::io::Result<CoreResult>,
    },
    /// The judge thread's statistics since it last sent them; `last`
    /// once it has judged everything.
    Judged { stats: RunStats, last: bool },
}

struct Core {
    settings: Arc<Settings>,
    window: RefCell<LeadWindow<Unit, UnitResult>>,
    /// One endpoint in the closed model with work made on the core (a
    /// repeated request, flow instances): the slots take their work here
    /// themselves, with no feeder and no window between (see [`look`]).
    direct: Option<RefCell<Feed>>,
    /// The flows this core runs instances of, if any.
    mix: Option<Arc<Mix>>,
    /// Where answers that differ are judged, off this core.
    judge: Option<ToJudge>,
    /// The settings's taps that see every outcome (`-vv`); usually none.
    outcome_taps: Vec<Arc<dyn super::Tap>>,
    /// Endpoint labels, for flow steps.
    labels: Vec<Rc<str>>,
    stats: RefCell<RunStats>,
    /// The answers' latencies not yet in `stats`' histograms (see
    /// [`Core::take_stats`]).
    tallies: RefCell<stats::Tallies>,
    /// Slots waiting for a request.
    work: Vec<Notify>,
    /// The feeder waiting for room in the window, or for the leading
    /// endpoint to use up what is ready: the one task that waits on it,
    /// and every wake-up comes from this core's thread, so a wake-up with
    /// nobody waiting (most requests) costs a look at a cell, not
    /// `Notify`'s lock or `AtomicWaker`'s atomic updates.
    space: FeederWaker,
    /// Requests the feeder keeps ready ahead of the leading endpoint.
    prefetch: usize,
    /// This core's view of each endpoint (for the TLS handshake times).
    links: Vec<Rc<Link>>,
    /// Per endpoint with faults, what their errors are put down to.
    ledgers: Vec<Option<crate::fault::Ledger>>,
    /// The kind of the last request, for the per-method counts.
    kinds: RefCell<judge::MethodCache>,
    /// Judged stream requests no one else holds: their allocations, kept
    /// for the next requests the feeder takes (see [`Core::share`]).
    spare: RefCell<Vec<Rc<Request>>>,
    /// Warm-up requests this core still has to release.
    warmup_left: Cell<u64>,
    /// A stream's requests numbered below this are warm-up.
    warmup_below: Option<u64>,
    /// The warm-up ends at this time (`--warmup DURATION`).
    warmup_until: Option<Instant>,
    /// When the core's clock started: what the endpoints' send times
    /// ([`stats::Sends`]) count from.
    started: Instant,
    /// When the first counted request was released: the start of the
    /// counted run (rates, run time).
    counting_since: Cell<Option<Instant>>,
    /// The main task waiting for slots to end.
    done: Notify,
    stopping: Cell<Option<Instant>>,
    /// Since when the run is paused (a local copy of the shared flag).
    paused_since: Cell<Option<Instant>>,
    /// Time spent paused so far.
    paused: Cell<Duration>,
    /// Woken when the pause flag above changes.
    pause_changed: Notify,
    /// Woken when `users` grows (and at the stop).
    joined: Notify,
    /// Set when the feeder found no more work (the input or the count ran
    /// out), not because the run was stopped: an endpoint idle then had
    /// finished its work.
    input_ended: Cell<bool>,
    /// Open model: when sending ended because the input ran out (when the
    /// next request would have been due); `None` while it lasts to the
    /// stop. What the sent rate is over.
    sent_until: Cell<Option<Instant>>,
    /// Per flow of the mix, its steps' names as reports show them (with
    /// the flow's name in front when there are several flows).
    step_names: Vec<Vec<String>>,
    /// Per flow of the mix, its name (empty unless there are several).
    flow_names: Vec<String>,
    live_slots: Cell<usize>,
    /// Closed model: the slots of each endpoint that may carry requests
    /// now (the first ones; `--stages` changes it, else all of them).
    users: Cell<usize>,
    /// Closed model: since when `users` held, and the time the users were
    /// active summed over them since the statistics were last taken.
    users_since: Cell<Instant>,
    user_time: Cell<Duration>,
    /// Open model: requests that fell due since the statistics were last
    /// taken (sent, or counted unsent), and per endpoint those of them
    /// that went to other endpoints only (each at its own rate).
    offered: Cell<u64>,
    skipped: RefCell<Vec<u64>>,
    inflight: RefCell<Vec<u32>>,
    /// Slots per endpoint waiting for a request (open model: a request
    /// released when none is free starts late).
    idle: RefCell<Vec<u32>>,
    held_since: RefCell<Vec<Option<Instant>>>,
    held_back: RefCell<Vec<Duration>>,
    last_done: RefCell<Vec<Option<Instant>>>,
    keep_body: bool,
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

/// What a core is made of, besides what [`Core::new`] makes fresh.
struct CoreParts<'a> {
    settings: Arc<Settings>,
    links: Vec<Rc<Link>>,
    ledgers: Vec<Option<crate::fault::Ledger>>,
    per_endpoint: usize,
    /// No schedule: the direct feed may serve one endpoint.
    direct: bool,
    input: CoreInput,
    warmup: super::StopAfter,
    warmup_below: Option<u64>,
    started: Instant,
    connects: &'a [Vec<Duration>],
    judge: Option<ToJudge>,
}

impl Core {
    /// A core at the start of its run (`parts.started`), its connect
    /// times recorded in its first statistics; and its input for the
    /// feeder (`None` with the direct feed, which holds it).
    fn new(parts: CoreParts<'_>) -> (Rc<Core>, Option<CoreInput>) {
        let CoreParts {
            settings,
            links,
            ledgers,
            per_endpoint,
            direct,
            input,
            warmup,
            warmup_below,
            started,
            connects,
            judge,
        } = parts;
        let endpoints = links.len();
        let (step_names, flow_names) = match &input {
            CoreInput::Flow { mix, .. } => names(mix),
            _ => (Vec::new(), Vec::new()),
        };
        let mut first_stats = fresh_stats(endpoints, &step_names, &flow_names);
        for (s, took) in first_stats.endpoints.iter_mut().zip(connects) {
            for t in took {
                s.record_connect(*t);
            }
        }
        // JSON-RPC error answers are found in the bodies; gRPC answers carry
        // their status apart, so a run of gRPC endpoints alone keeps (and
        // decodes) bodies only to compare them.
        let jsonrpc_bodies = settings.comparer.jsonrpc()
            && settings
                .endpoints
                .iter()
                .any(|e| e.style != crate::model::Style::Grpc);
        let keep_body = jsonrpc_bodies
            || endpoints > 1 && (settings.comparer.needs_body() || settings.verbose >= 1);
        let mix = match &input {
            CoreInput::Flow { mix, .. } => Some(mix.clone()),
            _ => None,
        };
        // With one endpoint there is nothing to keep in step and nothing to
        // wait for: work made on the core needs no feeder and no window.
        let direct = endpoints == 1
            && direct
            && matches!(input, CoreInput::Repeat { .. } | CoreInput::Flow { .. });
        let (direct, input) = match direct {
            true => (Some(RefCell::new(Feed::new(input))), None),
            false => (None, Some(input)),
        };
        // Never smaller than the slots: --lead bounds how much work is open,
        // never how many requests are in flight. Unused with the direct feed.
        let limit = match direct {
            Some(_) => 1,
            None => settings.window.max(2 * per_endpoint),
        };
        let core = Rc::new(Core {
            window: RefCell::new(LeadWindow::new(limit, endpoints)),
            direct,
            mix,
            outcome_taps: settings
                .taps
                .iter()
                .filter(|t| t.wants_outcomes())
                .cloned()
                .collect(),
            labels: settings
                .endpoints
                .iter()
                .map(|e| Rc::from(e.label.as_str()))
                .collect(),
            step_names,
            flow_names,
            stats: RefCell::new(first_stats),
            tallies: RefCell::new(stats::Tallies::new(endpoints)),
            work: (0..endpoints).map(|_| Notify::new()).collect(),
            space: FeederWaker::default(),
            done: Notify::new(),
            stopping: Cell::new(None),
            paused_since: Cell::new(None),
            paused: Cell::new(Duration::ZERO),
            pause_changed: Notify::new(),
            joined: Notify::new(),
            input_ended: Cell::new(false),
            sent_until: Cell::new(None),
            live_slots: Cell::new(endpoints * per_endpoint),
            users: Cell::new(per_endpoint),
            users_since: Cell::new(started),
            user_time: Cell::new(Duration::ZERO),
            offered: Cell::new(0),
            skipped: RefCell::new(vec![0; endpoints]),
            inflight: RefCell::new(vec![0; endpoints]),
            idle: RefCell::new(vec![0; endpoints]),
            held_since: RefCell::new(vec![None; endpoints]),
            held_back: RefCell::new(vec![Duration::ZERO; endpoints]),
            last_done: RefCell::new(vec![None; endpoints]),
            keep_body,
            prefetch: (2 * per_endpoint).max(8),
            kinds: RefCell::new(judge::MethodCache::default()),
            judge,
            spare: RefCell::new(Vec::new()),
            links,
            ledgers,
            warmup_left: Cell::new(warmup.count.unwrap_or(0)),
            warmup_below,
            warmup_until: warmup.duration.map(|d| started + d),
            started,
            counting_since: Cell::new(None),
            settings,
        });
        (core, input)
    }

    /// The core's result once its slots ended: its statistics, with each
    /// endpoint's unfinished requests, held-back and active time.
    fn finish(&self, started: Instant) -> CoreResult {
        let ended = Instant::now();
        let index = tick_index(
            ended.saturating_duration_since(started),
            self.settings.interval,
        );
        // The counted run starts after the warm-up.
        let counted_from = self.counting_since.get().unwrap_or(ended);
        let mut stats = self.take_stats();
        // Due, released and never sent there: the stop came while the
        // endpoint had no free slot.
        for (e, s) in stats.endpoints.iter_mut().enumerate() {
            s.unsent += self.window.borrow().unclaimed_counted(e);
        }
        // A unit is judged as soon as every endpoint finished it: what is
        // left was not finished everywhere.
        stats.verdicts.incomplete += self.window.borrow_mut().drain_rest();
        // The run ends at the stop (a Ctrl-C, the end of --stop-after's
        // duration), or when this core's work ran out; an endpoint idle
        // when it ran out had finished its work at its last completion.
        let stopped_at = self.stopping.get().unwrap_or(ended).min(ended);
        let inflight = self.inflight.borrow();
        let held_since = self.held_since.borrow();
        let held = self.held_back.borrow();
        let last_done = self.last_done.borrow();
        let mut paused = self.paused.get();
        if let Some(since) = self.paused_since.get() {
            paused += ended.saturating_duration_since(since);
        }
        // Sending ends at the stop, which is at the end of --stop-after's
        // duration (the stop watcher wakes a little after it), or when the
        // input ran out.
        let mut sending_until = self.sent_until.get().unwrap_or(stopped_at).min(stopped_at);
        if let Some(d) = self.settings.stop_after.duration {
            sending_until = sending_until.min(counted_from + d + paused);
        }
        for (e, s) in stats.endpoints.iter_mut().enumerate() {
            s.abandoned += u64::from(inflight[e]);
            let finished_early = self.input_ended.get() && inflight[e] == 0;
            let until = match last_done[e] {
                Some(t) if finished_early => t,
                Some(t) => t.max(stopped_at),
                None => stopped_at,
            };
            let mut h = held[e];
            if let Some(since) = held_since[e] {
                h += until.saturating_duration_since(since);
            }
            s.held_back = h;
            s.active = until
                .saturating_duration_since(counted_from)
                .saturating_sub(paused);
            // Open model: sending lasts to the stop or to the input's end,
            // whatever the answers take after it; closed model: each send
            // waits for an answer, so it lasts as long as the endpoint ran.
            s.sending = match self.settings.open {
                Some(_) => sending_until
                    .saturating_duration_since(counted_from)
                    .saturating_sub(paused),
                None => s.active,
            };
        }
        CoreResult {
            stats,
            index,
            started: counted_from,
            ended,
            paused,
        }
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

/// The interval a moment of the run falls in.
pub(crate) fn tick_index(elapsed: Duration, interval: Duration) -> u64 {
    (elapsed.as_nanos() / interval.as_nanos().max(1)) as u64
}

/// A core's intervals: each one's statistics handed to the collector once
/// it has ended, by the tick or (open model) by the feeder about to
/// release the first request due after it, which the tick may wake a
/// little too late to keep out of it: a run's intervals, and so a killed
/// run's saved figures, hold the requests due in them, no more.
struct Intervals {
    to: std::sync::mpsc::Sender<CoreMsg>,
    core: usize,
    every: Duration,
    started: Instant,
    /// Intervals handed over.
    taken: Cell<u64>,
    /// The end of the interval being filled (read for every request
    /// released).
    end: Cell<Instant>,
}

impl Intervals {
    fn new(
        to: std::sync::mpsc::Sender<CoreMsg>,
        core: usize,
        every: Duration,
        started: Instant,
    ) -> Self {
        Intervals {
            to,
            core,
            every,
            started,
            taken: Cell::new(0),
            end: Cell::new(started + every),
        }
    }

    /// The end of the interval being filled.
    fn end(&self) -> Instant {
        self.end.get()
    }

    /// Close the connections idle for a while, and hand the interval being
    /// filled to the collector; false when it is gone.
    fn hand_over(&self, core: &Core) -> bool {
        if core.paused_since.get().is_none() {
            for link in &core.links {
                link.trim_idle(self.every);
            }
        }
        let index = self.taken.get();
        self.taken.set(index + 1);
        let n = u32::try_from(index + 2).unwrap_or(u32::MAX);
        self.end.set(self.started + self.every * n);
        let stats = core.take_stats();
        let core = self.core;
        self.to.send(CoreMsg::Tick { core, index, stats }).is_ok()
    }
}

/// Hand over each finished interval (see [`Intervals::hand_over`]) unless
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

/// The names reports show for each flow of `mix` and its steps: with
/// several flows, a step is named `flow: step` and each flow has its own
/// instance figures.
fn names(mix: &Mix) -> (Vec<Vec<String>>, Vec<String>) {
    let several = mix.flows().len() > 1;
    let steps = mix
        .flows()
        .iter()
        .map(|f| {
            f.steps()
                .iter()
                .map(|s| match several {
                    true => format!("{}: {}", f.name(), s.name()),
                    false => s.name().to_string(),
                })
                .collect()
        })
        .collect();
    let flows = match several {
        true => mix.flows().iter().map(|f| f.name().to_string()).collect(),
        false => Vec::new(),
    };
    (steps, flows)
}

/// Empty statistics for `endpoints`, listing the flows' `steps` and the
/// `flows` in order.
fn fresh_stats(endpoints: usize, steps: &[Vec<String>], flows: &[String]) -> RunStats {
    let mut stats = RunStats::new(endpoints);
    for s in &mut stats.endpoints {
        s.steps = steps
            .iter()
            .flatten()
            .map(|n| stats::PartStats::new(n))
            .collect();
        s.by_flow = flows.iter().map(|n| stats::FlowStats::named(n)).collect();
    }
    stats
}

impl Core {
    /// A stream's request, to be shared by the endpoints: in the
    /// allocation of one judged before it when one is spare (a `malloc`
    /// and a `free` a request fewer).
    fn share(&self, request: Request) -> Rc<Request> {
        match self.spare.borrow_mut().pop() {
            Some(mut rc) => match Rc::get_mut(&mut rc) {
                Some(r) => {
                    *r = request;
                    rc
                }
                None => Rc::new(request),
            },
            None => Rc::new(request),
        }
    }

    /// Keep a judged unit's request for [`Core::share`] when no one else
    /// holds it, emptied: a spare holds no body (nor the slab chunk it
    /// shares) while it waits, however long.
    fn spare(&self, work: Unit) {
        const KEPT: usize = 256;
        let Unit::Request(mut rc, _) = work else {
            return;
        };
        let mut spare = self.spare.borrow_mut();
        if spare.len() < KEPT {
            if let Some(r) = Rc::get_mut(&mut rc) {
                *r = Request::line(0, bytes::Bytes::new());
                spare.push(rc);
            }
        }
    }

    /// Empty statistics for the next interval.
    fn fresh_stats(&self) -> RunStats {
        fresh_stats(self.labels.len(), &self.step_names, &self.flow_names)
    }

    /// Wake every waiting slot (stop, pause, end of input).
    fn wake_all(&self) {
        for w in &self.work {
            w.notify_waiters();
        }
        self.joined.notify_waiters();
    }

    /// Closed model: add the time the users were active since the last
    /// mark (counted time only, to the stop).
    fn mark_users(&self) {
        let now = Instant::now();
        let until = self.stopping.get().map_or(now, |stop| stop.min(now));
        let since = self.users_since.replace(until.max(self.users_since.get()));
        if self.counting_since.get().is_some() && self.settings.open.is_none() {
            let users = u32::try_from(self.users.get()).unwrap_or(u32::MAX);
            let active = until.saturating_duration_since(since) * users;
            self.user_time.set(self.user_time.get() + active);
        }
    }

    /// One more request is claimable: wake one slot per endpoint (or leave
    /// a permit for the next slot that looks).
    fn wake_one_each(&self) {
        for w in &self.work {
            w.notify_one();
        }
    }

    /// The statistics recorded so far, whole (with the TLS handshake times,
    /// the waits for connections and the background's connects the links
    /// recorded, and the latencies tallied), fresh ones left in their
    /// place. Waits and connects of the warm-up are not counted, as its
    /// requests are not.
    fn take_stats(&self) -> RunStats {
        let mut stats = self.stats.replace(self.fresh_stats());
        let counting = self.counting_since.get().is_some();
        let mut window = self.window.borrow_mut();
        for (e, (s, link)) in stats.endpoints.iter_mut().zip(&self.links).enumerate() {
            s.late += window.take_late(e);
            // Same bounds everywhere, so adding cannot fail.
            if let Some(h) = link.take_handshakes() {
                let _ = s.tls.add(h);
            }
            if let Some(h) = link.take_waits().filter(|_| counting) {
                let _ = s.connect_wait.add(h);
            }
            if let Some(h) = link.take_opened().filter(|_| counting) {
                s.reconnects += h.len();
                let _ = s.connect.add(h);
            }
            let failed = link.take_failed_spares();
            if counting {
                s.spare_failed += failed;
            }
        }
        self.mark_users();
        let (offered, user_time) = (self.offered.take(), self.user_time.take());
        let mut skipped = self.skipped.borrow_mut();
        for (s, skipped) in stats.endpoints.iter_mut().zip(skipped.iter_mut()) {
            s.offered += offered - std::mem::take(skipped);
            s.user_time += user_time;
        }
        let ends = self.last_done.borrow();
        (self.tallies.borrow_mut()).flush_into(&mut stats, (self.started, &ends));
        self.kinds.borrow_mut().forget_places();
        stats
    }

    /// Whether the next request released belongs to the warm-up.
    fn is_warmup(&self) -> bool {
        self.warmup_left.get() > 0
            || self
                .warmup_until
                .is_some_and(|until| Instant::now() < until)
    }

    /// Whether `work`, about to be released, belongs to the warm-up:
    /// `warmup`, what [`Core::is_warmup`] said before it was taken (for a
    /// stream only the warm-up's time: its count is by position), or a
    /// stream's request numbered below the warm-up count.
    fn warmup_of(&self, work: &Unit, warmup: bool) -> bool {
        match (work, self.warmup_below) {
            (Unit::Request(r, _), Some(below)) => warmup || r.seq < below,
            _ => warmup,
        }
    }

    /// A request was released: count down the warm-up, or (at the first
    /// counted request) start counting, from its due time in the open
    /// model.
    fn released(&self, warmup: bool, due: Option<Instant>) {
        if warmup {
            self.warmup_left
                .set(self.warmup_left.get().saturating_sub(1));
        } else if self.counting_since.get().is_none() {
            self.start_counting(due.unwrap_or_else(Instant::now));
        }
    }

    /// Count from `at` on: the links' figures of connects and waits so far
    /// belonged to the warm-up, whose requests are not counted either.
    fn start_counting(&self, at: Instant) {
        self.counting_since.set(Some(at));
        for link in &self.links {
            link.take_waits();
            link.take_opened();
            link.take_failed_spares();
        }
    }

    /// True when the feeder should add requests to the window.
    fn wants_input(&self) -> bool {
        let w = self.window.borrow();
        w.has_space() && w.unclaimed() < self.prefetch
    }
}

/// The feeder's waker while it waits for room (see [`Core::space`]).
#[derive(Default)]
struct FeederWaker(Cell<Option<Waker>>);

impl FeederWaker {
    /// Wait with `waker`: the next [`FeederWaker::wake`] wakes it.
    fn register(&self, waker: &Waker) {
        let w = match self.0.take() {
            Some(w) if w.will_wake(waker) => w,
            _ => waker.clone(),
        };
        self.0.set(Some(w));
    }

    /// Wake the feeder if it waits.
    fn wake(&self) {
        if let Some(w) = self.0.take() {
            w.wake();
        }
    }
}

/// Mark the run as stopping and wake everyone.
fn begin_stop(core: &Core) {
    if core.stopping.get().is_none() {
        core.stopping.set(Some(Instant::now()));
    }
    core.wake_all();
    core.space.wake();
    core.done.notify_waiters();
}

/// Closed model with `--stages`: keep this core's share (`part`) of the
/// virtual users current, at most its `slots`: a slot beyond them ends its
/// request and waits, and those that join are woken.
async fn follow_users(core: Rc<Core>, users: Users, part: crate::model::Share, slots: usize) {
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

/// A core's input: the current batch and where the next comes from.
struct Feed {
    input: CoreInput,
    batch: std::vec::IntoIter<Request>,
    /// Single-request mode's request, shared by every repeat.
    repeat: Option<Rc<Request>>,
}

impl Feed {
    fn new(input: CoreInput) -> Feed {
        let repeat = match &input {
            CoreInput::Repeat { request, .. } => Some(Rc::new(request.clone())),
            _ => None,
        };
        Feed {
            input,
            batch: Vec::new().into_iter(),
            repeat,
        }
    }

    /// The next unit of work if one is at hand, without waiting.
    /// `counted`: the unit is counted (a repeated request's or a flow's
    /// quota counts only those; warm-up units come on top).
    fn take_now(&mut self, core: &Core, counted: bool) -> Option<Unit> {
        match &mut self.input {
            CoreInput::Repeat {
                request,
                next,
                step,
                remaining,
            } => take_quota(remaining, counted).then(|| {
                let n = *next;
                *next += *step;
                // Taps that see every outcome (`-vv`, diagnostics) read the
                // number in the request: each repeat gets a numbered copy.
                // Otherwise one request is shared and its number goes
                // beside it, to where a mismatch is judged.
                let req = match &self.repeat {
                    Some(r) if core.outcome_taps.is_empty() => r.clone(),
                    _ => core.share(Request {
                        seq: n,
                        ..request.clone()
                    }),
                };
                Unit::Request(req, n)
            }),
            CoreInput::Batches(_) => self.batch.next().map(|r| {
                let seq = r.seq;
                Unit::Request(core.share(r), seq)
            }),
            CoreInput::Flow {
                mix,
                next,
                step,
                remaining,
            } => take_quota(remaining, counted).then(|| {
                let n = *next;
                *next += *step;
                Unit::Flow(mix.pick(n), n)
            }),
        }
    }

    /// How many more units the input holds without waiting (the current
    /// batch; a quota's rest, `usize::MAX` without one).
    fn at_hand(&self) -> usize {
        match &self.input {
            CoreInput::Repeat { remaining, .. } | CoreInput::Flow { remaining, .. } => {
                remaining.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX))
            }
            CoreInput::Batches(_) => self.batch.len(),
        }
    }

    /// Wait for the next batch. False when the input has ended (or the run
    /// is stopping).
    async fn refill(&mut self, core: &Core) -> bool {
        match &mut self.input {
            CoreInput::Repeat { .. } | CoreInput::Flow { .. } => false,
            CoreInput::Batches(rx) => {
                let stopped = core.done.notified();
                if core.stopping.get().is_some() {
                    return false;
                }
                tokio::select! {
                    b = rx.recv() => match b {
                        Ok(b) => {
                            self.batch = b.into_iter();
                            true
                        }
                        Err(_) => false,
                    },
                    _ = stopped => core.stopping.get().is_none(),
                }
            }
        }
    }

    /// The next unit of work, waiting for input if needed.
    async fn next(&mut self, core: &Core, counted: bool) -> Option<Unit> {
        loop {
            if let Some(r) = self.take_now(core, counted) {
                return Some(r);
            }
            if !self.refill(core).await {
                return None;
            }
        }
    }
}

/// Take one from a quota (`None`: no limit) if it has any left; units
/// that are not `counted` (warm-up) do not use it up.
fn take_quota(remaining: &mut Option<u64>, counted: bool) -> bool {
    match remaining {
        Some(0) if counted => false,
        Some(n) if counted => {
            *n -= 1;
            true
        }
        _ => true,
    }
}

/// Wait until the feeder may add to the window (`open`: the window has
/// space; closed model: it also wants more ready requests); false when
/// stopping.
async fn room(core: &Core, open: bool) -> bool {
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
async fn feed(core: Rc<Core>, input: CoreInput) {
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
async fn feed_open(
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
fn release(
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

/// One slot: claim the endpoint's next unit of work, carry it out,
/// deliver the result. Not an `async fn`: one would keep its arguments
/// twice in the task, the `Slot` among them.
#[allow(clippy::manual_async_fn)]
fn drive(
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
async fn run_flow(
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
fn begin(core: &Core, e: usize, (place, unit, due, warmup): Got) -> Claimed {
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
type Got = (usize, Unit, Option<Instant>, bool);

/// A unit of work done at endpoint `e` (its result in `done`): a counted
/// request's outcome recorded (and whether it was an error noted with
/// it), the unit no longer in flight, and delivered.
fn record_and_deliver(
    core: &Core,
    e: usize,
    place: usize,
    work: Unit,
    warmup: bool,
    done: &mut Option<UnitResult>,
) {
    if let (
        Unit::Request(req, _),
        Some(UnitResult::Request {
            outcome: Some(o),
            error,
        }),
    ) = (&work, done.as_mut())
    {
        *error = !warmup && record(core, e, req, o, None);
    }
    core.inflight.borrow_mut()[e] -= 1;
    deliver(core, e, place, work, warmup, done);
}

/// A slot's side of carrying requests at endpoint `e` (see
/// [`crate::endpoint::carry`]): each answer a lane takes recorded and
/// delivered as [`drive`] does a request's, and the next unit claimed.
struct SlotUnits {
    core: Rc<Core>,
    e: usize,
    /// The slot's number among the endpoint's on this core.
    i: usize,
    /// The unit being carried, or claimed after a lane's answer, begun.
    claimed: RefCell<Option<Claimed>>,
}

/// A unit of work claimed (see [`look`]).
struct Claimed {
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
async fn claim(core: &Core, e: usize, i: usize, slot: &mut Slot) -> Option<Got> {
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
fn look(core: &Core, e: usize, i: usize) -> Claim<Unit> {
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
/// [`deliver`]).
fn take_direct(core: &Core, feed: &RefCell<Feed>) -> Claim<Unit> {
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

/// Record a counted request's outcome at endpoint `e` as it ends (its
/// errors grouped under the flow step's name, if it is one); returns
/// whether it was an error.
fn record(core: &Core, e: usize, req: &Request, outcome: &Outcome, step: Option<&str>) -> bool {
    let settings = &core.settings;
    // Only the last completion counts (see `run`), and only when the
    // endpoint may end idle (this is its one unit in flight) or the run is
    // stopping: the clock is read only then.
    if core.inflight.borrow()[e] <= 1 || core.stopping.get().is_some() {
        core.last_done.borrow_mut()[e] = Some(Instant::now());
    }
    for tap in &core.outcome_taps {
        tap.outcome(settings, e, req, outcome);
    }
    let mut stats = core.stats.borrow_mut();
    let mut tallies = core.tallies.borrow_mut();
    if let Some(times) = stats.endpoints[e].count(outcome) {
        tallies.response(e, times);
    }
    tallies.ended(e, outcome.start);
    drop(tallies);
    if let Some(ledger) = &core.ledgers[e] {
        ledger.blame(outcome, &mut stats.endpoints[e]);
    }
    let error = judge::classify(settings, &mut stats, e, req, outcome, step);
    drop(stats);
    let stopped = matches!(outcome.result, Err(crate::model::Failure::Stopped));
    if error && stopped && core.links.iter().all(|l| l.halted()) {
        // No endpoint is left to send to: the run ends, as at its end.
        begin_stop(core);
    }
    error
}

/// Record a counted flow step at endpoint `e` as it ends: the request as
/// any other, and the step's own figures.
fn record_step(core: &Core, e: usize, name: &str, step: &StepRun) {
    if let Some(outcome) = &step.outcome {
        core.stats.borrow_mut().endpoints[e].sent += 1;
        record(core, e, &step.request, outcome, Some(name));
    }
    let mut stats = core.stats.borrow_mut();
    let s = &mut stats.endpoints[e];
    let check = matches!(
        step.failure,
        Some(StepFailure::Check(_) | StepFailure::Extract(_))
    );
    if check {
        s.failed_checks += 1;
    }
    let part = stats::part(&mut s.steps, name);
    match (&step.outcome, &step.failure) {
        (None, _) => part.not_built += 1,
        (Some(outcome), failure) => {
            part.record(outcome, failure.is_some());
            part.failed_checks += u64::from(check);
        }
    }
    // An error answer was grouped as an error already (`record`).
    if let Some(f @ (StepFailure::NotBuilt(_) | StepFailure::Check(_) | StepFailure::Extract(_))) =
        &step.failure
    {
        let reason = f.reason();
        step_error(core, &mut stats, e, name, &reason, &step.request, &reason);
    }
}

/// Count a step's failure that was not an error answer among the errors,
/// grouped by `reason`, with `detail` in its sample.
fn step_error(
    core: &Core,
    stats: &mut RunStats,
    e: usize,
    name: &str,
    reason: &str,
    req: &Request,
    detail: &str,
) {
    stats::count_group(
        &mut stats.verdicts.error_groups,
        name,
        reason,
        "error",
        &core.settings.endpoints[e].label,
        1,
        || vec![step_sample(req, detail)],
    );
}

/// Record a paged step's traversal at endpoint `e` as it ends (its pages
/// were recorded as they came): the traversal's figures, and a stop that
/// was not a failed page as a failed check of the step.
fn record_traversal(core: &Core, e: usize, name: &str, run: &StepRun) {
    let Some(t) = &run.traversal else { return };
    let mut stats = core.stats.borrow_mut();
    let s = &mut stats.endpoints[e];
    let part = stats::part(&mut s.steps, name);
    let figures = part.traversal.get_or_insert_with(Default::default);
    if run.failure.is_some() {
        figures.stopped += 1;
    } else {
        figures.completed += 1;
        figures.pages += u64::from(t.pages);
        figures.items += t.items;
        figures.bytes += t.bytes;
        figures.duplicates += t.duplicates;
        figures.unkeyed += t.unkeyed;
        stats::record(&mut figures.time, t.time);
    }
    if let Some((kind, why)) = &t.stop {
        part.failed_checks += 1;
        s.failed_checks += 1;
        let reason = format!("pagination stopped: {kind}");
        step_error(core, &mut stats, e, name, &reason, &run.request, why);
    }
}

/// A step that failed, as its error group shows it: the instance, the
/// request as built (or nothing, when it could not be), the reason.
fn step_sample(req: &Request, reason: &str) -> stats::MismatchSample {
    let request = match &req.target {
        Some(_) => crate::compare::sample::shown_request(req),
        None => "(not built)".to_string(),
    };
    stats::MismatchSample {
        seq: req.seq,
        request,
        values: vec![reason.to_string()],
        diff: String::new(),
    }
}

/// Hand endpoint `e`'s result for the work at `place` (and the work it
/// claimed, and whether it was warm-up work) back to the window, and judge
/// the work when it was the last one missing; without a window, judge it.
fn deliver(
    core: &Core,
    e: usize,
    place: usize,
    work: Unit,
    warmup: bool,
    done: &mut Option<UnitResult>,
) {
    if core.direct.is_some() {
        judge_work(core, &work, std::slice::from_ref(done), warmup);
        return;
    }
    let mut w = core.window.borrow_mut();
    let judged = w.complete(e, place, work, done, |work, results, warmup| {
        judge_work(core, work, results, warmup)
    });
    if core.inflight.borrow()[e] == 0 && w.holds_back(e) {
        core.held_since.borrow_mut()[e].get_or_insert_with(Instant::now);
    }
    drop(w);
    if let Some(work) = judged {
        core.space.wake();
        core.spare(work);
    }
}

/// Judge a unit of work every endpoint has finished (`results`, in
/// endpoint order), unless it was warm-up work. The outcomes are judged
/// where they lie, by reference: moved out to be judged, each was copied
/// twice more (a `memcpy` of 200 bytes each time).
fn judge_work(core: &Core, work: &Unit, results: &[Option<UnitResult>], warmup: bool) {
    if warmup {
        return;
    }
    let settings = &core.settings;
    let to = core.judge.as_ref();
    let mut stats = core.stats.borrow_mut();
    match work {
        Unit::Request(req, seq) => {
            let mut kinds = core.kinds.borrow_mut();
            let mut tallies = core.tallies.borrow_mut();
            fn each(r: &Option<UnitResult>) -> (Option<&Outcome>, bool) {
                match r {
                    Some(UnitResult::Request { outcome: o, error }) => (o.as_ref(), *error),
                    _ => (None, false),
                }
            }
            let stats = (&mut *stats, &mut *tallies);
            if let [one] = results {
                // One endpoint (single-request mode): no lists to fill
                // (80 instructions a request; callgrind).
                let (o, error) = each(one);
                judge::verdict(settings, stats, &mut kinds, to, (req, *seq), &[o], &[error]);
                return;
            }
            judge::on_stack(results.iter().map(|r| each(r).0), |outcomes| {
                judge::on_stack(results.iter().map(|r| each(r).1), |errors| {
                    judge::verdict(
                        settings,
                        stats,
                        &mut kinds,
                        to,
                        (req, *seq),
                        outcomes,
                        errors,
                    );
                })
            });
        }
        Unit::Flow(f, _) => {
            let runs = results.iter().map(|r| match r {
                Some(UnitResult::Flow(run)) => Some(run),
                _ => None,
            });
            let flow = core.mix.as_deref().map(|m| &*m.flows()[*f]);
            judge::flow_verdict(
                settings,
                &core.step_names[*f],
                flow,
                &mut stats,
                to,
                &runs.collect::<Vec<_>>(),
            );
        }
    }
}
