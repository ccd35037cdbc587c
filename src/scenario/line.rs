//! A stream's record made into one endpoint's own request
//! (`--template NAME=SPEC`), in the templates of scenario files: so one
//! line of ids drives a REST API that takes the id in its path and a gRPC
//! method that takes it in its message. `{{ line }}` is the record's body
//! (a plain line is all body), `{{ seq }}` the request's number in the
//! stream, `{{ name }}` a field of it as JSON (`{{ user.id }}`,
//! `{{ params[0] }}`: a JSON path's steps). A value is a
//! string's text, or any other value's JSON. Holes are escaped where they
//! stand: percent-encoded in the path and query, JSON-escaped inside a
//! string of a JSON body, as they are elsewhere.

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};

use super::template::{Escape, Template};
use crate::json_path::JsonPath;
use crate::model::Request;

/// One endpoint's template of the stream's records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineTemplate {
    /// An HTTP request's method and path (with its query); `None` for a
    /// gRPC endpoint, whose template is the message alone.
    http: Option<(Method, Template)>,
    /// The body (a gRPC endpoint's message).
    body: Option<Template>,
    /// Whether the body is JSON (starts with `{` or `[`): sent with
    /// `content-type: application/json` unless a header says otherwise.
    json: bool,
    /// The values the template reads, by name.
    values: Vec<(String, Read)>,
}

/// Where a value a template reads comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Read {
    /// The record's whole body (`line`).
    Line,
    /// The request's number in the stream (`seq`), from 0, as `-v` and
    /// `--mismatches` number it.
    Seq,
    /// A field of the record as JSON, by its path.
    Field(JsonPath),
}

impl LineTemplate {
    /// Compile `spec`: for an HTTP endpoint `[METHOD] /PATH[?QUERY] [BODY]`
    /// (GET without a body, else POST, when no method is given); for a
    /// gRPC endpoint (`grpc`) the request message in proto3 JSON.
    ///
    /// # Errors
    /// A spec of neither shape, or a template that does not parse, as a
    /// message that shows the form.
    pub fn parse(spec: &str, grpc: bool) -> Result<LineTemplate, String> {
        let spec = spec.trim();
        let (http, body) = if grpc {
            if !spec.starts_with('{') {
                return Err(format!(
                    "{spec:?}: a gRPC endpoint's template is its request message in proto3 JSON, e.g. '{{\"id\": \"{{{{ id }}}}\"}}'"
                ));
            }
            (None, Some(spec))
        } else {
            let (method, rest) = split_method(spec);
            if !rest.starts_with('/') {
                return Err(format!(
                    "{spec:?}: expected [METHOD] /PATH [BODY], e.g. 'GET /items/{{{{ id }}}}' or 'POST /items {{\"id\": \"{{{{ id }}}}\"}}'"
                ));
            }
            let end = path_end(rest);
            let body = Some(rest[end..].trim()).filter(|b| !b.is_empty());
            let method = match method {
                Some(m) => Method::from_bytes(m.as_bytes())
                    .map_err(|_| format!("{m:?} is not an HTTP method"))?,
                None if body.is_some() => Method::POST,
                None => Method::GET,
            };
            let path =
                Template::parse(&rest[..end], Escape::Url).map_err(|e| format!("the path: {e}"))?;
            (Some((method, path)), body)
        };
        let json = body.is_some_and(|b| b.starts_with('[') || is_object(b));
        let body = body
            .map(|b| match json {
                true => Template::parse_with(b, json_strings()),
                false => Template::parse(b, Escape::None),
            })
            .transpose()
            .map_err(|e| format!("the body: {e}"))?;
        let mut values: Vec<(String, Read)> = Vec::new();
        let read = http.iter().map(|(_, p)| p).chain(&body);
        for name in read.flat_map(Template::vars) {
            if values.iter().any(|(n, _)| n == name) {
                continue;
            }
            let from = match name {
                "line" => Read::Line,
                "seq" => Read::Seq,
                field => Read::Field(JsonPath::parse(&format!("$.{field}"))?),
            };
            values.push((name.to_string(), from));
        }
        Ok(LineTemplate {
            http,
            body,
            json,
            values,
        })
    }

    /// The request `req` is at this endpoint, or why it cannot be made: a
    /// value the template reads that the record has not (a body that is
    /// not JSON, or not UTF-8, or without the field).
    ///
    /// # Errors
    /// That reason, to follow "the template": `reads {{ id }}: not in
    /// the record`.
    pub fn render(&self, req: &Request) -> Result<Request, String> {
        let values = self.values(req)?;
        Ok(self.build(req, &values))
    }

