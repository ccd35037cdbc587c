//! Flows: sequences of dependent requests, defined in Rust.
//!
//! A [`Flow`] is a list of named steps. Each instance of a flow runs on
//! every endpoint independently: a step receives the answers of the
//! earlier steps *at that endpoint* (endpoint A's token is not endpoint
//! B's) and returns the next request, which versus sends, times and
//! checks. The answers of step k at every endpoint are then compared with
//! each other under the rules for that step. A step that fails at one
//! endpoint (no answer, an error status, a failed check, or a request that
//! could not be built because an earlier answer lacked a value) ends the
//! instance there; its later steps are counted as skipped for that
//! endpoint, never as mismatches.
//!
//! This module owns the vocabulary of a flow as a library user writes it;
//! the engine runs it (`engine::run` with [`crate::engine::Workload::Flow`]).
//!
//! ```no_run
//! use versus::flow::{Call, Flow};
//!
//! let flow = Flow::new("order")
//!     .step("login", |_ctx| async { Ok(Call::post("/login").json(&serde_json::json!({"user": "ann"}))) })
//!     .step("create", |ctx| async move {
//!         let token = ctx.last()?.json_str("/token")?;
//!         Ok(Call::post("/orders").header("authorization", &format!("Bearer {token}"))?.body("{}"))
//!     })
//!     .step("read", |ctx| async move {
//!         let id = ctx.last()?.json_str("/id")?;
//!         Ok(Call::get(format!("/orders/{id}")))
//!     });
//! # let _ = flow;
//! ```
//!
//! At a gRPC endpoint (`grpc://host:port`) a step is a call: request JSON
//! in ([`Call::grpc`]), answer JSON and status out ([`Reply::body`],
//! [`Reply::grpc`]); the methods a flow calls are resolved in the
//! endpoint's schema before the run when a scenario names them
//! (`grpc = "..."`), or looked up in it at the call.
//!
//! ```no_run
//! use serde_json::json;
//! use versus::flow::{Call, Flow};
//!
//! let pages = Flow::new("pages")
//!     .step("first", |_ctx| async {
//!         Ok(Call::grpc("items.Items/ListItemsPage", &json!({"page_size": 2})))
//!     })
//!     .step("next", |ctx| async move {
//!         let token = ctx.last()?.json_str("/nextPageToken")?;
//!         Ok(Call::grpc(
//!             "items.Items/ListItemsPage",
//!             &json!({"page_size": 2, "page_token": token}),
//!         ))
//!     })
//!     .check(|reply| match reply.grpc_code() {
//!         Some("OK") => Ok(()),
//!         other => Err(format!("status {other:?}").into()),
//!     });
//! # let _ = pages;
//! ```

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};

use crate::model::Request;

pub mod paginate;

/// Why a step could not go on at one endpoint: the request could not be
/// built (a value missing from an earlier answer) or the answer failed a
/// check. The text is shown in the report, grouped by step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepError(pub String);

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StepError {}

impl From<String> for StepError {
    fn from(s: String) -> Self {
        StepError(s)
    }
}

impl From<&str> for StepError {
    fn from(s: &str) -> Self {
        StepError(s.to_string())
    }
}

/// The future a step returns: the request to send. It runs on the core
/// that carries out the instance, so it need not be `Send`.
pub type StepFuture = Pin<Box<dyn Future<Output = Result<Call, StepError>>>>;

type MakeFn = Box<dyn Fn(Context) -> StepFuture + Send + Sync>;
type CheckFn = Box<dyn Fn(&Reply) -> Result<(), StepError> + Send + Sync>;
type TakeFn = Box<dyn Fn(&Reply, &mut Vars) -> Result<(), StepError> + Send + Sync>;

/// Values a flow instance has taken from its answers at one endpoint, by
/// name: each endpoint has its own.
pub type Vars = std::collections::HashMap<String, String>;

