//! Sending requests: a [`Link`] is one core's view of one endpoint (how to
//! connect, the prepared headers and URI, the shared HTTP/2 connection); a
//! [`Slot`] is one request in flight at a time on it (its own HTTP/1.1
//! connection, or a stream of the shared HTTP/2 one). WebSocket endpoints
//! (`ws://`, `wss://`) use the same two types; their exchange is in
//! `ws.rs`.
//!
//! Cancellation: a timeout drops the request future. On HTTP/1.1 that
//! leaves the connection unusable, so the slot drops it and reconnects on
//! its next request (counted as a connect); on HTTP/2 only the stream is
//! reset and the connection stays.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http::header::{HeaderValue, CONTENT_TYPE, HOST};
use http::{HeaderMap, Method, Uri};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use rustls::pki_types::ServerName;

use super::connect::{classify_hyper, Body, Connected, Dialer};
use super::ws::{WsLink, WsSlot};
use super::{EndpointSpec, Failure, Outcome, Response, Scheme, Style, TransportOptions};
use crate::input::Request;

/// One core's connection state and prepared request parts for one endpoint.
pub struct Link {
    dialer: Dialer,
    opts: TransportOptions,
    spec: Arc<EndpointSpec>,
    /// The endpoint's URI for requests without a target, origin form (h1).
    origin_uri: Uri,
    /// The same in absolute form (h2 needs scheme and authority).
    absolute_uri: Uri,
    /// Headers for plain line requests over HTTP/1.1 (endpoint headers,
    /// Host, and Content-Type for POST-style endpoints).
    line_headers_h1: HeaderMap,
    /// The same without Host, for HTTP/2.
    line_headers_h2: HeaderMap,
    /// Once a connection negotiated HTTP/2, every slot shares it.
    h2: RefCell<H2State>,
    /// Idle HTTP/1.1 connections, shared by the slots: a slot takes one for
    /// a request and gives it back after (so in the open model the many
    /// slots share the few connections that traffic needs).
    pool: RefCell<Vec<http1::SendRequest<Body>>>,
    /// Set for WebSocket endpoints: every request goes through it.
    ws: Option<WsLink>,
}

#[derive(Default)]
struct H2State {
    negotiated: bool,
    sender: Option<http2::SendRequest<Body>>,
}

