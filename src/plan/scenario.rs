//! A scenario file's part of the plan: the suite's endpoints (with their
//! headers and faults) and stages given to the plan with the run's other
//! options, and the plan fitted to its steps (their names, headers and
//! comparison rules).

use super::given::{Given, Said};
use super::{Plan, UsageError};
use crate::cli::RunArgs;
use crate::scenario::{Scenario, ScenarioError, Suite};

/// The plan for this suite with the rest of `args`, fitted to its steps.
///
/// # Errors
/// As [`Plan::new`], and a step's rules that are not valid rules.
pub fn plan(suite: &Suite, args: &RunArgs) -> Result<Plan, UsageError> {
    let mut plan = Plan::new(args, &given(suite, args), false)?;
    fit(suite, &mut plan).map_err(|e| UsageError(e.0))?;
    Ok(plan)
}

/// What the suite gives the plan: its endpoints with their headers and
/// faults after the command line's; its `stages` unless the command line
/// shapes the load itself (`--stages`, `--rate`, `--sweep`,
/// `--find-capacity`); and a stop after 10 s when nothing else ends the
/// run.
fn given<'a>(suite: &'a Suite, args: &'a RunArgs) -> Given<'a> {
    let mut given = Given::of(args);
    given.endpoints = &suite.endpoints;
    given.endpoint_headers.extend(
        suite
            .endpoint_headers
            .iter()
            .map(Said::by("the scenario file's header")),
    );
    given.faults.extend(
        suite
            .faults
            .iter()
            .map(Said::by("the scenario file's fault")),
    );
    let ends = args.sweep.is_some() || !args.find_capacity.is_empty();
    if given.stages.is_none() && args.rate.is_none() && !ends {
        given.stages = suite
            .stages
            .as_ref()
            .map(Said::by("the scenario file's stages"));
    }
    if given.stop_after.is_none() && given.stages.is_none() && !ends {
        given.stop_after = Some("10s");
    }
    given
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
fn fit(suite: &Suite, plan: &mut Plan) -> Result<(), ScenarioError> {
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
