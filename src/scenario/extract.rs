//! What a scenario step takes from an answer and what it checks: values by
//! JSON path (`$.data[0].id`), response header, status or regular
//! expression over the body; checks of the status and of values at JSON
//! paths (equal to, exists, matches). Paths and expressions are compiled
//! when the file is read; an answer's body is parsed as JSON only when a
//! path asks for it, once per answer.

use regex::Regex;
use serde_json::Value;

use crate::flow::{Reply, StepError, Vars};
pub(crate) use crate::json_path::JsonPath;

/// Where a value comes from.
#[derive(Clone, Debug)]
pub(crate) enum ExtractFrom {
    Json(JsonPath),
    Header(String),
    Status,
    /// A gRPC answer's status code by name (`OK`, `NOT_FOUND`).
    GrpcStatus,
    /// The first capture group (or the whole match) of a regular
    /// expression over the body.
    Regex(Regex),
}

impl ExtractFrom {
    /// Parse `$.path`, `header:NAME`, `status` or `regex:EXPR`.
    ///
    /// # Errors
    /// A malformed path or expression, or another form.
    pub(crate) fn parse(text: &str) -> Result<ExtractFrom, String> {
        if text.starts_with('$') {
            return JsonPath::parse(text).map(ExtractFrom::Json);
        }
        if text == "status" {
            return Ok(ExtractFrom::Status);
        }
        if text == "grpc-status" {
            return Ok(ExtractFrom::GrpcStatus);
        }
        if let Some(name) = text.strip_prefix("header:") {
            let name = name.trim();
            http::HeaderName::try_from(name)
                .map_err(|_| format!("{name:?} is not a header name"))?;
            return Ok(ExtractFrom::Header(name.to_ascii_lowercase()));
        }
        if let Some(expr) = text.strip_prefix("regex:") {
            return Regex::new(expr)
                .map(ExtractFrom::Regex)
                .map_err(|e| format!("regex {expr:?}: {e}"));
        }
        Err(format!(
            "{text:?}: take a value with a JSON path ($.token), header:NAME, status, grpc-status, or regex:EXPR"
        ))
    }

    /// The header this source reads, if any (the transport must keep it).
    pub(crate) fn header(&self) -> Option<&str> {
        match self {
            ExtractFrom::Header(h) => Some(h),
            _ => None,
        }
    }
}

/// An answer as the step's extractions and checks read it: the body
/// parsed as JSON at most once.
pub(crate) struct ParsedResponse<'a> {
    reply: &'a Reply,
    json: Option<Result<Value, String>>,
}

impl<'a> ParsedResponse<'a> {
    pub(crate) fn new(reply: &'a Reply) -> Self {
        ParsedResponse { reply, json: None }
    }

    fn json(&mut self) -> Result<&Value, StepError> {
        let body = &self.reply.body;
        self.json
            .get_or_insert_with(|| {
                serde_json::from_slice(body).map_err(|e| format!("the answer is not JSON: {e}"))
            })
            .as_ref()
            .map_err(|e| StepError(e.clone()))
    }

    /// The value `source` names, as text (a JSON string as it is; any
    /// other JSON value written out compactly).
    pub(crate) fn value(&mut self, source: &ExtractFrom) -> Result<String, StepError> {
        match source {
            ExtractFrom::Status => Ok(self.reply.status.to_string()),
            ExtractFrom::GrpcStatus => self
                .reply
                .grpc_code()
                .map(str::to_string)
                .ok_or_else(|| StepError("not a gRPC answer: no grpc-status".into())),
            ExtractFrom::Header(name) => self
                .reply
                .header(name)
                .map(str::to_string)
                .ok_or_else(|| StepError(format!("no {name} header in the answer"))),
            ExtractFrom::Json(path) => match self.find(path)? {
                Some(Value::String(s)) => Ok(s),
                Some(v) => Ok(v.to_string()),
                None => Err(StepError(format!("nothing at {path} in the answer"))),
            },
            ExtractFrom::Regex(re) => {
                let body = String::from_utf8_lossy(&self.reply.body);
                let caps = re.captures(&body).ok_or_else(|| {
                    StepError(format!("regex {} found nothing in the answer", re.as_str()))
                })?;
                Ok(caps
                    .get(1)
                    .or_else(|| caps.get(0))
                    .map_or(String::new(), |m| m.as_str().to_string()))
            }
        }
    }

