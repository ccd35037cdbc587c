//! The engine owns a run: one OS thread per core, each with its own
//! single-threaded runtime, its own connections to every endpoint, its own
//! share of the requests and its own statistics. Nothing is shared between
//! cores per request; input arrives in batches, and each core hands its
//! statistics to the collector (the calling thread) once per interval,
//! where they are merged and shown to an [`Observer`].

mod drive;
mod feed;
mod judge;
mod judge_thread;
pub mod pace;
mod pacing;
pub mod preflight;
mod record;
pub mod settings;
pub mod shape;
mod slots;
mod state;
mod stop;
mod tap;
mod timer;
mod unit;
mod window;
mod worker;

use std::collections::BTreeMap;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

use self::judge_thread::Judges;
pub use self::settings::{Settings, StopAfter};
use self::state::{CoreInput, CoreMsg};
pub use self::stop::Stop;
pub use self::tap::Tap;
use self::worker::CoreJob;
use crate::endpoint::{self, Prepared};
use crate::input::reader::{self, InputError, InputState};
use crate::input::Source;
use crate::model::Request;
pub use crate::stats::jsonrpc_error_name;
use crate::stats::{InputStats, RunStats};

/// Watches a run as it goes: called on the thread that called [`run`],
/// never on a core, so it cannot slow requests down.
pub trait Observer {
    /// One interval of the run (`settings.interval` long, from the start;
    /// the last may be shorter), merged over cores, and the totals so far
    /// (including it).
    fn interval(&mut self, index: u64, delta: &RunStats, total: &RunStats) {
        let _ = (index, delta, total);
    }

    /// Every core has ended and the judge thread still has `left`
    /// differing answers to judge: called when the cores end and then
    /// about once an interval until it is done, before the last interval.
    fn judging(&mut self, left: u64) {
        let _ = left;
    }
}

/// An observer that does nothing.
pub struct Quiet;

impl Observer for Quiet {}

/// Where a run's work comes from.
pub enum Workload {
    /// A request stream: each request is a one-step flow.
    Stream(Box<dyn Source>),
    /// The same request over and over (single-request mode).
    Repeat(Request),
    /// Instances of a flow, numbered from 0: as many as `--stop-after N`
    /// says, or until the run is stopped.
    Flow(Arc<crate::flow::Flow>),
    /// Instances of several flows mixed by weight (scenario suites),
    /// numbered from 0 across them.
    Mix(Arc<crate::flow::Mix>),
}

/// A finished (or stopped) run.
#[derive(Debug)]
pub struct RunOutput {
    /// Merged statistics of every core.
    pub stats: RunStats,
    /// Workload counters.
    pub input: InputStats,
    /// Set when the input failed or `--strict` stopped it (the requests
    /// read before were sent).
    pub input_error: Option<InputError>,
    /// From the start of counting to the end of the last core, less time
    /// paused.
    pub elapsed: Duration,
    /// True when the run was stopped by [`Stop`] (Ctrl-C) rather than
    /// ending by itself.
    pub interrupted: bool,
}

/// Why a run could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// An endpoint's host name did not resolve.
    #[error("endpoint {label}: cannot resolve {host}: {error}")]
    Resolve {
        /// The endpoint's label.
        label: String,
        /// The host name.
        host: String,
        /// The resolver's message.
        error: String,
    },
    /// The endpoint could not be prepared.
    #[error("{0}")]
    Endpoint(String),
    /// The operating system refused a thread or runtime.
    #[error("cannot start the engine: {0}")]
    Start(#[from] std::io::Error),
    /// A core could not run its share, or ended abnormally during the run
    /// (a panic on it is a bug, reported here rather than left waiting).
    #[error("a core of the engine failed: {0}")]
    Core(std::io::Error),
}

/// Add one core's stats of interval `index` to the others' (the first
/// core's are kept as they came: no new set of histograms per interval).
fn gather(pending: &mut BTreeMap<u64, RunStats>, index: u64, stats: RunStats) {
    match pending.entry(index) {
        std::collections::btree_map::Entry::Vacant(v) => {
            v.insert(stats);
        }
        std::collections::btree_map::Entry::Occupied(mut o) => o.get_mut().merge(&stats),
    }
}

/// Who hands statistics to the collector: the cores, and the judge
/// thread when there is one.
struct Participants<'a> {
    cores: usize,
    judge: Option<&'a Judges>,
}