/// A named sequence of steps.
pub struct Flow {
    name: String,
    steps: Vec<Step>,
}

/// One step of a flow: how to build its request and how to check its
/// answer.
pub struct Step {
    name: String,
    make: MakeFn,
    take: Option<TakeFn>,
    check: CheckFn,
    paging: Option<std::sync::Arc<paginate::Paging>>,
}

impl Flow {
    /// A flow with no steps yet.
    pub fn new(name: &str) -> Flow {
        Flow {
            name: name.to_string(),
            steps: Vec::new(),
        }
    }

    /// Add a step: `make` receives the answers so far at one endpoint and
    /// returns the request to send there. The answer is checked by the
    /// default check (a status below 400) unless [`Flow::check`] replaces
    /// it.
    pub fn step<F, Fut>(mut self, name: &str, make: F) -> Flow
    where
        F: Fn(Context) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Call, StepError>> + 'static,
    {
        self.steps.push(Step {
            name: name.to_string(),
            make: Box::new(move |ctx| Box::pin(make(ctx))),
            take: None,
            check: Box::new(default_check),
            paging: None,
        });
        self
    }

    /// Make the last step added follow pages to the last one at every
    /// endpoint ([`crate::flow::paginate`]): its request asks for the first
    /// page, each answer is checked, values are taken from the first, and
    /// the items of all pages are compared across endpoints by key. Later
    /// steps see, as this step's reply, the traversal's items answer
    /// (`{"items":{KEY:item,...},"repeated":{...}}`), not its last page.
    pub fn paginate(mut self, paging: paginate::Paging) -> Flow {
        if let Some(step) = self.steps.last_mut() {
            step.paging = Some(std::sync::Arc::new(paging));
        }
        self
    }

    /// Take values from the answer of the last step added into the
    /// instance's variables at that endpoint ([`Context::vars`] of the
    /// later steps). Runs before the check; an `Err` (a value that is not
    /// there) fails the instance at that endpoint.
    pub fn take<F>(mut self, take: F) -> Flow
    where
        F: Fn(&Reply, &mut Vars) -> Result<(), StepError> + Send + Sync + 'static,
    {
        if let Some(step) = self.steps.last_mut() {
            step.take = Some(Box::new(take));
        }
        self
    }

    /// Replace the check of the last step added: an `Err` fails the
    /// instance at that endpoint (counted as a check failure of the step).
    pub fn check<F>(mut self, check: F) -> Flow
    where
        F: Fn(&Reply) -> Result<(), StepError> + Send + Sync + 'static,
    {
        if let Some(step) = self.steps.last_mut() {
            step.check = Box::new(check);
        }
        self
    }

    /// The flow's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The steps, in order.
    pub fn steps(&self) -> &[Step] {
        &self.steps
    }
}

impl Step {
    /// The step's name, as reports show it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Build this step's request for one endpoint.
    pub(crate) fn make(&self, ctx: Context) -> StepFuture {
        (self.make)(ctx)
    }

    /// Take values from an answer into `vars`.
    pub(crate) fn take(&self, reply: &Reply, vars: &mut Vars) -> Result<(), StepError> {
        self.take.as_ref().map_or(Ok(()), |take| take(reply, vars))
    }

    /// Check an answer.
    pub(crate) fn check(&self, reply: &Reply) -> Result<(), StepError> {
        (self.check)(reply)
    }

    /// How the step pages, if it does.
    pub(crate) fn paging(&self) -> Option<&paginate::Paging> {
        self.paging.as_deref()
    }
}

/// The default check: an HTTP status below 400, and at a gRPC endpoint
/// the status `OK`.
fn default_check(reply: &Reply) -> Result<(), StepError> {
    if reply.status >= 400 {
        return Err(StepError(format!("HTTP {}", reply.status)));
    }
    match &reply.grpc {
        Some(g) if g.is_error() => Err(StepError(crate::grpc::error_name(g.code))),
        _ => Ok(()),
    }
}

