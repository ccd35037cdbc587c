//! gRPC calls on versus's own HTTP/2 connection (`h2.rs`): the request
//! headers of a gRPC endpoint prepared once, a request's message encoded
//! from its JSON (kept while the same request comes again, as in
//! single-request mode), the answer's status taken from its trailers (or
//! a trailers-only head, or else its HTTP status), and its messages turned
//! into JSON only when a comparison needs the body. Also the reflection
//! client that fetches a schema before the run.
//!
//! Cancellation is HTTP/2's: a timeout resets the stream (the server sees
//! CANCEL) and the connection stays.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, TE};

use super::h2::Conn as H2Conn;
use super::hpack;
use super::{EndpointSpec, Failure, RawResponse, Response};
use crate::grpc::{self, GrpcStatus, Method, Service};
use crate::model::Request;

/// What a gRPC endpoint's link prepares once: its service and the HPACK
/// block of the headers every call carries.
pub(crate) struct GrpcLink {
    pub service: Arc<Service>,
    /// `content-type`, `te`, `grpc-timeout`, `user-agent` (after the
    /// endpoint's own headers, which are its metadata).
    pub headers: Vec<u8>,
}

impl GrpcLink {
    pub(crate) fn new(service: Arc<Service>, timeout: Duration, spec: &EndpointSpec) -> GrpcLink {
        let mut headers = Vec::new();
        hpack::put_field(&mut headers, b"content-type", b"application/grpc");
        hpack::put_field(&mut headers, b"te", b"trailers");
        hpack::put_field(
            &mut headers,
            b"grpc-timeout",
            grpc::timeout_header(timeout).as_bytes(),
        );
        if !spec.headers.contains_key(http::header::USER_AGENT) {
            hpack::put_field(
                &mut headers,
                b"user-agent",
                concat!("versus/", env!("CARGO_PKG_VERSION"), " grpc").as_bytes(),
            );
        }
        GrpcLink { service, headers }
    }

    /// Append the HPACK block of a call of `method` to `block`: the
    /// pseudo-headers, the endpoint's metadata (`endpoint_h2`, prepared),
    /// a flow step's own headers, the gRPC ones.
    pub(crate) fn put_block(
        &self,
        block: &mut Vec<u8>,
        origin_h2: &[u8],
        endpoint_h2: &[u8],
        spec: &EndpointSpec,
        method: &Method,
        req: &Request,
    ) {
        hpack::put_indexed(block, hpack::index::METHOD_POST);
        block.extend_from_slice(origin_h2);
        hpack::put_named(block, hpack::index::PATH, method.path.as_bytes());
        block.extend_from_slice(endpoint_h2);
        for (name, value) in &req.headers {
            // A step's JSON content type is the request's JSON, not the
            // call's; the endpoint's own headers win, as over HTTP.
            if *name != CONTENT_TYPE && *name != TE && !spec.headers.contains_key(name) {
                hpack::put_field(block, name.as_str().as_bytes(), value.as_bytes());
            }
        }
        block.extend_from_slice(&self.headers);
    }
}

/// A slot's last encoded request: the same request again (single-request
/// mode repeats one body) costs a pointer comparison, not a parse.
#[derive(Default)]
pub(crate) struct Encoded {
    body: Bytes,
    target: Option<String>,
    framed: Bytes,
}

impl Encoded {
    /// The length-prefixed message of `req` for `method`.
    ///
    /// # Errors
    /// `BadRequest`: the body does not fit the method's request type (the
    /// input thread counts such a line as malformed before it gets here;
    /// a flow step's rendered body can still miss).
    pub(crate) fn get(&mut self, req: &Request, method: &Method) -> Result<Bytes, Failure> {
        let same = (self.body.as_ptr() == req.body.as_ptr() && self.body.len() == req.body.len())
            && self.target == req.target
            && !self.framed.is_empty();
        if !same {
            let mut out = Vec::with_capacity(req.body.len() + 5);
            grpc::encode_request(&method.input, &req.body, &mut out)
                .map_err(|_| Failure::BadRequest)?;
            self.body = req.body.clone();
            self.target.clone_from(&req.target);
            self.framed = Bytes::from(out);
        }
        Ok(self.framed.clone())
    }
}

/// The response of a finished gRPC stream: its status (trailers, a
/// trailers-only head, or else mapped from the HTTP status), its time to
/// the first message, and (when kept) its messages as JSON.
pub(crate) fn response(
    a: RawResponse,
    method: &Method,
    service: &Service,
    keep_body: bool,
    start: std::time::Instant,
) -> Result<Response, Failure> {
    let status = match a.grpc {
        Some(s) => *s,
        None if a.status == 200 => GrpcStatus {
            // An answer without trailers did not end as gRPC does.
            code: 13,
            message: Some("no grpc-status in the answer".into()),
        },
        None => GrpcStatus {
            code: grpc::code_of_http(a.status),
            message: Some(format!("HTTP {}", a.status).into()),
        },
    };
    let body = if keep_body {
        grpc::answer_json(method, &a.body, &status, service.json).map_err(|_| Failure::Protocol)?
    } else {
        Bytes::new()
    };
    let first = a.first_data.unwrap_or(a.head_at);
    Ok(Response {
        status: a.status,
        headers: a.headers,
        body,
        body_len: a.body_len,
        ttfb: first.saturating_duration_since(start),
        grpc: Some(status),
    })
}

