//! The engine's unit of work and what an endpoint makes of it: a request
//! of the stream (a one-step flow, sent as it is, with nothing to build or
//! take), or an instance of a [`Flow`], whose steps run one after another
//! at each endpoint with that endpoint's own earlier answers.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::endpoint::Slot;
use crate::flow::paginate::{AfterPage, Paging, Traversal, Walk};
use crate::flow::{Call, Context, Flow, Reply, Step, StepError, Vars};
use crate::model::Outcome;
use crate::model::Request;

/// What one place of the lead window asks every endpoint to do.
#[derive(Clone, Debug)]
pub(crate) enum Unit {
    /// One request, the same at every endpoint, and its number in the
    /// run (a stream's request's own `seq`; each repeat's in single-request
    /// mode): shared, so neither the endpoints of a compared stream nor
    /// the repeats of single-request mode copy it.
    Request(Rc<Request>, u64),
    /// Instance `n` of the run's flows: flow `k` of the mix.
    Flow(usize, u64),
}

/// What one endpoint made of a unit of work.
pub(crate) enum UnitResult {
    /// The outcome of a request (always there: an `Option` so that one
    /// endpoint's is judged where it lies, as a slice of one), and whether
    /// it was an error (as `judge::classify` decided when it was recorded).
    Request {
        /// Always there once the request ends.
        outcome: Option<Outcome>,
        /// Whether it was counted as an error.
        error: bool,
    },
    /// The steps of a flow instance, as far as they went.
    Flow(FlowRun),
}

impl UnitResult {
    /// A request's result put in `done`, as the places of its outcome
    /// (none yet) and its error flag (false), for it to be made in place.
    pub(crate) fn request_places(
        done: &mut Option<UnitResult>,
    ) -> (&mut Option<Outcome>, &mut bool) {
        match done.insert(UnitResult::Request {
            outcome: None,
            error: false,
        }) {
            UnitResult::Request { outcome, error } => (outcome, error),
            UnitResult::Flow(_) => unreachable!("just made a request's"),
        }
    }
}

/// One flow instance at one endpoint.
pub(crate) struct FlowRun {
    /// The steps that ran, in order; the last one failed when the
    /// instance did not succeed. Steps after it were skipped.
    pub steps: Vec<StepRun>,
    /// Whether every step succeeded.
    pub succeeded: bool,
    /// From the first step's start (its due time in the open model) to the
    /// end of the last one.
    pub duration: Duration,
}

/// One step of a flow instance at one endpoint.
pub(crate) struct StepRun {
    /// The request as built for this endpoint (empty when it could not be
    /// built).
    pub request: Request,
    /// Its outcome; `None` when the request could not be built. Taken out
    /// when the step is judged.
    pub outcome: Option<Outcome>,
    /// Why the instance ended here, if it did.
    pub failure: Option<StepFailure>,
    /// For a paged step, the traversal (and `outcome` holds its items as
    /// one answer when it reached the last page).
    pub traversal: Option<Traversal>,
}

