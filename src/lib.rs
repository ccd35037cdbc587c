//! versus sends one request stream to several endpoints at once, then
//! reports per endpoint how fast it answered and, across endpoints, whether
//! the answers agree: a load tester and a differential tester in one.
//!
//! The binary is a thin layer over this library:
//! [`cli`] parses, [`plan::Plan`] validates, [`engine::run`] carries out the
//! run on one thread per core, [`report`] renders the merged [`stats`].
//!
//! ```no_run
//! use std::sync::Arc;
//! use clap::Parser;
//! use versus::{cli::Cli, engine, input::lines::LinesSource, plan::Plan};
//!
//! let cli = Cli::parse_from(["versus", "--stop-after=100", "a=http://127.0.0.1:8545/", "b=http://127.0.0.1:8546/"]);
//! let plan = Arc::new(Plan::from_args(&cli.run, false)?);
//! let lines = &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}\n"[..];
//! let input = engine::Input::Stream(Box::new(LinesSource::new(lines, plan.max_line)));
//! let run = engine::run(&plan, input, &engine::Stop::new(), &mut engine::Quiet)?;
//! versus::report::text::write(&mut std::io::stdout(), &plan, &run)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod cli;
pub mod compare;
pub mod demo;
pub mod endpoint;
pub mod engine;
pub mod flow;
pub mod input;
pub mod live;
pub mod plan;
pub mod report;
pub mod results;
pub mod stats;