/// What a step sees: where it runs and the answers so far.
#[derive(Clone, Debug)]
pub struct Context {
    /// The endpoint's position on the command line (0 is the reference).
    pub endpoint: usize,
    /// The endpoint's label.
    pub label: std::rc::Rc<str>,
    /// The instance's number in the run, from 0 (the same at every
    /// endpoint).
    pub instance: u64,
    /// The answers of the earlier steps at this endpoint, in step order.
    pub replies: std::rc::Rc<Vec<Reply>>,
    /// The values the earlier steps took ([`Flow::take`]) at this
    /// endpoint.
    pub vars: std::rc::Rc<Vars>,
}

impl Context {
    /// The answer of the step just before.
    ///
    /// # Errors
    /// In the first step, which has no earlier answer.
    pub fn last(&self) -> Result<&Reply, StepError> {
        self.replies
            .last()
            .ok_or_else(|| StepError("no earlier step".to_string()))
    }
}

/// An answer as a step sees it.
#[derive(Clone, Debug)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// The headers kept for comparison (`--compare-header`).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body; a gRPC call's answer as JSON (a server-streaming call's
    /// messages as an array; an error status as `{"code", "message"}`).
    pub body: Bytes,
    /// A gRPC call's status; `None` at any other endpoint.
    pub grpc: Option<crate::model::GrpcStatus>,
}

impl Reply {
    /// Whether the answer is an error: an HTTP status of 400 or above, or
    /// a gRPC status other than `OK`.
    pub fn is_error(&self) -> bool {
        self.status >= 400
            || self
                .grpc
                .as_ref()
                .is_some_and(crate::model::GrpcStatus::is_error)
    }

    /// The gRPC status code's name (`OK`, `NOT_FOUND`); `None` at an
    /// endpoint that is not gRPC.
    pub fn grpc_code(&self) -> Option<&'static str> {
        self.grpc.as_ref().map(|g| crate::grpc::code_name(g.code))
    }

    /// The body as JSON.
    ///
    /// # Errors
    /// When the body is not JSON.
    pub fn json(&self) -> Result<serde_json::Value, StepError> {
        serde_json::from_slice(&self.body)
            .map_err(|e| StepError(format!("the answer is not JSON: {e}")))
    }

    /// The value at a JSON pointer (`/data/0/id`) of the body.
    ///
    /// # Errors
    /// When the body is not JSON or has nothing there.
    pub fn json_at(&self, pointer: &str) -> Result<serde_json::Value, StepError> {
        // Found in the text: the rest of the answer is scanned, not built.
        let found = match crate::json_path::JsonPath::pointer(pointer) {
            Some(path) => path
                .find(&self.body)
                .map_err(|e| StepError(format!("the answer is not JSON: {e}")))?,
            None => self.json().map(|_| None)?,
        };
        found.ok_or_else(|| StepError(format!("nothing at {pointer} in the answer")))
    }

    /// The value at a JSON pointer as text: a string as it is, a number or
    /// a boolean written out.
    ///
    /// # Errors
    /// When the body is not JSON, has nothing there, or holds an object,
    /// an array or null there.
    pub fn json_str(&self, pointer: &str) -> Result<String, StepError> {
        match self.json_at(pointer)? {
            serde_json::Value::String(s) => Ok(s),
            v @ (serde_json::Value::Number(_) | serde_json::Value::Bool(_)) => Ok(v.to_string()),
            other => Err(StepError(format!(
                "{pointer} in the answer is {}, not a value",
                match other {
                    serde_json::Value::Null => "null",
                    serde_json::Value::Array(_) => "an array",
                    _ => "an object",
                }
            ))),
        }
    }

    /// A kept header's value as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.as_str().eq_ignore_ascii_case(name))
            .and_then(|(_, v)| v.to_str().ok())
    }
}

