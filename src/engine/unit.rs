//! The engine's unit of work and what an endpoint makes of it: a request
//! of the stream (a one-step flow, sent as it is, with nothing to build or
//! take), or an instance of a [`Flow`], whose steps run one after another
//! at each endpoint with that endpoint's own earlier answers.

use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::endpoint::Slot;
use crate::flow::{Context, Flow, Reply, StepError};
use crate::model::Outcome;
use crate::model::Request;

/// What one place of the lead window asks every endpoint to do.
#[derive(Clone, Debug)]
pub(crate) enum Work {
    /// One request, the same at every endpoint.
    Request(Request),
    /// Instance `n` of the run's flows: flow `k` of the mix.
    Flow(usize, u64),
}

/// What one endpoint made of a unit of work.
pub(crate) enum Done {
    /// The outcome of a request, and whether it was an error (as
    /// `judge::classify` decided when it was recorded).
    One(Outcome, bool),
    /// The steps of a flow instance, as far as they went.
    Flow(FlowRun),
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
/// steps are due when the step before them ends). `step_done` is called
/// as each step ends, to record it while the instance goes on.
pub(crate) async fn run_flow(
    flow: &Flow,
    slot: &mut Slot,
    endpoint: usize,
    label: &Rc<str>,
    instance: u64,
    due: Option<Instant>,
    mut step_done: impl FnMut(usize, &StepRun),
) -> FlowRun {
    let began = due.unwrap_or_else(Instant::now).min(Instant::now());
    let mut replies: Vec<Reply> = Vec::with_capacity(flow.steps().len());
    let mut vars = crate::flow::Vars::new();
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
        let run = match step.make(ctx).await {
            Err(e) => StepRun {
                request: Request::line(instance, bytes::Bytes::new()),
                outcome: None,
                failure: Some(StepFailure::NotBuilt(e)),
            },
            Ok(call) => {
                let request = call.into_request(instance);
                let outcome = slot
                    .send(&request, true, if k == 0 { due } else { None })
                    .await;
                let failure = match &outcome.result {
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
                            Ok(()) => step.take(&reply, &mut vars).err().map(StepFailure::Extract),
                        };
                        replies.push(reply);
                        checked
                    }
                };
                StepRun {
                    request,
                    outcome: Some(outcome),
                    failure,
                }
            }
        };
        step_done(k, &run);
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