    /// The JSON value at `path`, if the body is JSON and has one there:
    /// found in the body's text, unless it was parsed already.
    fn find(&mut self, path: &JsonPath) -> Result<Option<Value>, StepError> {
        if self.json.is_none() {
            match path.find(&self.reply.body) {
                Ok(found) => return Ok(found),
                Err(e) => self.json = Some(Err(format!("the answer is not JSON: {e}"))),
            }
        }
        Ok(path.get(self.json()?).cloned())
    }

    /// The JSON value at `path`, if the body is JSON and has one there.
    fn at(&mut self, path: &JsonPath) -> Result<Option<&Value>, StepError> {
        Ok(path.get(self.json()?))
    }
}

/// Values a step takes, in order.
#[derive(Clone, Debug, Default)]
pub(crate) struct Takes(pub Vec<(String, ExtractFrom)>);

impl Takes {
    /// Take every value into `vars`; the first missing one fails.
    pub(crate) fn apply(&self, reply: &Reply, vars: &mut Vars) -> Result<(), StepError> {
        let mut answer = ParsedResponse::new(reply);
        for (name, source) in &self.0 {
            let v = answer
                .value(source)
                .map_err(|e| StepError(format!("{name}: {e}")))?;
            vars.insert(name.clone(), v);
        }
        Ok(())
    }
}

/// One check of an answer.
#[derive(Clone, Debug)]
pub(crate) enum Check {
    /// The status is one of these.
    Status(Vec<u16>),
    /// The gRPC status code is one of these.
    GrpcStatus(Vec<u32>),
    /// The value at the path equals this JSON value.
    Equals(JsonPath, Value),
    /// The path has a value (or has none).
    Exists(JsonPath, bool),
    /// The value at the path, as text, matches the expression.
    Matches(JsonPath, Regex),
}

/// A step's checks. Without a status check, the status must be below 400.
#[derive(Clone, Debug, Default)]
pub(crate) struct Checks(pub Vec<Check>);