/// A request as a step builds it: method, target (a path under the
/// endpoint's base path, with its query), headers and body.
#[derive(Clone, Debug)]
pub struct Call {
    method: Method,
    target: String,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Bytes,
}

impl Call {
    /// A request with `method` to `target`.
    pub fn new(method: Method, target: impl Into<String>) -> Call {
        Call {
            method,
            target: target.into(),
            headers: Vec::new(),
            body: Bytes::new(),
        }
    }

    /// A GET request.
    pub fn get(target: impl Into<String>) -> Call {
        Call::new(Method::GET, target)
    }

    /// A POST request.
    pub fn post(target: impl Into<String>) -> Call {
        Call::new(Method::POST, target)
    }

    /// A PUT request.
    pub fn put(target: impl Into<String>) -> Call {
        Call::new(Method::PUT, target)
    }

    /// A DELETE request.
    pub fn delete(target: impl Into<String>) -> Call {
        Call::new(Method::DELETE, target)
    }

    /// A gRPC call of `method` (`package.Service/Method`) with `request`
    /// as its message in the proto3 JSON mapping. At a gRPC endpoint the
    /// answer's [`Reply::body`] is the answer as JSON and
    /// [`Reply::grpc`] its status: request JSON in, answer JSON and
    /// status out. (At an HTTP endpoint it is a POST of the JSON to
    /// `/package.Service/Method`.)
    pub fn grpc(method: &str, request: &serde_json::Value) -> Call {
        Call::new(Method::POST, format!("/{}", method.trim_start_matches('/')))
            .body(Bytes::from(request.to_string()))
    }

    /// Add a header.
    ///
    /// # Errors
    /// When the name or value is not a valid header.
    pub fn header(mut self, name: &str, value: &str) -> Result<Call, StepError> {
        let n = HeaderName::try_from(name)
            .map_err(|_| StepError(format!("{name:?} is not a header name")))?;
        let v = HeaderValue::try_from(value)
            .map_err(|_| StepError(format!("the value of {name} is not a header value")))?;
        self.headers.push((n, v));
        Ok(self)
    }

    /// Set the body.
    pub fn body(mut self, body: impl Into<Bytes>) -> Call {
        self.body = body.into();
        self
    }

    /// Set a JSON body and its content type.
    pub fn json(mut self, value: &serde_json::Value) -> Call {
        self.body = Bytes::from(value.to_string());
        self.headers.push((
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        ));
        self
    }

    /// The target (path and query).
    pub(crate) fn target(&self) -> &str {
        &self.target
    }

    /// The body.
    pub(crate) fn body_bytes(&self) -> &Bytes {
        &self.body
    }

    /// The same request to another target.
    pub(crate) fn with_target(mut self, target: String) -> Call {
        self.target = target;
        self
    }

    /// The same request with another body.
    pub(crate) fn with_body(mut self, body: Bytes) -> Call {
        self.body = body;
        self
    }

    /// The request the engine sends, numbered `seq`. Headers the engine
    /// sets itself (Host, framing) are left out, as every input does.
    pub(crate) fn into_request(self, seq: u64) -> Request {
        let mut headers = self.headers;
        headers.retain(|(n, _)| !crate::input::is_engine_header(n.as_str().as_bytes()));
        Request {
            seq,
            method: Some(self.method),
            target: Some(self.target),
            headers,
            body: self.body,
        }
    }
}

/// Several flows run in one run, mixed by weight: instance n runs flow
/// [`Mix::pick`]`(n)`. The mix is exact over every cycle of the weights'
/// sum (smooth weighted round robin: weights 3 and 1 give A A B A, A A B
/// A, ...), so any share is right to within one cycle.
pub struct Mix {
    flows: Vec<std::sync::Arc<Flow>>,
    /// One cycle of picks.
    cycle: Vec<usize>,
}

/// Longest cycle a mix may have (the weights' sum over their common
/// divisor).
const MAX_CYCLE: u64 = 100_000;

