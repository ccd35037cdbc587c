//! The `jsonl` input format: one JSON object per line, each a whole request
//! (`method`, `url` or `path`, `headers`, and a body as `body`, `json` or
//! `body_base64`).
//!
//! This file also owns the helpers every whole-request format (`jsonl`,
//! `har`, `curl`, `vegeta`) shares: the bounded line reader, header
//! filtering, method and target validation, body decoding and the JSON
//! field checks.

use std::io::{self, BufRead};

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};
use serde_json::{Map, Value};

use super::{Malformed, Next, ReadAhead, Request, Source};

/// The fields a `jsonl` record may have.
const JSONL_FIELDS: &[&str] = &[
    "method",
    "url",
    "path",
    "headers",
    "body",
    "json",
    "body_base64",
];

/// Reads `jsonl` requests, one JSON object per line.
pub struct JsonlSource {
    lines: LineReader,
    max_record: usize,
}

impl JsonlSource {
    /// A source reading `reader` line by line; a line longer than
    /// `max_record` bytes is reported as malformed and skipped.
    pub fn new(reader: Box<dyn ReadAhead>, max_record: usize) -> Self {
        JsonlSource {
            lines: LineReader::new(reader),
            max_record,
        }
    }
}

impl Source for JsonlSource {
    fn location(&self) -> Option<String> {
        Some(format!("line {}", self.lines.number))
    }

    fn buffered(&self) -> bool {
        self.lines.ahead().any(|line| !line.trim_ascii().is_empty())
    }

    fn next(&mut self) -> io::Result<Next> {
        loop {
            let Some(line) = self.lines.read(self.max_record)? else {
                return Ok(Next::End);
            };
            let Some(text) = line.text else {
                return Ok(malformed_line(line.number, too_long(self.max_record)));
            };
            if text.trim_ascii().is_empty() {
                continue;
            }
            return Ok(record(line.number, parse_jsonl(&text)));
        }
    }
}

/// Parses one `jsonl` record.
fn parse_jsonl(text: &[u8]) -> Result<Request, String> {
    let obj = json_object(text)?;
    check_fields(&obj, JSONL_FIELDS)?;
    let mut headers = Vec::new();
    if let Some(value) = obj.get("headers") {
        headers_from_json(value, &mut headers)?;
    }
    let bodies: Vec<&str> = ["body", "json", "body_base64"]
        .into_iter()
        .filter(|k| obj.contains_key(*k))
        .collect();
    let body = match bodies.as_slice() {
        [] => None,
        ["body"] => json_str(&obj, "body")?.map(|s| Bytes::copy_from_slice(s.as_bytes())),
        ["body_base64"] => json_str(&obj, "body_base64")?
            .map(decode_base64)
            .transpose()?,
        ["json"] => {
            let value = obj.get("json").unwrap_or(&Value::Null);
            let compact = serde_json::to_vec(value).map_err(|e| format!("bad `json`: {e}"))?;
            if !has_header(&headers, &http::header::CONTENT_TYPE) {
                headers.push((
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                ));
            }
            Some(Bytes::from(compact))
        }
        _ => return Err(format!("more than one body field ({})", bodies.join(", "))),
    };
    let method = match json_str(&obj, "method")? {
        Some(m) => parse_method(m)?,
        None if body.is_some() => Method::POST,
        None => Method::GET,
    };
    let target = match (json_str(&obj, "url")?, json_str(&obj, "path")?) {
        (Some(url), None) => parse_url(url)?,
        (None, Some(path)) if !path.starts_with('/') => {
            return Err("`path` must start with `/`".into())
        }
        (None, Some(path)) => parse_target(path)?,
        (Some(_), Some(_)) => return Err("both `url` and `path` given".into()),
        (None, None) => return Err("missing `url` or `path`".into()),
    };
    Ok(Request {
        seq: 0,
        method: Some(method),
        target: Some(target),
        headers,
        body: body.unwrap_or_default(),
    })
}

/// One physical line of input, without its line ending (`\n` or `\r\n`).
pub(super) struct Line {
    /// The 1-based physical line number.
    pub number: u64,
    /// The content, or `None` when the line was longer than the limit (it
    /// was read past and dropped, never truncated).
    pub text: Option<Vec<u8>>,
    /// The last byte of the content, known even when the line was too long.
    pub last: Option<u8>,
}

