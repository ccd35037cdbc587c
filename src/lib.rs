//! versus sends one request stream to several endpoints at once, then
//! reports per endpoint how fast it answered and, across endpoints, whether
//! the answers agree: a load tester and a differential tester in one.
//!
//! The binary is a thin layer over this library:
//! [`cli`] parses, [`plan::Plan`] validates, [`engine::run`] carries out the
//! run on one thread per core, [`report`] renders the merged [`stats`].
//! [`app::run`] does all of that for a run from the command line (the
//! binary, `versus demo` and the tests call it) and returns an
//! [`exit::Exit`], as every command does.
//! [`model`] is the vocabulary every layer shares; [`flow`] defines
//! sequences of dependent requests in Rust (see `examples/shop_client.rs`):
//!
//! ```no_run
//! use std::sync::Arc;
//! use clap::Parser;
//! use versus::flow::{Call, Flow};
//! use versus::{cli::Cli, engine, plan::Plan};
//!
//! let flow = Flow::new("order")
//!     .step("login", |_| async { Ok(Call::post("/login").body("{\"user\":\"ann\"}")) })
//!     .step("read", |ctx| async move {
//!         let token = ctx.last()?.json_str("/token")?;
//!         Ok(Call::get("/me").header("authorization", &format!("Bearer {token}"))?)
//!     });
//! let cli = Cli::parse_from(["versus", "-c", "8", "--stop-after=1000", "old=http://127.0.0.1:8080/", "new=http://127.0.0.1:8081/"]);
//! let plan = Arc::new(Plan::from_args(&cli.run, false)?);
//! let run = engine::run(&plan.engine, engine::Workload::Flow(Arc::new(flow)), &engine::Stop::new(), &mut engine::Quiet)?;
//! versus::report::text::write(&mut std::io::stdout(), &plan.run_info(), &run)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A request stream:
//!
//! ```no_run
//! use std::sync::Arc;
//! use clap::Parser;
//! use versus::{cli::Cli, engine, input::lines::LinesSource, plan::Plan};
//!
//! let cli = Cli::parse_from(["versus", "--stop-after=100", "a=http://127.0.0.1:8545/", "b=http://127.0.0.1:8546/"]);
//! let plan = Arc::new(Plan::from_args(&cli.run, false)?);
//! let lines = &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}\n"[..];
//! let input = engine::Workload::Stream(Box::new(LinesSource::new(lines, plan.max_line)));
//! let run = engine::run(&plan.engine, input, &engine::Stop::new(), &mut engine::Quiet)?;
//! versus::report::text::write(&mut std::io::stdout(), &plan.run_info(), &run)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The JSON report's endpoint object is one `json!` of every figure, in the
// text report's order, deeper than the macro's default recursion allows.
#![recursion_limit = "256"]

pub mod app;
pub mod cli;
pub mod commands;
pub mod compare;
pub mod demo;
pub mod display;
pub mod endpoint;
pub mod engine;
pub mod exit;
pub mod fault;
pub mod flow;
pub mod gen;
pub mod grpc;
pub mod input;
pub mod json_path;
pub mod live;
pub mod model;
pub mod plan;
pub mod report;
pub mod results;
pub mod scenario;
pub mod search;
pub mod slab;
pub mod stats;
