//! A scenario file's part of the plan: the run's options with the
//! suite's endpoints, and the plan fitted to its steps (their names,
//! headers and comparison rules).

use super::Plan;
use crate::cli::RunArgs;
use crate::scenario::{Scenario, ScenarioError, Suite};

/// The run's options for this suite: `args` with the suite's
/// endpoints and their headers, the file's `stages` unless `--stages` or
/// `--rate` was given, and `--stop-after 10s` when neither a stop nor
/// stages were.
pub fn run_args(suite: &Suite, args: &RunArgs) -> RunArgs {
    let mut run = args.clone();
    run.endpoints.clone_from(&suite.endpoints);
    run.endpoint_headers
        .extend(suite.endpoint_headers.iter().cloned());
    run.faults.extend(suite.faults.iter().cloned());
    if run.stages.is_none() && run.rate.is_none() {
        run.stages.clone_from(&suite.stages);
    }
    if run.stop_after.is_none() && run.stages.is_none() {
        run.stop_after = Some("10s".to_string());
    }
    run
}

/// Refuse the options of a run that a scenario has no use for, before
/// its file is read or its endpoints reached.
///
/// # Errors
/// A `--template`: a scenario's steps are templates already.
pub fn check_args(args: &RunArgs) -> Result<(), ScenarioError> {
    match args.templates.first() {
        Some(t) => Err(ScenarioError(format!(
            "--template {t:?}: a template makes requests of a stream's lines, and a scenario's steps are templates already: give an endpoint its own version of a step ([step.endpoint.NAME])"
        ))),
        None => Ok(()),
    }
}

/// Fit a plan to the suite: keep the headers steps take values from,
/// and add each step's comparison rules as a `[step.NAME]` section.
///
/// # Errors
/// A step's rules that are not valid rules.
pub fn fit(suite: &Suite, plan: &mut Plan) -> Result<(), ScenarioError> {
    plan.notes.extend(suite.notes.iter().cloned());
    plan.grpc
        .step_methods
        .extend(suite.grpc_methods.iter().cloned());
    for h in &suite.headers_taken {
        let name = http::HeaderName::try_from(h.as_str())
            .map_err(|_| ScenarioError(format!("{h:?} is not a header name")))?;
        if !plan.engine.transport.keep_headers.contains(&name) {
            plan.engine_mut().transport.keep_headers.push(name);
        }
    }
    // As the engine names steps in reports: `scenario: step` when the
    // run has several scenarios.
    let several = suite.scenarios.len() > 1;
    let shown = |s: &Scenario, step: &str| match several {
        true => format!("{}: {step}", s.name),
        false => step.to_string(),
    };
    for s in &suite.scenarios {
        plan.steps.extend(s.steps.iter().map(|step| shown(s, step)));
        for (step, table) in &s.rules {
            let step = shown(s, step);
            plan.engine_mut()
                .comparer
                .add_step_rules(&step, table)
                .map_err(|e| ScenarioError(format!("step {step:?}: rules: {e}")))?;
        }
    }
    Ok(())
}
