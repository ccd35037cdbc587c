//! `versus demo shop`: the shop API of wrecker's example, in a reference
//! and a candidate version inside the process, driven by the scenario in
//! `examples/shop.toml`. The root document links to the products, login,
//! user, cart and checkout; login hands out a token per session and
//! checkout an order id. The candidate is a little slower, lists a `stock`
//! field with its products, and rounds the total of an order with a lamp
//! one cent down: the report shows each, by step and field.

use std::collections::HashMap;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use serde_json::{json, Value};

use crate::cli::DemoArgs;
use crate::engine::Stop;
use crate::exit::Exit;

/// The scenario the demo runs (also in `examples/`, to run by hand).
const SCENARIO: &str = include_str!("../../examples/shop.toml");

/// What the candidate adds to every answer's time (tokio's timer rounds a
/// sleep up to the millisecond).
const CANDIDATE_LATENCY: Duration = Duration::from_millis(1);

const PRODUCTS: [(u64, &str, f64); 4] = [
    (1, "kettle", 25.0),
    (2, "teapot", 19.5),
    (3, "lamp", 42.25),
    (4, "mug", 6.0),
];

/// One shop's state: sessions by token, and the last order number.
struct Shop {
    candidate: bool,
    sessions: Mutex<HashMap<String, Session>>,
    orders: AtomicU64,
}

struct Session {
    user: String,
    cart: Vec<(u64, u64)>,
}

pub use super::serve::Running;

/// Start a shop on 127.0.0.1 on a thread of its own: the reference, or
/// (`candidate`) the slower one that differs a little.
///
/// # Errors
/// When the socket, runtime or thread cannot be made.
pub fn start(candidate: bool) -> std::io::Result<Running> {
    let shop = Arc::new(Shop {
        candidate,
        sessions: Mutex::new(HashMap::new()),
        orders: AtomicU64::new(0),
    });
    let name = format!(
        "versus-shop-{}",
        if candidate { "candidate" } else { "reference" }
    );
    super::serve::serve(&name, move |parts, body| {
        let shop = shop.clone();
        async move { shop.answer(parts, body).await }
    })
}

impl Shop {
    async fn answer(
        &self,
        parts: http::request::Parts,
        body: Bytes,
    ) -> hyper::Response<Full<Bytes>> {
        if self.candidate {
            tokio::time::sleep(CANDIDATE_LATENCY).await;
        }
        let input: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let token = parts
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("")
            .to_string();
        let (status, answer) = self.route(parts.method.as_str(), parts.uri.path(), &input, &token);
        super::serve::json(status, answer.to_string())
    }

    fn route(&self, method: &str, path: &str, input: &Value, token: &str) -> (u16, Value) {
        let unknown = || (401, json!({ "error": "log in first" }));
        let mut sessions = self.sessions.lock().unwrap_or_else(|e| e.into_inner());
        match (method, path) {
            ("GET", "/") => (
                200,
                json!({
                    "name": "versus demo shop",
                    "links": { "products": "/products", "login": "/login", "user": "/user",
                               "cart": "/cart", "checkout": "/checkout" }
                }),
            ),
            ("GET", "/products") => {
                let products: Vec<Value> = PRODUCTS
                    .iter()
                    .map(|(id, name, price)| {
                        let mut p = json!({ "id": id, "name": name, "price": price });
                        if self.candidate {
                            p["stock"] = json!(10);
                        }
                        p
                    })
                    .collect();
                (200, json!({ "products": products }))
            }
            ("POST", "/login") => match (input["user"].as_str(), input["password"].as_str()) {
                (Some(user), Some(_)) => {
                    let token = format!("{:016x}", fastrand::u64(..));
                    sessions.insert(
                        token.clone(),
                        Session {
                            user: user.to_string(),
                            cart: Vec::new(),
                        },
                    );
                    (200, json!({ "token": token, "user": user }))
                }
                _ => (400, json!({ "error": "user and password, please" })),
            },
            ("GET", "/user") => match sessions.get(token) {
                Some(s) => (200, json!({ "name": s.user, "cart": "/cart" })),
                None => unknown(),
            },
            ("POST", "/cart") => {
                let id = input["product"]
                    .as_u64()
                    .or_else(|| input["product"].as_str().and_then(|s| s.parse().ok()));
                let Some(id) = id.filter(|id| PRODUCTS.iter().any(|p| p.0 == *id)) else {
                    return (404, json!({ "error": "no such product" }));
                };
                let quantity = input["quantity"].as_u64().unwrap_or(1);
                match sessions.get_mut(token) {
                    Some(s) => {
                        s.cart.push((id, quantity));
                        (200, cart(&s.cart))
                    }
                    None => unknown(),
                }
            }
            ("POST", "/checkout") => match sessions.remove(token) {
                Some(s) => {
                    let mut total = total(&s.cart);
                    if self.candidate && s.cart.iter().any(|(id, _)| *id == 3) {
                        total -= 0.01;
                    }
                    let order = self.orders.fetch_add(1, Ordering::Relaxed) + 1;
                    (
                        201,
                        json!({ "order": order.to_string(), "status": "paid", "total": round(total) }),
                    )
                }
                None => unknown(),
            },
            _ => (404, json!({ "error": "not found" })),
        }
    }
}

fn total(items: &[(u64, u64)]) -> f64 {
    items
        .iter()
        .map(|(id, q)| PRODUCTS.iter().find(|p| p.0 == *id).map_or(0.0, |p| p.2) * *q as f64)
        .sum()
}

fn round(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

fn cart(items: &[(u64, u64)]) -> Value {
    let lines: Vec<Value> = items
        .iter()
        .filter_map(|(id, q)| {
            let (_, name, price) = PRODUCTS.iter().find(|p| p.0 == *id)?;
            Some(json!({ "product": id, "name": name, "quantity": q, "price": price }))
        })
        .collect();
    json!({ "items": lines, "total": round(total(items)) })
}

/// Run the shop demo: start the two shops, write a short introduction to
/// `err`, and run the scenario against them as [`crate::app::run`] does;
/// the report goes to `out`. `stop` ends it early (Ctrl-C).
pub fn run(args: &DemoArgs, stop: &Stop, out: &mut dyn Write, err: &mut dyn Write) -> Exit {
    let shops = start(false).and_then(|r| Ok((r, start(true)?)));
    let (reference, candidate) = match shops {
        Ok(s) => s,
        Err(e) => {
            let _ = writeln!(err, "versus: demo: cannot start the shops: {e}");
            return Exit::Failed;
        }
    };
    let endpoints = [
        format!("reference={}", reference.url()),
        format!("candidate={}", candidate.url()),
    ];
    let duration = humantime::format_duration(args.duration).to_string();
    let intro = format!(
        "versus demo shop: a reference shop at {} and a candidate at {} (slower by ~{} ms, with a stock field and a rounding slip)\n\
         walking root -> products -> login -> user -> add to cart -> checkout on both for {duration} with {} virtual users each; \
         the same as: versus run examples/shop.toml --stop-after={duration} -c {} reference=URL candidate=URL\n",
        reference.url(),
        candidate.url(),
        CANDIDATE_LATENCY.as_millis(),
        args.concurrency(),
        args.concurrency(),
    );
    super::run_suite(
        args,
        stop,
        out,
        err,
        &endpoints,
        (SCENARIO, "examples/shop.toml"),
        &intro,
    )
}