/// Merge the cores' intervals in order as they complete, with what the
/// judge thread judged meanwhile, show each to the observer, and return
/// the totals and the run's wall time.
fn collect(
    settings: &Settings,
    Participants { cores, judge }: Participants<'_>,
    from: &std::sync::mpsc::Receiver<CoreMsg>,
    faults: Option<&crate::fault::Running>,
    observer: &mut dyn Observer,
) -> Result<(RunStats, Duration), RunError> {
    let n = settings.endpoints.len();
    let mut total = RunStats::new(n);
    // Interval index -> merged stats so far.
    let mut pending: BTreeMap<u64, RunStats> = BTreeMap::new();
    // Per core: the next interval it has not reported, or None once done.
    let mut next: Vec<Option<u64>> = vec![Some(0); cores];
    // The judge thread's verdicts not yet shown, and whether it may send more.
    let mut judged: Option<RunStats> = None;
    let mut judging = judge.is_some();
    let mut span: Option<(Instant, Instant)> = None;
    // Time paused is in no rate and no run time (every core pauses
    // together; the longest is kept).
    let mut paused = Duration::ZERO;
    let mut failure = None;
    for msg in from.iter() {
        match msg {
            CoreMsg::Tick { core, index, stats } => {
                gather(&mut pending, index, stats);
                next[core] = Some(index + 1);
            }
            CoreMsg::Done { core, result } => {
                next[core] = None;
                match result {
                    Ok(r) => {
                        gather(&mut pending, r.index, r.stats);
                        paused = paused.max(r.paused);
                        span = Some(match span {
                            None => (r.started, r.ended),
                            Some((s, e)) => (s.min(r.started), e.max(r.ended)),
                        });
                    }
                    Err(e) => failure = Some(e),
                }
                if let Some(j) = judge.filter(|_| next.iter().all(Option::is_none)) {
                    j.finish();
                    backlog(observer, j);
                }
            }
            CoreMsg::Judged { stats, last } => {
                match &mut judged {
                    Some(j) => j.merge(&stats),
                    None => judged = Some(stats),
                }
                judging &= !last;
                if let Some(j) = judge.filter(|_| judging && next.iter().all(Option::is_none)) {
                    backlog(observer, j);
                }
            }
        }
        // An interval is complete when every core has reported it or
        // ended; the last one, also when the judge thread is done.
        while let Some(entry) = pending.first_entry() {
            let index = *entry.key();
            let cores_done = next.iter().all(Option::is_none);
            if next.iter().any(|n| n.is_some_and(|n| n <= index)) || cores_done && judging {
                break;
            }
            let mut delta = entry.remove();
            if let Some(j) = judged.take() {
                delta.merge(&j);
            }
            if let Some(f) = faults {
                f.take_into(&mut delta, index);
            }
            total.merge(&delta);
            observer.interval(index, &delta, &total);
        }
    }
    let finished = next.iter().filter(|n| n.is_none()).count();
    if let Some(e) = failure {
        return Err(RunError::Core(e));
    }
    if finished < cores || judging {
        return Err(RunError::Core(std::io::Error::other(
            "it stopped unexpectedly",
        )));
    }
    let elapsed = span.map_or(Duration::ZERO, |(s, e)| e - s);
    Ok((total, elapsed.saturating_sub(paused)))
}

/// Tell `observer` how many units the judge thread has left, if any.
fn backlog(observer: &mut dyn Observer, judge: &Judges) {
    let left = judge.left();
    if left > 0 {
        observer.judging(left);
    }
}

