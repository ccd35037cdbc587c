//! The engine owns a run: one OS thread per core, each with its own
//! single-threaded runtime, its own connections to every endpoint, its own
//! share of the requests and its own statistics. Nothing is shared between
//! cores per request; input arrives in batches and statistics are merged
//! when the cores finish.

mod stop;
mod window;
mod worker;

use std::sync::{Arc, Barrier, Mutex};
use std::time::Duration;

pub use self::stop::Stop;
use self::worker::{WorkerInput, WorkerJob};
use crate::endpoint::{self, Link};
use crate::input::reader::{self, InputError, InputState};
use crate::input::{Request, Source};
use crate::plan::Plan;
use crate::stats::{InputStats, RunStats};

/// Where a run's requests come from.
pub enum Input {
    /// A request stream.
    Stream(Box<dyn Source>),
    /// The same request over and over (single-request mode).
    Repeat(Request),
}

/// A finished (or stopped) run.
#[derive(Debug)]
pub struct RunOutput {
    /// Merged statistics of every core.
    pub stats: RunStats,
    /// Input counters.
    pub input: InputStats,
    /// Set when the input failed or `--strict` stopped the run.
    pub input_error: Option<InputError>,
    /// From the start of sending to the end of the last core.
    pub elapsed: Duration,
    /// True when the run was stopped by [`Stop`] (Ctrl-C) rather than
    /// ending by itself.
    pub interrupted: bool,
}

/// Why a run could not be carried out.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// An endpoint's host name did not resolve.
    #[error("endpoint {label}: cannot resolve {host}: {error}")]
    Resolve {
        /// The endpoint's label.
        label: String,
        /// The host name.
        host: String,
        /// The resolver's message.
        error: String,
    },
    /// The endpoint could not be prepared.
    #[error("{0}")]
    Endpoint(String),
    /// The operating system refused a thread or runtime.
    #[error("cannot start the engine: {0}")]
    Start(#[from] std::io::Error),
}

/// Carry out a run. Blocking: returns when every core has finished.
///
/// # Errors
/// When an endpoint does not resolve or the engine's threads cannot start;
/// faults of requests are counted, never returned.
pub fn run(plan: &Arc<Plan>, input: Input, stop: &Stop) -> Result<RunOutput, RunError> {
    let mut addrs = Vec::with_capacity(plan.endpoints.len());
    for spec in &plan.endpoints {
        let a = endpoint::resolve(&spec.host, spec.port).map_err(|e| RunError::Resolve {
            label: spec.label.clone(),
            host: spec.host.clone(),
            error: e.to_string(),
        })?;
        addrs.push(a);
    }

    let cores = plan.threads.min(plan.concurrency).max(1);
    let state = Arc::new(Mutex::new(InputState::default()));
    let mut inputs: Vec<WorkerInput> = Vec::with_capacity(cores);
    match input {
        Input::Repeat(request) => {
            let count = plan.stop_after.count;
            for c in 0..cores as u64 {
                let remaining = count.map(|n| n / cores as u64 + u64::from(c < n % cores as u64));
                inputs.push(WorkerInput::Repeat {
                    request: request.clone(),
                    remaining,
                });
            }
        }
        Input::Stream(source) => {
            let (tx, rx) = async_channel::bounded(cores * 4);
            let on_error = {
                let stop = stop.clone();
                move || stop.stop()
            };
            // The input thread may be blocked reading a pipe when the run
            // ends; it is not joined and ends with the process.
            drop(reader::spawn(
                source,
                plan.stop_after.count,
                plan.strict,
                tx,
                state.clone(),
                on_error,
            )?);
            for _ in 0..cores {
                inputs.push(WorkerInput::Batches(rx.clone()));
            }
        }
    }

    let barrier = Arc::new(Barrier::new(cores));
    let mut handles = Vec::with_capacity(cores);
    for (c, input) in inputs.into_iter().enumerate() {
        let mut links = Vec::with_capacity(plan.endpoints.len());
        for (spec, a) in plan.endpoints.iter().zip(&addrs) {
            links.push(
                Link::new(
                    spec.clone(),
                    a.clone(),
                    plan.tls.clone(),
                    plan.transport.clone(),
                )
                .map_err(RunError::Endpoint)?,
            );
        }
        let slots = plan.concurrency / cores + usize::from(c < plan.concurrency % cores);
        let job = WorkerJob {
            plan: plan.clone(),
            links,
            slots,
            input,
            stop: stop.clone(),
            start_barrier: barrier.clone(),
        };
        handles.push(
            std::thread::Builder::new()
                .name(format!("versus-core-{c}"))
                .spawn(move || worker::run(job))?,
        );
    }

    let mut stats = RunStats::new(plan.endpoints.len());
    let mut first_start = None;
    let mut last_end = None;
    for h in handles {
        let result = h
            .join()
            .map_err(|_| RunError::Start(std::io::Error::other("a core panicked")))??;
        stats.merge(&result.stats);
        first_start = Some(first_start.map_or(result.started, |s: std::time::Instant| {
            s.min(result.started)
        }));
        last_end = Some(last_end.map_or(result.ended, |e: std::time::Instant| e.max(result.ended)));
    }
    let elapsed = match (first_start, last_end) {
        (Some(s), Some(e)) => e - s,
        _ => Duration::ZERO,
    };
    let (input, input_error) = match state.lock() {
        Ok(s) => (s.stats.clone(), s.error.clone()),
        Err(_) => (InputStats::default(), None),
    };
    Ok(RunOutput {
        stats,
        input,
        interrupted: stop.is_stopped() && input_error.is_none(),
        input_error,
        elapsed,
    })
}
