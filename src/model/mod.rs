//! The shared vocabulary of versus, imported by every layer and importing
//! none of them: a [`Request`] of the input (or one built by a flow step),
//! a [`Malformed`] input record, the [`Outcome`] of one request at one
//! endpoint with its [`Response`] or [`Failure`], and the name every
//! bounded list counts the rest under ([`OTHER`]). The flow vocabulary a
//! library user writes (flow, step, reply) is in [`crate::flow`]; the
//! verdict of a comparison is [`crate::compare::Verdict`].

pub mod secret;
mod share;
mod size;

pub use share::Share;
pub use size::parse_size;

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method};

/// How an endpoint turns an input line into an HTTP request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// POST the line as the body (`http://`, `https://`, `http+post://`).
    Post,
    /// GET the base URL joined with the line (`http+get://`, `https+get://`).
    Get,
    /// Send the body as a message on a WebSocket opened at the URL and take
    /// the JSON-RPC answer with the same `id` (`ws://`, `wss://`).
    WebSocket,
    /// Call a gRPC method with the line as its request message in the
    /// proto3 JSON mapping (`grpc://`, `grpcs://`); the method is the URL's
    /// path (`/package.Service/Method`) or a flow step's.
    Grpc,
}

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
    /// When the latency counts from: the start of the exchange's clock,
    /// or in the open model the time the request was due when that was
    /// earlier. `start + latency` is when the request ended.
    pub start: Instant,
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
    /// The local port of the HTTP connection the request ended on (0:
    /// none, or WebSocket): what names the connection to a fault proxy,
    /// so an error it caused is put down to the fault.
    pub port: u16,
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
    /// after a connect that is not counted in the latency); for a gRPC
    /// call, to its first message.
    pub ttfb: Duration,
    /// A gRPC call's status (`grpc-status`, `grpc-message`); `None` for
    /// any other endpoint.
    pub grpc: Option<GrpcStatus>,
}

/// The status of a gRPC call: `grpc-status` and `grpc-message` from the
/// trailers (or a trailers-only answer). Names of the codes:
/// [`crate::grpc::code_name`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GrpcStatus {
    /// The code: 0 (`OK`) to 16 (`UNAUTHENTICATED`); others are kept as
    /// they came and named `UNKNOWN`.
    pub code: u32,
    /// The message, percent-decoded; `None` when there was none (never
    /// allocated for a call that succeeded).
    pub message: Option<Box<str>>,
}

impl GrpcStatus {
    /// The status of a call that succeeded.
    pub const OK: GrpcStatus = GrpcStatus {
        code: 0,
        message: None,
    };

    /// Whether the call failed (any code but `OK`).
    pub fn is_error(&self) -> bool {
        self.code != 0
    }
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
    /// The TLS handshake failed, and why.
    Tls(TlsReason),
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
    /// The server reset the request's HTTP/2 stream (RST_STREAM) before
    /// the answer was complete; the connection stayed.
    StreamReset,
    /// Not sent: the endpoint was stopped for the rest of the run after
    /// its certificate failed verification ([`TlsReason::lasts`]), which
    /// no retry can heal.
    Stopped,
}

impl Failure {
    /// Every kind, in report order.
    pub const ALL: [Failure; 12] = [
        Failure::Dns,
        Failure::Refused,
        Failure::Connect,
        Failure::Tls(TlsReason::Other),
        Failure::Timeout,
        Failure::Reset,
        Failure::Protocol,
        Failure::BodyTooLarge,
        Failure::BadRequest,
        Failure::Io,
        Failure::StreamReset,
        Failure::Stopped,
    ];

    /// Index into [`Failure::ALL`] (every TLS reason has the same one).
    pub fn index(self) -> usize {
        match self {
            Failure::Dns => 0,
            Failure::Refused => 1,
            Failure::Connect => 2,
            Failure::Tls(_) => 3,
            Failure::Timeout => 4,
            Failure::Reset => 5,
            Failure::Protocol => 6,
            Failure::BodyTooLarge => 7,
            Failure::BadRequest => 8,
            Failure::Io => 9,
            Failure::StreamReset => 10,
            Failure::Stopped => 11,
        }
    }

    /// Whether the failure is a connect that failed (no connection, so no
    /// request reached the server): name lookup, refused, unreachable, TLS.
    pub fn at_connect(self) -> bool {
        matches!(
            self,
            Failure::Dns | Failure::Refused | Failure::Connect | Failure::Tls(_)
        )
    }

    /// The gRPC status code a gRPC client reports for this failure (the
    /// HTTP/2 transport mapping of gRPC's PROTOCOL-HTTP2 document):
    /// reports name it beside the failure at gRPC endpoints.
    pub fn grpc_code(self) -> u32 {
        match self {
            Failure::Timeout => 4,                          // DEADLINE_EXCEEDED
            Failure::BodyTooLarge => 8,                     // RESOURCE_EXHAUSTED
            Failure::Protocol | Failure::StreamReset => 13, // INTERNAL
            Failure::BadRequest => 3,                       // INVALID_ARGUMENT
            Failure::Dns
            | Failure::Refused
            | Failure::Connect
            | Failure::Tls(_)
            | Failure::Reset
            | Failure::Io
            | Failure::Stopped => 14, // UNAVAILABLE
        }
    }

