//! What the binary runs: [`run`] carries out a run from the command line
//! (the library's one entry point for it, which `versus demo` and the
//! tests call too), [`gen`] is `versus gen`. Each returns how it ended as
//! an [`Exit`]; parsing the command line and the process's signals stay in
//! `main.rs`.

use std::io::Write;
use std::sync::Arc;

use crate::cli::ScenarioArgs;
use crate::cli::{GenArgs, Generator, RunArgs};
use crate::commands::OutputFiles;
use crate::engine::{self, RunOutput, Stop, Workload};
use crate::exit::Exit;
use crate::gen::{self, GenOptions};
use crate::input::Source;
use crate::live;
use crate::plan::{Plan, RequestMode};
use crate::report;
use crate::scenario::Suite;

/// What a run takes from the process around it.
pub struct Env<'a> {
    /// The command line as given (saved, masked, in `--output`'s header).
    pub argv: &'a [String],
    /// Whether stdin has no request stream to offer ([`stdin_is_idle`]:
    /// a terminal, `/dev/null`, an empty file): with no input named, a
    /// run then sends a single request.
    pub stdin_is_terminal: bool,
    /// Whether stderr is a terminal: the progress line is drawn only there.
    pub stderr_is_terminal: bool,
    /// A request stream to read instead of the command line's (stdin or
    /// `--input-file`): the demo's generator, a test's lines.
    pub stream: Option<Box<dyn Source>>,
    /// A scenario file's flows to run instead of a request stream.
    pub suite: Option<Suite>,
}

/// Whether this process's stdin offers no request stream: a terminal,
/// `/dev/null` or an empty regular file. Scripts, cron and CI run
/// `versus URL` with stdin from `/dev/null`; it once read that as an
/// empty stream and failed with "no requests" where wrk, hey and oha send
/// their single request.
pub fn stdin_is_idle() -> bool {
    use std::io::IsTerminal;
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    if std::io::stdin().is_terminal() {
        return true;
    }
    let Ok(stdin) = std::fs::metadata("/proc/self/fd/0") else {
        return false;
    };
    let null = std::fs::metadata("/dev/null").ok();
    let is_null = stdin.file_type().is_char_device()
        && null.is_some_and(|n| n.file_type().is_char_device() && n.rdev() == stdin.rdev());
    is_null || stdin.is_file() && stdin.len() == 0
}

/// Why a run ended early: the exit and the message for stderr.
struct Early(Exit, String);

/// Carry out a run: make the plan of the command line (with `env`'s
/// suite, when it has one), check everything that can keep the run from
/// starting, and only then create the output files (so a run that cannot
/// start leaves an earlier run's files alone); run with the live view;
/// write the report to `out`. Messages go to `err`, one line
/// each; the live view draws on the terminal as [`live::LiveView`] does.
/// `stop` ends the run early (the caller's Ctrl-C).
pub fn run(
    args: &RunArgs,
    env: Env<'_>,
    stop: &Stop,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    let planned = mode_of(args, &env).and_then(|mode| {
        let plan = match &env.suite {
            Some(suite) => crate::plan::scenario::plan(suite, args),
            None => Plan::from_args(args, env.stdin_is_terminal),
        };
        Ok((mode, plan.map_err(usage)?))
    });
    ended(
        planned.and_then(|(mode, plan)| carry_out(args, mode, plan, env, stop, out, err)),
        err,
    )
}

/// The exit of a run, its message (if it ended early) written to `err`.
fn ended(ran: Result<Exit, Early>, err: &mut dyn Write) -> Exit {
    match ran {
        Ok(exit) => exit,
        Err(Early(exit, message)) => {
            let _ = writeln!(err, "versus: {message}");
            exit
        }
    }
}

fn usage(e: impl ToString) -> Early {
    Early(Exit::Usage, e.to_string())
}

fn failed(e: impl ToString) -> Early {
    Early(Exit::Failed, e.to_string())
}

/// How the run shows its progress: the flags, and whether stderr is a
/// terminal.
fn mode_of(args: &RunArgs, env: &Env<'_>) -> Result<live::Mode, Early> {
    live::Mode::choose(
        args.interactive,
        args.quiet,
        args.verbose,
        env.stderr_is_terminal,
    )
    .map_err(usage)
}