/// What `run_flow` reports as an instance goes on at one endpoint.
pub(crate) enum Event<'a> {
    /// A step ended.
    Step(&'a StepRun),
    /// A page of a paged step was answered, at this depth (from 1).
    Page(u32, &'a StepRun),
    /// A paged step's traversal ended (its result in `traversal`).
    Traversal(&'a StepRun),
}

/// Why a flow instance ended at a step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum StepFailure {
    /// The request could not be built (a value missing from an earlier
    /// answer, a bad header).
    NotBuilt(StepError),
    /// The answer was an error: a failure, or the check rejected an error
    /// status (counted as an error already).
    Error(StepError),
    /// The answer was not an error but failed the step's check.
    Check(StepError),
    /// A value the step takes from the answer was not there.
    Extract(StepError),
}

impl StepFailure {
    /// The reason as reports group it.
    pub fn reason(&self) -> String {
        match self {
            StepFailure::NotBuilt(e) => format!("not built: {e}"),
            StepFailure::Error(e) => e.to_string(),
            StepFailure::Check(e) => format!("check failed: {e}"),
            StepFailure::Extract(e) => format!("extract failed: {e}"),
        }
    }
}

/// Run instance `instance` of `flow` at endpoint `endpoint` through
/// `slot`. `due` is the open model's due time of the first step (later
/// steps are due when the step before them ends). `event` is called as
/// each step (and each page of a paged step) ends, to record it while the
/// instance goes on.
pub(crate) async fn run_flow(
    flow: &Flow,
    slot: &mut Slot,
    endpoint: usize,
    label: &Rc<str>,
    instance: u64,
    due: Option<Instant>,
    mut event: impl FnMut(usize, Event<'_>),
) -> FlowRun {
    let began = due.unwrap_or_else(Instant::now).min(Instant::now());
    // Shared with each step's context, not copied into it: the context
    // is gone when the step's request is built, so adding to them below
    // copies nothing.
    let mut replies: Rc<Vec<Reply>> = Rc::new(Vec::with_capacity(flow.steps().len()));
    let mut vars: Rc<Vars> = Rc::default();
    let mut steps = Vec::with_capacity(flow.steps().len());
    let mut succeeded = true;
    for (k, step) in flow.steps().iter().enumerate() {
        let ctx = Context {
            endpoint,
            label: label.clone(),
            instance,
            replies: replies.clone(),
            vars: vars.clone(),
        };
        let due = if k == 0 { due } else { None };
        let run = match (step.make(ctx).await, step.paging()) {
            (Err(e), _) => StepRun {
                request: Request::line(instance, bytes::Bytes::new()),
                outcome: None,
                failure: Some(StepFailure::NotBuilt(e)),
                traversal: None,
            },
            (Ok(call), None) => {
                let request = call.into_request(instance);
                let outcome = slot.send(&request, true, due).await;
                let failure = answered(
                    step,
                    &outcome,
                    Rc::make_mut(&mut replies),
                    Some(Rc::make_mut(&mut vars)),
                );
                StepRun {
                    request,
                    outcome: Some(outcome),
                    failure,
                    traversal: None,
                }
            }
            (Ok(call), Some(paging)) => {
                let page = |depth, run: &StepRun| event(k, Event::Page(depth, run));
                let run = traverse(
                    step,
                    paging,
                    slot,
                    call,
                    endpoint,
                    instance,
                    due,
                    Rc::make_mut(&mut vars),
                    page,
                )
                .await;
                if let Some(Ok(r)) = run.outcome.as_ref().map(|o| &o.result) {
                    Rc::make_mut(&mut replies).push(Reply {
                        status: r.status,
                        headers: Vec::new(),
                        body: r.body.clone(),
                        grpc: None,
                    });
                }
                run
            }
        };
        match run.traversal {
            Some(_) => event(k, Event::Traversal(&run)),
            None => event(k, Event::Step(&run)),
        }
        let failed = run.failure.is_some();
        steps.push(run);
        if failed {
            succeeded = false;
            break;
        }
    }
    FlowRun {
        steps,
        succeeded,
        duration: began.elapsed(),
    }
}

/// Judge an answer by the step's check, keep it among the replies, and
/// take the step's values from it (when `vars` is given): why the step
/// failed, if it did.
fn answered(
    step: &Step,
    outcome: &Outcome,
    replies: &mut Vec<Reply>,
    vars: Option<&mut Vars>,
) -> Option<StepFailure> {
    match &outcome.result {
        Err(f) => Some(StepFailure::Error(StepError(f.name().to_string()))),
        Ok(r) => {
            let reply = Reply {
                status: r.status,
                headers: r.headers.clone(),
                body: r.body.clone(),
                grpc: r.grpc.clone(),
            };
            let checked = match step.check(&reply) {
                Err(e) if reply.is_error() => Some(StepFailure::Error(e)),
                Err(e) => Some(StepFailure::Check(e)),
                Ok(()) => {
                    vars.and_then(|vars| step.take(&reply, vars).err().map(StepFailure::Extract))
                }
            };
            replies.push(reply);
            checked
        }
    }
}

/// Follow a paged step's pages from `call` to the last at this endpoint:
/// each page is sent, checked and reported to `page`; values are taken
/// from the first. The result holds the items of every page as one
/// answer when the traversal reached the last page.
#[allow(clippy::too_many_arguments)]
async fn traverse(
    step: &Step,
    paging: &Paging,
    slot: &mut Slot,
    first: Call,
    endpoint: usize,
    instance: u64,
    due: Option<Instant>,
    vars: &mut Vars,
    mut page: impl FnMut(u32, &StepRun),
) -> StepRun {
    let spec = slot.endpoint();
    let (authority, base) = (spec.authority.clone(), spec.base_path.clone());
    let mut walk = Walk::new(paging, endpoint, &authority, &base);
    let started = Instant::now();
    let mut call = first;
    let mut request = call.clone().into_request(instance);
    let first_request = request.clone();
    let mut pages_seen = Vec::new();
    let mut failure = None;
    let mut last = None;
    loop {
        let depth = walk.done.pages + 1;
        let outcome = slot
            .send(&request, true, if depth == 1 { due } else { None })
            .await;
        let taking = (depth == 1).then_some(&mut *vars);
        pages_seen.clear();
        let failed = answered(step, &outcome, &mut pages_seen, taking);
        let run = StepRun {
            request,
            outcome: Some(outcome),
            failure: failed.clone(),
            traversal: None,
        };
        page(depth, &run);
        if failed.is_some() {
            walk.done.pages += 1;
            failure = failed;
            last = run.outcome;
            break;
        }
        let wire = match run.outcome.as_ref().map(|o| &o.result) {
            Some(Ok(r)) => r.body_len,
            _ => 0,
        };
        let Some(reply) = pages_seen.last() else {
            break;
        };
        match walk.page(&call, reply, wire) {
            AfterPage::Last => break,
            AfterPage::Stop(kind, why) => {
                failure = Some(StepFailure::Check(StepError(format!(
                    "pagination stopped: {kind}: {why}"
                ))));
                walk.done.stop = Some((kind, why));
                break;
            }
            AfterPage::Next(next) => {
                request = next.clone().into_request(instance);
                call = next;
            }
        }
    }
    let took = started.elapsed();
    let (mut traversal, body) = walk.into_answer();
    traversal.time = took;
    let outcome = match (&failure, last) {
        (None, _) => Some(Outcome {
            result: Ok(crate::model::Response {
                status: 200,
                headers: Vec::new(),
                body_len: body.len() as u64,
                body,
                ttfb: took,
                grpc: None,
            }),
            latency: took,
            start: started,
            uncorrected: took,
            lag: None,
            connect: None,
            bytes_out: 0,
            port: 0,
        }),
        // A failed page is the step's answer (compared as a failure).
        (Some(StepFailure::Error(_)), Some(o)) => Some(o),
        _ => None,
    };
    StepRun {
        request: first_request,
        outcome,
        failure,
        traversal: Some(traversal),
    }
}
