//! `versus demo`: the embedded default. Two JSON-RPC endpoints start inside
//! the process on ephemeral 127.0.0.1 ports: a reference, and a candidate
//! that is a little slower and answers a small share of requests
//! differently. Realistic Ethereum traffic from the built-in generator runs
//! against both for a few seconds and the full report is printed. No
//! network, no set-up.

pub mod server;
pub mod shop;

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;

use self::server::{DemoServer, DemoServerConfig};
use crate::cli::{Cli, DemoArgs};
use crate::engine::{self, Input, Stop};
use crate::input::ethereum::{EthereumConfig, EthereumGenerator};
use crate::plan::Plan;
use crate::report;

/// Share of requests the candidate answers differently.
const CANDIDATE_MISMATCH_SHARE: f64 = 0.02;
/// Latency the candidate adds, on average.
const CANDIDATE_LATENCY: Duration = Duration::from_micros(300);

/// Why the demo could not run.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// A demo server could not start.
    #[error("cannot start the demo endpoints: {0}")]
    Server(std::io::Error),
    /// The run failed.
    #[error("{0}")]
    Run(#[from] engine::RunError),
    /// The report could not be written.
    #[error("cannot write the report: {0}")]
    Report(std::io::Error),
    /// The demo's own settings were rejected.
    #[error("{0}")]
    Plan(String),
}

/// Run the demo, printing the report to `out` and a short introduction to
/// `note`. `stop` ends it early (Ctrl-C).
///
/// # Errors
/// When a demo server cannot start or the run cannot be carried out.
pub fn run(
    args: &DemoArgs,
    out: &mut dyn Write,
    note: &mut dyn Write,
    stop: &Stop,
) -> Result<engine::RunOutput, DemoError> {
    if args.which == crate::cli::DemoKind::Shop {
        return shop::run(args, out, note, stop);
    }
    let reference = DemoServer::start(DemoServerConfig {
        name: "reference".into(),
        ..DemoServerConfig::default()
    })
    .map_err(DemoError::Server)?;
    let candidate = DemoServer::start(DemoServerConfig {
        name: "candidate".into(),
        extra_latency: CANDIDATE_LATENCY,
        jitter: CANDIDATE_LATENCY / 2,
        mismatch_share: CANDIDATE_MISMATCH_SHARE,
        seed: 7,
        ..DemoServerConfig::default()
    })
    .map_err(DemoError::Server)?;
    let duration = humantime::format_duration(args.duration).to_string();
    let concurrency = args.concurrency.to_string();
    let mut argv = vec![
        "versus".to_string(),
        format!("--stop-after={duration}"),
        format!("--concurrency={concurrency}"),
        format!("reference={}", reference.url()),
        format!("candidate={}", candidate.url()),
    ];
    if args.verbose > 0 {
        argv.push(format!("-{}", "v".repeat(usize::from(args.verbose))));
    }
    let cli = Cli::try_parse_from(&argv).map_err(|e| DemoError::Plan(e.to_string()))?;
    let plan =
        Arc::new(Plan::from_args(&cli.run, false).map_err(|e| DemoError::Plan(e.to_string()))?);
    let generator = EthereumGenerator::new(EthereumConfig::default()).map_err(DemoError::Plan)?;
    let _ = writeln!(
        note,
        "versus demo: reference at {} and candidate at {} (slower by ~{}µs, answers {}% of requests differently)\n\
         sending realistic Ethereum JSON-RPC traffic to both for {duration} at concurrency {concurrency}; \
         the same as: versus gen ethereum | versus --stop-after={duration} -c {concurrency} reference=URL candidate=URL\n",
        reference.url(),
        candidate.url(),
        CANDIDATE_LATENCY.as_micros(),
        CANDIDATE_MISMATCH_SHARE * 100.0,
    );
    let output = engine::run(
        &plan,
        Input::Stream(Box::new(generator)),
        stop,
        &mut engine::Quiet,
    )?;
    report::text::write(out, &plan, &output).map_err(DemoError::Report)?;
    Ok(output)
}
