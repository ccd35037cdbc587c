//! The judge threads: where answers that differ are judged, off the cores
//! that time answers (`Settings::judges` of them, by default the cores
//! the timing threads leave free, at least one). A core only checks that every endpoint's answer is
//! the same by the cheap test (status, compared headers, bytes), so most
//! units never leave it; a unit whose answers differ comes here with its
//! own copies of the request and the outcomes, and its findings, samples,
//! noise counts and mismatch-log lines are made here. Judging large
//! answers (a traversal's 10,000 items, a diff of long bodies) takes from
//! milliseconds to seconds: on a core, every answer in flight there
//! waited for it and was timed as the server's.
//!
//! Each thread records into statistics of its own and hands them to the
//! collector at most once an interval; the collector adds them to the
//! next interval it shows and holds the run's last interval until the
//! threads have judged everything the cores handed over.
//!
//! The queue is bounded by the bytes it holds (`Settings::judge_memory`):
//! a unit that would take it past the bound is judged by its core, which
//! counts it (`judged_on_core`), so no verdict is lost and the report
//! says which latencies may hold judging time. Once the run has been
//! stopped (Ctrl-C) for the drain period, neither this thread nor a core
//! judges any more: what is left is counted as not judged (`not_judged`),
//! so a long backlog cannot hold the report back.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use std::time::Instant;

use super::{Settings, Stop};
use crate::compare::method::MethodName;
use crate::compare::sample::sample;
use crate::model::{Outcome, Request};
use crate::stats::{count_group, part, RunStats};

/// One unit's answers that differ: its request (or flow step's request),
/// every endpoint's outcome in endpoint order, and, for a flow step, its
/// name and a paged step's item key.
pub(crate) struct Differing {
    req: Request,
    outcomes: Vec<Option<Outcome>>,
    step: Option<(String, Option<String>)>,
    /// An endpoint's outcome was an error.
    failed: bool,
    /// What it holds in memory, about: counted against the queue's bound.
    bytes: u64,
}

impl Differing {
    /// Copies of what judging needs (bodies are shared, not copied).
    pub(crate) fn new(
        req: &Request,
        outcomes: &[Option<&Outcome>],
        (step, failed): (Option<(&str, Option<&str>)>, bool),
    ) -> Differing {
        let mut unit = Differing {
            req: req.clone(),
            outcomes: outcomes.iter().map(|o| o.cloned()).collect(),
            step: step.map(|(name, key)| (name.to_string(), key.map(str::to_string))),
            failed,
            bytes: 0,
        };
        unit.bytes = unit.size();
        unit
    }

    /// The bytes this unit keeps alive: its bodies (shared, but held
    /// while it waits), compared headers and its own structures.
    fn size(&self) -> u64 {
        let answer = |o: &Outcome| {
            o.result.as_ref().map_or(0, |r| {
                let headers: usize = r
                    .headers
                    .iter()
                    .map(|(n, v)| n.as_str().len() + v.len())
                    .sum();
                r.body.len() + headers
            })
        };
        let own = std::mem::size_of::<Differing>()
            + self.outcomes.len() * std::mem::size_of::<Option<Outcome>>();
        let held: usize = self.outcomes.iter().flatten().map(answer).sum();
        (own + held + self.req.body.len()) as u64
    }

    /// Judge it and record the verdict into `stats`.
    pub(crate) fn record(&self, settings: &Settings, stats: &mut RunStats) {
        let outcomes: Vec<Option<&Outcome>> = self.outcomes.iter().map(Option::as_ref).collect();
        let step = self.step.as_ref().map(|(n, k)| (n.as_str(), k.as_deref()));
        record(settings, stats, &self.req, &outcomes, (step, self.failed));
    }
}

/// What the queue carries.
enum Job {
    Judge(Box<Differing>),
    /// Every core has ended: judge what is queued, then hand over the
    /// last statistics.
    Finish,
}

/// What the cores and the judge thread share of the queue: the bytes
/// waiting in it, their most, and how many units wait (for the progress
/// line). Touched only by units whose answers differ.
struct Backlog {
    /// The bound on `bytes`.
    limit: u64,
    bytes: AtomicU64,
    peak: AtomicU64,
    units: AtomicU64,
    /// The run's stop, and how long judging goes on after it.
    stop: Stop,
    drain: std::time::Duration,
}

impl Backlog {
    /// The run has been stopped for the drain period: what is still to
    /// judge is counted as not judged.
    fn gave_up(&self) -> bool {
        self.stop.stopped_for().is_some_and(|d| d >= self.drain)
    }