    /// The request `req` is at this endpoint, a value it lacks written
    /// empty: for a record [`LineTemplate::render`] made before (a stream's
    /// records are checked on the input thread, and those that lack a
    /// value counted as malformed, before a core makes their requests).
    pub fn request(&self, req: &Request) -> Request {
        self.build(req, &self.values(req).unwrap_or_default())
    }

    /// The values the template reads from `req`, in the order of
    /// `self.values`.
    fn values(&self, req: &Request) -> Result<Vec<String>, String> {
        if self.values.is_empty() {
            return Ok(Vec::new());
        }
        let reads = |name: &str, why: &str| format!("reads {{{{ {name} }}}}: {why}");
        let text = |name: &str| {
            std::str::from_utf8(&req.body).map_err(|_| reads(name, "the record is not valid UTF-8"))
        };
        let mut json: Option<serde_json::Value> = None;
        let mut out = Vec::with_capacity(self.values.len());
        for (name, from) in &self.values {
            let path = match from {
                Read::Line => {
                    out.push(text(name)?.to_string());
                    continue;
                }
                Read::Seq => {
                    out.push(req.seq.to_string());
                    continue;
                }
                Read::Field(path) => path,
            };
            let doc = match &mut json {
                Some(doc) => doc,
                None => json.insert(
                    serde_json::from_str(text(name)?)
                        .map_err(|e| reads(name, &format!("the record is not JSON ({e})")))?,
                ),
            };
            let value = path
                .get(doc)
                .ok_or_else(|| reads(name, "not in the record"))?;
            out.push(match value {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            });
        }
        Ok(out)
    }

    /// The request from `values` (as [`LineTemplate::values`] orders
    /// them): an HTTP template's method, path and body with the record's
    /// headers; a gRPC template's message in the record's place.
    fn build(&self, req: &Request, values: &[String]) -> Request {
        let lookup = |name: &str| {
            let at = self.values.iter().position(|(n, _)| n == name)?;
            values.get(at).cloned()
        };
        // The random functions draw the same values at every endpoint.
        let mut rng = fastrand::Rng::with_seed(req.seq);
        let mut render = |t: &Template| t.render(&lookup, &mut rng);
        let body = self
            .body
            .as_ref()
            .map_or_else(Bytes::new, |b| Bytes::from(render(b)));
        let Some((method, path)) = &self.http else {
            return Request {
                body,
                ..req.clone()
            };
        };
        let mut headers = req.headers.clone();
        let typed = headers
            .iter()
            .any(|(n, _)| *n == http::header::CONTENT_TYPE);
        if self.json && !typed {
            headers.push((
                HeaderName::from_static("content-type"),
                HeaderValue::from_static("application/json"),
            ));
        }
        Request {
            seq: req.seq,
            method: Some(method.clone()),
            target: Some(render(path)),
            headers,
            body,
        }
    }
}

/// `METHOD rest` when `spec` starts with an HTTP method's name (upper
/// case letters and a space), else no method and all of it.
fn split_method(spec: &str) -> (Option<&str>, &str) {
    match spec.split_once(' ') {
        Some((m, rest)) if !m.is_empty() && m.bytes().all(|b| b.is_ascii_uppercase()) => {
            (Some(m), rest.trim_start())
        }
        _ => (None, spec),
    }
}

/// Where the path of `rest` ends: at the first white space outside a
/// hole (`{{ id }}` holds spaces).
fn path_end(rest: &str) -> usize {
    let mut at = 0;
    while let Some(c) = rest[at..].chars().next() {
        if rest[at..].starts_with("{{") {
            at += rest[at..]
                .find("}}")
                .map_or(rest.len() - at, |close| close + 2);
        } else if c.is_whitespace() {
            return at;
        } else {
            at += c.len_utf8();
        }
    }
    rest.len()
}

/// Whether a body starts as a JSON object does: `{`, but not a hole's `{{`.
fn is_object(body: &str) -> bool {
    body.starts_with('{') && !body.starts_with("{{")
}

