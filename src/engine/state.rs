//! One core's state: its settings, lead window, statistics, input and the
//! counts the feeders and slots share, with the types a core hands back.
//! Everything here is local to the core's thread: no request touches a
//! lock.

use super::judge;
use super::judge_thread::ToJudge;
use super::unit::{Unit, UnitResult};
use super::window::LeadWindow;
use super::Settings;
use crate::endpoint::Link;
use crate::flow::Mix;
use crate::model::Request;
use crate::stats::{self, RunStats};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::task::Waker;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

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

pub(super) struct Core {
    pub(super) settings: Arc<Settings>,
    pub(super) window: RefCell<LeadWindow<Unit, UnitResult>>,
    /// One endpoint in the closed model with work made on the core (a
    /// repeated request, flow instances): the slots take their work here
    /// themselves, with no feeder and no window between (see [`super::drive::look`]).
    pub(super) direct: Option<RefCell<Feed>>,
    /// The flows this core runs instances of, if any.
    pub(super) mix: Option<Arc<Mix>>,
    /// Where answers that differ are judged, off this core.
    pub(super) judge: Option<ToJudge>,
    /// The settings's taps that see every outcome (`-vv`); usually none.
    pub(super) outcome_taps: Vec<Arc<dyn super::Tap>>,
    /// Endpoint labels, for flow steps.
    pub(super) labels: Vec<Rc<str>>,
    pub(super) stats: RefCell<RunStats>,
    /// The answers' latencies not yet in `stats`' histograms (see
    /// [`Core::take_stats`]).
    pub(super) tallies: RefCell<stats::Tallies>,
    /// Slots waiting for a request.
    pub(super) work: Vec<Notify>,
    /// The feeder waiting for room in the window, or for the leading
    /// endpoint to use up what is ready: the one task that waits on it,
    /// and every wake-up comes from this core's thread, so a wake-up with
    /// nobody waiting (most requests) costs a look at a cell, not
    /// `Notify`'s lock or `AtomicWaker`'s atomic updates.
    pub(super) space: FeederWaker,
    /// Requests the feeder keeps ready ahead of the leading endpoint.
    pub(super) prefetch: usize,
    /// This core's view of each endpoint (for the TLS handshake times).
    pub(super) links: Vec<Rc<Link>>,
    /// Per endpoint with faults, what their errors are put down to.
    pub(super) ledgers: Vec<Option<crate::fault::Ledger>>,
    /// The kind of the last request, for the per-method counts.
    pub(super) kinds: RefCell<judge::MethodCache>,
    /// Judged stream requests no one else holds: their allocations, kept
    /// for the next requests the feeder takes (see [`Core::share`]).
    pub(super) spare: RefCell<Vec<Rc<Request>>>,
    /// Warm-up requests this core still has to release.
    pub(super) warmup_left: Cell<u64>,
    /// A stream's requests numbered below this are warm-up.
    pub(super) warmup_below: Option<u64>,
    /// The warm-up ends at this time (`--warmup DURATION`).
    pub(super) warmup_until: Option<Instant>,
    /// When the core's clock started: what the endpoints' send times
    /// ([`stats::Sends`]) count from.
    pub(super) started: Instant,
    /// When the first counted request was released: the start of the
    /// counted run (rates, run time).
    pub(super) counting_since: Cell<Option<Instant>>,
    /// The main task waiting for slots to end.
    pub(super) done: Notify,
    pub(super) stopping: Cell<Option<Instant>>,
    /// Since when the run is paused (a local copy of the shared flag).
    pub(super) paused_since: Cell<Option<Instant>>,
    /// Time spent paused so far.
    pub(super) paused: Cell<Duration>,
    /// Woken when the pause flag above changes.
    pub(super) pause_changed: Notify,
    /// Woken when `users` grows (and at the stop).
    pub(super) joined: Notify,
    /// Set when the feeder found no more work (the input or the count ran
    /// out), not because the run was stopped: an endpoint idle then had
    /// finished its work.
    pub(super) input_ended: Cell<bool>,
    /// Open model: when sending ended because the input ran out (when the
    /// next request would have been due); `None` while it lasts to the
    /// stop. What the sent rate is over.
    pub(super) sent_until: Cell<Option<Instant>>,
    /// Per flow of the mix, its steps' names as reports show them (with
    /// the flow's name in front when there are several flows).
    pub(super) step_names: Vec<Vec<String>>,
    /// Per flow of the mix, its name (empty unless there are several).
    pub(super) flow_names: Vec<String>,
    pub(super) live_slots: Cell<usize>,
    /// Closed model: the slots of each endpoint that may carry requests
    /// now (the first ones; `--stages` changes it, else all of them).
    pub(super) users: Cell<usize>,
    /// Closed model: since when `users` held, and the time the users were
    /// active summed over them since the statistics were last taken.
    pub(super) users_since: Cell<Instant>,
    pub(super) user_time: Cell<Duration>,
    /// Open model: requests that fell due since the statistics were last
    /// taken (sent, or counted unsent), and per endpoint those of them
    /// that went to other endpoints only (each at its own rate).
    pub(super) offered: Cell<u64>,
    pub(super) skipped: RefCell<Vec<u64>>,
    pub(super) inflight: RefCell<Vec<u32>>,
    /// Slots per endpoint waiting for a request (open model: a request
    /// released when none is free starts late).
    pub(super) idle: RefCell<Vec<u32>>,
    pub(super) held_since: RefCell<Vec<Option<Instant>>>,
    pub(super) held_back: RefCell<Vec<Duration>>,
    pub(super) last_done: RefCell<Vec<Option<Instant>>>,
    pub(super) keep_body: bool,
}