/// Why a schema could not be had from a server's reflection.
#[derive(Debug)]
pub enum ReflectError {
    /// The server could not be reached (exit 1: the run could not start).
    Unreachable(String),
    /// The server answered, but not with the schema (exit 2, with the fix).
    Schema(grpc::SchemaError),
}

/// Fetch the schema of `services` from the endpoint's reflection service
/// (v1, then v1alpha) over versus's HTTP/2 codec, before the run. Blocks:
/// it runs a runtime of its own.
///
/// # Errors
/// See [`ReflectError`].
pub fn reflect(
    spec: Arc<EndpointSpec>,
    addrs: Vec<std::net::SocketAddr>,
    tls: Option<Arc<rustls::ClientConfig>>,
    opts: super::TransportOptions,
    services: &[String],
) -> Result<prost_reflect::DescriptorPool, ReflectError> {
    let label = spec.label.clone();
    let prepared =
        super::Prepared::new(spec, addrs, tls, opts.clone()).map_err(ReflectError::Unreachable)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ReflectError::Unreachable(e.to_string()))?;
    let local = tokio::task::LocalSet::new();
    let wait = opts.timeout.min(Duration::from_secs(30));
    local.block_on(&rt, async move {
        let connected = tokio::time::timeout(wait, prepared.dialer().connect())
            .await
            .unwrap_or(Err(Failure::Timeout));
        let conn = match connected {
            Ok(super::connect::Connected::H2(c)) => c,
            Ok(super::connect::Connected::H1(_)) => {
                return Err(ReflectError::Unreachable(format!(
                    "endpoint {label}: the server did not speak HTTP/2, which gRPC needs"
                )))
            }
            Err(f) if f.at_connect() || f == Failure::Timeout => {
                return Err(ReflectError::Unreachable(format!(
                    "endpoint {label}: cannot reach the server to ask its reflection service for the schema ({f}): start it, or give the schema with --proto FILE"
                )))
            }
            Err(f) => {
                let answer = answered(prepared.dialer(), wait).await;
                return Err(ReflectError::Unreachable(format!(
                    "endpoint {label}: the server is up but did not speak HTTP/2, which gRPC needs ({f}; {answer}): point grpc:// at the gRPC server's port"
                )));
            }
        };
        let mut files = grpc::reflection::Files::default();
        let mut path = None;
        for service in services {
            let ask = grpc::reflection::Ask::FileContainingSymbol(service.clone());
            let answer = ask_reflection(&conn, &prepared, &mut path, ask, wait, &label).await?;
            match answer {
                grpc::reflection::MessageResponse::Files(f) => files
                    .add(&f.file_descriptor_proto)
                    .map_err(|e| ReflectError::Schema(grpc::SchemaError(format!("endpoint {label}: {e}"))))?,
                grpc::reflection::MessageResponse::Error(e) => {
                    let list = grpc::reflection::Ask::ListServices(String::new());
                    let known = match ask_reflection(&conn, &prepared, &mut path, list, wait, &label).await {
                        Ok(grpc::reflection::MessageResponse::Services(s)) => format!(
                            ": it has {}",
                            s.service.iter().map(|s| s.name.as_str()).collect::<Vec<_>>().join(", ")
                        ),
                        _ => String::new(),
                    };
                    return Err(ReflectError::Schema(grpc::SchemaError(format!(
                        "endpoint {label}: the server's reflection does not know service {service} ({}{}){known}: check the URL's path (grpc://host:port/package.Service/Method)",
                        grpc::code_name(e.error_code.max(0) as u32),
                        if e.error_message.is_empty() { String::new() } else { format!(": {}", e.error_message) },
                    ))));
                }
                grpc::reflection::MessageResponse::Services(_) => {}
            }
            // Imports the server did not send with the file.
            for _ in 0..256 {
                let Some(name) = files.missing() else { break };
                let ask = grpc::reflection::Ask::FileByFilename(name.clone());
                match ask_reflection(&conn, &prepared, &mut path, ask, wait, &label).await? {
                    grpc::reflection::MessageResponse::Files(f) if !f.file_descriptor_proto.is_empty() => files
                        .add(&f.file_descriptor_proto)
                        .map_err(|e| ReflectError::Schema(grpc::SchemaError(format!("endpoint {label}: {e}"))))?,
                    _ => {
                        return Err(ReflectError::Schema(grpc::SchemaError(format!(
                            "endpoint {label}: the server's reflection does not give {name}, which the schema imports: give the schema with --proto FILE"
                        ))))
                    }
                }
            }
        }
        conn.shut();
        files
            .pool()
            .map_err(|e| ReflectError::Schema(grpc::SchemaError(format!("endpoint {label}: {e}"))))
    })
}

