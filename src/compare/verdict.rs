//! The verdict on one request: every endpoint's outcome against the
//! reference's, under the rules for the request's method, with noise
//! cancelled. The findings say where each endpoint differs, for grouping.
//! Equal answers cost a byte comparison and allocate nothing.

use http::HeaderName;

use super::json::{self, Difference};
use super::method::MethodName;
use super::path::{render, render_grouped, Segment};
use super::rules::Rules;
use super::CompareMode;
use crate::model::{Outcome, Response};

/// One place where an endpoint's answer differs from the reference's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The endpoint that differs.
    pub endpoint: usize,
    /// The field, grouped (`$.result.logs[*].data`, `status`, `body`,
    /// `outcome`, `header etag`).
    pub field: String,
    /// The concrete location (`$.result.logs[3].data`), for noise matching.
    pub at: String,
    /// The JSON path, when the field is one.
    pub path: Option<Vec<Segment>>,
    /// How it differs (`changed`, `missing`, `200 vs timeout`, ...).
    pub kind: String,
}

/// The judgement of one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Some endpoint really differs from the reference.
    pub mismatched: bool,
    /// Real differences (noise removed).
    pub findings: Vec<Finding>,
    /// Grouped fields where the two reference answers differ (noise mode).
    pub reference_pair: Vec<String>,
    /// Grouped fields of candidate differences cancelled as noise.
    pub cancelled: Vec<String>,
    /// A body was not JSON and was compared as bytes.
    pub fell_back: bool,
}

/// Decides verdicts: the comparison mode, the rules, the compared headers,
/// and the reference's twin for noise cancellation.
#[derive(Clone, Debug)]
pub struct Comparer {
    mode: CompareMode,
    rules: Rules,
    jsonrpc: bool,
    headers: Vec<HeaderName>,
    twin: Option<usize>,
    /// A REST answer and a gRPC one compare by meaning (404 is
    /// `NOT_FOUND`), as gRPC's HTTP mapping has it.
    status_mapping: bool,
}

impl Default for Comparer {
    fn default() -> Self {
        Comparer::new(CompareMode::Auto)
    }
}

impl Comparer {
    /// A comparer for `mode` with strict structural rules, JSON-RPC aware.
    pub fn new(mode: CompareMode) -> Comparer {
        Comparer {
            mode,
            rules: Rules::new(Default::default()),
            jsonrpc: true,
            headers: Vec::new(),
            twin: None,
            status_mapping: true,
        }
    }

    /// Compare a REST answer's HTTP status with a gRPC answer's code by
    /// gRPC's HTTP mapping (on by default), or strictly: only a 200 and
    /// `OK` agree.
    pub fn with_status_mapping(mut self, on: bool) -> Comparer {
        self.status_mapping = on;
        self
    }

    /// Use these rules (from the command line and `--rules`).
    pub fn with_rules(mut self, rules: Rules) -> Comparer {
        self.rules = rules;
        self
    }

    /// Add a flow step's own rules (a `[step.NAME]` section).
    ///
    /// # Errors
    /// Unknown keys or bad paths, naming them.
    pub fn add_step_rules(
        &mut self,
        step: &str,
        table: &toml::Table,
    ) -> Result<(), super::rules::RuleError> {
        self.rules.add_step(step, table)
    }

    /// Turn JSON-RPC awareness on or off.
    pub fn with_jsonrpc(mut self, on: bool) -> Comparer {
        self.jsonrpc = on;
        self
    }

    /// Compare these response headers too.
    pub fn with_headers(mut self, headers: Vec<HeaderName>) -> Comparer {
        self.headers = headers;
        self
    }

    /// Endpoint `twin` is a second copy of the reference: differences the
    /// two copies also show are noise.
    pub fn with_twin(mut self, twin: Option<usize>) -> Comparer {
        self.twin = twin;
        self
    }

    /// The headers compared.
    pub fn headers(&self) -> &[HeaderName] {
        &self.headers
    }

    /// The reference's twin, in noise mode.
    pub fn twin(&self) -> Option<usize> {
        self.twin
    }