/// Reads physical lines with a length limit, never holding more than the
/// limit of one line in memory. A UTF-8 byte order mark starting the input
/// is dropped.
pub(super) struct LineReader {
    reader: Box<dyn ReadAhead>,
    number: u64,
}

impl LineReader {
    /// The whole lines read ahead.
    pub fn ahead(&self) -> impl Iterator<Item = &[u8]> {
        super::whole_lines(self.reader.ahead())
    }

    /// A reader at the start of `reader`.
    pub fn new(reader: Box<dyn ReadAhead>) -> Self {
        LineReader { reader, number: 0 }
    }

    /// Reads the next line, keeping it only if it has at most `limit` bytes;
    /// `None` at the end of the input.
    pub fn read(&mut self, limit: usize) -> io::Result<Option<Line>> {
        let mut text = Vec::new();
        // The last two bytes seen, so a dropped line still tells its last
        // byte once a trailing `\r` is removed.
        let mut tail = [None, None];
        let mut over = false;
        let mut seen = false;
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                break;
            }
            seen = true;
            let newline = chunk.iter().position(|&b| b == b'\n');
            let part = &chunk[..newline.unwrap_or(chunk.len())];
            match part {
                [.., a, b] => tail = [Some(*a), Some(*b)],
                [b] => tail = [tail[1], Some(*b)],
                [] => {}
            }
            // One byte of slack for a `\r` that is not content.
            if !over && text.len() + part.len() <= limit.saturating_add(1) {
                text.extend_from_slice(part);
            } else {
                over = true;
                text = Vec::new();
            }
            let used = newline.map_or(part.len(), |i| i + 1);
            self.reader.consume(used);
            if newline.is_some() {
                break;
            }
        }
        if !seen {
            return Ok(None);
        }
        self.number += 1;
        let last = if tail[1] == Some(b'\r') {
            if text.last() == Some(&b'\r') {
                text.pop();
            }
            tail[0]
        } else {
            tail[1]
        };
        if self.number == 1 && text.starts_with(b"\xEF\xBB\xBF") {
            text.drain(..3);
        }
        Ok(Some(Line {
            number: self.number,
            text: (!over && text.len() <= limit).then_some(text),
            last,
        }))
    }
}

/// The reason for a record over the length limit.
pub(super) fn too_long(limit: usize) -> String {
    format!("record longer than {limit} bytes")
}

/// A malformed record at a 1-based physical line.
pub(super) fn malformed_line(number: u64, reason: String) -> Next {
    Next::Malformed(Malformed {
        location: format!("line {number}"),
        reason,
    })
}

/// The outcome of parsing the record starting at line `number`.
pub(super) fn record(number: u64, parsed: Result<Request, String>) -> Next {
    match parsed {
        Ok(request) => Next::Request(request),
        Err(reason) => malformed_line(number, reason),
    }
}

/// Adds a header, trimming the value, unless it is a hop-by-hop, framing
/// or HTTP/2 pseudo-header (which the engine sets per endpoint).
pub(super) fn push_header(
    headers: &mut Vec<(HeaderName, HeaderValue)>,
    name: &[u8],
    value: &[u8],
) -> Result<(), String> {
    if super::is_engine_header(name) {
        return Ok(());
    }
    let name = HeaderName::from_bytes(name)
        .map_err(|_| format!("invalid header name {:?}", String::from_utf8_lossy(name)))?;
    let value = HeaderValue::from_bytes(value.trim_ascii())
        .map_err(|_| format!("invalid value for header {name}"))?;
    headers.push((name, value));
    Ok(())
}

/// Whether `headers` has a header called `name`.
pub(super) fn has_header(headers: &[(HeaderName, HeaderValue)], name: &HeaderName) -> bool {
    headers.iter().any(|(n, _)| n == name)
}

/// Parses a method; the standard ones are accepted in any case and
/// upper-cased, others are kept as given.
pub(super) fn parse_method(method: &str) -> Result<Method, String> {
    let upper = method.to_ascii_uppercase();
    let standard = [
        "GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
    ]
    .contains(&upper.as_str());
    let chosen = if standard { &upper } else { method };
    Method::from_bytes(chosen.as_bytes()).map_err(|_| format!("invalid method {method:?}"))
}

