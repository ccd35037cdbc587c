//! Recording what a slot did (the outcome's figures, a flow step's, a
//! traversal's), delivering it to the window, and judging a unit once
//! every endpoint has finished it.

use super::judge;
use super::state::{begin_stop, Core};
use super::unit::{StepFailure, StepRun, Unit, UnitResult};
use crate::model::Outcome;
use crate::model::Request;
use crate::stats::{self, RunStats};
use std::time::Instant;

/// A unit of work done at endpoint `e` (its result in `done`): a counted
/// request's outcome recorded (and whether it was an error noted with
/// it), the unit no longer in flight, and delivered.
pub(super) fn record_and_deliver(
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

/// Record a counted request's outcome at endpoint `e` as it ends (its
/// errors grouped under the flow step's name, if it is one); returns
/// whether it was an error.
pub(super) fn record(
    core: &Core,
    e: usize,
    req: &Request,
    outcome: &Outcome,
    step: Option<&str>,
) -> bool {
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
pub(super) fn record_step(core: &Core, e: usize, name: &str, step: &StepRun) {
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
pub(super) fn step_error(
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
pub(super) fn record_traversal(core: &Core, e: usize, name: &str, run: &StepRun) {
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
pub(super) fn step_sample(req: &Request, reason: &str) -> stats::MismatchSample {
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
pub(super) fn deliver(
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
pub(super) fn judge_work(core: &Core, work: &Unit, results: &[Option<UnitResult>], warmup: bool) {
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