impl Link {
    /// Prepare a link. `addrs` come from [`super::resolve`], done once per run.
    ///
    /// # Errors
    /// When the endpoint's URL cannot form a URI or a TLS name.
    pub fn new(
        spec: Arc<EndpointSpec>,
        addrs: Vec<std::net::SocketAddr>,
        tls: Option<Arc<rustls::ClientConfig>>,
        opts: TransportOptions,
    ) -> Result<Link, String> {
        let server_name = match spec.scheme {
            Scheme::Https => Some(
                ServerName::try_from(spec.host.clone())
                    .map_err(|e| format!("{}: not a valid TLS server name: {e}", spec.label))?,
            ),
            Scheme::Http => None,
        };
        let origin_uri: Uri = spec
            .base_path
            .parse()
            .map_err(|e| format!("{}: {e}", spec.label))?;
        let absolute_uri =
            absolute(&spec, &spec.base_path).map_err(|e| format!("{}: {e}", spec.label))?;
        let mut line_headers_h2 = spec.headers.clone();
        if spec.style == Style::Post && !line_headers_h2.contains_key(CONTENT_TYPE) {
            line_headers_h2.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        let mut line_headers_h1 = line_headers_h2.clone();
        line_headers_h1.insert(
            HOST,
            HeaderValue::from_str(&spec.authority).map_err(|e| format!("{}: {e}", spec.label))?,
        );
        let ws = match spec.style {
            Style::WebSocket => Some(WsLink::new(&spec, &opts)?),
            Style::Post | Style::Get => None,
        };
        let tls = match (tls, &ws) {
            // The upgrade is an HTTP/1.1 request: never negotiate h2.
            (Some(config), Some(_)) => {
                let mut config = (*config).clone();
                config.alpn_protocols = vec![b"http/1.1".to_vec()];
                Some(Arc::new(config))
            }
            (tls, _) => tls,
        };
        let dialer = Dialer {
            addrs,
            scheme: spec.scheme,
            server_name,
            tls: tls.map(tokio_rustls::TlsConnector::from),
            version: opts.version,
            handshakes: std::cell::RefCell::new(crate::stats::new_histogram()),
        };
        Ok(Link {
            dialer,
            opts,
            spec,
            origin_uri,
            absolute_uri,
            line_headers_h1,
            line_headers_h2,
            h2: RefCell::new(H2State::default()),
            pool: RefCell::new(Vec::new()),
            ws,
        })
    }

    /// The TLS handshake times since the last call, taken out.
    pub fn take_handshakes(&self) -> hdrhistogram::Histogram<u64> {
        self.dialer
            .handshakes
            .replace(crate::stats::new_histogram())
    }

    /// Keep a new connection: an HTTP/1.1 one idle in the pool, an HTTP/2
    /// one as the core's shared connection.
    fn adopt(&self, connected: Connected) {
        match connected {
            Connected::H1(s) => self.pool.borrow_mut().push(s),
            Connected::H2(s) => {
                let mut h2 = self.h2.borrow_mut();
                h2.negotiated = true;
                h2.sender = Some(s);
            }
        }
    }

    /// Build the HTTP request for `req` at this endpoint.
    fn build(&self, req: &Request, h2: bool) -> Result<http::Request<Body>, Failure> {
        let style = self.spec.style;
        let line = req.target.is_none() && req.headers.is_empty();
        let (method, uri, body) = match (&req.target, style) {
            (None, Style::Post | Style::WebSocket) => (
                req.method.clone().unwrap_or(Method::POST),
                if h2 {
                    self.absolute_uri.clone()
                } else {
                    self.origin_uri.clone()
                },
                req.body.clone(),
            ),
            (None, Style::Get) => {
                let suffix = std::str::from_utf8(&req.body).map_err(|_| Failure::BadRequest)?;
                let path = join_suffix(&self.spec.base_path, suffix);
                (
                    req.method.clone().unwrap_or(Method::GET),
                    self.uri(&path, h2)?,
                    Bytes::new(),
                )
            }
            (Some(target), _) => {
                let path = join_target(&self.spec.base_path, target);
                (
                    req.method.clone().unwrap_or(Method::GET),
                    self.uri(&path, h2)?,
                    req.body.clone(),
                )
            }
        };
        let mut out = http::Request::new(Full::new(body));
        *out.method_mut() = method;
        *out.uri_mut() = uri;
        let headers = out.headers_mut();
        if line {
            *headers = if h2 {
                self.line_headers_h2.clone()
            } else {
                self.line_headers_h1.clone()
            };
        } else {
            for (name, value) in &req.headers {
                headers.append(name.clone(), value.clone());
            }
            // The endpoint's own headers (API keys) win over recorded ones.
            for (name, value) in &self.spec.headers {
                headers.insert(name.clone(), value.clone());
            }
            if !h2 {
                headers.insert(HOST, self.line_headers_h1[HOST].clone());
            }
        }
        Ok(out)
    }

    fn uri(&self, path: &str, h2: bool) -> Result<Uri, Failure> {
        if h2 {
            absolute(&self.spec, path).map_err(|_| Failure::BadRequest)
        } else {
            path.parse().map_err(|_| Failure::BadRequest)
        }
    }
}

/// The absolute URI of `path` at the endpoint.
fn absolute(spec: &EndpointSpec, path: &str) -> Result<Uri, http::Error> {
    Uri::builder()
        .scheme(match spec.scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        })
        .authority(spec.authority.as_str())
        .path_and_query(path)
        .build()
}