    /// A unit of `size` bytes left the queue.
    fn release(&self, size: u64) {
        self.bytes.fetch_sub(size, Ordering::AcqRel);
        self.units.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A core's way to the judge thread.
#[derive(Clone)]
pub(crate) struct ToJudge {
    to: Sender<Job>,
    backlog: Arc<Backlog>,
}

impl ToJudge {
    /// Judging has given up (the run has been stopped for the drain
    /// period): a unit the queue has no room for is not judged on the
    /// core either.
    pub(crate) fn gave_up(&self) -> bool {
        self.backlog.gave_up()
    }

    /// Hand `unit` over; given back when it would take the queue past its
    /// bound in bytes, or the thread is gone.
    pub(crate) fn hand(&self, unit: Box<Differing>) -> Result<(), Box<Differing>> {
        let b = &self.backlog;
        let size = unit.bytes;
        let fits = |queued: u64| queued.checked_add(size).filter(|n| *n <= b.limit);
        let Ok(before) = b
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, fits)
        else {
            return Err(unit);
        };
        b.peak.fetch_max(before + size, Ordering::Relaxed);
        b.units.fetch_add(1, Ordering::Relaxed);
        self.to.send(Job::Judge(unit)).map_err(|e| {
            b.release(size);
            match e.0 {
                Job::Judge(u) => u,
                Job::Finish => unreachable!("only units are handed over"),
            }
        })
    }
}

/// The judge threads, as the engine sees them.
pub(crate) struct Judges {
    to: ToJudge,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Judges {
    /// Start `settings.judges` threads on one queue. `hand_over(stats,
    /// last)` gives a thread's statistics to the collector (`last` once,
    /// from the thread that ends last, after [`Judges::finish`]); it
    /// returns false once the collector is gone. After `stop`, they judge
    /// for at most `settings.drain` more.
    pub(crate) fn spawn(
        settings: Arc<Settings>,
        stop: Stop,
        hand_over: impl FnMut(RunStats, bool) -> bool + Send + 'static,
    ) -> std::io::Result<Judges> {
        let (to, from) = crossbeam_channel::unbounded();
        let backlog = Arc::new(Backlog {
            limit: settings.judge_memory,
            bytes: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            units: AtomicU64::new(0),
            stop,
            drain: settings.drain,
        });
        let n = settings.judges.max(1);
        let running = Arc::new(AtomicUsize::new(n));
        let hand_over = Arc::new(Mutex::new(hand_over));
        let threads = (0..n)
            .map(|k| {
                let queue = Queue {
                    from: from.clone(),
                    backlog: backlog.clone(),
                };
                let (settings, running, hand_over) =
                    (settings.clone(), running.clone(), hand_over.clone());
                // Only the thread that ends last says its statistics are
                // the last: counted under the lock, so that every other
                // thread's last statistics were handed over before.
                let hand = move |stats, finished: bool| {
                    let mut hand_over = hand_over.lock().unwrap_or_else(|e| e.into_inner());
                    let last = finished && running.fetch_sub(1, Ordering::AcqRel) == 1;
                    (*hand_over)(stats, last)
                };
                std::thread::Builder::new()
                    .name(format!("versus-judge-{k}"))
                    .spawn(move || judge_all(&settings, &queue, hand))
            })
            .collect::<std::io::Result<_>>()?;
        Ok(Judges {
            to: ToJudge { to, backlog },
            threads,
        })
    }

    /// A handle for a core.
    pub(crate) fn to(&self) -> ToJudge {
        self.to.clone()
    }

    /// Units handed over and not judged yet.
    pub(crate) fn left(&self) -> u64 {
        self.to.backlog.units.load(Ordering::Relaxed)
    }

    /// Every core has ended (what each handed over is in the queue before
    /// this): the threads judge the rest and hand over their last
    /// statistics.
    pub(crate) fn finish(&self) {
        for _ in &self.threads {
            let _ = self.to.to.send(Job::Finish);
        }
    }

    /// Wait for the threads to end, after [`Judges::finish`].
    pub(crate) fn join(self) {
        drop(self.to);
        for t in self.threads {
            let _ = t.join();
        }
    }
}

/// A judge thread's end of the queue.
struct Queue {
    from: Receiver<Job>,
    backlog: Arc<Backlog>,
}

/// A thread's loop: judge each unit as it comes (once the run has been
/// stopped for the drain period, count it as not judged instead); hand
/// the statistics over once an interval when there are any, and at the
/// end (a `Finish` each thread takes one of, after every unit).
fn judge_all(
    settings: &Settings,
    queue: &Queue,
    mut hand_over: impl FnMut(RunStats, bool) -> bool,
) {
    let n = settings.endpoints.len();
    let mut stats = RunStats::new(n);
    let mut judged = 0u64;
    let mut handed = Instant::now();
    loop {
        let job = queue.from.recv_timeout(settings.interval);
        let finished = match job {
            Ok(Job::Judge(unit)) => {
                match queue.backlog.gave_up() {
                    true => stats.verdicts.not_judged += 1,
                    false => unit.record(settings, &mut stats),
                }
                queue.backlog.release(unit.bytes);
                judged += 1;
                false
            }
            Ok(Job::Finish) | Err(RecvTimeoutError::Disconnected) => true,
            Err(RecvTimeoutError::Timeout) => false,
        };
        if finished || (judged > 0 && handed.elapsed() >= settings.interval) {
            let mut stats = std::mem::replace(&mut stats, RunStats::new(n));
            stats.verdicts.judge_queue_peak = queue.backlog.peak.load(Ordering::Relaxed);
            if !hand_over(stats, finished) || finished {
                return;
            }
            (judged, handed) = (0, Instant::now());
        }
    }
}

/// Judge the outcomes of one request (or, with `step`, one flow step:
/// its name, and the item key when it pages) at every endpoint, and
/// record the verdict (the core counted it as compared, and under its
/// method); a request that met an error (`failed`) and did not mismatch
/// goes to the taps as failed.
pub(crate) fn record(
    settings: &Settings,
    stats: &mut RunStats,
    req: &Request,
    outcomes: &[Option<&Outcome>],
    (step, failed): (Option<(&str, Option<&str>)>, bool),
) {
    let kind = || match step {
        Some((name, _)) => MethodName::step(name),
        None => settings.method_of(req),
    };
    let mut j = settings.comparer.judge(&kind, outcomes);
    if let Some((_, Some(key))) = step {
        for f in &mut j.findings {
            crate::flow::paginate::regroup(f, key);
        }
        // A duplicate at the reference is found against every other
        // endpoint: it is one finding.
        let mut n = 0;
        while n < j.findings.len() {
            let f = &j.findings[n];
            let again = j.findings[..n]
                .iter()
                .any(|g| g.endpoint == f.endpoint && g.at == f.at && g.kind == f.kind);
            match again {
                true => drop(j.findings.remove(n)),
                false => n += 1,
            }
        }
    }
    let v = &mut stats.verdicts;
    if j.fell_back {
        v.fell_back += 1;
    }
    if settings.comparer.twin().is_some() {
        for f in unique(j.reference_pair.iter()) {
            v.noise_field(f).reference_pair += 1;
        }
        for f in unique(j.cancelled.iter()) {
            let n = v.noise_field(f);
            n.candidate += 1;
            n.cancelled += 1;
        }
        for f in unique(j.findings.iter().map(|f| &f.field)) {
            v.noise_field(f).candidate += 1;
        }
        if !j.mismatched && !j.cancelled.is_empty() {
            v.noise_only += 1;
        }
    }
    if !j.mismatched {
        if failed {
            for tap in &settings.taps {
                tap.failed(settings, req, req.seq);
            }
        }
        return;
    }
    v.mismatched += 1;
    for (e, s) in stats.endpoints.iter_mut().enumerate().skip(1) {
        if j.findings.iter().any(|f| f.endpoint == e) {
            s.mismatched += 1;
            if let Some((name, _)) = step {
                part(&mut s.steps, name).mismatched += 1;
            }
        }
    }
    let v = &mut stats.verdicts;
    let group = kind().group;
    // A field counts once per request; a paged step's, once per item.
    let per_item = matches!(step, Some((_, Some(_))));
    for (n, f) in j.findings.iter().enumerate() {
        let seen_before = j.findings[..n]
            .iter()
            .any(|g| g.endpoint == f.endpoint && g.field == f.field && g.kind == f.kind);
        if seen_before && !per_item {
            continue;
        }
        let label = &settings.endpoints[f.endpoint].label;
        count_group(&mut v.groups, &group, &f.field, &f.kind, label, 1, || {
            let reference = settings.endpoints[0].label.as_str();
            vec![sample(req, outcomes, f, (reference, label))]
        });
    }
    for tap in &settings.taps {
        tap.mismatch(settings, req, &group, outcomes, &j.findings);
    }
}

/// The distinct strings of `items`, in first-seen order.
fn unique<'a>(items: impl Iterator<Item = &'a String>) -> Vec<&'a String> {
    let mut out: Vec<&String> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}
