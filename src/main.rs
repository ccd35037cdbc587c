//! The `versus` binary: parse the command line, watch for Ctrl-C, hand the
//! subcommand to its library function and exit with the code of the
//! [`Exit`] it returns.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use versus::app::{self, Env};
use versus::cli::{Cli, Command};
use versus::commands;
use versus::engine::Stop;
use versus::exit::Exit;
use versus::report;

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
    let (mut out, mut err) = (std::io::stdout(), std::io::stderr());
    let exit = match cli.command {
        Some(Command::Demo(args)) => match watching(Duration::from_secs(1)) {
            Ok(stop) => versus::demo::run(&args, &stop, &mut out, &mut err),
            Err(exit) => exit,
        },
        Some(Command::Gen(args)) => app::gen(&args, &mut out.lock(), &mut err),
        Some(Command::Report(args)) => commands::report(&args, &mut out.lock(), &mut err),
        Some(Command::Merge(args)) => commands::merge(&args, &mut err),
        Some(Command::Compare(args)) => commands::compare(&args, &mut out.lock(), &mut err),
        Some(Command::Run(args)) => match watching(args.run.drain) {
            Ok(stop) => {
                let argv = argv();
                app::scenario(&args, env(&argv, &err), &stop, &mut out, &mut err)
            }
            Err(exit) => exit,
        },
        None => match watching(cli.run.drain) {
            Ok(stop) => {
                let argv = argv();
                app::run(&cli.run, env(&argv, &err), &stop, &mut out, &mut err)
            }
            Err(exit) => exit,
        },
    };
    exit.into()
}

/// The command line as given (non-UTF-8 made readable).
fn argv() -> Vec<String> {
    std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect()
}

/// What a run takes from this process: its command line and terminals.
fn env<'a>(argv: &'a [String], err: &std::io::Stderr) -> Env<'a> {
    Env {
        argv,
        stdin_is_terminal: versus::app::stdin_is_idle(),
        stderr_is_terminal: err.is_terminal(),
        stream: None,
        suite: None,
    }
}

/// A [`Stop`] that Ctrl-C sets (see [`watch_signals`]; `drain` is the
/// grace period it announces).
fn watching(drain: Duration) -> Result<Stop, Exit> {
    let stop = Stop::new();
    match watch_signals(&stop, drain) {
        Ok(()) => Ok(stop),
        Err(e) => {
            eprintln!("versus: cannot watch for Ctrl-C: {e}");
            Err(Exit::Failed)
        }
    }
}

/// First SIGINT or SIGTERM: stop sending and report. Second: exit 130 at
/// once. The handlers are installed before this returns.
fn watch_signals(stop: &Stop, drain: Duration) -> std::io::Result<()> {
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
                // Stop first, then say so: once the line is out, the run
                // is stopping.
                stop.stop();
                versus::live::announce(&format!(
                    "versus: stopping; waiting up to {} for requests in flight and for judging (Ctrl-C again to quit at once)",
                    report::duration(drain)
                ));
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