impl Mix {
    /// A mix of `flows` with their weights.
    ///
    /// # Errors
    /// No flow, a weight of 0, a flow without steps, or weights whose sum
    /// (over their common divisor) is over 100,000.
    pub fn new(flows: Vec<(Flow, u32)>) -> Result<Mix, String> {
        if flows.is_empty() {
            return Err("no flow to run".into());
        }
        if let Some((f, _)) = flows.iter().find(|(_, w)| *w == 0) {
            return Err(format!("{}: a weight must be at least 1", f.name()));
        }
        if let Some((f, _)) = flows.iter().find(|(f, _)| f.steps().is_empty()) {
            return Err(format!("{}: a flow needs at least one step", f.name()));
        }
        let gcd = flows.iter().fold(0u64, |g, (_, w)| gcd(g, u64::from(*w)));
        let weights: Vec<u64> = flows.iter().map(|(_, w)| u64::from(*w) / gcd).collect();
        let total: u64 = weights.iter().sum();
        if total > MAX_CYCLE {
            return Err(format!(
                "the weights add up to {total} parts (over their common divisor); at most {MAX_CYCLE}"
            ));
        }
        let mut current = vec![0i64; weights.len()];
        let mut cycle = Vec::with_capacity(total as usize);
        for _ in 0..total {
            for (c, w) in current.iter_mut().zip(&weights) {
                *c += *w as i64;
            }
            let (best, _) = current
                .iter()
                .enumerate()
                .max_by_key(|(i, c)| (**c, std::cmp::Reverse(*i)))
                .unwrap_or((0, &0));
            current[best] -= total as i64;
            cycle.push(best);
        }
        Ok(Mix {
            flows: flows
                .into_iter()
                .map(|(f, _)| std::sync::Arc::new(f))
                .collect(),
            cycle,
        })
    }

    /// A mix of one flow.
    pub fn one(flow: std::sync::Arc<Flow>) -> Mix {
        Mix {
            flows: vec![flow],
            cycle: vec![0],
        }
    }

    /// The flows, in the order given.
    pub fn flows(&self) -> &[std::sync::Arc<Flow>] {
        &self.flows
    }

    /// Which flow instance `n` runs.
    pub fn pick(&self, n: u64) -> usize {
        self.cycle[(n % self.cycle.len() as u64) as usize]
    }
}

impl std::fmt::Debug for Mix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self.flows.iter().map(|f| f.name()).collect();
        f.debug_struct("Mix")
            .field("flows", &names)
            .field("cycle", &self.cycle.len())
            .finish()
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flow(name: &str) -> Flow {
        Flow::new(name).step("s", |_| async { Ok(Call::get("/")) })
    }

    #[test]
    fn a_mix_is_exact_over_each_cycle_and_spread_within_it() {
        let mix = Mix::new(vec![(flow("a"), 30), (flow("b"), 10)]).unwrap();
        // 30:10 is 3:1: a a b a, a a b a, ...
        let picks: Vec<usize> = (0..8).map(|n| mix.pick(n)).collect();
        assert_eq!(picks, [0, 0, 1, 0, 0, 0, 1, 0]);
        let mix = Mix::new(vec![(flow("a"), 1), (flow("b"), 2), (flow("c"), 7)]).unwrap();
        let mut counts = [0u64; 3];
        for n in 0..10_000 {
            counts[mix.pick(n)] += 1;
        }
        assert_eq!(counts, [1_000, 2_000, 7_000]);
    }

    #[test]
    fn a_mix_refuses_what_cannot_run() {
        assert!(Mix::new(Vec::new()).is_err());
        assert!(Mix::new(vec![(flow("a"), 0)])
            .unwrap_err()
            .contains("at least 1"));
        assert!(Mix::new(vec![(Flow::new("empty"), 1)])
            .unwrap_err()
            .contains("step"));
        assert!(Mix::new(vec![(flow("a"), 100_000), (flow("b"), 1)]).is_err());
    }
}
