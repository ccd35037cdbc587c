//! A flow written with versus's library API: log in, create an order with
//! the token the login gave, read the order back by the id the creation
//! gave. It runs against two small shop servers started in this process,
//! an old and a new one (the new one hands out other tokens and names one
//! item differently), so every step is compared across them.
//!
//! ```sh
//! cargo run --release --example flow
//! ```
//!
//! Each instance runs on both endpoints independently, each with its own
//! token and ids; the report has a line per step and per endpoint, the
//! whole instances ("successful runs"), and the mismatches by step and
//! field.

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};
use versus::engine::{self, Input, Quiet, Stop};
use versus::flow::{Call, Flow};
use versus::plan::Plan;

/// The order walk: three dependent steps.
fn order_flow() -> Flow {
    Flow::new("order")
        .step("login", |ctx| async move {
            let user = format!("user{}", ctx.instance);
            Ok(Call::post("/login").json(&serde_json::json!({ "user": user })))
        })
        .step("create", |ctx| async move {
            let token = ctx.last()?.json_str("/token")?;
            let item = if ctx.instance % 10 == 0 {
                "kettle"
            } else {
                "book"
            };
            Ok(Call::post("/orders")
                .header("authorization", &format!("Bearer {token}"))?
                .json(&serde_json::json!({ "item": item })))
        })
        .step("read", |ctx| async move {
            let id = ctx.last()?.json_str("/id")?;
            Ok(Call::get(&format!("/orders/{id}")))
        })
}

/// One shop: tokens are `{prefix}.{user}`; the new shop calls kettles
/// "teapot".
async fn shop(req: Request<hyper::body::Incoming>, prefix: &'static str) -> Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let token = parts
        .headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix(&format!("Bearer {prefix}.")))
        .map(str::to_string);
    let (status, answer) = match (parts.method.as_str(), parts.uri.path()) {
        ("POST", "/login") => (
            200,
            serde_json::json!({ "token": format!("{prefix}.{}", json["user"].as_str().unwrap_or("")) }),
        ),
        ("POST", "/orders") => match token {
            Some(user) => {
                let item = match (json["item"].as_str(), prefix) {
                    (Some("kettle"), "new") => "teapot",
                    (item, _) => item.unwrap_or(""),
                };
                let id = user.trim_start_matches("user");
                (
                    201,
                    serde_json::json!({ "id": id, "owner": user, "item": item }),
                )
            }
            None => (401, serde_json::json!({ "error": "no token" })),
        },
        ("GET", path) if path.starts_with("/orders/") => {
            (200, serde_json::json!({ "id": &path[8..], "state": "new" }))
        }
        _ => (404, serde_json::json!({ "error": "not found" })),
    };
    let mut response = Response::new(Full::new(Bytes::from(answer.to_string())));
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    response
}

/// Serve a shop on 127.0.0.1, on a thread of its own.
fn start(prefix: &'static str) -> std::io::Result<SocketAddr> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let addr = listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    std::thread::spawn(move || {
        runtime.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener)?;
            loop {
                let (stream, _) = listener.accept().await?;
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |r| async move {
                        Ok::<_, std::convert::Infallible>(shop(r, prefix).await)
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
            #[allow(unreachable_code)]
            Ok::<_, std::io::Error>(())
        })
    });
    Ok(addr)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let old = start("old")?;
    let new = start("new")?;
    // The same command line as the binary takes: endpoints, load, rules.
    // The tokens differ by design, so that field is not compared.
    let cli = versus::cli::Cli::try_parse_from([
        "versus".to_string(),
        "-c".into(),
        "8".into(),
        "--stop-after=2000".into(),
        "--ignore".into(),
        "$.token".into(),
        format!("old=http://{old}/"),
        format!("new=http://{new}/"),
    ])?;
    let plan = Arc::new(Plan::from_args(&cli.run, false)?);
    let run = engine::run(
        &plan,
        Input::Flow(Arc::new(order_flow())),
        &Stop::new(),
        &mut Quiet,
    )?;
    versus::report::text::write(&mut std::io::stdout(), &plan, &run)?;
    Ok(())
}
