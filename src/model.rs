//! The shared vocabulary of versus, imported by every layer and importing
//! none of them: a [`Request`] of the input (or one built by a flow step),
//! a [`Malformed`] input record, the [`Outcome`] of one request at one
//! endpoint with its [`Response`] or [`Failure`], and the name every
//! bounded list counts the rest under ([`OTHER`]). The flow vocabulary a
//! library user writes (flow, step, reply) is in [`crate::flow`]; the
//! verdict of a comparison is [`crate::compare::Judgement`].

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};

/// The name under which bounded lists (methods, groups, steps) count what
/// does not fit.
pub const OTHER: &str = "(other)";

/// One request of the stream, before it is addressed to any endpoint.
///
/// A plain input line is a request with no method and no target: each
/// endpoint interprets it by its URL scheme (POST the line as the body, or
/// GET the base URL joined with the line). Formats that carry whole requests
/// (HAR, curl, JSON lines, captures) fill in method, target and headers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// Position in the input stream, from 0, counting only accepted requests.
    pub seq: u64,
    /// The method; `None` means the endpoint's default.
    pub method: Option<Method>,
    /// Path and query (`/a?b=c`) or an absolute URL; `None` means the
    /// endpoint's own URL (and, for `+get` endpoints, the body is the suffix).
    pub target: Option<String>,
    /// Headers to send in addition to the endpoint's own; never one that
    /// `input::is_engine_header` names (every format drops those when reading).
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body, owned (never a view into a reused read buffer).
    pub body: Bytes,
}

impl Request {
    /// A request made of one input line: the body, nothing else.
    pub fn line(seq: u64, body: Bytes) -> Self {
        Request {
            seq,
            method: None,
            target: None,
            headers: Vec::new(),
            body,
        }
    }
}

/// A record of the input that could not be turned into a request. It is
/// skipped and counted (or, in strict mode, ends the run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed {
    /// Where it was: `line 7`, `entry 3`, `packet 120`, `stream 10.0.0.1:5000`.
    pub location: String,
    /// What was wrong, in a few words: `not valid UTF-8`, `invalid JSON: ...`.
    pub reason: String,
}

/// The result of one request at one endpoint: an outcome.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The response, or why there was none.
    pub result: Result<Response, Failure>,
    /// From the start of the request to the end of the body (or the fault);
    /// in the open model, from the time the request was due.
    pub latency: Duration,
    /// From the actual start of sending to the end: the latency a
    /// closed-loop tool would report (differs from `latency` only in the
    /// open model).
    pub uncorrected: Duration,
    /// Open model: how late the request started against its schedule.
    pub lag: Option<Duration>,
    /// Time spent opening a connection for this request, if one was opened.
    pub connect: Option<Duration>,
    /// Request body bytes sent.
    pub bytes_out: u64,
}

/// What an endpoint answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// HTTP status code.
    pub status: u16,
    /// The response headers that are compared (`--compare-header`), in
    /// order; empty otherwise.
    pub headers: Vec<(::http::HeaderName, ::http::HeaderValue)>,
    /// The body, kept only when something needs it (comparison, `-v`).
    pub body: Bytes,
    /// Body length in bytes, whether or not the body was kept.
    pub body_len: u64,
    /// Time to the response head, from the exchange's clock (which starts
    /// after a connect that is not counted in the latency).
    pub ttfb: Duration,
}

/// Why a request got no response. Each kind is counted and reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Failure {
    /// The host name did not resolve.
    Dns,
    /// The connection was refused.
    Refused,
    /// Connecting failed otherwise (unreachable, no route, ...).
    Connect,
    /// The TLS handshake failed (certificate, protocol).
    Tls,
    /// No complete answer within `--timeout`.
    Timeout,
    /// The connection was reset or closed before the answer was complete.
    Reset,
    /// The answer was not valid HTTP.
    Protocol,
    /// The body was larger than `--max-body`.
    BodyTooLarge,
    /// The request could not be formed for this endpoint (bad target).
    BadRequest,
    /// Any other I/O error.
    Io,
}

impl Failure {
    /// Every kind, in report order.
    pub const ALL: [Failure; 10] = [
        Failure::Dns,
        Failure::Refused,
        Failure::Connect,
        Failure::Tls,
        Failure::Timeout,
        Failure::Reset,
        Failure::Protocol,
        Failure::BodyTooLarge,
        Failure::BadRequest,
        Failure::Io,
    ];

    /// Index into [`Failure::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Short name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            Failure::Dns => "dns lookup failed",
            Failure::Refused => "connection refused",
            Failure::Connect => "connect failed",
            Failure::Tls => "tls handshake failed",
            Failure::Timeout => "timeout",
            Failure::Reset => "connection reset",
            Failure::Protocol => "malformed response",
            Failure::BodyTooLarge => "body too large",
            Failure::BadRequest => "bad request target",
            Failure::Io => "i/o error",
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
