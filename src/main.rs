//! The `versus` binary: parse the command line, dispatch the subcommand,
//! map the outcome to an exit code (0 done, 1 could not be carried out,
//! 2 bad arguments, 3 a threshold failed, 130 second Ctrl-C).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use versus::cli::{Cli, Command, RunArgs};
use versus::engine::{self, Input, Stop};
use versus::plan::{Plan, RequestMode};
use versus::report;
use versus::results::commands;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match cli.command {
        Some(Command::Demo(args)) => demo(&args),
        Some(Command::Gen(args)) => generate(&args),
        Some(Command::Report(args)) => ExitCode::from(commands::report(
            &args,
            &mut std::io::stdout().lock(),
            &mut std::io::stderr(),
        )),
        Some(Command::Merge(args)) => {
            ExitCode::from(commands::merge(&args, &mut std::io::stderr()))
        }
        Some(Command::Compare(args)) => ExitCode::from(commands::compare(
            &args,
            &mut std::io::stdout().lock(),
            &mut std::io::stderr(),
        )),
        Some(Command::Run(args)) => scenario(&args),
        None => run(&cli.run, None),
    }
}

/// `versus run FILE`: read and check the scenario file, then run its
/// scenarios mixed by weight like any other run. The file's endpoints
/// count unless the command line names its own.
fn scenario(args: &versus::cli::ScenarioArgs) -> ExitCode {
    let mut suite = match versus::scenario::Suite::load(&args.file, &args.run.endpoints) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("versus: {e}");
            return ExitCode::from(USAGE);
        }
    };
    if let Err(e) = suite.select(&args.patterns) {
        eprintln!("versus: {e}");
        return ExitCode::from(USAGE);
    }
    if args.list {
        print!("{}", suite.listing());
        return ExitCode::SUCCESS;
    }
    let mut run_args = args.run.clone();
    run_args.endpoints.clone_from(&suite.endpoints);
    run_args
        .endpoint_headers
        .extend(suite.endpoint_headers.iter().cloned());
    // A scenario run stops after 10 s unless told otherwise, like a
    // single-request run.
    if run_args.stop_after.is_none() {
        run_args.stop_after = Some("10s".to_string());
    }
    run(&run_args, Some(suite))
}

/// Exit code when the run could not be carried out.
const FAILED: u8 = 1;
/// Exit code for a bad command line.
const USAGE: u8 = 2;