    /// True when JSON-RPC awareness is on.
    pub fn jsonrpc(&self) -> bool {
        self.jsonrpc && self.enabled()
    }

    /// True when verdicts need response bodies.
    pub fn needs_body(&self) -> bool {
        matches!(
            self.mode,
            CompareMode::Auto | CompareMode::Bytes | CompareMode::Json
        )
    }

    /// True when comparison is on at all.
    pub fn enabled(&self) -> bool {
        self.mode != CompareMode::None
    }

    /// Do two outcomes agree by the cheap test (status, compared headers,
    /// bytes)? `false` means "look closer", not "differ".
    fn same(&self, a: &Outcome, b: &Outcome) -> bool {
        match (&a.result, &b.result) {
            (Err(x), Err(y)) => x == y,
            (Ok(x), Ok(y)) => {
                x.status == y.status
                    && grpc_code(x) == grpc_code(y)
                    && x.headers == y.headers
                    && (!self.needs_body() || x.body == y.body)
            }
            _ => false,
        }
    }

    /// True when `outcomes` (in endpoint order, the first the reference)
    /// need no closer look: comparing is off, there is no reference
    /// answer, or every answer (the twin's too) is the same by the cheap
    /// test. What [`Comparer::judge`] finds of them is then no finding.
    pub fn agree(&self, outcomes: &[Option<&Outcome>]) -> bool {
        let Some(Some(reference)) = outcomes.first().filter(|_| self.enabled()) else {
            return true;
        };
        outcomes
            .iter()
            .skip(1)
            .all(|o| o.is_none_or(|o| self.same(reference, o)))
    }

    /// Judge one request. `kind` names it (computed only when answers
    /// differ); `outcomes` are in endpoint order, the first the reference.
    pub fn judge(&self, kind: &dyn Fn() -> MethodName, outcomes: &[Option<&Outcome>]) -> Verdict {
        let mut j = Verdict::default();
        if self.agree(outcomes) {
            return j;
        }
        let Some(Some(reference)) = outcomes.first() else {
            return j;
        };
        let twin = self
            .twin
            .and_then(|t| outcomes.get(t)?.as_ref().map(|o| (t, o)));
        let differs = |i: usize, o: &Option<&Outcome>| {
            Some(i) != self.twin && i > 0 && o.as_ref().is_some_and(|o| !self.same(reference, o))
        };
        let twin_differs = twin.is_some_and(|(_, o)| !self.same(reference, o));
        let kind = kind();
        let rules = if kind.step {
            self.rules.for_step(&kind.selector)
        } else {
            self.rules
                .for_method(&kind.selector, &kind.group, self.jsonrpc && kind.jsonrpc)
        };
        let mut noise = Vec::new();
        if let Some((t, o)) = twin.filter(|_| twin_differs) {
            noise = self.findings(&rules, t, reference, o, &mut j.fell_back);
            j.reference_pair = noise.iter().map(|f| f.field.clone()).collect();
        }
        for (i, o) in outcomes.iter().enumerate() {
            let Some(o) = o.as_ref().filter(|_| differs(i, &outcomes[i])) else {
                continue;
            };
            for f in self.findings(&rules, i, reference, o, &mut j.fell_back) {
                if noise.iter().any(|n| covers(&n.at, &f.at)) {
                    j.cancelled.push(f.field);
                } else {
                    j.findings.push(f);
                }
            }
        }
        j.mismatched = !j.findings.is_empty();
        j
    }