/// Validates a request target: a path starting with `/` or an absolute
/// `http`/`https` URL. A `#fragment` is removed (it is never sent).
pub(super) fn parse_target(target: &str) -> Result<String, String> {
    let target = target.split('#').next().unwrap_or_default();
    let uri = http::Uri::try_from(target).map_err(|e| format!("invalid URL {target:?}: {e}"))?;
    let absolute = matches!(uri.scheme_str(), Some("http" | "https")) && uri.host().is_some();
    if absolute || (uri.scheme().is_none() && target.starts_with('/')) {
        Ok(target.to_owned())
    } else {
        Err(format!(
            "invalid URL {target:?}: not an http(s) URL or a path"
        ))
    }
}

/// Validates an absolute `http`/`https` URL (see [`parse_target`]).
pub(super) fn parse_url(url: &str) -> Result<String, String> {
    if url.starts_with('/') {
        return Err(format!("URL {url:?} is not absolute"));
    }
    parse_target(url)
}

/// Reads a body file named in the input, relative to the current
/// directory, of at most `limit` bytes: a longer one (or an endless one,
/// `/dev/zero`) is an error, not all of memory.
pub(super) fn read_file(path: &str, limit: usize) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let cannot = |e: io::Error| format!("cannot read {path}: {e}");
    let mut content = Vec::new();
    std::fs::File::open(path)
        .map_err(cannot)?
        .take(limit as u64 + 1)
        .read_to_end(&mut content)
        .map_err(cannot)?;
    if content.len() > limit {
        return Err(format!("{path} is longer than {limit} bytes (--max-line)"));
    }
    Ok(content)
}

/// Decodes standard base64, padded or not.
pub(super) fn decode_base64(text: &str) -> Result<Bytes, String> {
    const ENGINE: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        base64::engine::GeneralPurposeConfig::new()
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    );
    ENGINE
        .decode(text)
        .map(Bytes::from)
        .map_err(|e| format!("invalid base64: {e}"))
}

/// Percent-encodes everything but RFC 3986's unreserved characters, as
/// curl's `--data-urlencode` does.
pub(super) fn percent_encode(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len());
    for &b in data {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Parses a line as a JSON object.
pub(super) fn json_object(text: &[u8]) -> Result<Map<String, Value>, String> {
    let text = std::str::from_utf8(text).map_err(|_| "not valid UTF-8".to_owned())?;
    match serde_json::from_str(text) {
        Ok(Value::Object(obj)) => Ok(obj),
        Ok(_) => Err("not a JSON object".into()),
        Err(e) => Err(format!("invalid JSON: {e}")),
    }
}

/// Rejects fields not in `allowed`, naming all of them.
pub(super) fn check_fields(obj: &Map<String, Value>, allowed: &[&str]) -> Result<(), String> {
    let unknown: Vec<String> = obj
        .keys()
        .filter(|k| !allowed.contains(&k.as_str()))
        .map(|k| format!("`{k}`"))
        .collect();
    if unknown.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "unknown field{} {} (expected {})",
            if unknown.len() > 1 { "s" } else { "" },
            unknown.join(", "),
            allowed.join(", ")
        ))
    }
}

/// The string field `key` of `obj`, if present.
pub(super) fn json_str<'a>(
    obj: &'a Map<String, Value>,
    key: &str,
) -> Result<Option<&'a str>, String> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(format!("`{key}` must be a string")),
    }
}