/// What a server that failed the HTTP/2 handshake answers the preface
/// with, told on a connection of its own: its HTTP/1 status line, or
/// that it closed or sent something else.
async fn answered(dialer: &super::connect::Dialer, wait: Duration) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut buf = [0u8; 512];
    let read = async {
        let (mut io, _) = dialer.open().await.ok()?;
        io.write_all(super::h2::PREFACE).await.ok()?;
        io.read(&mut buf).await.ok()
    };
    let n = tokio::time::timeout(wait, read).await.ok().flatten();
    match n {
        Some(0) | None => "it closed the connection without an answer".to_string(),
        Some(n) => {
            let line = buf[..n].split(|&b| b == b'\r' || b == b'\n').next();
            let text = line
                .filter(|l| !l.is_empty() && l.iter().all(|b| (0x20..0x7f).contains(b)))
                .map(|l| String::from_utf8_lossy(&l[..l.len().min(80)]).into_owned());
            match (super::h2::h1_status_line(&buf[..n]), text) {
                (Some(line), _) => format!("it answered in HTTP/1: {line:?}"),
                (None, Some(text)) => format!("it answered in plain text: {text:?}"),
                (None, None) => "it answered with bytes that are not HTTP/2".to_string(),
            }
        }
    }
}

/// One reflection request and its answer; `path` is the reflection
/// version that answered (v1 is tried first, then v1alpha).
async fn ask_reflection(
    conn: &H2Conn,
    prepared: &super::Prepared,
    path: &mut Option<&'static str>,
    ask: grpc::reflection::Ask,
    wait: Duration,
    label: &str,
) -> Result<grpc::reflection::MessageResponse, ReflectError> {
    use prost::Message as _;
    let request = grpc::reflection::Request {
        host: String::new(),
        ask: Some(ask),
    };
    let mut body = Vec::new();
    grpc::frame(&request, &mut body);
    let candidates: Vec<&'static str> = match path {
        Some(p) => vec![*p],
        None => grpc::reflection::PATHS.to_vec(),
    };
    let mut last = String::new();
    for p in candidates {
        let id = conn
            .open(
                |block| {
                    hpack::put_indexed(block, hpack::index::METHOD_POST);
                    block.extend_from_slice(prepared.origin_h2());
                    hpack::put_named(block, hpack::index::PATH, p.as_bytes());
                    block.extend_from_slice(prepared.headers_h2());
                    hpack::put_field(block, b"content-type", b"application/grpc");
                    hpack::put_field(block, b"te", b"trailers");
                    Ok(&body[..])
                },
                true,
                64 << 20,
            )
            .map_err(|_| {
                ReflectError::Unreachable(format!(
                    "endpoint {label}: the connection closed during reflection"
                ))
            })?;
        let answer = tokio::time::timeout(wait, std::future::poll_fn(|cx| conn.answer(id, cx)))
            .await
            .map_err(|_| {
                conn.cancel(id);
                ReflectError::Unreachable(format!(
                    "endpoint {label}: the server's reflection service did not answer within {}: give the schema with --proto FILE",
                    humantime::format_duration(wait)
                ))
            })?
            .map_err(|_| ReflectError::Unreachable(format!("endpoint {label}: the reflection call failed")))?;
        let status = answer.grpc.map(|g| *g).unwrap_or(GrpcStatus {
            code: grpc::code_of_http(answer.status),
            message: None,
        });
        if status.is_error() {
            last = format!(
                "{}{}",
                grpc::code_name(status.code),
                status
                    .message
                    .as_deref()
                    .map(|m| format!(": {m}"))
                    .unwrap_or_default()
            );
            continue;
        }
        let messages = grpc::messages(&answer.body).map_err(|e| {
            ReflectError::Schema(grpc::SchemaError(format!(
                "endpoint {label}: reflection: {e}"
            )))
        })?;
        let Some(first) = messages.first() else {
            last = "no answer".into();
            continue;
        };
        let response = grpc::reflection::ServerReflectionResponse::decode(*first).map_err(|e| {
            ReflectError::Schema(grpc::SchemaError(format!(
                "endpoint {label}: reflection answer: {e}"
            )))
        })?;
        *path = Some(p);
        return response.answer.ok_or_else(|| {
            ReflectError::Schema(grpc::SchemaError(format!(
                "endpoint {label}: the reflection answer was empty"
            )))
        });
    }
    Err(ReflectError::Schema(grpc::SchemaError(format!(
        "endpoint {label}: the server has no reflection service ({last}): give the schema with --proto FILE (and --proto-path DIR for its imports)"
    ))))
}