    /// Where `candidate` (endpoint `e`) differs from `reference`.
    fn findings(
        &self,
        rules: &super::rules::RuleSet,
        e: usize,
        reference: &Outcome,
        candidate: &Outcome,
        fell_back: &mut bool,
    ) -> Vec<Finding> {
        let simple = |field: &str, kind: String| Finding {
            endpoint: e,
            field: field.to_string(),
            at: field.to_string(),
            path: None,
            kind,
        };
        let (a, b) = match (&reference.result, &candidate.result) {
            (Err(x), Err(y)) if x == y => return Vec::new(),
            (Ok(a), Ok(b)) => (a, b),
            _ => {
                return vec![simple(
                    "outcome",
                    format!("{} vs {}", describe(reference), describe(candidate)),
                )]
            }
        };
        let error_by_meaning = match self.statuses(a, b) {
            Statuses::Differ => {
                return vec![simple(
                    "status",
                    format!("{} vs {}", describe_response(a), describe_response(b)),
                )]
            }
            Statuses::Agree => false,
            Statuses::AgreeOnError => true,
        };
        let mut out = Vec::new();
        for name in &self.headers {
            let va: Vec<_> = a
                .headers
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, v)| v)
                .collect();
            let vb: Vec<_> = b
                .headers
                .iter()
                .filter(|(n, _)| n == name)
                .map(|(_, v)| v)
                .collect();
            if va != vb {
                out.push(simple(&format!("header {name}"), "changed".into()));
            }
        }
        match self.mode {
            // A REST error answer and a gRPC one of the same meaning: the
            // gRPC answer has no body to set beside the REST one's.
            _ if error_by_meaning => {}
            CompareMode::Status | CompareMode::None => {}
            _ if a.body == b.body => {}
            CompareMode::Bytes => out.push(simple("body", "changed".into())),
            CompareMode::Auto | CompareMode::Json => match json::compare(rules, &a.body, &b.body) {
                Ok(diffs) => out.extend(diffs.into_iter().map(|d| json_finding(e, d))),
                Err(_) => {
                    *fell_back = true;
                    out.push(simple("body", "changed (not JSON)".into()));
                }
            },
        }
        out
    }
}

/// How two answers' statuses compare.
enum Statuses {
    Differ,
    Agree,
    /// A REST error status and a gRPC error code of the same meaning.
    AgreeOnError,
}

impl Comparer {
    /// Two answers' statuses: both REST or both gRPC, exactly; a REST
    /// answer and a gRPC one by gRPC's HTTP mapping, unless it is off.
    fn statuses(&self, a: &Response, b: &Response) -> Statuses {
        let exact = a.status == b.status && grpc_code(a) == grpc_code(b);
        let (rest, grpc) = match (&a.grpc, &b.grpc) {
            (None, Some(g)) if self.status_mapping => (a, g.code),
            (Some(g), None) if self.status_mapping => (b, g.code),
            _ if exact => return Statuses::Agree,
            _ => return Statuses::Differ,
        };
        match crate::grpc::same_meaning(rest.status, grpc) {
            true if grpc == 0 => Statuses::Agree,
            true => Statuses::AgreeOnError,
            false => Statuses::Differ,
        }
    }
}

fn json_finding(endpoint: usize, d: Difference) -> Finding {
    Finding {
        endpoint,
        field: render_grouped(&d.path),
        at: render(&d.path),
        kind: d.kind.to_string(),
        path: Some(d.path),
    }
}

/// Noise at `noise` covers a difference at `at` when it is the same place
/// or an ancestor of it.
fn covers(noise: &str, at: &str) -> bool {
    at == noise
        || at
            .strip_prefix(noise)
            .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('['))
}

/// A short description of an outcome: the status, or the failure.
pub fn describe(o: &Outcome) -> String {
    match &o.result {
        Ok(r) => describe_response(r),
        Err(f) => f.to_string(),
    }
}

/// A response's status, with its gRPC status when it is not `OK`
/// (`200 NOT_FOUND`).
fn describe_response(r: &Response) -> String {
    match &r.grpc {
        Some(g) if g.is_error() => format!("{} {}", r.status, crate::grpc::code_name(g.code)),
        _ => r.status.to_string(),
    }
}

