//! Replaying a saved run (`versus --output FILE`): the `request` lines of
//! the file, in order, as they were read by that run. Other lines (header,
//! intervals, totals) are skipped; a truncated last line is reported.
//! Credential headers that were masked when saved are not sent.

use std::io::{self, BufRead};

use base64::Engine as _;
use bytes::Bytes;
use http::Method;

use super::{Malformed, Next, ReadAhead, Request, Source};
use crate::model::secret;
use serde::{Deserialize, Serialize};

/// One request of the run, as read (so that the run can be replayed).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RequestLine {
    /// Always `request`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Position in the input.
    pub seq: u64,
    /// The method, when the request named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Path and query or absolute URL, when the request named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Headers in order; credentials masked as `...` unless
    /// `--show-secrets` (masked ones are not sent on replay).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<(String, String)>,
    /// The body, when it is UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The body in base64, when it is not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_base64: Option<String>,
    /// Single-request mode: the one request, sent over and over.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repeat: bool,
}

impl RequestLine {
    /// The line of `req`.
    pub fn of(seq: u64, req: &Request, repeat: bool, show_secrets: bool) -> RequestLine {
        use base64::Engine as _;
        let (body, body_base64) = match std::str::from_utf8(&req.body) {
            Ok(s) => (Some(s.to_string()), None),
            Err(_) => (
                None,
                Some(base64::engine::general_purpose::STANDARD.encode(&req.body)),
            ),
        };
        RequestLine {
            kind: "request".into(),
            seq,
            method: req.method.as_ref().map(|m| m.to_string()),
            target: req.target.clone(),
            headers: req
                .headers
                .iter()
                .map(|(n, v)| {
                    let v = String::from_utf8_lossy(v.as_bytes());
                    let shown = secret::show_header(n.as_str(), &v, show_secrets);
                    (n.to_string(), shown.to_string())
                })
                .collect(),
            body,
            body_base64,
            repeat,
        }
    }
}

/// Reads the requests of a saved run.
pub struct SavedRunSource {
    reader: Box<dyn ReadAhead>,
    line_no: u64,
    buf: Vec<u8>,
    /// Single-request mode's request, once seen: the replay repeats it.
    repeat: Option<Request>,
    /// The header's `record` (which request lines the file keeps), once
    /// read.
    record: Option<String>,
    /// Whether a request was read.
    read_one: bool,
}

/// The header's word on which request lines the file keeps.
#[derive(Deserialize)]
struct Kept {
    #[serde(default)]
    record: Option<String>,
}

impl SavedRunSource {
    /// Read the saved run from `reader`.
    pub fn new(reader: Box<dyn ReadAhead>) -> SavedRunSource {
        SavedRunSource {
            reader,
            line_no: 0,
            buf: Vec::new(),
            repeat: None,
            record: None,
            read_one: false,
        }
    }

    /// The end of the file: a file that kept no request line says why
    /// when its header tells.
    fn end(&self) -> io::Result<Next> {
        if self.read_one {
            return Ok(Next::End);
        }
        let why = match self.record.as_deref() {
            Some("none") => "it was saved with --record none (or is a merge of shards), which keeps no request lines",
            Some("mismatches") => "it was saved with --record mismatches, which keeps only the requests that mismatched or met an error, and none did",
            _ => return Ok(Next::End),
        };
        Err(io::Error::other(format!(
            "the saved run holds no request to replay: {why}; save a run to replay with --record requests"
        )))
    }

    fn request(&self, line: RequestLine) -> Result<Request, String> {
        let method = line
            .method
            .map(|m| Method::from_bytes(m.as_bytes()).map_err(|_| format!("bad method {m:?}")))
            .transpose()?;
        let mut headers = Vec::with_capacity(line.headers.len());
        for (n, v) in line.headers {
            if v == secret::MASK && secret::is_secret_header(&n) {
                continue;
            }
            // Like every other format: the engine's own headers are dropped.
            super::jsonl::push_header(&mut headers, n.as_bytes(), v.as_bytes())?;
        }
        let body = match (line.body, line.body_base64) {
            (Some(b), _) => Bytes::from(b),
            (None, Some(b)) => Bytes::from(
                base64::engine::general_purpose::STANDARD
                    .decode(b)
                    .map_err(|e| format!("bad body_base64: {e}"))?,
            ),
            (None, None) => Bytes::new(),
        };
        Ok(Request {
            seq: 0,
            method,
            target: line.target,
            headers,
            body,
        })
    }
}

impl Source for SavedRunSource {
    fn buffered(&self) -> bool {
        self.repeat.is_some() || super::whole_lines(self.reader.ahead()).any(is_request_line)
    }

    fn next(&mut self) -> io::Result<Next> {
        if let Some(r) = &self.repeat {
            return Ok(Next::Request(r.clone()));
        }
        loop {
            self.buf.clear();
            if self.reader.read_until(b'\n', &mut self.buf)? == 0 {
                return self.end();
            }
            self.line_no += 1;
            let location = format!("line {}", self.line_no);
            if self.buf.last() != Some(&b'\n') {
                return Ok(Next::Malformed(Malformed {
                    location,
                    reason: "cut off (the run was killed while writing); the requests before it were replayed".into(),
                }));
            }
            if !is_request_line(&self.buf) {
                if self.line_no == 1 {
                    self.record = serde_json::from_slice::<Kept>(&self.buf)
                        .ok()
                        .and_then(|k| k.record);
                }
                continue;
            }
            self.read_one = true;
            let parsed = serde_json::from_slice::<RequestLine>(&self.buf)
                .map_err(|e| e.to_string())
                .and_then(|line| {
                    let repeat = line.repeat;
                    self.request(line).map(|r| (r, repeat))
                });
            return Ok(match parsed {
                Ok((r, true)) => {
                    self.repeat = Some(r.clone());
                    Next::Request(r)
                }
                Ok((r, false)) => Next::Request(r),
                Err(reason) => Next::Malformed(Malformed { location, reason }),
            });
        }
    }
}

/// Only request lines matter; a cheap test skips the others.
fn is_request_line(line: &[u8]) -> bool {
    memchr::memmem::find(&line[..line.len().min(40)], br#""type":"request""#).is_some()
}
