//! `versus demo`: the embedded default. Two JSON-RPC endpoints start inside
//! the process on ephemeral 127.0.0.1 ports: a reference, and a candidate
//! that is a little slower and answers a small share of requests
//! differently. Realistic Ethereum traffic from the built-in generator runs
//! against both for a few seconds and the full report is printed, through
//! the same entry point as a run from the command line
//! ([`crate::app::run`]). No network, no set-up.

pub mod catalog;
pub mod serve;
pub mod server;
pub mod shop;

use std::io::Write;
use std::time::Duration;

use clap::Parser;

use self::server::{DemoServer, DemoServerConfig};
use crate::app::{self, Env};
use crate::cli::{Cli, DemoArgs};
use crate::engine::Stop;
use crate::exit::Exit;
use crate::input::ethereum::{EthereumConfig, EthereumGenerator};
use crate::plan::Plan;

/// Share of requests the candidate answers differently.
const CANDIDATE_MISMATCH_SHARE: f64 = 0.02;
/// Latency the candidate adds, on average.
const CANDIDATE_LATENCY: Duration = Duration::from_micros(300);

/// The command line a demo runs: its duration, concurrency, `-v` and
/// outputs against `endpoints`, quiet (the report follows in seconds, with
/// no progress line).
fn command_line(args: &DemoArgs, endpoints: &[String]) -> Vec<String> {
    let mut argv = vec![
        "versus".to_string(),
        "--quiet".to_string(),
        format!("--stop-after={}", humantime::format_duration(args.duration)),
        format!("--concurrency={}", args.concurrency()),
        format!("--format={}", args.format),
    ];
    if args.verbose > 0 {
        argv.push(format!("-{}", "v".repeat(usize::from(args.verbose))));
    }
    if let Some(file) = &args.output {
        argv.push(format!("--output={}", file.display()));
    }
    if let Some(file) = &args.html {
        argv.push(format!("--html={}", file.display()));
    }
    argv.extend(endpoints.iter().cloned());
    argv
}

/// Run the demo: start the two servers, write a short introduction to
/// `err`, and carry out the run as [`app::run`] does for the command line
/// it names, with the generator as its input; the report goes to `out`.
/// `stop` ends it early (Ctrl-C).
pub fn run(args: &DemoArgs, stop: &Stop, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    match args.which {
        crate::cli::DemoKind::Shop => return shop::run(args, stop, out, err),
        crate::cli::DemoKind::Pages => return pages(args, stop, out, err),
        crate::cli::DemoKind::Rpc => {}
    }
    let servers = DemoServer::start(DemoServerConfig {
        name: "reference".into(),
        ..DemoServerConfig::default()
    })
    .and_then(|reference| {
        let candidate = DemoServer::start(DemoServerConfig {
            name: "candidate".into(),
            extra_latency: CANDIDATE_LATENCY,
            jitter: CANDIDATE_LATENCY / 2,
            mismatch_share: CANDIDATE_MISMATCH_SHARE,
            seed: 7,
            ..DemoServerConfig::default()
        })?;
        Ok((reference, candidate))
    });
    let (reference, candidate) = match servers {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(err, "versus: demo: cannot start the demo endpoints: {e}");
            return Exit::Failed;
        }
    };
    let duration = humantime::format_duration(args.duration).to_string();
    let concurrency = args.concurrency().to_string();
    let argv = command_line(
        args,
        &[
            format!("reference={}", reference.url()),
            format!("candidate={}", candidate.url()),
        ],
    );
    // The demo's own settings, when rejected, are bad arguments: checked
    // before the introduction (the run checks its plan again).
    let prepared = Cli::try_parse_from(&argv)
        .map_err(|e| e.to_string())
        .and_then(|cli| {
            Plan::from_args(&cli.run, false).map_err(|e| e.to_string())?;
            Ok((cli, EthereumGenerator::new(EthereumConfig::default())?))
        });
    let (cli, generator) = match prepared {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(err, "versus: demo: {e}");
            return Exit::Usage;
        }
    };
    let _ = writeln!(
        err,
        "versus demo: reference at {} and candidate at {} (slower by ~{}µs, answers {}% of requests differently)\n\
         sending realistic Ethereum JSON-RPC traffic to both for {duration} at concurrency {concurrency}; \
         the same as: versus gen ethereum | versus --stop-after={duration} -c {concurrency} reference=URL candidate=URL\n",
        reference.url(),
        candidate.url(),
        CANDIDATE_LATENCY.as_micros(),
        CANDIDATE_MISMATCH_SHARE * 100.0,
    );
    let env = Env {
        argv: &argv,
        stdin_is_terminal: false,
        stderr_is_terminal: false,
        stream: Some(Box::new(generator)),
        suite: None,
    };
    app::run(&cli.run, env, stop, out, err)
}

/// The scenario `versus demo pages` runs (also in `examples/`).
const PAGES: &str = include_str!("../../examples/pages.toml");

/// Run the pagination demo: one catalog of 2,000 items served three ways
/// (HATEOAS offset pages that slow with depth, keyset, page tokens), paged
/// through by `examples/pages.toml` and the items compared.
fn pages(args: &DemoArgs, stop: &Stop, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let catalog = match catalog::start(catalog::Catalog::default()) {
        Ok(c) => c,
        Err(e) => {
            let _ = writeln!(err, "versus: demo: cannot start the catalog: {e}");
            return Exit::Failed;
        }
    };
    let url = catalog.url();
    let endpoints = ["hateoas", "stream", "rpc"].map(|way| format!("{way}={url}{way}/"));
    let duration = humantime::format_duration(args.duration).to_string();
    let intro = format!(
        "versus demo pages: one catalog of 2,000 items at {url}, paged through three ways: \
         hateoas (offset pages with links, slower with depth), stream (keyset cursor), rpc (page tokens)\n\
         every page timed, the items compared by id, for {duration} with {} traversals at a time; \
         the same as: versus run examples/pages.toml --stop-after={duration} -c {} hateoas=URL stream=URL rpc=URL\n",
        args.concurrency(), args.concurrency(),
    );
    run_suite(
        args,
        stop,
        out,
        err,
        &endpoints,
        (PAGES, "examples/pages.toml"),
        &intro,
    )
}

/// Run a demo's scenario (`text` of the file at `path`) against
/// `endpoints` as [`app::run`] does for the demo's command line, after
/// writing `intro` to `err`.
fn run_suite(
    args: &DemoArgs,
    stop: &Stop,
    out: &mut dyn Write,
    err: &mut dyn Write,
    endpoints: &[String],
    (text, path): (&str, &str),
    intro: &str,
) -> Exit {
    let argv = command_line(args, endpoints);
    // The demo's own settings and scenario, when rejected, are bad
    // arguments: checked before the introduction.
    let prepared = Cli::try_parse_from(&argv)
        .map_err(|e| e.to_string())
        .and_then(|cli| {
            Plan::from_args(&cli.run, false).map_err(|e| e.to_string())?;
            let suite = crate::scenario::Suite::parse(text, std::path::Path::new(path), endpoints)
                .map_err(|e| e.to_string())?;
            Ok((cli, suite))
        });
    let (cli, suite) = match prepared {
        Ok(p) => p,
        Err(e) => {
            let _ = writeln!(err, "versus: demo: {e}");
            return Exit::Usage;
        }
    };
    let _ = writeln!(err, "{intro}");
    let env = Env {
        argv: &argv,
        stdin_is_terminal: false,
        stderr_is_terminal: false,
        stream: None,
        suite: Some(suite),
    };
    app::run(&cli.run, env, stop, out, err)
}