/// The gRPC status an answer is compared by: a REST answer (none) is
/// taken as `OK`, so a REST endpoint and a gRPC one line up.
fn grpc_code(r: &Response) -> u32 {
    r.grpc.as_ref().map_or(0, |g| g.code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Failure;

    /// [`Comparer::judge`] of outcomes held here.
    trait JudgeHeld {
        fn judge_held(
            &self,
            kind: &dyn Fn() -> MethodName,
            outcomes: &[Option<Outcome>],
        ) -> Verdict;
    }

    impl JudgeHeld for Comparer {
        fn judge_held(
            &self,
            kind: &dyn Fn() -> MethodName,
            outcomes: &[Option<Outcome>],
        ) -> Verdict {
            let refs: Vec<Option<&Outcome>> = outcomes.iter().map(Option::as_ref).collect();
            self.judge(kind, &refs)
        }
    }

    fn resp(status: u16, body: &str) -> Option<Outcome> {
        Some(Outcome::test_response(status, body))
    }

    fn fail(f: Failure) -> Option<Outcome> {
        Some(Outcome::test_failure(f))
    }

    fn rpc() -> MethodName {
        MethodName {
            group: "eth_x".into(),
            selector: "eth_x".into(),
            jsonrpc: true,
            step: false,
        }
    }

    fn fields(j: &Verdict) -> Vec<(usize, String, String)> {
        j.findings
            .iter()
            .map(|f| (f.endpoint, f.field.clone(), f.kind.clone()))
            .collect()
    }

    /// A gRPC answer: HTTP 200 with status `code`, and `body`.
    fn grpc(code: u32, body: &str) -> Option<Outcome> {
        let mut o = Outcome::test_response(200, body);
        if let Ok(r) = &mut o.result {
            r.grpc = Some(crate::model::GrpcStatus {
                code,
                message: None,
            });
        }
        Some(o)
    }

    #[test]
    fn a_rest_status_and_a_grpc_code_compare_by_meaning() {
        let c = Comparer::new(CompareMode::Auto);
        let step = || MethodName {
            group: "get".into(),
            selector: "get".into(),
            jsonrpc: false,
            step: true,
        };
        let judged = |c: &Comparer, rest: Option<Outcome>, g: Option<Outcome>| {
            fields(&c.judge_held(&step, &[rest, g]))
        };
        // 404 is NOT_FOUND, whatever each says in its body.
        assert!(judged(&c, resp(404, r#"{"error":"no such item"}"#), grpc(5, "")).is_empty());
        // 400 is INVALID_ARGUMENT, and FAILED_PRECONDITION too.
        assert!(judged(&c, resp(400, "{}"), grpc(3, "")).is_empty());
        assert!(judged(&c, resp(400, "{}"), grpc(9, "")).is_empty());
        // Different meanings still differ: 404 against OK, 200 against
        // NOT_FOUND, 503 against INTERNAL.
        let differ = |rest, g| judged(&c, rest, g)[0].clone();
        assert_eq!(differ(resp(404, "{}"), grpc(0, "{}")).1, "status");
        assert_eq!(
            differ(resp(200, "{}"), grpc(5, "")).2,
            "200 vs 200 NOT_FOUND"
        );
        assert_eq!(differ(resp(503, "{}"), grpc(13, "")).1, "status");
        // OK is any 2xx, and then the bodies are compared.
        assert!(judged(&c, resp(201, r#"{"id":1}"#), grpc(0, r#"{"id":1}"#)).is_empty());
        assert_eq!(
            differ(resp(200, r#"{"id":1}"#), grpc(0, r#"{"id":2}"#)).1,
            "$.id"
        );
        // Two gRPC answers compare by code exactly: both map to 400, yet
        // INVALID_ARGUMENT is not FAILED_PRECONDITION.
        assert_eq!(differ(grpc(3, ""), grpc(9, "")).1, "status");
        // Turned off, only 200 and OK agree.
        let strict = Comparer::new(CompareMode::Auto).with_status_mapping(false);
        assert_eq!(judged(&strict, resp(404, "{}"), grpc(5, ""))[0].1, "status");
    }

    #[test]
    fn equal_answers_cost_nothing_and_find_nothing() {
        let c = Comparer::new(CompareMode::Auto);
        let called = std::cell::Cell::new(false);
        let kind = || {
            called.set(true);
            rpc()
        };
        let j = c.judge_held(
            &kind,
            &[resp(200, "{}"), resp(200, "{}"), fail(Failure::Timeout)].map(|o| o)[..2],
        );
        assert_eq!(j, Verdict::default());
        assert!(!called.get(), "no kind needed for equal answers");
    }

    #[test]
    fn findings_name_the_endpoint_field_and_kind() {
        let c = Comparer::new(CompareMode::Auto);
        let j = c.judge_held(
            &rpc,
            &[
                resp(200, r#"{"id":1,"result":{"a":1,"b":[1,2]}}"#),
                resp(200, r#"{"result":{"b":[1,3],"a":1},"id":1}"#),
                resp(500, "x"),
                fail(Failure::Timeout),
                resp(200, "not json"),
            ],
        );
        assert!(j.mismatched);
        assert_eq!(
            fields(&j),
            [
                (1, "$.result.b[*]".to_string(), "changed".to_string()),
                (2, "status".to_string(), "200 vs 500".to_string()),
                (3, "outcome".to_string(), "200 vs timeout".to_string()),
                (4, "body".to_string(), "changed (not JSON)".to_string()),
            ]
        );
        assert!(j.fell_back);
        // JSON-RPC awareness: result against error is its own kind.
        let j = c.judge_held(&rpc, &[
            resp(200, r#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#),
            resp(200, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"header not found"}}"#),
        ]);
        assert!(
            j.findings.iter().any(|f| f.kind == "result vs error"),
            "{:?}",
            j.findings
        );
    }

    #[test]
    fn noise_seen_between_the_reference_twins_is_not_a_mismatch() {
        let c = Comparer::new(CompareMode::Auto).with_twin(Some(1));
        let j = c.judge_held(
            &rpc,
            &[
                resp(200, r#"{"result":{"ts":1,"v":"a","n":{"x":1}}}"#),
                resp(200, r#"{"result":{"ts":2,"v":"a","n":{"x":2}}}"#),
                resp(200, r#"{"result":{"ts":3,"v":"b","n":{"x":3}}}"#),
            ],
        );
        assert!(j.mismatched);
        assert_eq!(
            fields(&j),
            [(2, "$.result.v".to_string(), "changed".to_string())]
        );
        assert_eq!(j.reference_pair, ["$.result.n.x", "$.result.ts"]);
        assert_eq!(j.cancelled, ["$.result.n.x", "$.result.ts"]);
        // Only noise: not mismatched, still counted as noise.
        let j = c.judge_held(
            &rpc,
            &[
                resp(200, r#"{"ts":1}"#),
                resp(200, r#"{"ts":2}"#),
                resp(200, r#"{"ts":3}"#),
            ],
        );
        assert!(!j.mismatched);
        assert_eq!(j.cancelled, ["$.ts"]);
        assert!(covers("$.a", "$.a.b") && covers("$.a", "$.a[3]") && !covers("$.a", "$.ab"));
    }

    #[test]
    fn compared_headers_and_modes() {
        let mut a = resp(200, "{}");
        let mut b = resp(200, "{}");
        if let (Some(Ok(x)), Some(Ok(y))) = (
            a.as_mut().map(|o| o.result.as_mut()),
            b.as_mut().map(|o| o.result.as_mut()),
        ) {
            x.headers
                .push((HeaderName::from_static("etag"), "1".parse().unwrap()));
            y.headers
                .push((HeaderName::from_static("etag"), "2".parse().unwrap()));
        }
        let c =
            Comparer::new(CompareMode::Auto).with_headers(vec![HeaderName::from_static("etag")]);
        assert_eq!(
            fields(&c.judge_held(&rpc, &[a.clone(), b.clone()])),
            [(1, "header etag".to_string(), "changed".to_string())]
        );
        let status_only = Comparer::new(CompareMode::Status);
        assert!(
            !status_only
                .judge_held(&rpc, &[resp(200, "a"), resp(200, "b")])
                .mismatched
        );
        assert!(
            !Comparer::new(CompareMode::None)
                .judge_held(&rpc, &[resp(200, "a"), resp(500, "b")])
                .mismatched
        );
        assert!(
            Comparer::new(CompareMode::Bytes)
                .judge_held(
                    &rpc,
                    &[resp(200, r#"{"a":1,"b":2}"#), resp(200, r#"{"b":2,"a":1}"#)]
                )
                .mismatched
        );
    }
}