impl Checks {
    /// Check an answer; the first failure is the reason.
    pub(crate) fn apply(&self, reply: &Reply) -> Result<(), StepError> {
        if !self.0.iter().any(|c| matches!(c, Check::Status(_))) && reply.status >= 400 {
            return Err(StepError(format!("HTTP {}", reply.status)));
        }
        if !self.0.iter().any(|c| matches!(c, Check::GrpcStatus(_))) {
            if let Some(g) = reply.grpc.as_ref().filter(|g| g.is_error()) {
                return Err(StepError(crate::grpc::error_name(g.code)));
            }
        }
        let needs_json = self
            .0
            .iter()
            .any(|c| !matches!(c, Check::Status(_) | Check::GrpcStatus(_)));
        let mut answer = ParsedResponse::new(reply);
        if needs_json {
            answer.json()?;
        }
        for c in &self.0 {
            match c {
                Check::Status(want) if !want.contains(&reply.status) => {
                    return Err(StepError(format!(
                        "status {} is not {}",
                        reply.status,
                        want.iter()
                            .map(u16::to_string)
                            .collect::<Vec<_>>()
                            .join(" or ")
                    )))
                }
                Check::Status(_) => {}
                // Checked at gRPC endpoints; an HTTP endpoint of the same
                // scenario has no gRPC status to check.
                Check::GrpcStatus(_) if reply.grpc.is_none() => {}
                Check::GrpcStatus(want) => {
                    let code = reply.grpc.as_ref().map_or(0, |g| g.code);
                    if !want.contains(&code) {
                        return Err(StepError(format!(
                            "grpc-status {} is not {}",
                            reply.grpc_code().unwrap_or("(none)"),
                            want.iter()
                                .map(|c| crate::grpc::code_name(*c))
                                .collect::<Vec<_>>()
                                .join(" or ")
                        )));
                    }
                }
                Check::Equals(path, want) => match answer.at(path)? {
                    Some(v) if same(v, want) => {}
                    Some(v) => return Err(StepError(format!("{path} is {v}, not {want}"))),
                    None => return Err(StepError(format!("nothing at {path}, expected {want}"))),
                },
                Check::Exists(path, want) => {
                    let there = answer.at(path)?.is_some();
                    if there != *want {
                        return Err(StepError(match want {
                            true => format!("nothing at {path}"),
                            false => format!("{path} is there"),
                        }));
                    }
                }
                Check::Matches(path, re) => match answer.at(path)? {
                    Some(v) => {
                        let text = match v {
                            Value::String(s) => s.clone(),
                            v => v.to_string(),
                        };
                        if !re.is_match(&text) {
                            return Err(StepError(format!(
                                "{path} is {v}, which does not match {}",
                                re.as_str()
                            )));
                        }
                    }
                    None => return Err(StepError(format!("nothing at {path} to match"))),
                },
            }
        }
        Ok(())
    }
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_f64(), y.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => x == y,
        },
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(status: u16, body: &str) -> Reply {
        Reply {
            status,
            headers: vec![(
                http::HeaderName::from_static("location"),
                http::HeaderValue::from_static("/orders/9"),
            )],
            body: bytes::Bytes::copy_from_slice(body.as_bytes()),
            grpc: None,
        }
    }

    #[test]
    fn paths_parse_and_find_values() {
        let v: Value = serde_json::json!({"data": [{"id": 5, "name": "a.b"}], "odd key": true});
        let get = |p: &str| JsonPath::parse(p).unwrap().get(&v).cloned();
        assert_eq!(get("$.data[0].id"), Some(serde_json::json!(5)));
        assert_eq!(get("$[\"odd key\"]"), Some(serde_json::json!(true)));
        assert_eq!(get("$.data[1]"), None);
        assert_eq!(get("$"), Some(v.clone()));
        for bad in ["data", "$.", "$[x]", "$[0", "$..a"] {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn takes_values_from_json_headers_status_and_regex() {
        let takes = Takes(vec![
            ("id".into(), ExtractFrom::parse("$.id").unwrap()),
            (
                "where".into(),
                ExtractFrom::parse("header:Location").unwrap(),
            ),
            ("code".into(), ExtractFrom::parse("status").unwrap()),
            (
                "n".into(),
                ExtractFrom::parse("regex:\"n\":(\\d+)").unwrap(),
            ),
        ]);
        let mut vars = Vars::new();
        takes
            .apply(&reply(201, r#"{"id":"x1","n":42}"#), &mut vars)
            .unwrap();
        assert_eq!(vars["id"], "x1");
        assert_eq!(vars["where"], "/orders/9");
        assert_eq!(vars["code"], "201");
        assert_eq!(vars["n"], "42");
        let err = takes
            .apply(&reply(200, r#"{"n":1}"#), &mut vars)
            .unwrap_err();
        assert_eq!(err.0, "id: nothing at $.id in the answer");
        assert!(ExtractFrom::parse("cookie:x").is_err());
        assert!(ExtractFrom::parse("regex:(").is_err());
    }

    #[test]
    fn checks_status_and_values() {
        let re = Regex::new("^a").unwrap();
        let path = |p: &str| JsonPath::parse(p).unwrap();
        let checks = Checks(vec![
            Check::Status(vec![200, 201]),
            Check::Equals(path("$.n"), serde_json::json!(1.0)),
            Check::Exists(path("$.gone"), false),
            Check::Matches(path("$.s"), re),
        ]);
        assert!(checks.apply(&reply(201, r#"{"n":1,"s":"abc"}"#)).is_ok());
        let fail = |r: Reply| checks.apply(&r).unwrap_err().0;
        assert_eq!(fail(reply(404, "{}")), "status 404 is not 200 or 201");
        assert_eq!(fail(reply(200, r#"{"n":2,"s":"a"}"#)), "$.n is 2, not 1.0");
        assert!(fail(reply(200, r#"{"n":1,"s":"b","gone":0}"#)).contains("$.gone is there"));
        assert!(fail(reply(200, "not json")).contains("not JSON"));
        // Without a status check, an error status fails.
        assert_eq!(
            Checks::default().apply(&reply(500, "")).unwrap_err().0,
            "HTTP 500"
        );
    }
}