/// Adds headers given as JSON: an object of name to string or array of
/// strings, or an array of `[name, value]` pairs.
pub(super) fn headers_from_json(
    value: &Value,
    headers: &mut Vec<(HeaderName, HeaderValue)>,
) -> Result<(), String> {
    const SHAPE: &str =
        "headers must be an object of strings or string arrays, or an array of [name, value] pairs";
    match value {
        Value::Object(map) => {
            for (name, values) in map {
                match values {
                    Value::String(v) => push_header(headers, name.as_bytes(), v.as_bytes())?,
                    Value::Array(vs) => {
                        for v in vs {
                            let v = v.as_str().ok_or(SHAPE)?;
                            push_header(headers, name.as_bytes(), v.as_bytes())?;
                        }
                    }
                    _ => return Err(SHAPE.into()),
                }
            }
        }
        Value::Array(pairs) => {
            for pair in pairs {
                match pair.as_array().map(Vec::as_slice) {
                    Some([Value::String(n), Value::String(v)]) => {
                        push_header(headers, n.as_bytes(), v.as_bytes())?;
                    }
                    _ => return Err(SHAPE.into()),
                }
            }
        }
        _ => return Err(SHAPE.into()),
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// Drains a source into its records (requests and malformed ones).
    pub(in crate::input) fn drain(mut source: impl Source) -> Vec<Result<Request, Malformed>> {
        let mut out = Vec::new();
        loop {
            match source.next().expect("in-memory reads do not fail") {
                Next::Request(r) => out.push(Ok(r)),
                Next::Malformed(m) => out.push(Err(m)),
                Next::End => return out,
            }
        }
    }

    /// A boxed reader over `text`.
    pub(in crate::input) fn reader(text: &[u8]) -> Box<dyn ReadAhead> {
        Box::new(io::Cursor::new(text.to_vec()))
    }

    /// The headers as (name, value) strings.
    pub(in crate::input) fn header_strs(r: &Request) -> Vec<(String, String)> {
        r.headers
            .iter()
            .map(|(n, v)| {
                (
                    n.to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect()
    }

    fn jsonl(text: &str) -> Vec<Result<Request, Malformed>> {
        drain(JsonlSource::new(reader(text.as_bytes()), 1024))
    }

    fn one(text: &str) -> Request {
        match jsonl(text).pop() {
            Some(Ok(r)) => r,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    fn reason(text: &str) -> String {
        match jsonl(text).pop() {
            Some(Err(m)) => m.reason,
            other => panic!("expected malformed, got {other:?}"),
        }
    }

    #[test]
    fn minimal_get() {
        let r = one(r#"{"path":"/a?b=1"}"#);
        assert_eq!(r.method, Some(Method::GET));
        assert_eq!(r.target.as_deref(), Some("/a?b=1"));
        assert!(r.headers.is_empty());
        assert!(r.body.is_empty());
        assert_eq!(r.seq, 0);
    }

    #[test]
    fn body_defaults_to_post() {
        let r = one(r#"{"url":"http://h/x","body":"hi"}"#);
        assert_eq!(r.method, Some(Method::POST));
        assert_eq!(r.target.as_deref(), Some("http://h/x"));
        assert_eq!(&r.body[..], b"hi");
        let r = one(r#"{"method":"put","path":"/x","body":""}"#);
        assert_eq!(r.method, Some(Method::PUT));
    }

    #[test]
    fn json_body_is_compact_with_content_type() {
        let r = one(r#"{"path":"/x","json":{ "b" : 1.50, "a" : [ true , null ] }}"#);
        assert_eq!(&r.body[..], br#"{"b":1.50,"a":[true,null]}"#);
        assert_eq!(
            header_strs(&r),
            [("content-type".into(), "application/json".into())]
        );
        let r = one(r#"{"path":"/x","headers":{"Content-Type":"text/x"},"json":"s"}"#);
        assert_eq!(header_strs(&r), [("content-type".into(), "text/x".into())]);
        assert_eq!(&r.body[..], br#""s""#);
    }

    #[test]
    fn base64_body() {
        let r = one(r#"{"path":"/x","body_base64":"AP8="}"#);
        assert_eq!(&r.body[..], &[0u8, 255]);
        assert!(reason(r#"{"path":"/x","body_base64":"!!"}"#).starts_with("invalid base64"));
    }

    #[test]
    fn header_shapes_and_filtering() {
        let r = one(
            r#"{"path":"/","headers":{"X-A":"1","x-b":["2","3"],"Host":"h","Content-Length":"9"}}"#,
        );
        assert_eq!(
            header_strs(&r),
            [
                ("x-a".into(), "1".into()),
                ("x-b".into(), "2".into()),
                ("x-b".into(), "3".into())
            ]
        );
        let r = one(r#"{"path":"/","headers":[["X-A","1"],[":authority","h"],["x-a","2"]]}"#);
        assert_eq!(
            header_strs(&r),
            [("x-a".into(), "1".into()), ("x-a".into(), "2".into())]
        );
        assert!(reason(r#"{"path":"/","headers":{"X":1}}"#).starts_with("headers must be"));
        assert!(reason(r#"{"path":"/","headers":[["X"]]}"#).starts_with("headers must be"));
        assert!(
            reason(r#"{"path":"/","headers":{"bad name":"1"}}"#).starts_with("invalid header name")
        );
        assert!(reason(r#"{"path":"/","headers":{"X":"a\nb"}}"#)
            .starts_with("invalid value for header x"));
    }

    #[test]
    fn blank_lines_crlf_and_line_numbers() {
        let out = jsonl("\r\n{\"path\":\"/1\"}\r\n   \n{bad\r\n{\"path\":\"/2\"}");
        assert_eq!(out.len(), 3);
        assert_eq!(
            out[0].as_ref().map(|r| r.target.clone()),
            Ok(Some("/1".into()))
        );
        let bad = out[1].as_ref().expect_err("malformed");
        assert_eq!(bad.location, "line 4");
        assert!(bad.reason.starts_with("invalid JSON"), "{}", bad.reason);
        assert_eq!(
            out[2].as_ref().map(|r| r.target.clone()),
            Ok(Some("/2".into()))
        );
    }

    #[test]
    fn bad_records() {
        assert_eq!(
            reason(r#"{"path":"/","verb":"GET","hdrs":{}}"#),
            "unknown fields `verb`, `hdrs` (expected method, url, path, headers, body, json, body_base64)"
        );
        assert_eq!(reason(r#"{"method":"GET"}"#), "missing `url` or `path`");
        assert_eq!(
            reason(r#"{"url":"http://h/","path":"/"}"#),
            "both `url` and `path` given"
        );
        assert_eq!(reason(r#"{"path":"a"}"#), "`path` must start with `/`");
        assert_eq!(reason(r#"{"url":"/a"}"#), "URL \"/a\" is not absolute");
        assert!(reason(r#"{"url":"ftp://h/a"}"#).starts_with("invalid URL"));
        assert!(reason(r#"{"url":"http://h/a b"}"#).starts_with("invalid URL"));
        assert_eq!(
            reason(r#"{"path":"/","method":"G ET"}"#),
            "invalid method \"G ET\""
        );
        assert_eq!(reason(r#"{"path":1}"#), "`path` must be a string");
        assert_eq!(reason(r#"[1]"#), "not a JSON object");
        assert_eq!(
            reason(r#"{"path":"/","body":"a","json":1}"#),
            "more than one body field (body, json)"
        );
        let out = drain(JsonlSource::new(reader(b"{\"path\":\"/\xff\"}"), 99));
        assert_eq!(
            out,
            [Err(Malformed {
                location: "line 1".into(),
                reason: "not valid UTF-8".into()
            })]
        );
    }

    #[test]
    fn fragment_is_dropped_and_bom_skipped() {
        let r = one("\u{feff}{\"url\":\"https://h:8443/a?q=1#frag\"}");
        assert_eq!(r.target.as_deref(), Some("https://h:8443/a?q=1"));
    }

    #[test]
    fn oversized_line_is_reported_and_skipped() {
        let long = format!("{{\"path\":\"/{}\"}}", "a".repeat(2000));
        let text = format!("{{\"path\":\"/1\"}}\n{long}\r\n{{\"path\":\"/2\"}}\n");
        let out = jsonl(&text);
        assert_eq!(out.len(), 3);
        assert_eq!(
            out[1],
            Err(Malformed {
                location: "line 2".into(),
                reason: "record longer than 1024 bytes".into()
            })
        );
        assert_eq!(
            out[2].as_ref().map(|r| r.target.clone()),
            Ok(Some("/2".into()))
        );
    }

    #[test]
    fn arbitrary_input_never_panics() {
        // Fragments that exercise every format's syntax, glued at random.
        const PIECES: &[&[u8]] = &[
            b"curl ",
            b"GET http://h/",
            b"{\"url\":",
            b"\"http://h/\"",
            b"{\"log\":{\"entries\":[",
            b"{\"request\":{\"method\":\"GET\",\"url\":\"http://h/\"}}",
            b"]}}",
            b"'",
            b"\"",
            b"$'\\x",
            b"\\",
            b"^",
            b"^\"",
            b"\n",
            b"\r\n",
            b" ",
            b"-H",
            b"-d",
            b"@",
            b"#",
            b"X-A: 1",
            b":",
            b"}",
            b"\xff",
            b"\xEF\xBB\xBF",
            b"\\u{",
            b"\\777",
            b"-G",
            b"=",
        ];
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        for _ in 0..2000 {
            let mut input = Vec::new();
            for _ in 0..(state % 24) {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                let index = usize::try_from(state % PIECES.len() as u64).unwrap_or(0);
                input.extend_from_slice(PIECES[index]);
            }
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            drain(JsonlSource::new(reader(&input), 64));
            drain(super::super::curl::CurlSource::new(reader(&input), 64));
            drain(super::super::vegeta::VegetaSource::new(reader(&input), 64));
            drain(super::super::har::HarSource::new(reader(&input)));
            super::super::detect::detect(&input, None);
        }
    }

    #[test]
    fn buffered_says_whether_the_next_record_is_in_memory() {
        // jsonl: a blank line is no record; a line without its newline may
        // still grow.
        let mut src = JsonlSource::new(
            reader(b"{\"path\":\"/a\"}\n\n{\"path\":\"/b\"}\n{\"path\""),
            99,
        );
        assert!(src.buffered());
        assert!(matches!(src.next().unwrap(), Next::Request(_)));
        assert!(src.buffered(), "/b is whole");
        assert!(matches!(src.next().unwrap(), Next::Request(_)));
        assert!(!src.buffered(), "the last line has no end yet");
        let src = JsonlSource::new(reader(b"\n  \n"), 99);
        assert!(!src.buffered(), "blank lines only");
        // curl: a continued line does not end a command.
        let curl = |text: &[u8]| super::super::curl::CurlSource::new(reader(text), 999);
        assert!(!curl(b"curl http://h/ \\\n").buffered());
        assert!(curl(b"curl http://h/ \\\n  -X POST\n").buffered());
        assert!(!curl(b"# a comment\n\n").buffered());
        // vegeta: a target is whole once something ends it.
        let vegeta = |text: &[u8]| super::super::vegeta::VegetaSource::new(reader(text), 999);
        assert!(!vegeta(b"GET http://h/a\nX-A: 1\n").buffered());
        assert!(vegeta(b"GET http://h/a\nX-A: 1\n\n").buffered());
        assert!(vegeta(b"GET http://h/a\nGET http://h/b\n").buffered());
        assert!(vegeta(b"POST http://h/a\n@body.json\n").buffered());
        assert!(vegeta(b"{\"url\":\"http://h/\"}\n").buffered());
        let mut src = vegeta(b"GET http://h/a\nGET http://h/b\n");
        assert!(matches!(src.next().unwrap(), Next::Request(_)));
        assert!(!src.buffered(), "/b may still get headers");
        // A buffered reader shows only what it has read ahead.
        let mut r =
            io::BufReader::with_capacity(8, io::Cursor::new(b"{\"path\":\"/a\"}\n".to_vec()));
        let _ = r.fill_buf().unwrap();
        let src = JsonlSource::new(Box::new(r), 99);
        assert!(!src.buffered(), "only 8 bytes of the line are in memory");
    }

    #[test]
    fn line_reader_limits_and_last_byte() {
        // A tiny buffer makes lines span several fill_buf calls.
        let input =
            io::BufReader::with_capacity(3, io::Cursor::new(b"abcd\r\nabcdef\\\r\nx".to_vec()));
        let mut lines = LineReader::new(Box::new(input));
        let l = lines.read(4).expect("read").expect("line");
        assert_eq!(
            (l.number, l.text.as_deref(), l.last),
            (1, Some(&b"abcd"[..]), Some(b'd'))
        );
        let l = lines.read(4).expect("read").expect("line");
        assert_eq!((l.number, l.text, l.last), (2, None, Some(b'\\')));
        let l = lines.read(4).expect("read").expect("line");
        assert_eq!((l.number, l.text.as_deref()), (3, Some(&b"x"[..])));
        assert!(lines.read(4).expect("read").is_none());
    }
}
