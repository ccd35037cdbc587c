//! The judge thread: where answers that differ are judged, off the cores
//! that time answers. A core only checks that every endpoint's answer is
//! the same by the cheap test (status, compared headers, bytes), so most
//! units never leave it; a unit whose answers differ comes here with its
//! own copies of the request and the outcomes, and its findings, samples,
//! noise counts and mismatch-log lines are made here. Judging large
//! answers (a traversal's 10,000 items, a diff of long bodies) takes from
//! milliseconds to seconds: on a core, every answer in flight there
//! waited for it and was timed as the server's.
//!
//! The thread records into statistics of its own and hands them to the
//! collector at most once an interval; the collector adds them to the
//! next interval it shows and holds the run's last interval until this
//! thread has judged everything the cores handed over. When the queue is
//! full (judging is slower than answers come), the core judges the unit
//! itself and counts it (`judged_on_core`): no verdict is lost, and the
//! report says which latencies may hold judging time.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Instant;

use super::Settings;
use crate::compare::method::MethodName;
use crate::compare::sample::sample;
use crate::model::{Outcome, Request};
use crate::stats::{count_group, part, RunStats};

/// Units the queue holds before a core judges on its own: enough for a
/// burst of differing answers, bounded so memory is.
const QUEUE: usize = 4096;

/// One unit's answers that differ: its request (or flow step's request),
/// every endpoint's outcome in endpoint order, and, for a flow step, its
/// name and a paged step's item key.
pub(crate) struct Differing {
    req: Request,
    outcomes: Vec<Option<Outcome>>,
    step: Option<(String, Option<String>)>,
}

impl Differing {
    /// Copies of what judging needs (bodies are shared, not copied).
    pub(crate) fn new(
        req: &Request,
        outcomes: &[Option<&Outcome>],
        step: Option<(&str, Option<&str>)>,
    ) -> Differing {
        Differing {
            req: req.clone(),
            outcomes: outcomes.iter().map(|o| o.cloned()).collect(),
            step: step.map(|(name, key)| (name.to_string(), key.map(str::to_string))),
        }
    }

    /// Judge it and record the verdict into `stats`.
    pub(crate) fn record(&self, settings: &Settings, stats: &mut RunStats) {
        let outcomes: Vec<Option<&Outcome>> = self.outcomes.iter().map(Option::as_ref).collect();
        let step = self.step.as_ref().map(|(n, k)| (n.as_str(), k.as_deref()));
        record(settings, stats, &self.req, &outcomes, step);
    }
}

/// What the queue carries.
enum Job {
    Judge(Box<Differing>),
    /// Every core has ended: judge what is queued, then hand over the
    /// last statistics.
    Finish,
}

/// A core's way to the judge thread.
#[derive(Clone)]
pub(crate) struct ToJudge(SyncSender<Job>);

impl ToJudge {
    /// Hand `unit` over; given back when the queue is full.
    pub(crate) fn hand(&self, unit: Box<Differing>) -> Result<(), Box<Differing>> {
        self.0.try_send(Job::Judge(unit)).map_err(|e| match e {
            TrySendError::Full(Job::Judge(u)) | TrySendError::Disconnected(Job::Judge(u)) => u,
            _ => unreachable!("only units are handed over"),
        })
    }
}

/// The judge thread, as the engine sees it.
pub(crate) struct JudgeThread {
    to: ToJudge,
    thread: std::thread::JoinHandle<()>,
}

impl JudgeThread {
    /// Start it. `hand_over(stats, last)` gives its statistics to the
    /// collector (`last` once, after [`JudgeThread::finish`]); it returns
    /// false once the collector is gone.
    pub(crate) fn spawn(
        settings: Arc<Settings>,
        hand_over: impl FnMut(RunStats, bool) -> bool + Send + 'static,
    ) -> std::io::Result<JudgeThread> {
        let (to, from) = std::sync::mpsc::sync_channel(QUEUE);
        let thread = std::thread::Builder::new()
            .name("versus-judge".to_string())
            .spawn(move || judge_all(&settings, &from, hand_over))?;
        Ok(JudgeThread {
            to: ToJudge(to),
            thread,
        })
    }

    /// A handle for a core.
    pub(crate) fn to(&self) -> ToJudge {
        self.to.clone()
    }

    /// Every core has ended (what each handed over is in the queue before
    /// this): the thread judges the rest and hands over its last
    /// statistics.
    pub(crate) fn finish(&self) {
        let _ = self.to.0.send(Job::Finish);
    }

    /// Wait for the thread to end, after [`JudgeThread::finish`].
    pub(crate) fn join(self) {
        drop(self.to);
        let _ = self.thread.join();
    }
}

/// The thread's loop: judge each unit as it comes; hand the statistics
/// over once an interval when there are any, and at the end.
fn judge_all(
    settings: &Settings,
    from: &Receiver<Job>,
    mut hand_over: impl FnMut(RunStats, bool) -> bool,
) {
    let n = settings.endpoints.len();
    let mut stats = RunStats::new(n);
    let mut judged = 0u64;
    let mut handed = Instant::now();
    loop {
        let job = from.recv_timeout(settings.interval);
        let finished = match job {
            Ok(Job::Judge(unit)) => {
                unit.record(settings, &mut stats);
                judged += 1;
                false
            }
            Ok(Job::Finish) | Err(RecvTimeoutError::Disconnected) => true,
            Err(RecvTimeoutError::Timeout) => false,
        };
        if finished || (judged > 0 && handed.elapsed() >= settings.interval) {
            let stats = std::mem::replace(&mut stats, RunStats::new(n));
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
/// method).
pub(crate) fn record(
    settings: &Settings,
    stats: &mut RunStats,
    req: &Request,
    outcomes: &[Option<&Outcome>],
    step: Option<(&str, Option<&str>)>,
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