    /// Short name of the kind, used in reports (the same for every TLS
    /// reason; [`TlsReason::name`] names those).
    pub fn name(self) -> &'static str {
        match self {
            Failure::Dns => "dns lookup failed",
            Failure::Refused => "connection refused",
            Failure::Connect => "connect failed",
            Failure::Tls(_) => "tls handshake failed",
            Failure::Timeout => "timeout",
            Failure::Reset => "connection reset",
            Failure::Protocol => "malformed response",
            Failure::BodyTooLarge => "body too large",
            Failure::BadRequest => "bad request target",
            Failure::Io => "i/o error",
            Failure::StreamReset => "stream reset",
            Failure::Stopped => "not sent: endpoint stopped",
        }
    }
}

/// The kind's name; a TLS failure's reason when it has one.
impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Tls(r) if *r != TlsReason::Other => f.write_str(r.name()),
            _ => f.write_str(self.name()),
        }
    }
}

/// Why a TLS handshake failed: counted under [`Failure::Tls`] by reason,
/// and told once on stderr with its fix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TlsReason {
    /// The server's certificate is marked as a CA (`basicConstraints
    /// CA:TRUE`, as `openssl req -x509` makes it) and was not given with
    /// `--cacert`.
    CaAsEndEntity,
    /// The certificate is not for the name versus connected to.
    NameMismatch,
    /// The certificate has expired.
    Expired,
    /// The certificate is not valid yet.
    NotYetValid,
    /// No trusted root issued the certificate.
    UnknownIssuer,
    /// The certificate is otherwise invalid (signature, encoding, purpose,
    /// revoked).
    BadCertificate,
    /// The server did not answer in TLS (a plain HTTP port).
    NotTls,
    /// The server ended the handshake with an alert.
    Alert,
    /// No TLS version, cipher suite or ALPN protocol in common.
    Incompatible,
    /// Anything else.
    Other,
}

impl TlsReason {
    /// Every reason, in report order.
    pub const ALL: [TlsReason; 10] = [
        TlsReason::CaAsEndEntity,
        TlsReason::NameMismatch,
        TlsReason::Expired,
        TlsReason::NotYetValid,
        TlsReason::UnknownIssuer,
        TlsReason::BadCertificate,
        TlsReason::NotTls,
        TlsReason::Alert,
        TlsReason::Incompatible,
        TlsReason::Other,
    ];

    /// Index into [`TlsReason::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The reason as reports name it.
    pub fn name(self) -> &'static str {
        match self {
            TlsReason::CaAsEndEntity => "tls: certificate is a CA used as an end entity",
            TlsReason::NameMismatch => "tls: name mismatch",
            TlsReason::Expired => "tls: expired",
            TlsReason::NotYetValid => "tls: not valid yet",
            TlsReason::UnknownIssuer => "tls: unknown issuer",
            TlsReason::BadCertificate => "tls: invalid certificate",
            TlsReason::NotTls => "tls: not a TLS server",
            TlsReason::Alert => "tls: refused by the server",
            TlsReason::Incompatible => "tls: nothing in common",
            TlsReason::Other => "tls: other",
        }
    }

    /// Whether the reason is the certificate's, which stays as it is for
    /// the run: the endpoint is stopped rather than retried.
    pub fn lasts(self) -> bool {
        matches!(
            self,
            TlsReason::CaAsEndEntity
                | TlsReason::NameMismatch
                | TlsReason::Expired
                | TlsReason::NotYetValid
                | TlsReason::UnknownIssuer
                | TlsReason::BadCertificate
        )
    }

    /// The reason named `name` (as [`TlsReason::name`] gives it).
    pub fn from_name(name: &str) -> Option<TlsReason> {
        TlsReason::ALL.into_iter().find(|r| r.name() == name)
    }

    /// What the user can do about it.
    pub fn fix(self) -> &'static str {
        match self {
            TlsReason::CaAsEndEntity => {
                "give that very certificate with --cacert (versus then trusts it, as curl does), \
                 or make a leaf certificate signed by a CA, or use --insecure"
            }
            TlsReason::NameMismatch => {
                "connect by a name the certificate holds (a Host header does not change the \
                 TLS name), make a certificate for this name, or use --insecure"
            }
            TlsReason::Expired => {
                "renew the server's certificate (or check this machine's clock), or use --insecure"
            }
            TlsReason::NotYetValid => "check this machine's clock, or use --insecure",
            TlsReason::UnknownIssuer => {
                "give the issuing CA (or the server's own certificate) with --cacert, \
                 or use --insecure"
            }
            TlsReason::BadCertificate => {
                "the server's certificate cannot be used as it is; --insecure skips the check"
            }
            TlsReason::NotTls => "the port does not speak TLS: use http:// for a plain HTTP port",
            TlsReason::Alert => {
                "the server may want a client certificate, or another TLS version or name"
            }
            TlsReason::Incompatible => {
                "versus speaks TLS 1.2 and 1.3 with modern cipher suites and offers ALPN \
                 h2 and http/1.1 (--http1, --http2 narrow it)"
            }
            TlsReason::Other => {
                "see the message above; --insecure tells whether the certificate is the cause"
            }
        }
    }
}