/// Sleep until `at` (at once when it has passed), or until `stop`.
fn wait_until(at: std::time::SystemTime, stop: &Stop) {
    while let Ok(left) = at.duration_since(std::time::SystemTime::now()) {
        if stop.is_stopped() || left.is_zero() {
            return;
        }
        // Short sleeps, so a Ctrl-C while waiting ends the wait.
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

/// The endpoints of a settings, resolved (once per run) and checked: what can
/// fail before a run starts, so a caller can check it before it creates
/// its output files. An endpoint with faults gets its faults' shared
/// state here; each core opens its own proxy in front of it.
pub struct Resolved {
    addrs: Vec<Vec<std::net::SocketAddr>>,
    faults: Option<crate::fault::Running>,
}

/// Resolve every endpoint's host, check that each endpoint can be
/// prepared (each core prepares its own when the run starts), and set up
/// the faults of the endpoints that have faults.
///
/// # Errors
/// When an endpoint does not resolve or cannot be prepared, or a proxy
/// cannot listen.
pub fn resolve(settings: &Settings) -> Result<Resolved, RunError> {
    let mut addrs = Vec::with_capacity(settings.endpoints.len());
    for spec in &settings.endpoints {
        let a = endpoint::resolve(&spec.host, spec.port).map_err(|e| RunError::Resolve {
            label: spec.label.clone(),
            host: spec.host.clone(),
            error: e.to_string(),
        })?;
        Prepared::new(
            spec.clone(),
            a.clone(),
            settings.tls.clone(),
            settings.transport.clone(),
        )
        .map_err(RunError::Endpoint)?;
        addrs.push(a);
    }
    let faults = settings
        .faults
        .iter()
        .any(|f| !f.is_empty())
        .then(|| crate::fault::start(&settings.faults, &addrs, settings.interval));
    Ok(Resolved { addrs, faults })
}

/// Carry out a run. Blocking: returns when every core has finished, after
/// showing each interval to `observer`.
///
/// # Errors
/// When an endpoint does not resolve or the engine's threads cannot start;
/// faults of requests are counted, never returned.
pub fn run(
    settings: &Arc<Settings>,
    input: Workload,
    stop: &Stop,
    observer: &mut dyn Observer,
) -> Result<RunOutput, RunError> {
    run_resolved(settings, resolve(settings)?, input, stop, observer)
}

/// [`run`] with the endpoints already resolved by [`resolve`].
///
/// # Errors
/// When the engine's threads cannot start (preparing an endpoint cannot
/// fail once [`resolve`] has checked it).
pub fn run_resolved(
    settings: &Arc<Settings>,
    Resolved { addrs, faults }: Resolved,
    input: Workload,
    stop: &Stop,
    observer: &mut dyn Observer,
) -> Result<RunOutput, RunError> {
    let cores = Cores::of(settings);
    let state = Arc::new(Mutex::new(InputState::default()));
    let inputs = core_inputs(settings, cores, input, &state)?;
    // The cores and this thread: the clock starts when every connection
    // is open and `--start-at` has come.
    let barrier = Arc::new(Barrier::new(cores.count + 1));
    let (ticks, collector) = std::sync::mpsc::channel();
    let judge = judge_thread(settings, stop, &ticks)?;
    let halts: Vec<_> = (settings.endpoints.iter())
        .map(|spec| Arc::new(endpoint::Halt::new(&spec.label)))
        .collect();
    let launch = Launch {
        settings,
        cores,
        addrs: &addrs,
        halts: &halts,
        faults: faults.as_ref(),
        stop,
        start_barrier: &barrier,
        ticks: &ticks,
        judge: judge.as_ref(),
    };
    for (c, input) in inputs.into_iter().enumerate() {
        let job = launch.job(c, input)?;
        spawn_core(c, job, ticks.clone())?;
    }
    drop(ticks);
    start(settings, stop, &barrier, faults.as_ref());
    let collected = collect(
        settings,
        Participants {
            cores: cores.count,
            judge: judge.as_ref(),
        },
        &collector,
        faults.as_ref(),
        observer,
    );
    if let Some(j) = judge {
        j.join();
    }
    let (mut stats, elapsed) = collected?;
    if let Some(f) = &faults {
        // What the faults did after the last interval.
        f.take_into(&mut stats, u64::MAX);
    }
    Ok(run_output(stats, elapsed, &state, stop))
}

/// How many cores a run takes, and what they share.
#[derive(Clone, Copy)]
struct Cores {
    /// Cores to run on.
    count: usize,
    /// Requests in flight per endpoint, over every core.
    in_flight: usize,
}

impl Cores {
    /// Closed model: no more cores than requests in flight. Open model:
    /// every core shares the schedule, up to --max-in-flight.
    fn of(settings: &Settings) -> Cores {
        let in_flight = match settings.open {
            Some(_) => settings.max_in_flight,
            None => settings.concurrency,
        };
        Cores {
            count: settings.threads.min(in_flight).max(1),
            in_flight,
        }
    }

    /// Core `c`'s share of what the cores divide.
    fn share(self, c: usize) -> crate::model::Share {
        crate::model::Share::new(c, self.count)
    }
}

/// Each core's input: its share of the repeated request or of the flow
/// instances, or the batches of a request stream, which a thread started
/// here reads into `state`.
fn core_inputs(
    settings: &Settings,
    cores: Cores,
    input: Workload,
    state: &Arc<Mutex<InputState>>,
) -> Result<Vec<CoreInput>, RunError> {
    let mut inputs: Vec<CoreInput> = Vec::with_capacity(cores.count);
    // The quota counts counted units only; warm-up ones come on top (see
    // `Feed::take_now`).
    let quota = |c: usize| settings.stop_after.count.map(|n| cores.share(c).share(n));
    // Core c of shard I of N numbers its flow instances (and repeats of
    // one request) c·N + I, then
    // every (cores·N)th: together, over cores and shards, 0, 1, 2, ...
    // with no number twice.
    let flows = |mix: Arc<crate::flow::Mix>| {
        (0..cores.count).map(move |c| {
            let part = settings.shard.part(c, cores.count);
            CoreInput::Flow {
                mix: mix.clone(),
                next: part.index,
                step: part.count,
                remaining: quota(c),
            }
        })
    };
    match input {
        Workload::Repeat(request) => {
            // Numbered as flow instances are.
            for c in 0..cores.count {
                let part = settings.shard.part(c, cores.count);
                inputs.push(CoreInput::Repeat {
                    request: request.clone(),
                    next: part.index,
                    step: part.count,
                    remaining: quota(c),
                });
            }
        }
        Workload::Flow(flow) => inputs.extend(flows(Arc::new(crate::flow::Mix::one(flow)))),
        Workload::Mix(mix) => inputs.extend(flows(mix)),
        Workload::Stream(source) => {
            let (tx, rx) = async_channel::bounded(cores.count * 4);
            // The input thread may be blocked reading a pipe when the run
            // ends; it is not joined and ends with the process.
            drop(reader::spawn(
                source,
                settings
                    .stop_after
                    .count
                    .map(|n| n + settings.warmup.count.unwrap_or(0)),
                settings.strict,
                match (cores.count, settings.rate()) {
                    (1, _) => reader::MAX_BATCH_ONE_CORE,
                    (n, Some(rate)) => rate.batch(n).min(reader::MAX_BATCH),
                    (_, None) => reader::MAX_BATCH,
                },
                tx,
                state.clone(),
            )?);
            for _ in 0..cores.count {
                inputs.push(CoreInput::Batches(rx.clone()));
            }
        }
    }
    Ok(inputs)
}

/// What every core's job is made from.
struct Launch<'a> {
    settings: &'a Arc<Settings>,
    cores: Cores,
    addrs: &'a [Vec<std::net::SocketAddr>],
    /// Per endpoint, whether it was stopped, shared by every core.
    halts: &'a [Arc<endpoint::Halt>],
    faults: Option<&'a crate::fault::Running>,
    stop: &'a Stop,
    start_barrier: &'a Arc<Barrier>,
    ticks: &'a std::sync::mpsc::Sender<CoreMsg>,
    judge: Option<&'a Judges>,
}

/// One core's way to every endpoint.
struct CoreLinks {
    links: Vec<Prepared>,
    /// The core's own fault proxies, when an endpoint has faults.
    proxies: Option<crate::fault::CoreProxies>,
    /// Per endpoint, the ledger of its faults.
    ledgers: Vec<Option<crate::fault::Ledger>>,
}

impl Launch<'_> {
    /// Core `c`'s job: its share of the connections, slots and warm-up,
    /// its part of the schedule, its links and its input.
    fn job(&self, c: usize, input: CoreInput) -> Result<CoreJob, RunError> {
        let settings = self.settings;
        let share = |n: usize| self.cores.share(c).share_of(n);
        let by_position = matches!(input, CoreInput::Batches(_));
        let mut transport = settings.transport.clone();
        transport.max_connections = transport.max_connections.map(|n| share(n).max(1));
        let CoreLinks {
            links,
            proxies,
            ledgers,
        } = self.links(&transport)?;
        let slots = share(self.cores.in_flight).max(1);
        // Open model: also the connections the rate needs (more open in
        // the background as the run needs them).
        let warm = settings
            .rate()
            .map_or(0, pace::Rate::connections)
            .max(settings.concurrency);
        let warm = share(warm).clamp(1, slots);
        Ok(CoreJob {
            settings: settings.clone(),
            links,
            slots,
            warm,
            schedule: settings.open.as_ref().map(|shape| {
                pace::Schedule::new(shape.clone(), settings.shard, c, self.cores.count)
            }),
            // A stream's warm-up goes by position in the input, since the
            // cores take its batches unevenly; anything else each core
            // makes itself, in equal shares.
            warmup: StopAfter {
                count: settings
                    .warmup
                    .count
                    .filter(|_| !by_position)
                    .map(|n| share(n as usize) as u64),
                duration: settings.warmup.duration,
            },
            warmup_below: settings.warmup.count.filter(|_| by_position),
            input,
            stop: self.stop.clone(),
            start_barrier: self.start_barrier.clone(),
            ticks: self.ticks.clone(),
            part: settings.shard.part(c, self.cores.count),
            judge: self.judge.map(Judges::to),
            core: c,
            ledgers,
            proxies,
        })
    }

    /// A core's links to every endpoint over `transport`; an endpoint with
    /// faults gets this core's own proxy in front of it.
    fn links(&self, transport: &endpoint::TransportOptions) -> Result<CoreLinks, RunError> {
        let settings = self.settings;
        let (proxies, proxied, ledgers) = match self.faults {
            Some(f) => {
                let l = f.listen()?;
                (Some(l.proxies), l.addrs, l.ledgers)
            }
            None => {
                let n = settings.endpoints.len();
                (None, vec![None; n], (0..n).map(|_| None).collect())
            }
        };
        let mut links = Vec::with_capacity(settings.endpoints.len());
        for (((spec, a), p), halt) in settings
            .endpoints
            .iter()
            .zip(self.addrs)
            .zip(proxied)
            .zip(self.halts)
        {
            let mut link = Prepared::new(
                spec.clone(),
                p.map_or_else(|| a.clone(), |p| vec![p]),
                settings.tls.clone(),
                transport.clone(),
            )
            .map_err(RunError::Endpoint)?;
            link.share_halt(halt.clone());
            links.push(link);
        }
        Ok(CoreLinks {
            links,
            proxies,
            ledgers,
        })
    }
}