/// The escape of each hole of a JSON body, given the literal text before
/// it: JSON-escaped inside a string, as it is outside one (a number, an
/// object, or a whole value the line holds).
fn json_strings() -> impl FnMut(&str) -> Escape {
    let mut inside = false;
    let mut escaped = false;
    move |text: &str| {
        for c in text.chars() {
            match c {
                _ if escaped => escaped = false,
                '\\' if inside => escaped = true,
                '"' => inside = !inside,
                _ => {}
            }
        }
        match inside {
            true => Escape::JsonString,
            false => Escape::None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Request {
        Request::line(3, Bytes::from(text.to_string()))
    }

    fn http(spec: &str, text: &str) -> Result<Request, String> {
        LineTemplate::parse(spec, false)
            .unwrap()
            .render(&line(text))
    }

    #[test]
    fn a_path_id_from_a_field_or_the_whole_line_percent_encoded() {
        let r = http(
            "GET /items/{{ id }}?who={{ user.name }}",
            r#"{"id": "a/b c", "user": {"name": "ann"}}"#,
        )
        .unwrap();
        assert_eq!(r.method, Some(Method::GET));
        assert_eq!(r.target.as_deref(), Some("/items/a%2Fb%20c?who=ann"));
        assert!(r.body.is_empty() && r.headers.is_empty());
        assert_eq!(r.seq, 3);
        let r = http("/tx/{{ line }}", "0xab").unwrap();
        assert_eq!(
            (r.method, r.target.as_deref()),
            (Some(Method::GET), Some("/tx/0xab"))
        );
        let r = http("GET /n/{{ params[1] }}", r#"{"params": [1, 22]}"#).unwrap();
        assert_eq!(r.target.as_deref(), Some("/n/22"));
    }

    /// `{{ seq }}` is the request's number in the stream (the record's
    /// number, 3 here), whatever the record holds.
    #[test]
    fn seq_is_the_requests_number_in_the_stream() {
        let r = http("POST /n/{{ seq }} {\"at\": {{ seq }}}", "not json").unwrap();
        assert_eq!(r.target.as_deref(), Some("/n/3"));
        assert_eq!(&r.body[..], br#"{"at": 3}"#);
        let t = LineTemplate::parse("GET /n/{{ seq }}", false).unwrap();
        let raw = Request::line(9, Bytes::from_static(b"\xff"));
        assert_eq!(t.render(&raw).unwrap().target.as_deref(), Some("/n/9"));
    }

    #[test]
    fn a_json_body_escapes_inside_strings_and_copies_values_outside() {
        let r = http(
            r#"POST /tx {"id": "{{ id }}", "n": {{ n }}, "all": {{ line }}, "s": "a \"{{ id }}\""}"#,
            r#"{"id": "say \"hi\"", "n": 7}"#,
        )
        .unwrap();
        assert_eq!(r.method, Some(Method::POST));
        let body: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(body["id"], "say \"hi\"");
        assert_eq!(body["n"], 7);
        assert_eq!(body["all"]["n"], 7);
        assert_eq!(body["s"], "a \"say \"hi\"\"");
        assert_eq!(r.headers[0].1, "application/json");
        // Without a method, a body makes it a POST; a text body is as
        // written, with no content type of its own.
        let r = http("/q id={{ id }}", r#"{"id": "a b"}"#).unwrap();
        assert_eq!(
            (r.method, &r.body[..]),
            (Some(Method::POST), &b"id=a b"[..])
        );
        assert!(r.headers.is_empty());
    }

    #[test]
    fn a_grpc_template_is_the_message_and_keeps_the_records_path() {
        let t = LineTemplate::parse(r#"{"id": "{{ line }}"}"#, true).unwrap();
        let mut req = line("7");
        req.target = Some("/items.Items/GetItem".into());
        let r = t.render(&req).unwrap();
        assert_eq!(&r.body[..], br#"{"id": "7"}"#);
        assert_eq!(r.target, req.target);
        assert_eq!(r.method, None);
        assert!(r.headers.is_empty());
    }

    #[test]
    fn a_record_without_a_value_the_template_reads_says_which() {
        let err = |text: &str| http("GET /items/{{ id }}", text).unwrap_err();
        assert_eq!(err(r#"{"other": 1}"#), "reads {{ id }}: not in the record");
        assert!(err("7").contains("not in the record"));
        assert!(err("not json").starts_with("reads {{ id }}: the record is not JSON ("));
        assert!(http("/{{ line }}", "\u{1}\u{ff}").is_ok());
        let t = LineTemplate::parse("GET /items/{{ id }}", false).unwrap();
        assert_eq!(t.request(&line("{}")).target.as_deref(), Some("/items/"));
        // A template that reads no value takes any record.
        assert!(http("GET /health", "\u{1}").is_ok());
    }

    #[test]
    fn bad_specs_show_the_form() {
        let err = |spec: &str, grpc| LineTemplate::parse(spec, grpc).unwrap_err();
        assert!(err("items/{{ id }}", false).contains("[METHOD] /PATH [BODY]"));
        assert!(err("GET items", false).contains("[METHOD] /PATH"));
        assert!(err("GET /a/{{ id", false).contains("without"));
        assert!(err("GET /a/{{ nope(id) }}", false).contains("unknown function"));
        assert!(err("GET /a/{{ a[x] }}", false).contains("JSON path"));
        assert!(err("/items/{{ id }}", true).contains("proto3 JSON"));
    }
}