/// A run of a request stream, or of a scenario file's flows.
fn run(args: &RunArgs, suite: Option<versus::scenario::Suite>) -> ExitCode {
    let live =
        match versus::live::Mode::for_this_terminal(args.interactive, args.quiet, args.verbose) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("versus: {e}");
                return ExitCode::from(USAGE);
            }
        };
    let plan = match Plan::from_args(args, std::io::stdin().is_terminal() && suite.is_none()) {
        Ok(mut p) => {
            p.interval = live.interval(p.interval);
            if let Some(s) = &suite {
                if let Err(e) = s.fit(&mut p) {
                    eprintln!("versus: {e}");
                    return ExitCode::from(USAGE);
                }
            }
            Arc::new(p)
        }
        Err(e) => {
            eprintln!("versus: {e}");
            return ExitCode::from(USAGE);
        }
    };
    let argv: Vec<String> = std::env::args().collect();
    let mut outputs = match commands::Live::prepare(args, &plan, &argv) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("versus: {e}");
            return ExitCode::from(USAGE);
        }
    };
    let stop = Stop::new();
    if let Err(e) = watch_signals(&stop, plan.drain) {
        eprintln!("versus: cannot watch for Ctrl-C: {e}");
        return ExitCode::from(FAILED);
    }
    // Everything that can keep the run from starting comes before the
    // output files are created: a typo must not cost an earlier run's file.
    let input = match (&plan.mode, suite) {
        (_, Some(suite)) => match suite.mix() {
            Ok(mix) => Input::Mix(Arc::new(mix)),
            Err(e) => {
                eprintln!("versus: {e}");
                return ExitCode::from(USAGE);
            }
        },
        (RequestMode::Stream, None) => {
            match versus::input::open(plan.input_format, plan.input_file.as_deref(), plan.max_line)
            {
                Ok(source) => Input::Stream(source),
                Err(e) => {
                    eprintln!("versus: cannot read the input: {e}");
                    return ExitCode::from(FAILED);
                }
            }
        }
        (RequestMode::Single(r), None) => Input::Repeat(r.clone()),
    };
    let flows = matches!(input, Input::Mix(_));
    let resolved = match engine::resolve(&plan) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("versus: {e}");
            return ExitCode::from(FAILED);
        }
    };
    let mut view = match versus::live::Session::start(live, &plan, &stop) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("versus: {e}");
            return ExitCode::from(FAILED);
        }
    };
    if let Err(e) = outputs.open() {
        view.finish();
        eprintln!("versus: {e}");
        return ExitCode::from(USAGE);
    }
    let input = match (input, outputs.recorder(plan.show_secrets)) {
        (Input::Stream(source), Some(r)) => {
            Input::Stream(Box::new(versus::results::writer::Recording::new(source, r)))
        }
        (Input::Repeat(r), Some(mut rec)) => {
            rec.record(&r, true);
            Input::Repeat(r)
        }
        // A flow's requests are built at each endpoint: nothing to replay.
        (input @ (Input::Flow(_) | Input::Mix(_)), Some(_)) | (input, None) => input,
    };
    let out = outputs.observe(&mut view, |o| {
        engine::run_resolved(&plan, resolved, input, &stop, o)
    });
    view.finish();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            eprintln!("versus: {e}");
            return ExitCode::from(FAILED);
        }
    };
    if plan.mode == RequestMode::Stream
        && !flows
        && out.input.requests == 0
        && out.input_error.is_none()
        && !out.interrupted
    {
        eprintln!(
            "versus: no requests: the input had no requests ({} malformed records skipped)",
            out.input.malformed
        );
        for m in &out.input.samples {
            eprintln!(
                "versus: {}: {}",
                m.location,
                report::escape_terminal(&m.reason)
            );
        }
        return ExitCode::from(FAILED);
    }
    let mut stdout = std::io::stdout().lock();
    let verdict = match outputs.finish(&mut stdout, &out) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("versus: {e}");
            return ExitCode::from(FAILED);
        }
    };
    if let Some(e) = &out.input_error {
        eprintln!("versus: input: {e}");
        return ExitCode::from(FAILED);
    }
    if out.stats.endpoints.iter().all(|s| s.responses == 0) && !out.interrupted {
        eprintln!("versus: no endpoint answered a single request; see the errors above");
        return ExitCode::from(FAILED);
    }
    ExitCode::from(verdict)
}

fn generate(args: &versus::cli::GenArgs) -> ExitCode {
    let versus::cli::Generator::Ethereum = args.generator;
    let opts = versus::input::generate::GenOptions {
        methods: args.methods.clone(),
        rate: args.rate,
        count: args.count,
        seed: args.seed,
        rpc: args.rpc.clone(),
    };
    // A bad option exits 2; a failure while generating (a write error,
    // the node for --rpc) exits 1.
    let config = match versus::input::generate::ethereum_config(&opts) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("versus: gen: {e}");
            return ExitCode::from(USAGE);
        }
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match versus::input::generate::ethereum(
        &opts,
        config,
        &mut out,
        Arc::new(|w| eprintln!("versus: warning: {w}")),
    ) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("versus: gen: {e}");
            ExitCode::from(FAILED)
        }
    }
}

fn demo(args: &versus::cli::DemoArgs) -> ExitCode {
    let stop = Stop::new();
    if let Err(e) = watch_signals(&stop, std::time::Duration::from_secs(1)) {
        eprintln!("versus: cannot watch for Ctrl-C: {e}");
        return ExitCode::from(FAILED);
    }
    let mut stdout = std::io::stdout().lock();
    match versus::demo::run(args, &mut stdout, &mut std::io::stderr(), &stop) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("versus: demo: {e}");
            let bad_arguments = matches!(e, versus::demo::DemoError::Plan(_));
            ExitCode::from(if bad_arguments { USAGE } else { FAILED })
        }
    }
}

/// First SIGINT or SIGTERM: stop sending and report. Second: exit 130 at
/// once. The handlers are installed before this returns.
fn watch_signals(stop: &Stop, drain: std::time::Duration) -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (mut int, mut term) = {
        let _guard = rt.enter();
        (
            signal(SignalKind::interrupt())?,
            signal(SignalKind::terminate())?,
        )
    };
    let stop = stop.clone();
    std::thread::Builder::new()
        .name("versus-signals".into())
        .spawn(move || {
            rt.block_on(async move {
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
                versus::live::announce(&format!(
                    "versus: stopping; waiting up to {} for requests in flight (Ctrl-C again to quit at once)",
                    report::go_duration(drain)
                ));
                stop.stop();
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
                versus::live::restore_terminal();
                std::process::exit(130);
            });
        })?;
    Ok(())
}
