//! The shop walk of `versus demo shop`, written with the library API as a
//! typed client would walk it (wrecker's example): from the root document,
//! follow the links to the products, log in, look at the user, put the
//! first product in the cart twice, check out. It runs against the demo's
//! two in-process shops, a reference and a candidate, and prints the
//! report: every step compared across the two, each with its own tokens.
//!
//! ```sh
//! cargo run --release --example shop_client
//! ```

use std::sync::Arc;

use clap::Parser;
use versus::demo::shop;
use versus::engine::{self, Quiet, Stop, Workload};
use versus::flow::{Call, Context, Flow, Reply, StepError};
use versus::plan::Plan;

/// The link named `rel` in the root document (the first step's answer).
fn link(ctx: &Context, rel: &str) -> Result<String, StepError> {
    ctx.replies[0].json_str(&format!("/links/{rel}"))
}

/// The session token the login step (the third) took.
fn bearer(ctx: &Context) -> Result<String, StepError> {
    Ok(format!("Bearer {}", ctx.replies[2].json_str("/token")?))
}

fn status(want: u16) -> impl Fn(&Reply) -> Result<(), StepError> {
    move |r| match r.status == want {
        true => Ok(()),
        false => Err(StepError(format!("status {} is not {want}", r.status))),
    }
}

fn walk() -> Flow {
    Flow::new("shop")
        .step("root", |_| async { Ok(Call::get("/")) })
        .step("products", |ctx| async move {
            Ok(Call::get(&link(&ctx, "products")?))
        })
        .step("login", |ctx| async move {
            let user = format!("shopper{}", ctx.instance);
            Ok(Call::post(&link(&ctx, "login")?)
                .json(&serde_json::json!({ "user": user, "password": "secret" })))
        })
        .step("user", |ctx| async move {
            Call::get(&link(&ctx, "user")?).header("authorization", &bearer(&ctx)?)
        })
        .step("add to cart", |ctx| async move {
            let product = ctx.replies[1].json_at("/products/0/id")?;
            Ok(Call::post(&link(&ctx, "cart")?)
                .header("authorization", &bearer(&ctx)?)?
                .json(&serde_json::json!({ "product": product, "quantity": 2 })))
        })
        .step("checkout", |ctx| async move {
            Call::post(&link(&ctx, "checkout")?).header("authorization", &bearer(&ctx)?)
        })
        .check(status(201))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let reference = shop::start(false)?;
    let candidate = shop::start(true)?;
    // Tokens and order numbers are each shop's own: not compared.
    let cli = versus::cli::Cli::try_parse_from([
        "versus".to_string(),
        "-c".into(),
        "8".into(),
        "--stop-after=2000".into(),
        "--ignore".into(),
        "$.token".into(),
        "--ignore".into(),
        "$.order".into(),
        format!("reference={}", reference.url()),
        format!("candidate={}", candidate.url()),
    ])?;
    let plan = Arc::new(Plan::from_args(&cli.run, false)?);
    let run = engine::run(
        &plan.engine,
        Workload::Flow(Arc::new(walk())),
        &Stop::new(),
        &mut Quiet,
    )?;
    versus::report::text::write(&mut std::io::stdout(), &plan.run_info(), &run)?;
    Ok(())
}