impl Core {
    /// A core at the start of its run (`parts.started`), its connect
    /// times recorded in its first statistics; and its input for the
    /// feeder (`None` with the direct feed, which holds it).
    pub(super) fn new(parts: CoreParts<'_>) -> (Rc<Core>, Option<CoreInput>) {
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
    pub(super) fn finish(&self, started: Instant) -> CoreResult {
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

impl Core {
    /// A stream's request, to be shared by the endpoints: in the
    /// allocation of one judged before it when one is spare (a `malloc`
    /// and a `free` a request fewer).
    pub(super) fn share(&self, request: Request) -> Rc<Request> {
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
    pub(super) fn spare(&self, work: Unit) {
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
    pub(super) fn fresh_stats(&self) -> RunStats {
        fresh_stats(self.labels.len(), &self.step_names, &self.flow_names)
    }

    /// Wake every waiting slot (stop, pause, end of input).
    pub(super) fn wake_all(&self) {
        for w in &self.work {
            w.notify_waiters();
        }
        self.joined.notify_waiters();
    }

    /// Closed model: add the time the users were active since the last
    /// mark (counted time only, to the stop).
    pub(super) fn mark_users(&self) {
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
    pub(super) fn wake_one_each(&self) {
        for w in &self.work {
            w.notify_one();
        }
    }

    /// The statistics recorded so far, whole (with the TLS handshake times,
    /// the waits for connections and the background's connects the links
    /// recorded, and the latencies tallied), fresh ones left in their
    /// place. Waits and connects of the warm-up are not counted, as its
    /// requests are not.
    pub(super) fn take_stats(&self) -> RunStats {
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
    pub(super) fn is_warmup(&self) -> bool {
        self.warmup_left.get() > 0
            || self
                .warmup_until
                .is_some_and(|until| Instant::now() < until)
    }

    /// Whether `work`, about to be released, belongs to the warm-up:
    /// `warmup`, what [`Core::is_warmup`] said before it was taken (for a
    /// stream only the warm-up's time: its count is by position), or a
    /// stream's request numbered below the warm-up count.
    pub(super) fn warmup_of(&self, work: &Unit, warmup: bool) -> bool {
        match (work, self.warmup_below) {
            (Unit::Request(r, _), Some(below)) => warmup || r.seq < below,
            _ => warmup,
        }
    }

    /// A request was released: count down the warm-up, or (at the first
    /// counted request) start counting, from its due time in the open
    /// model.
    pub(super) fn released(&self, warmup: bool, due: Option<Instant>) {
        if warmup {
            self.warmup_left
                .set(self.warmup_left.get().saturating_sub(1));
        } else if self.counting_since.get().is_none() {
            self.start_counting(due.unwrap_or_else(Instant::now));
        }
    }

    /// Count from `at` on: the links' figures of connects and waits so far
    /// belonged to the warm-up, whose requests are not counted either.
    pub(super) fn start_counting(&self, at: Instant) {
        self.counting_since.set(Some(at));
        for link in &self.links {
            link.take_waits();
            link.take_opened();
            link.take_failed_spares();
        }
    }

    /// True when the feeder should add requests to the window.
    pub(super) fn wants_input(&self) -> bool {
        let w = self.window.borrow();
        w.has_space() && w.unclaimed() < self.prefetch
    }
}

/// What a core is made of, besides what [`Core::new`] makes fresh.
pub(super) struct CoreParts<'a> {
    pub(super) settings: Arc<Settings>,
    pub(super) links: Vec<Rc<Link>>,
    pub(super) ledgers: Vec<Option<crate::fault::Ledger>>,
    pub(super) per_endpoint: usize,
    /// No schedule: the direct feed may serve one endpoint.
    pub(super) direct: bool,
    pub(super) input: CoreInput,
    pub(super) warmup: super::StopAfter,
    pub(super) warmup_below: Option<u64>,
    pub(super) started: Instant,
    pub(super) connects: &'a [Vec<Duration>],
    pub(super) judge: Option<ToJudge>,
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
pub(super) struct Intervals {
    pub(super) to: std::sync::mpsc::Sender<CoreMsg>,
    pub(super) core: usize,
    pub(super) every: Duration,
    pub(super) started: Instant,
    /// Intervals handed over.
    pub(super) taken: Cell<u64>,
    /// The end of the interval being filled (read for every request
    /// released).
    pub(super) end: Cell<Instant>,
}

impl Intervals {
    pub(super) fn new(
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
    pub(super) fn end(&self) -> Instant {
        self.end.get()
    }

    /// Close the connections idle for a while, and hand the interval being
    /// filled to the collector; false when it is gone.
    pub(super) fn hand_over(&self, core: &Core) -> bool {
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

/// The names reports show for each flow of `mix` and its steps: with
/// several flows, a step is named `flow: step` and each flow has its own
/// instance figures.
pub(super) fn names(mix: &Mix) -> (Vec<Vec<String>>, Vec<String>) {
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
pub(super) fn fresh_stats(endpoints: usize, steps: &[Vec<String>], flows: &[String]) -> RunStats {
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

/// The feeder's waker while it waits for room (see [`Core::space`]).
#[derive(Default)]
pub(super) struct FeederWaker(Cell<Option<Waker>>);

impl FeederWaker {
    /// Wait with `waker`: the next [`FeederWaker::wake`] wakes it.
    pub(super) fn register(&self, waker: &Waker) {
        let w = match self.0.take() {
            Some(w) if w.will_wake(waker) => w,
            _ => waker.clone(),
        };
        self.0.set(Some(w));
    }

    /// Wake the feeder if it waits.
    pub(super) fn wake(&self) {
        if let Some(w) = self.0.take() {
            w.wake();
        }
    }
}

/// Mark the run as stopping and wake everyone.
pub(super) fn begin_stop(core: &Core) {
    if core.stopping.get().is_none() {
        core.stopping.set(Some(Instant::now()));
    }
    core.wake_all();
    core.space.wake();
    core.done.notify_waiters();
}

/// A core's input: the current batch and where the next comes from.
pub(super) struct Feed {
    pub(super) input: CoreInput,
    pub(super) batch: std::vec::IntoIter<Request>,
    /// Single-request mode's request, shared by every repeat.
    pub(super) repeat: Option<Rc<Request>>,
}

impl Feed {
    pub(super) fn new(input: CoreInput) -> Feed {
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
    pub(super) fn take_now(&mut self, core: &Core, counted: bool) -> Option<Unit> {
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
    pub(super) fn at_hand(&self) -> usize {
        match &self.input {
            CoreInput::Repeat { remaining, .. } | CoreInput::Flow { remaining, .. } => {
                remaining.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX))
            }
            CoreInput::Batches(_) => self.batch.len(),
        }
    }

    /// Wait for the next batch. False when the input has ended (or the run
    /// is stopping).
    pub(super) async fn refill(&mut self, core: &Core) -> bool {
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
    pub(super) async fn next(&mut self, core: &Core, counted: bool) -> Option<Unit> {
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
pub(super) fn take_quota(remaining: &mut Option<u64>, counted: bool) -> bool {
    match remaining {
        Some(0) if counted => false,
        Some(n) if counted => {
            *n -= 1;
            true
        }
        _ => true,
    }
}
