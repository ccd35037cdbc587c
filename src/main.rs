//! The `versus` binary: parse the command line, dispatch the subcommand,
//! map the outcome to an exit code (0 done, 1 could not be carried out,
//! 2 bad arguments, 130 second Ctrl-C).

use std::io::{BufReader, IsTerminal, Write};
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use versus::cli::{Cli, Command, RunArgs};
use versus::engine::{self, Input, Stop};
use versus::input::lines::LinesSource;
use versus::plan::{Plan, RequestMode};
use versus::report;

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
        Some(Command::Demo(_args)) => ExitCode::from(FAILED), // INTERIM until demo lands
        None => run(&cli.run),
    }
}

/// Exit code when the run could not be carried out.
const FAILED: u8 = 1;
/// Exit code for a bad command line.
const USAGE: u8 = 2;

fn run(args: &RunArgs) -> ExitCode {
    let plan = match Plan::from_args(args, std::io::stdin().is_terminal()) {
        Ok(p) => Arc::new(p),
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
    let input = match &plan.mode {
        RequestMode::Stream => Input::Stream(Box::new(LinesSource::new(
            BufReader::with_capacity(1 << 16, std::io::stdin()),
            plan.max_line,
        ))),
        RequestMode::Single(r) => Input::Repeat(r.clone()),
    };
    let out = match engine::run(&plan, input, &stop) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("versus: {e}");
            return ExitCode::from(FAILED);
        }
    };
    if plan.mode == RequestMode::Stream && out.input.requests == 0 && out.input_error.is_none() {
        eprintln!(
            "versus: no requests: the input had no request lines ({} malformed records skipped)",
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
    if let Err(e) = report::text::write(&mut stdout, &plan, &out).and_then(|()| stdout.flush()) {
        eprintln!("versus: cannot write the report: {e}");
        return ExitCode::from(FAILED);
    }
    if let Some(e) = &out.input_error {
        eprintln!("versus: input: {e}");
        return ExitCode::from(FAILED);
    }
    if out.stats.endpoints.iter().all(|s| s.responses == 0) && !out.interrupted {
        eprintln!("versus: no endpoint answered a single request; see the errors above");
        return ExitCode::from(FAILED);
    }
    ExitCode::SUCCESS
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
                eprintln!(
                    "versus: stopping; waiting up to {} for requests in flight (Ctrl-C again to quit at once)",
                    report::go_duration(drain)
                );
                stop.stop();
                tokio::select! {
                    _ = int.recv() => {}
                    _ = term.recv() => {}
                }
                std::process::exit(130);
            });
        })?;
    Ok(())
}