/// `+get` endpoints: the base URL joined with the line.
fn join_suffix(base: &str, suffix: &str) -> String {
    match (base.ends_with('/'), suffix.strip_prefix('/')) {
        (true, Some(rest)) => format!("{base}{rest}"),
        _ => format!("{base}{suffix}"),
    }
}

/// Requests with their own target keep its path and query, under the
/// endpoint's base path.
fn join_target(base: &str, target: &str) -> String {
    let path = match target.find("://") {
        Some(i) => {
            let after = &target[i + 3..];
            match after.find(['/', '?']) {
                Some(j) if after[j..].starts_with('?') => format!("/{}", &after[j..]),
                Some(j) => after[j..].to_string(),
                None => "/".to_string(),
            }
        }
        None if target.starts_with('/') => target.to_string(),
        None => format!("/{target}"),
    };
    let base_path = base.split('?').next().unwrap_or("").trim_end_matches('/');
    format!("{base_path}{path}")
}

/// One request in flight at a time on a link.
pub struct Slot {
    link: Rc<Link>,
    /// The connection of the request in flight (back in the pool after).
    h1: Option<http1::SendRequest<Body>>,
    ws: WsSlot,
}

enum Sender {
    H1(http1::SendRequest<Body>),
    H2(http2::SendRequest<Body>),
}

impl Slot {
    /// A slot with no connection yet.
    pub fn new(link: Rc<Link>) -> Slot {
        Slot {
            link,
            h1: None,
            ws: WsSlot::default(),
        }
    }

    /// Open the connection ahead of the run, so that connect time is not in
    /// the first request's latency. Returns the connect time.
    ///
    /// # Errors
    /// The failure kind; the slot then connects again on its first request.
    pub async fn warm(&mut self) -> Result<Option<Duration>, Failure> {
        let link = &*self.link;
        if let Some(ws) = &link.ws {
            return self.ws.warm(ws, &link.dialer, &link.opts).await;
        }
        if link.h2.borrow().negotiated {
            // One HTTP/2 connection per core serves every slot.
            return Ok(None);
        }
        let t0 = Instant::now();
        match tokio::time::timeout(link.opts.timeout, link.dialer.connect()).await {
            Ok(Ok(connected)) => {
                link.adopt(connected);
                Ok(Some(t0.elapsed()))
            }
            Ok(Err(f)) => Err(f),
            Err(_) => Err(Failure::Timeout),
        }
    }

    /// Send one request and read the whole answer, within `--timeout`.
    /// `keep_body` keeps the body for comparison; otherwise only its length
    /// is counted. `due` is the open model's scheduled time (latency counts
    /// from it). Cancel safe: dropping the future loses the connection of
    /// an HTTP/1.1 slot, which reconnects on its next request.
    pub async fn send(&mut self, req: &Request, keep_body: bool, due: Option<Instant>) -> Outcome {
        let link = &*self.link;
        if let Some(ws) = &link.ws {
            return self
                .ws
                .send(ws, &link.dialer, &link.opts, req, keep_body, due)
                .await;
        }
        let start = Instant::now();
        let bytes_out = req.body.len() as u64;
        let timeout = self.link.opts.timeout;
        let mut clock = start;
        let mut connect = None;
        let result = tokio::time::timeout(
            timeout,
            self.exchange(req, keep_body, &mut clock, &mut connect),
        )
        .await;
        let result = match result {
            Ok(r) => r,
            Err(_) => Err(Failure::Timeout),
        };
        match self.h1.take() {
            // An HTTP/1.1 connection is unusable after a failed exchange.
            Some(s) if result.is_ok() && self.link.opts.keepalive => {
                self.link.pool.borrow_mut().push(s)
            }
            _ => {}
        }
        Outcome::timed(result, start, clock, connect, bytes_out, due)
    }