/// Core `c`'s thread: it carries out `job`, then sends its result to
/// `done`.
fn spawn_core(
    c: usize,
    job: CoreJob,
    done: std::sync::mpsc::Sender<CoreMsg>,
) -> Result<(), RunError> {
    std::thread::Builder::new()
        .name(format!("versus-core-{c}"))
        .spawn(move || {
            let result = worker::run(job);
            let _ = done.send(CoreMsg::Done { core: c, result });
        })?;
    Ok(())
}

/// The judge thread, when answers are compared: it hands its statistics
/// to the collector as the cores do.
fn judge_thread(
    settings: &Arc<Settings>,
    stop: &Stop,
    ticks: &std::sync::mpsc::Sender<CoreMsg>,
) -> Result<Option<Judges>, RunError> {
    if settings.endpoints.len() < 2 || !settings.comparer.enabled() {
        return Ok(None);
    }
    let to = ticks.clone();
    let hand_over = move |stats, last| to.send(CoreMsg::Judged { stats, last }).is_ok();
    Ok(Some(Judges::spawn(
        settings.clone(),
        stop.clone(),
        hand_over,
    )?))
}

/// Start the clock: once `--start-at` has come (at once without it), this
/// thread joins the cores at the start barrier, and the faults count from
/// then on.
fn start(
    settings: &Settings,
    stop: &Stop,
    barrier: &Barrier,
    faults: Option<&crate::fault::Running>,
) {
    if let Some(at) = settings.start_at {
        wait_until(at, stop);
    }
    barrier.wait();
    if let Some(f) = faults {
        f.clock_started();
    }
}

/// The run's output: the cores' merged statistics and the input's.
fn run_output(
    stats: RunStats,
    elapsed: Duration,
    state: &Mutex<InputState>,
    stop: &Stop,
) -> RunOutput {
    let (input, input_error) = match state.lock() {
        Ok(s) => (s.stats.clone(), s.error.clone()),
        Err(_) => (InputStats::default(), None),
    };
    RunOutput {
        stats,
        input,
        interrupted: stop.interrupted() && input_error.is_none(),
        input_error,
        elapsed,
    }
}