/// Run `plan`, made of `args` (and of `env`'s suite, when there is one).
fn carry_out(
    args: &RunArgs,
    mode: live::Mode,
    mut plan: Plan,
    env: Env<'_>,
    stop: &Stop,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<Exit, Early> {
    let interval = mode.interval(plan.engine.interval);
    plan.engine_mut().interval = interval;
    crate::plan::grpc::setup(&mut plan).map_err(|e| match e {
        crate::plan::grpc::SetupError::Usage(m) => usage(m),
        crate::plan::grpc::SetupError::Failed(m) => failed(m),
    })?;
    let plan = Arc::new(plan);
    let mut outputs = OutputFiles::prepare(args, &plan, env.argv).map_err(usage)?;
    outputs.steer(plan.engine.interval, stop).map_err(usage)?;
    if let Some(late) = outputs.late() {
        let _ = writeln!(
            err,
            "versus: warning: --start-at passed {} ago: starting at once, late (late_ms in the saved run's header)",
            report::duration(late)
        );
    }
    // Everything that can keep the run from starting comes before the
    // output files are created: a typo must not cost an earlier run's
    // file. A stream's files are created at its first request: one without
    // any (an empty file or pipe) leaves them alone, and a pipe that gives
    // its first request much later (`tail -f`) is not waited for.
    let input = match env.suite {
        Some(suite) => Workload::Mix(Arc::new(suite.mix().map_err(|e| usage(e.to_string()))?)),
        None => plan
            .input(env.stream)
            .map_err(|e| failed(format!("cannot read the input: {e}")))?,
    };
    let flows = matches!(input, Workload::Mix(_));
    let resolved = engine::resolve(&plan.engine).map_err(|e| failed(e.to_string()))?;
    let mut view = live::LiveView::start(mode, &plan.engine, plan.input_gauge(), stop)
        .map_err(|e| failed(e.to_string()))?;
    let input = match outputs.check().and_then(|()| outputs.attach(input)) {
        Ok(input) => input,
        Err(e) => {
            view.finish();
            return Err(usage(e));
        }
    };
    let ran = outputs.observe(&mut view, |o| {
        engine::run_resolved(&plan.engine, resolved, input, stop, o)
    });
    view.finish();
    let ran = ran.map_err(|e| failed(e.to_string()))?;
    if let Some(why) = no_requests(&plan, &ran).filter(|_| !flows) {
        return Err(failed(why));
    }
    let verdict = outputs.finish(out, &ran).map_err(failed)?;
    if let Some(e) = &ran.input_error {
        return Err(failed(format!("input: {e}")));
    }
    if ran.stats.endpoints.iter().all(|s| s.responses == 0) && !ran.interrupted {
        // The kinds say why (an answer over --max-body is an answer that
        // was refused, not silence).
        let kinds: Vec<String> = crate::stats::error_table(&ran.stats.endpoints)
            .into_iter()
            .map(|(kind, n)| format!("{kind}: {}", n.iter().sum::<u64>()))
            .collect();
        let hint = if kinds.len() == 1
            && kinds[0].starts_with(crate::model::Failure::BodyTooLarge.name())
        {
            "; every answer was larger than --max-body"
        } else {
            ""
        };
        return Err(failed(format!(
            "no endpoint answered a single request ({}){hint}; see the errors above",
            kinds.join(", ")
        )));
    }
    let failing: Vec<&str> = plan
        .engine
        .endpoints
        .iter()
        .zip(&ran.stats.endpoints)
        .filter(|(_, s)| s.failed_every_request())
        .map(|(e, _)| e.label.as_str())
        .collect();
    if !failing.is_empty() && !args.allow_failures {
        let _ = writeln!(
            err,
            "versus: {} failed every request (exit 4; --allow-failures exits 0)",
            report::escape_terminal(&failing.join(", "))
        );
        return Ok(Exit::EndpointFailed);
    }
    Ok(verdict)
}

/// A stream that ended by itself without a request (not a failed input,
/// not a Ctrl-C) has nothing to report: why, with the first malformed
/// records, each on a line of its own.
fn no_requests(plan: &Plan, ran: &RunOutput) -> Option<String> {
    if plan.mode != RequestMode::Stream
        || ran.input.requests > 0
        || ran.input_error.is_some()
        || ran.interrupted
    {
        return None;
    }
    let mut why = format!(
        "no requests: the input had no requests ({} malformed records skipped)",
        ran.input.malformed
    );
    for m in &ran.input.samples {
        why.push_str(&format!(
            "\nversus: {}: {}",
            m.location,
            report::escape_terminal(&m.reason)
        ));
    }
    Some(why)
}

/// `versus run FILE`: read and check the scenario file, print its
/// scenarios with `--list`, or run them (those `--match` picks) mixed by
/// weight as [`run`] does, on the file's endpoints unless the command line
/// names its own. `--stop-after` defaults to 10 s.
pub fn scenario(
    args: &ScenarioArgs,
    env: Env<'_>,
    stop: &Stop,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Exit {
    if let Err(e) = crate::plan::scenario::check_args(&args.run) {
        let _ = writeln!(err, "versus: {e}");
        return Exit::Usage;
    }
    let load = match args.list {
        true => Suite::load_to_list,
        false => Suite::load,
    };
    let suite = load(&args.file, &args.run.endpoints).and_then(|mut s| {
        s.select(&args.patterns)?;
        Ok(s)
    });
    let suite = match suite {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(err, "versus: {e}");
            return Exit::Usage;
        }
    };
    if args.list {
        return match out.write_all(suite.listing().as_bytes()) {
            Ok(()) => Exit::Done,
            Err(_) => Exit::Failed,
        };
    }
    let planned = mode_of(&args.run, &env).and_then(|mode| {
        let plan = crate::plan::scenario::plan(&suite, &args.run).map_err(usage)?;
        let (suite, plan) = preflight(args, suite, plan, err)?;
        Ok((mode, suite, plan))
    });
    ended(
        planned.and_then(|(mode, suite, plan)| {
            let env = Env {
                suite: Some(suite),
                ..env
            };
            carry_out(&args.run, mode, plan, env, stop, out, err)
        }),
        err,
    )
}

/// The pre-flight check of a scenario run: every endpoint reached once
/// before the clock starts. An endpoint that cannot be is named with the
/// reason and the run does not start (exit 1), unless the file marks it
/// `optional`: then the suite is read again without it, noting why, and
/// its plan made again.
fn preflight(
    args: &ScenarioArgs,
    suite: Suite,
    plan: Plan,
    err: &mut dyn Write,
) -> Result<(Suite, Plan), Early> {
    let unreached: Vec<(String, String, String)> = crate::engine::preflight::check(&plan.engine)
        .into_iter()
        .zip(&plan.engine.endpoints)
        .filter_map(|(why, spec)| Some((spec.label.clone(), spec.display_url.clone(), why?)))
        .collect();
    if unreached.is_empty() {
        return Ok((suite, plan));
    }
    let required: Vec<String> = unreached
        .iter()
        .filter(|(label, ..)| !suite.optional.contains(label))
        .map(|(label, url, why)| {
            format!("pre-flight: endpoint {label} ({url}) cannot be reached: {why}")
        })
        .collect();
    if !required.is_empty() {
        return Err(Early(Exit::Failed, required.join("\nversus: ")));
    }
    let mut notes = Vec::new();
    for (label, url, why) in &unreached {
        let note = format!("optional endpoint {label} ({url}) skipped: pre-flight: {why}");
        let _ = writeln!(err, "versus: {note}");
        notes.push(note);
    }
    let skip: Vec<String> = unreached.into_iter().map(|(label, ..)| label).collect();
    let mut again = Suite::load_without(&args.file, &skip, notes).map_err(failed)?;
    again.select(&args.patterns).map_err(usage)?;
    let plan = crate::plan::scenario::plan(&again, &args.run).map_err(usage)?;
    Ok((again, plan))
}

/// `versus gen`: write generated requests to `out` until the count, a
/// closed pipe, or forever. Errors go to `err`; warnings about `--rpc`,
/// which come from a thread of their own, to the process's stderr.
pub fn gen(args: &GenArgs, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let Generator::Ethereum = args.generator;
    let opts = GenOptions {
        methods: args.methods.clone(),
        rate: args.rate,
        count: args.count,
        seed: args.seed,
        rpc: args.rpc.clone(),
    };
    // A bad option is a usage error; a failure while generating (a write
    // error, the node for --rpc) is a failure.
    let config = match gen::ethereum_config(&opts) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(err, "versus: gen: {e}");
            return Exit::Usage;
        }
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
    let warn = Arc::new(|w| eprintln!("versus: warning: {w}"));
    match gen::ethereum(&opts, config, &mut out, warn) {
        Ok(()) => Exit::Done,
        Err(e) => {
            let _ = writeln!(err, "versus: gen: {e}");
            Exit::Failed
        }
    }
}
