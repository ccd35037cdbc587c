//! The `versus` binary: parse the command line, dispatch the subcommand,
//! map the outcome to an exit code ([`Exit`]).

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use versus::cli::{Cli, Command, RunArgs};
use versus::engine::{self, Stop};
use versus::exit::Exit;
use versus::plan::{Plan, RequestMode};
use versus::report;
use versus::results::commands;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            // --help and --version are not errors.
            let exit = if e.use_stderr() {
                Exit::Usage
            } else {
                Exit::Done
            };
            return exit.into();
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
        None => run(&cli.run),
    }
}

fn run(args: &RunArgs) -> ExitCode {
    let live =
        match versus::live::Mode::for_this_terminal(args.interactive, args.quiet, args.verbose) {
            Ok(m) => m,
            Err(e) => {
                eprintln!("versus: {e}");
                return Exit::Usage.into();
            }
        };
    let plan = match Plan::from_args(args, std::io::stdin().is_terminal()) {
        Ok(mut p) => {
            p.interval = live.interval(p.interval);
            Arc::new(p)
        }
        Err(e) => {
            eprintln!("versus: {e}");
            return Exit::Usage.into();
        }
    };
    let argv: Vec<String> = std::env::args().collect();
    let mut outputs = match commands::Live::prepare(args, &plan, &argv) {
        Ok(l) => l,
        Err(e) => {
            eprintln!("versus: {e}");
            return Exit::Usage.into();
        }
    };
    let stop = Stop::new();
    if let Err(e) = watch_signals(&stop, plan.drain) {
        eprintln!("versus: cannot watch for Ctrl-C: {e}");
        return Exit::Failed.into();
    }
    // Everything that can keep the run from starting comes before the
    // output files are created: a typo must not cost an earlier run's file.
    let input = match plan.input(None) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("versus: cannot read the input: {e}");
            return Exit::Failed.into();
        }
    };
    let resolved = match engine::resolve(&plan) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("versus: {e}");
            return Exit::Failed.into();
        }
    };
    let mut view = match versus::live::Session::start(live, &plan, &stop) {
        Ok(v) => v,
        Err(e) => {
            eprintln!("versus: {e}");
            return Exit::Failed.into();
        }
    };
    if let Err(e) = outputs.open() {
        view.finish();
        eprintln!("versus: {e}");
        return Exit::Usage.into();
    }
    let input = outputs.record(input);
    let out = outputs.observe(&mut view, |o| {
        engine::run_resolved(&plan, resolved, input, &stop, o)
    });
    view.finish();
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            eprintln!("versus: {e}");
            return Exit::Failed.into();
        }
    };
    if plan.mode == RequestMode::Stream
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
        return Exit::Failed.into();
    }
    let mut stdout = std::io::stdout().lock();
    let verdict = match outputs.finish(&mut stdout, &out) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("versus: {e}");
            return Exit::Failed.into();
        }
    };
    if let Some(e) = &out.input_error {
        eprintln!("versus: input: {e}");
        return Exit::Failed.into();
    }
    if out.stats.endpoints.iter().all(|s| s.responses == 0) && !out.interrupted {
        eprintln!("versus: no endpoint answered a single request; see the errors above");
        return Exit::Failed.into();
    }
    verdict.into()
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
            return Exit::Usage.into();
        }
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    match versus::input::generate::ethereum(
        &opts,
        config,
        &mut out,
        Arc::new(|w| eprintln!("versus: warning: {w}")),
    ) {
        Ok(()) => Exit::Done.into(),
        Err(e) => {
            eprintln!("versus: gen: {e}");
            Exit::Failed.into()
        }
    }
}

fn demo(args: &versus::cli::DemoArgs) -> ExitCode {
    let stop = Stop::new();
    if let Err(e) = watch_signals(&stop, std::time::Duration::from_secs(1)) {
        eprintln!("versus: cannot watch for Ctrl-C: {e}");
        return Exit::Failed.into();
    }
    let mut stdout = std::io::stdout().lock();
    match versus::demo::run(args, &mut stdout, &mut std::io::stderr(), &stop) {
        Ok(_) => Exit::Done.into(),
        Err(e) => {
            eprintln!("versus: demo: {e}");
            let bad_arguments = matches!(e, versus::demo::DemoError::Plan(_));
            ExitCode::from(if bad_arguments {
                Exit::Usage
            } else {
                Exit::Failed
            })
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
                std::process::exit(i32::from(Exit::Interrupted.code()));
            });
        })?;
    Ok(())
}
