//! The benchmark's two-step flow (`bench/run.sh flow2`): step 1 GETs the
//! endpoint's base path, step 2 GETs it again with the `result` field of
//! step 1's JSON answer as a query parameter, so every second request
//! depends on the answer before it. It takes versus's own command-line
//! arguments (load, stop, endpoints) and prints versus's text report.
//!
//! ```sh
//! cargo run --release --example flow_bench -- -c 50 --stop-after=5s --compare none http://127.0.0.1:8080/
//! ```

use std::sync::Arc;

use clap::Parser;
use versus::engine::{self, Quiet, Stop, Workload};
use versus::flow::{Call, Flow};
use versus::plan::Plan;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = versus::cli::Cli::try_parse_from(std::env::args())?;
    let plan = Arc::new(Plan::from_args(&cli.run, false)?);
    let flow = Flow::new("two")
        .step("first", |_| async { Ok(Call::get("/")) })
        .step("second", |ctx| async move {
            let result = ctx.last()?.json_str("/result")?;
            Ok(Call::get(format!("/?r={result}")))
        });
    let run = engine::run(
        &plan.engine,
        Workload::Flow(Arc::new(flow)),
        &Stop::new(),
        &mut Quiet,
    )?;
    versus::report::text::write(&mut std::io::stdout(), &plan.run_info(), &run)?;
    Ok(())
}