    async fn exchange(
        &mut self,
        req: &Request,
        keep_body: bool,
        clock: &mut Instant,
        connect: &mut Option<Duration>,
    ) -> Result<Response, Failure> {
        let start = *clock;
        let (sender, opened) = self.sender().await?;
        *connect = opened;
        if opened.is_some() && self.link.opts.keepalive {
            // A reconnect is not the request's latency; it is counted apart.
            *clock = Instant::now();
        }
        let response = match sender {
            Sender::H1(mut s) => {
                let request = self.link.build(req, false)?;
                let r = s.send_request(request).await;
                self.h1 = Some(s);
                r
            }
            Sender::H2(mut s) => {
                let request = self.link.build(req, true)?;
                let r = s.send_request(request).await;
                if r.is_err() && s.is_closed() {
                    self.link.h2.borrow_mut().sender = None;
                }
                r
            }
        }
        .map_err(|e| classify_hyper(&e))?;
        let ttfb = start.elapsed();
        let status = response.status().as_u16();
        let headers = self
            .link
            .opts
            .keep_headers
            .iter()
            .flat_map(|name| {
                response
                    .headers()
                    .get_all(name)
                    .iter()
                    .map(move |v| (name.clone(), v.clone()))
            })
            .collect();
        let mut body = response.into_body();
        let max = self.link.opts.max_body;
        let mut len: u64 = 0;
        let mut first: Option<Bytes> = None;
        let mut rest: Option<BytesMut> = None;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| classify_hyper(&e))?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            len += data.len() as u64;
            if len > max {
                return Err(Failure::BodyTooLarge);
            }
            if keep_body {
                match (&mut first, &mut rest) {
                    (None, _) => first = Some(data),
                    (Some(f), None) => {
                        let mut b = BytesMut::with_capacity(f.len() + data.len());
                        b.extend_from_slice(f);
                        b.extend_from_slice(&data);
                        rest = Some(b);
                    }
                    (Some(_), Some(b)) => b.extend_from_slice(&data),
                }
            }
        }
        let body = match (first, rest) {
            (_, Some(b)) => b.freeze(),
            (Some(f), None) => f,
            (None, None) => Bytes::new(),
        };
        Ok(Response {
            status,
            headers,
            body,
            body_len: len,
            ttfb,
        })
    }

    /// A sender ready for one request, connecting if needed; the second
    /// value is the connect time when a connection was opened.
    async fn sender(&mut self) -> Result<(Sender, Option<Duration>), Failure> {
        let link = self.link.clone();
        if link.h2.borrow().negotiated {
            if let Some(s) = link.h2.borrow().sender.as_ref().filter(|s| !s.is_closed()) {
                return Ok((Sender::H2(s.clone()), None));
            }
        } else {
            // The most recently used idle connection first (LIFO keeps the
            // warm ones busy); closed ones are dropped.
            while let Some(mut s) = self.h1.take().or_else(|| link.pool.borrow_mut().pop()) {
                if s.ready().await.is_ok() {
                    return Ok((Sender::H1(s), None));
                }
            }
        }
        let t0 = Instant::now();
        let connected = link.dialer.connect().await?;
        let took = Some(t0.elapsed());
        match connected {
            Connected::H1(s) => Ok((Sender::H1(s), took)),
            Connected::H2(s) => {
                link.adopt(Connected::H2(s.clone()));
                Ok((Sender::H2(s), took))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_lines_and_targets_under_the_base_path() {
        assert_eq!(join_suffix("/api/", "/x?y=1"), "/api/x?y=1");
        assert_eq!(join_suffix("/api/", "x"), "/api/x");
        assert_eq!(join_suffix("/api", "?q=1"), "/api?q=1");
        assert_eq!(join_target("/", "/users?id=1"), "/users?id=1");
        assert_eq!(
            join_target("/v1/", "http://old.example:8080/users?id=1"),
            "/v1/users?id=1"
        );
        assert_eq!(join_target("/v1?key=k", "https://h?x=1"), "/v1/?x=1");
        assert_eq!(join_target("/", "https://h"), "/");
    }
}
