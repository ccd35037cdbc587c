//! Sending requests: a [`Link`] is one core's view of one endpoint (how to
//! connect, the prepared headers and URI, the shared HTTP/2 connection); a
//! [`Slot`] is one request in flight at a time on it (an HTTP/1.1
//! connection of versus's own codec taken from the link's idle pool, or a
//! stream of a shared HTTP/2 one, also versus's own). WebSocket endpoints
//! (`ws://`, `wss://`) use the same two types; their exchange is in
//! `ws.rs`.
//!
//! Cancellation: a timeout drops the request future. On HTTP/1.1 that
//! leaves the connection unusable, so the slot drops it and reconnects on
//! its next request (counted as a connect); on HTTP/2 only the stream is
//! reset and the connection stays.
//!
//! Retries: a request that never reached the server goes once more on a
//! new connection (an HTTP/2 one refused unprocessed; an HTTP/1.1 one on a
//! reused connection closed before any byte of the answer, if idempotent
//! or not wholly written); every other failure is the request's.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::ops::Deref;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::{BufMut, BytesMut};
use http::header::{
    HeaderValue, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, HOST, TE, TRANSFER_ENCODING, UPGRADE,
};
use http::{HeaderName, Method, Uri};
use rustls::pki_types::ServerName;

use super::connect::{Backoff, Connected, Dialer, H1Conn};
use super::grpc::{Encoded, GrpcLink};
use super::h1::{Heads, Reached};
use super::h2::{Conn as H2Conn, H2Error};
use super::hpack;
use super::ws::{WsLink, WsSlot};
use super::{
    Deadline, EndpointSpec, Failure, Outcome, Protocol, RawResponse, Response, Scheme,
    TransportOptions,
};
use crate::model::{Request, Style};
use crate::scenario::LineTemplate;
pub use lane::{park_in_ring, LaneExit, Units};
pub use quick::{InFlight, Resume};
use quick::{Point, QuickSend};

mod lane;
mod quick;
mod spare;

/// The parts of a [`Link`] prepared before its core's thread starts: how to
/// connect, and each protocol's request parts built once.
pub struct Prepared {
    dialer: Dialer,
    opts: TransportOptions,
    spec: Arc<EndpointSpec>,
    /// Host and `:authority`: the endpoint's Host header if it has one,
    /// else the URL's.
    authority: String,
    /// The HTTP/1.1 header lines of plain line requests, serialized: Host,
    /// the endpoint's headers, Content-Type for POST-style endpoints.
    line_head_h1: Vec<u8>,
    /// The whole head of a plain POST line request over HTTP/1.1 up to the
    /// Content-Length value, the only part that differs per request.
    post_head_h1: Vec<u8>,
    /// The whole head of a plain GET with no body at the base path
    /// (single-request mode's `--method GET`), over HTTP/1.1.
    get_head_h1: Vec<u8>,
    /// The endpoint's headers, HTTP/1.1 lines (no framing, no Host).
    headers_h1: Vec<u8>,
    /// HPACK: `:scheme` and `:authority`.
    origin_h2: Vec<u8>,
    /// HPACK: the endpoint's headers (none of those HTTP/2 forbids).
    headers_h2: Vec<u8>,
    /// HPACK: the headers of plain line requests (the endpoint's and
    /// Content-Type for POST-style endpoints).
    line_headers_h2: Vec<u8>,
    /// Set for WebSocket endpoints: every request goes through it.
    ws: Option<WsLink>,
    /// Set for gRPC endpoints (once their schema is resolved): every
    /// request is a call.
    grpc: Option<GrpcLink>,
    /// The endpoint's template of a stream's records (`--template`): its
    /// requests are made of each record by it (see [`carry!`]).
    template: Option<Arc<LineTemplate>>,
}

/// One core's connection state and prepared request parts for one endpoint.
pub struct Link {
    prepared: Prepared,
    /// Once a connection negotiated HTTP/2, every slot shares it (or, past
    /// the server's limit of concurrent streams, one of several).
    h2: RefCell<H2State>,
    /// Wakes slots waiting for another slot's HTTP/2 connect.
    h2_opened: tokio::sync::Notify,
    /// Slots warmed up on HTTP/2 so far (the streams the connections opened
    /// before the run must have room for).
    h2_warmed: Cell<usize>,
    /// Idle HTTP/1.1 connections, shared by the slots: a slot takes one for
    /// a request and gives it back after (so in the open model the many
    /// slots share the few connections that traffic needs).
    pool: RefCell<Vec<Idle>>,
    /// The HTTP/1.1 connections open or opening, against the limit.
    capacity: Rc<Capacity>,
    /// Counts [`Link::trim_idle`] calls: the clock idle connections are
    /// aged by (no clock read per request).
    epoch: Cell<u32>,
    /// The response heads the HTTP/1.1 connections replay.
    heads: Heads,
    /// Open model: the spare connections kept ready, and the figures of
    /// connects and waits for them.
    spare: spare::Spare,
}

/// Idle HTTP/1.1 connections are closed once unused this long: the open
/// model opens connections for bursts (a late timer, a slow answer) and
/// would otherwise keep the most a burst ever needed for the whole run.
const IDLE_LIMIT: Duration = Duration::from_secs(5);

impl Deref for Link {
    type Target = Prepared;

    fn deref(&self) -> &Prepared {
        &self.prepared
    }
}

#[derive(Default)]
struct H2State {
    negotiated: bool,
    /// The open connections; a new stream goes on the first with room.
    conns: Vec<H2Entry>,
    /// A slot is opening the next connection; the others wait for it
    /// rather than each opening one of their own.
    connecting: bool,
}

/// One HTTP/2 connection of a link and its streams in flight.
struct H2Entry {
    conn: Rc<H2Conn>,
    in_flight: usize,
}

impl H2Entry {
    /// Whether one more stream fits under the server's limit of concurrent
    /// streams (SETTINGS_MAX_CONCURRENT_STREAMS, which may change).
    fn has_room(&self) -> bool {
        self.in_flight < self.conn.max_streams()
    }
}

/// A stream claimed on one of a link's HTTP/2 connections, released when
/// the exchange ends (or is dropped by a timeout).
struct H2Stream {
    link: Rc<Link>,
    conn: Rc<H2Conn>,
}

impl Drop for H2Stream {
    fn drop(&mut self) {
        let mut state = self.link.h2.borrow_mut();
        if let Some(e) = state
            .conns
            .iter_mut()
            .find(|e| Rc::ptr_eq(&e.conn, &self.conn))
        {
            e.in_flight -= 1;
        }
    }
}

impl Link {
    /// Claim a stream on the first open HTTP/2 connection with room
    /// (dropping the closed ones from the list).
    fn claim_h2(self: &Rc<Link>) -> Option<H2Stream> {
        let mut state = self.h2.borrow_mut();
        state.conns.retain(|e| !e.conn.is_closed());
        let e = state
            .conns
            .iter_mut()
            .find_map(|e| e.has_room().then_some(e))?;
        e.in_flight += 1;
        Some(H2Stream {
            link: self.clone(),
            conn: e.conn.clone(),
        })
    }
}

/// An idle HTTP/1.1 connection and, for a new one, its connect time not
/// yet reported (the first request on it reports it).
struct Idle {
    conn: CountedConn,
    connect: Option<Duration>,
    /// The [`Link::epoch`] it became idle in.
    since: u32,
}

/// A link's HTTP/1.1 connections, open or opening, against
/// `--max-connections`; and the slots waiting for one.
struct Capacity {
    open: Cell<usize>,
    max: usize,
    /// Opened before the run (warmed): kept open however idle.
    kept: Cell<usize>,
    /// Slots waiting for an idle connection (while their own connect runs)
    /// or for room to open one.
    waiting: Cell<usize>,
    /// Wakes one of them when a connection is given back or closed.
    returned: tokio::sync::Notify,
}

impl Capacity {
    fn wake(&self) {
        if self.waiting.get() > 0 {
            self.returned.notify_one();
        }
    }
}

/// A connection's place under the limit, from its connect on; freed (and
/// a waiting slot woken) when the connection or its failed connect is
/// dropped.
struct Ticket(Rc<Capacity>);

impl Drop for Ticket {
    fn drop(&mut self) {
        self.0.open.set(self.0.open.get() - 1);
        self.0.wake();
    }
}

/// An HTTP/1.1 connection with its place under the limit.
struct CountedConn {
    conn: Box<H1Conn>,
    _ticket: Ticket,
}

impl Deref for CountedConn {
    type Target = H1Conn;

    fn deref(&self) -> &H1Conn {
        &self.conn
    }
}

impl std::ops::DerefMut for CountedConn {
    fn deref_mut(&mut self) -> &mut H1Conn {
        &mut self.conn
    }
}

/// Counts a slot among those waiting for an idle connection while it
/// waits (also when its request is dropped by a timeout).
struct Waiting<'a>(&'a Capacity);

impl<'a> Waiting<'a> {
    fn new(capacity: &'a Capacity) -> Waiting<'a> {
        capacity.waiting.set(capacity.waiting.get() + 1);
        Waiting(capacity)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.set(self.0.waiting.get() - 1);
    }
}

/// Marks a slot's HTTP/2 connect in progress; when it ends (done, failed
/// or dropped by a timeout), the waiting slots are woken to look again.
struct Connecting<'a>(&'a Link);

impl Drop for Connecting<'_> {
    fn drop(&mut self) {
        self.0.h2.borrow_mut().connecting = false;
        self.0.h2_opened.notify_waiters();
    }
}

/// Tell once per process on stderr that a GET or HEAD record's body was
/// not sent to an HTTP endpoint. RFC 9110 gives such a body no meaning,
/// and a server that does not read it (Python's `http.server`) takes it
/// for the next request; a record meant for REST beside gRPC carries it
/// for the gRPC endpoint's message.
fn tell_body_dropped(label: &str, method: &Method) {
    static TOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !TOLD.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "versus: {label}: a {method} record's body is not sent (a GET or HEAD carries none; \
             a gRPC endpoint takes it as its message); make the record a POST to send it"
        );
    }
}

impl Prepared {
    /// Prepare a link. `addrs` come from [`super::resolve`], done once per run.
    ///
    /// # Errors
    /// When the endpoint's URL cannot form a URI or a TLS name.
    pub fn new(
        spec: Arc<EndpointSpec>,
        addrs: Vec<std::net::SocketAddr>,
        tls: Option<Arc<rustls::ClientConfig>>,
        opts: TransportOptions,
    ) -> Result<Prepared, String> {
        let server_name = match spec.scheme {
            Scheme::Https => Some(
                ServerName::try_from(spec.host.clone())
                    .map_err(|e| format!("{}: not a valid TLS server name: {e}", spec.label))?,
            ),
            Scheme::Http => None,
        };
        // A Host header given for the endpoint replaces the URL's authority
        // (virtual hosts behind an address): as Host over HTTP/1.1, as
        // `:authority` over HTTP/2.
        let authority = match spec.headers.get(HOST) {
            Some(v) => v
                .to_str()
                .map_err(|_| format!("{}: the Host header is not ASCII", spec.label))?
                .to_string(),
            None => spec.authority.clone(),
        };
        absolute(spec.scheme, &authority, &spec.base_path)
            .map_err(|e| format!("{}: {e}", spec.label))?;
        let content_type = (spec.style == Style::Post && !spec.headers.contains_key(CONTENT_TYPE))
            .then(|| HeaderValue::from_static("application/json"));
        // The endpoint's own headers as each protocol sends them, prepared
        // once: no framing (versus's own) and no Host (the authority), and
        // over HTTP/2 none of the connection headers it forbids.
        let mut headers_h1 = Vec::new();
        let mut headers_h2 = Vec::new();
        for (name, value) in &spec.headers {
            if !framing(name) && *name != HOST {
                put_header(&mut headers_h1, name, value.as_bytes());
            }
            if !h2_forbidden(name, value) {
                hpack::put_field(&mut headers_h2, name.as_str().as_bytes(), value.as_bytes());
            }
        }
        let mut origin_h2 = Vec::new();
        hpack::put_indexed(
            &mut origin_h2,
            match spec.scheme {
                Scheme::Http => hpack::index::SCHEME_HTTP,
                Scheme::Https => hpack::index::SCHEME_HTTPS,
            },
        );
        hpack::put_named(
            &mut origin_h2,
            hpack::index::AUTHORITY,
            authority.as_bytes(),
        );
        let mut line_headers_h2 = headers_h2.clone();
        let mut line_head_h1 = Vec::new();
        put_header(&mut line_head_h1, &HOST, authority.as_bytes());
        line_head_h1.extend_from_slice(&headers_h1);
        if let Some(v) = content_type {
            put_header(&mut line_head_h1, &CONTENT_TYPE, v.as_bytes());
            hpack::put_field(&mut line_headers_h2, b"content-type", v.as_bytes());
        }
        let mut post_head_h1 = Vec::new();
        put_request_line(&mut post_head_h1, &Method::POST, &spec.base_path);
        post_head_h1.extend_from_slice(&line_head_h1);
        post_head_h1.extend_from_slice(b"content-length: ");
        let mut get_head_h1 = Vec::new();
        put_request_line(&mut get_head_h1, &Method::GET, &spec.base_path);
        get_head_h1.extend_from_slice(&line_head_h1);
        get_head_h1.extend_from_slice(b"\r\n");
        let protocol = Protocol::choose(&spec, opts.version);
        let ws = match protocol {
            Protocol::WebSocket => Some(WsLink::new(&spec, &opts)?),
            Protocol::Http1 | Protocol::Http2 | Protocol::Negotiate | Protocol::Grpc => None,
        };
        let grpc = spec
            .grpc
            .as_ref()
            .filter(|_| protocol == Protocol::Grpc)
            .map(|service| GrpcLink::new(service.clone(), opts.timeout, &spec));
        // The run's TLS configuration (or the endpoint's own, with its
        // client certificate) offers what the version policy says; an
        // endpoint whose protocol offers otherwise (a WebSocket upgrade is
        // an HTTP/1.1 request) gets a copy of its own.
        let tls = spec.tls.clone().or(tls).map(|config| {
            let alpn = protocol.alpn();
            if config.alpn_protocols == alpn {
                config
            } else {
                let mut own = (*config).clone();
                own.alpn_protocols = alpn;
                Arc::new(own)
            }
        });
        let dialer = Dialer {
            addrs,
            scheme: spec.scheme,
            server_name,
            tls: tls.map(tokio_rustls::TlsConnector::from),
            protocol,
            handshakes: std::cell::RefCell::new(crate::stats::new_histogram()),
            keep_headers: opts.keep_headers.clone(),
            io: opts.io,
            halt: Arc::default(),
        };
        Ok(Prepared {
            dialer,
            opts,
            template: spec.template.clone(),
            spec,
            authority,
            line_head_h1,
            post_head_h1,
            get_head_h1,
            headers_h1,
            origin_h2,
            headers_h2,
            line_headers_h2,
            ws,
            grpc,
        })
    }

    /// Share `halt` as this endpoint's stop (see [`super::Halt`]) with the
    /// other cores' links to it.
    pub fn share_halt(&mut self, halt: Arc<super::Halt>) {
        self.dialer.halt = halt;
    }

    /// How to connect.
    pub(super) fn dialer(&self) -> &Dialer {
        &self.dialer
    }

    /// HPACK: `:scheme` and `:authority`.
    pub(super) fn origin_h2(&self) -> &[u8] {
        &self.origin_h2
    }

    /// HPACK: the endpoint's own headers.
    pub(super) fn headers_h2(&self) -> &[u8] {
        &self.headers_h2
    }
}

impl Link {
    /// Whether the endpoint was stopped for the rest of the run (see
    /// [`super::Halt`]).
    pub fn halted(&self) -> bool {
        self.dialer.halt.check().is_err()
    }

    /// A link on the current core.
    pub fn new(prepared: Prepared) -> Link {
        let max = prepared.opts.max_connections.unwrap_or(usize::MAX);
        Link {
            prepared,
            h2: RefCell::new(H2State::default()),
            h2_opened: tokio::sync::Notify::new(),
            h2_warmed: Cell::new(0),
            pool: RefCell::new(Vec::new()),
            capacity: Rc::new(Capacity {
                open: Cell::new(0),
                max,
                kept: Cell::new(0),
                waiting: Cell::new(0),
                returned: tokio::sync::Notify::new(),
            }),
            epoch: Cell::new(0),
            heads: Heads::default(),
            spare: spare::Spare::new(),
        }
    }

    /// A place for one more HTTP/1.1 connection, if under the limit.
    fn reserve(&self) -> Option<Ticket> {
        let c = &self.capacity;
        (c.open.get() < c.max).then(|| self.ticket())
    }

    /// A place for one more HTTP/1.1 connection, over the limit if need be
    /// (a connection that negotiated HTTP/1.1 where HTTP/2 was expected).
    fn ticket(&self) -> Ticket {
        let c = &self.capacity;
        c.open.set(c.open.get() + 1);
        Ticket(c.clone())
    }

    /// Close the idle HTTP/1.1 connections unused for [`IDLE_LIMIT`] (but
    /// keep as many open as were opened before the run), given that this is
    /// called once every `every` of the run (not while it is paused, when
    /// every connection is idle and will be needed again).
    pub fn trim_idle(&self, every: Duration) {
        let epoch = self.epoch.get().wrapping_add(1);
        self.epoch.set(epoch);
        let limit = IDLE_LIMIT.as_nanos().div_ceil(every.as_nanos().max(1));
        let limit = u32::try_from(limit).unwrap_or(u32::MAX).max(2);
        // The least recently used are at the bottom of the pool (below new
        // ones, which may be younger).
        let c = &self.capacity;
        let mut closable = c.open.get().saturating_sub(c.kept.get());
        self.pool.borrow_mut().retain(|i| {
            let close = closable > 0 && epoch.wrapping_sub(i.since) >= limit;
            closable -= usize::from(close);
            !close
        });
    }

    /// The TLS handshake times since the last call, taken out (`None`
    /// when there were none, at no cost).
    pub fn take_handshakes(&self) -> Option<hdrhistogram::Histogram<u64>> {
        spare::take(&self.dialer.handshakes)
    }

    /// Keep a new connection: an HTTP/1.1 one idle in the pool (with the
    /// connect time `took` to report, if any) in the place `ticket` keeps
    /// for it, an HTTP/2 one as the core's shared connection.
    ///
    /// A new HTTP/1.1 connection goes below those used before, to be taken
    /// last: a busy server may get to a new connection late (it waits in
    /// its accept queue), and a request on it would wait with it, while
    /// one that has answered is known to be served.
    fn adopt(&self, connected: Connected, took: Option<Duration>, ticket: Ticket) {
        match connected {
            Connected::H1(conn) => {
                self.give_back(
                    CountedConn {
                        conn,
                        _ticket: ticket,
                    },
                    took,
                );
                let mut pool = self.pool.borrow_mut();
                if let Some(new) = pool.pop() {
                    pool.insert(0, new);
                }
            }
            // HTTP/2 connections are not counted against the limit.
            Connected::H2(c) => self.keep_h2(c),
        }
    }

    /// Keep a new HTTP/2 connection among the core's shared ones.
    fn keep_h2(&self, c: Rc<H2Conn>) {
        self.h2.borrow_mut().negotiated = true;
        if c.max_streams() == 0 {
            // A server that allows no stream at all: nothing to keep.
            c.shut();
            return;
        }
        self.h2.borrow_mut().conns.push(H2Entry {
            conn: c,
            in_flight: 0,
        });
    }

    /// Put an HTTP/1.1 connection in the idle pool, waking a slot that waits
    /// for one.
    fn give_back(&self, mut conn: CountedConn, connect: Option<Duration>) {
        conn.watch_idle();
        self.pool.borrow_mut().push(Idle {
            conn,
            connect,
            since: self.epoch.get(),
        });
        self.capacity.wake();
    }

    /// Open a connection, in the place `ticket` keeps for it, in a task of
    /// its own; it goes to the pool (or becomes the shared HTTP/2 one) when
    /// ready, whoever takes it.
    fn dial(
        self: &Rc<Link>,
        delay: Option<Duration>,
        ticket: Ticket,
    ) -> tokio::task::JoinHandle<Result<(), Failure>> {
        let link = self.clone();
        tokio::task::spawn_local(async move {
            Backoff::wait(delay).await;
            let t0 = Instant::now();
            let connected = tokio::time::timeout(link.opts.timeout, link.dialer.connect())
                .await
                .map_err(|_| Failure::Timeout)??;
            link.adopt(connected, Some(t0.elapsed()), ticket);
            Ok(())
        })
    }

    /// The most recently used idle connection (LIFO keeps the warm ones
    /// busy); closed ones are dropped.
    async fn take_idle(&self) -> Option<Idle> {
        loop {
            let mut idle = self.pool.borrow_mut().pop()?;
            if !poll_fn(|cx| Poll::Ready(idle.conn.is_closed(cx))).await {
                return Some(idle);
            }
        }
    }

    /// Serialize the HTTP/1.1 head of `req` at this endpoint into `buf`;
    /// returns the body to send after it and whether the request is a HEAD
    /// (whose answer has no body). A plain POST line only appends its
    /// length to the prepared head.
    #[inline(always)]
    fn build_h1<'r>(
        &self,
        req: &'r Request,
        buf: &mut BytesMut,
    ) -> Result<(&'r [u8], bool), Failure> {
        if self.is_post_line(req) {
            self.put_post_line_head(req, buf);
            return Ok((&req.body, false));
        }
        let line = req.target.is_none() && req.headers.is_empty();
        if let Some(head) = self.prepared_h1(req) {
            buf.extend_from_slice(head);
            return Ok((&[], false));
        }
        let (method, path, body) = self.target(req)?;
        put_request_line(buf, method, &path);
        if line {
            buf.extend_from_slice(&self.line_head_h1);
        } else {
            put_header(buf, &HOST, self.authority.as_bytes());
            // The endpoint's own headers (API keys) win over recorded ones
            // (which carry no framing or Host: the input dropped those).
            for (name, value) in &req.headers {
                if !self.spec.headers.contains_key(name) {
                    put_header(buf, name, value.as_bytes());
                }
            }
            buf.extend_from_slice(&self.headers_h1);
        }
        if sends_length(method, body) {
            buf.extend_from_slice(b"content-length: ");
            put_length_end(buf, body.len());
        } else {
            buf.extend_from_slice(b"\r\n");
        }
        Ok((body, *method == Method::HEAD))
    }

    /// Whether `req` is a plain POST line: a stream's line posted to this
    /// endpoint's own URL, with no headers of its own (its head is the
    /// prepared one and its length).
    fn is_post_line(&self, req: &Request) -> bool {
        req.target.is_none()
            && req.headers.is_empty()
            && self.spec.style == Style::Post
            && req.method.as_ref().is_none_or(|m| *m == Method::POST)
    }

    /// Whether [`Link::post_line_h1`] forms `req`.
    pub(super) fn forms_post_line(&self, req: &Request) -> bool {
        self.is_post_line(req) && req.body.len() <= 64 * 1024
    }

    /// Append the whole HTTP/1.1 request of a plain POST line (see
    /// [`Link::is_post_line`]) with a body of at most 64 KiB to `buf`:
    /// false, with nothing written, for any other request.
    pub(super) fn post_line_h1(&self, req: &Request, buf: &mut BytesMut) -> bool {
        let fits = self.forms_post_line(req);
        if fits {
            self.put_post_line_head(req, buf);
            buf.extend_from_slice(&req.body);
        }
        fits
    }

    /// A plain POST line's head: the prepared one and the body's length.
    fn put_post_line_head(&self, req: &Request, buf: &mut BytesMut) {
        buf.extend_from_slice(&self.post_head_h1);
        put_length_end(buf, req.body.len());
    }

    /// Stage `req` whole on `conn` for the quick path's write, as
    /// [`Link::build_h1`] forms it (nothing staged for the prepared
    /// request, written from where it was made): whether it is a `HEAD`
    /// request, or `None` when it cannot be formed or its body is over
    /// 64 KiB (the general path writes it).
    fn stage_h1(&self, conn: &mut CountedConn, req: &Request) -> Option<bool> {
        if self.prepared_h1(req).is_some() {
            conn.stage_nothing();
            return Some(false);
        }
        match self.build_h1(req, conn.request_buf()) {
            Ok((body, head_request)) if conn.stage(body).is_empty() => Some(head_request),
            _ => None,
        }
    }

    /// The whole HTTP/1.1 request `req` is at this endpoint, when it is
    /// one made once (a bodiless GET of the endpoint's own URL, what
    /// single-request mode sends): [`Link::build_h1`] copies it, the quick
    /// path sends it from here.
    #[inline(always)]
    pub(super) fn prepared_h1(&self, req: &Request) -> Option<&[u8]> {
        let get = req.target.is_none()
            && req.headers.is_empty()
            && self.spec.style != Style::Get
            && req.body.is_empty()
            && req.method.as_ref() == Some(&Method::GET);
        get.then_some(&self.get_head_h1[..])
    }

    /// The method of `req` at this endpoint: its own, or POST for a line
    /// to a POST-style endpoint, GET otherwise.
    fn method<'r>(&self, req: &'r Request) -> &'r Method {
        match (&req.method, &req.target, self.spec.style) {
            (Some(m), ..) => m,
            (None, None, Style::Post | Style::WebSocket | Style::Grpc) => &Method::POST,
            (None, ..) => &Method::GET,
        }
    }

    /// The method, path (under the endpoint's base path) and body of `req`
    /// at this endpoint, on either protocol.
    fn target<'a: 'c, 'r: 'c, 'c>(
        &'a self,
        req: &'r Request,
    ) -> Result<(&'r Method, Cow<'c, str>, &'r [u8]), Failure> {
        let method = self.method(req);
        let (path, body): (Cow<'c, str>, &[u8]) = match (&req.target, self.spec.style) {
            (None, Style::Post | Style::WebSocket | Style::Grpc) => {
                return Ok((
                    method,
                    Cow::Borrowed(self.spec.base_path.as_str()),
                    &req.body,
                ))
            }
            (None, Style::Get) => {
                let suffix = std::str::from_utf8(&req.body).map_err(|_| Failure::BadRequest)?;
                (Cow::Owned(join_suffix(&self.spec.base_path, suffix)), &[])
            }
            (Some(target), _) => {
                let body = match *method {
                    Method::GET | Method::HEAD if !req.body.is_empty() => {
                        tell_body_dropped(&self.spec.label, method);
                        &[]
                    }
                    _ => &req.body[..],
                };
                (join_target(&self.spec.base_path, target), body)
            }
        };
        if !is_origin_form(&path) {
            return Err(Failure::BadRequest);
        }
        Ok((method, path, body))
    }

    /// Append the HPACK block of `req` at this endpoint to `block`; returns
    /// the body to send after it.
    fn build_h2<'r>(&'r self, req: &'r Request, block: &mut Vec<u8>) -> Result<&'r [u8], Failure> {
        let line = req.target.is_none() && req.headers.is_empty();
        let (method, path, body) = self.target(req)?;
        match *method {
            Method::GET => hpack::put_indexed(block, hpack::index::METHOD_GET),
            Method::POST => hpack::put_indexed(block, hpack::index::METHOD_POST),
            ref m => hpack::put_named(block, hpack::index::METHOD, m.as_str().as_bytes()),
        }
        block.extend_from_slice(&self.origin_h2);
        if path == "/" {
            hpack::put_indexed(block, hpack::index::PATH_ROOT);
        } else {
            hpack::put_named(block, hpack::index::PATH, path.as_bytes());
        }
        if line {
            block.extend_from_slice(&self.line_headers_h2);
        } else {
            // As over HTTP/1.1; recorded headers carry none HTTP/2 forbids.
            for (name, value) in &req.headers {
                if !self.spec.headers.contains_key(name) {
                    hpack::put_field(block, name.as_str().as_bytes(), value.as_bytes());
                }
            }
            block.extend_from_slice(&self.headers_h2);
        }
        if sends_length(method, body) {
            let mut digits = itoa::Buffer::new();
            let len = digits.format(body.len()).as_bytes();
            hpack::put_named(block, hpack::index::CONTENT_LENGTH, len);
        }
        Ok(body)
    }
}

/// Whether a request carries Content-Length: with a body, or with a method
/// that expects one.
fn sends_length(method: &Method, body: &[u8]) -> bool {
    !body.is_empty() || matches!(*method, Method::POST | Method::PUT | Method::PATCH)
}

/// Headers that frame the message: versus writes its own.
fn framing(name: &HeaderName) -> bool {
    *name == CONTENT_LENGTH || *name == TRANSFER_ENCODING
}

/// Endpoint headers an HTTP/2 request must not carry (RFC 9113 8.2.2) or
/// that versus sets itself: framing, Host (the `:authority` is the
/// endpoint's) and the connection-specific ones. (Recorded requests never
/// carry them: see [`crate::input::is_engine_header`].)
fn h2_forbidden(name: &HeaderName, value: &HeaderValue) -> bool {
    framing(name)
        || *name == HOST
        || *name == CONNECTION
        || *name == UPGRADE
        || name.as_str() == "keep-alive"
        || name.as_str() == "proxy-connection"
        || (*name == TE && value.as_bytes() != b"trailers")
}

fn put_request_line(buf: &mut impl BufMut, method: &Method, path: &str) {
    buf.put_slice(method.as_str().as_bytes());
    buf.put_u8(b' ');
    buf.put_slice(path.as_bytes());
    buf.put_slice(b" HTTP/1.1\r\n");
}

fn put_header(buf: &mut impl BufMut, name: &HeaderName, value: &[u8]) {
    buf.put_slice(name.as_str().as_bytes());
    buf.put_slice(b": ");
    buf.put_slice(value);
    buf.put_slice(b"\r\n");
}

/// The Content-Length value and the end of the head.
fn put_length_end(buf: &mut impl BufMut, len: usize) {
    buf.put_slice(itoa::Buffer::new().format(len).as_bytes());
    buf.put_slice(b"\r\n\r\n");
}

/// The absolute URI of `path` at the endpoint.
fn absolute(scheme: Scheme, authority: &str, path: &str) -> Result<Uri, http::Error> {
    Uri::builder()
        .scheme(match scheme {
            Scheme::Http => "http",
            Scheme::Https => "https",
        })
        .authority(authority)
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
/// endpoint's base path (the target itself, without a copy, when the base
/// path is `/` and the target a path).
fn join_target<'t>(base: &str, target: &'t str) -> Cow<'t, str> {
    let base_path = base.split('?').next().unwrap_or("").trim_end_matches('/');
    // A path is kept as it is (its query may hold a URL).
    let absolute = if target.starts_with('/') {
        None
    } else {
        target.find("://")
    };
    let path: Cow<'_, str> = match absolute {
        Some(i) => {
            let after = &target[i + 3..];
            match after.find(['/', '?']) {
                Some(j) if after[j..].starts_with('?') => format!("/{}", &after[j..]).into(),
                Some(j) => after[j..].into(),
                None => "/".into(),
            }
        }
        None if target.starts_with('/') => target.into(),
        None => format!("/{target}").into(),
    };
    if base_path.is_empty() {
        path
    } else {
        format!("{base_path}{path}").into()
    }
}

/// Whether `path` is a request target the `http` crate accepts (as
/// `path.parse::<Uri>()` does), checked without building one: for the
/// usual target that starts with `/`, every byte before a `#` is one a
/// path (then, after a `?`, a query) may hold.
fn is_origin_form(path: &str) -> bool {
    let b = path.as_bytes();
    if b.first() != Some(&b'/') || b.len() >= usize::from(u16::MAX) {
        return path.parse::<Uri>().is_ok();
    }
    let path_byte = |c: u8| {
        matches!(c, 0x21 | 0x24..=0x3B | 0x3D | 0x40..=0x5F | 0x61..=0x7A | 0x7C | 0x7E | b'"' | b'{' | b'}')
            || c >= 0x80
    };
    let query_byte = |c: u8| matches!(c, 0x21 | 0x24..=0x3B | 0x3D | 0x3F..=0x7E) || c >= 0x80;
    let mut query = false;
    for &c in b {
        match c {
            b'#' => return true,
            b'?' if !query => query = true,
            c if query && query_byte(c) => {}
            c if !query && path_byte(c) => {}
            _ => return false,
        }
    }
    true
}

/// [`Slot::send`] on `slot`, its parts (the quick path, then the general
/// one where it left off) awaited by the caller itself: the engine's
/// request loop so has an `async fn` level fewer a request. With a
/// `flight` (a request a lane left in flight, see [`Slot::lane`]) the
/// quick path takes it up where it stands.
macro_rules! send_on {
    ($slot:expr, $req:expr, $keep_body:expr, $due:expr, $out:expr) => {
        $crate::endpoint::send_on!($slot, $req, $keep_body, $due, $out, None)
    };
    ($slot:expr, $req:expr, $keep_body:expr, $due:expr, $out:expr, $flight:expr) => {{
        let slot: &mut $crate::endpoint::Slot = $slot;
        let (req, keep_body, due) = ($req, $keep_body, $due);
        let out: &mut Option<$crate::model::Outcome> = $out;
        let flight: Option<$crate::endpoint::InFlight> = $flight;
        let resume = match flight.is_some() || slot.quick() {
            true => slot.send_kept(req, keep_body, due, out, flight).await,
            false => Err($crate::endpoint::Resume::start()),
        };
        if let Err(resume) = resume {
            *out = Some(slot.send_from(req, keep_body, due, resume).await);
        }
    }};
}
pub(crate) use send_on;

/// Carry `$req` at `$slot` by the route that fits it, chosen here and
/// nowhere else: a lane where one can carry it (the closed model, a
/// request the lane forms, see [`Slot::lane`]), whose answers go to
/// `$units` (an `Rc<dyn Units>`) as they land, and then whatever request
/// the lane leaves claimed; else the quick path on the kept connection,
/// or the general path ([`send_on!`]). The outcome of the last request
/// carried is put in `$out`. Evaluates to whether one was: false when a
/// lane took every answer and nothing, or a unit of another kind, is
/// claimed after them (the engine holds that unit).
macro_rules! carry {
    ($slot:expr, $req:expr, $keep_body:expr, $due:expr, $out:expr, $units:expr) => {{
        let slot: &mut $crate::endpoint::Slot = $slot;
        let (keep_body, due): (bool, Option<std::time::Instant>) = ($keep_body, $due);
        let units: &std::rc::Rc<dyn $crate::endpoint::Units> = $units;
        let mut req: std::rc::Rc<$crate::model::Request> = $req;
        // An endpoint with a template sends its own request of the record
        // (one no lane forms); one without pays this test alone.
        if let Some(own) = slot.own_request(&req) {
            req = own;
        }
        let mut flight = None;
        let mut carried = true;
        if due.is_none() && slot.lane_fits(&req) {
            let exit = slot.lane(&req, keep_body, units.clone()).await;
            match units.claimed() {
                Some(next) => {
                    req = next;
                    if let $crate::endpoint::LaneExit::InFlight(f) = exit {
                        flight = Some(f);
                    }
                }
                None => carried = false,
            }
        }
        if carried {
            $crate::endpoint::send_on!(slot, &req, keep_body, due, $out, flight);
        }
        carried
    }};
}
pub(crate) use carry;

/// One request in flight at a time on a link.
pub struct Slot {
    link: Rc<Link>,
    /// The HTTP/1.1 connection of the request in flight, kept for the
    /// next while no other slot waits for one (see [`Slot::release`]).
    h1: Option<CountedConn>,
    /// Whether the last answer left the connection usable (no
    /// `Connection: close`, not close-delimited).
    reuse: bool,
    /// The `--timeout` timer, kept from request to request.
    deadline: Deadline,
    /// The wait before the next connect after failed ones.
    backoff: Backoff,
    /// Made by the first WebSocket request (boxed: most slots never
    /// have one, and it is ~400 bytes).
    ws: Option<Box<WsSlot>>,
    /// gRPC: the last request's message, encoded (made by the first).
    encoded: Option<Box<Encoded>>,
    /// When the last answer was wholly read, if known without another
    /// read of the clock (see `RawResponse::done_at`).
    answered: Option<Instant>,
    /// The local port of the connection the request in flight went on (0:
    /// none yet), kept when a timeout drops the connection.
    port: u16,
}

/// A stream whose answer is awaited: reset if the wait is dropped (a
/// timeout) before the answer is taken.
struct OpenStream<'a> {
    conn: &'a H2Conn,
    id: u32,
    answered: bool,
}

impl OpenStream<'_> {
    /// Wait for stream `id`'s answer on `conn`; the stream is reset if the
    /// wait is dropped first (a timeout).
    async fn answer(conn: &H2Conn, id: u32) -> Result<super::RawResponse, H2Error> {
        let mut open = OpenStream {
            conn,
            id,
            answered: false,
        };
        let a = std::future::poll_fn(|cx| conn.answer(id, cx)).await;
        // Taken (the stream is out of the map): nothing to reset.
        open.answered = true;
        a
    }
}

impl Drop for OpenStream<'_> {
    fn drop(&mut self) {
        if !self.answered {
            self.conn.cancel(self.id);
        }
    }
}

enum Sender {
    H1(CountedConn),
    H2(H2Stream),
}

/// A sender for one request, the connect time of its connection if new
/// (reported by the first request on it), and since when the request
/// waited for it, if it found none free.
type Connection = (Sender, Option<Duration>, Option<Instant>);

/// A slot is counted among its thread's while it lives (see
/// [`park_in_ring`]).
impl Drop for Slot {
    fn drop(&mut self) {
        lane::count_slot(false);
    }
}

impl Slot {
    /// A slot with no connection yet.
    pub fn new(link: Rc<Link>) -> Slot {
        lane::count_slot(true);
        Slot {
            link,
            h1: None,
            reuse: false,
            deadline: Deadline::default(),
            backoff: Backoff::default(),
            ws: None,
            encoded: None,
            answered: None,
            port: 0,
        }
    }

    /// The endpoint this slot sends to.
    pub fn endpoint(&self) -> &EndpointSpec {
        &self.link.spec
    }

    /// The request this endpoint makes of the stream's record `req` when
    /// it has a template (`--template`); `None` when it sends the record
    /// as it is. Made here, on the core, just before the route is chosen
    /// and the clock starts, rather than on the input thread into a
    /// variant of the record per endpoint: the engine shares one record
    /// among every endpoint (window, judging, counting by method), and
    /// would otherwise carry a request per endpoint through all of it;
    /// here an endpoint without a template pays one test of a field per
    /// call (none per request a lane carries). The input thread renders
    /// each record once to check it (`plan::checked`), so a record that
    /// lacks a value never gets here; the made request forms no lane (it
    /// has a target), so lanes only ever carry records as they are.
    #[inline(always)]
    pub fn own_request(&self, req: &Request) -> Option<Rc<Request>> {
        let template = self.link.template.as_ref()?;
        Some(Rc::new(template.request(req)))
    }

    /// Open the connection ahead of the run, so that connect time is not in
    /// the first request's latency. Returns the connect time.
    ///
    /// # Errors
    /// The failure kind; the slot then connects again on its first request.
    pub async fn warm(&mut self) -> Result<Option<Duration>, Failure> {
        let link = &*self.link;
        if let Some(ws) = &link.ws {
            return self
                .ws
                .get_or_insert_default()
                .warm(ws, &link.dialer, &link.opts)
                .await;
        }
        let _connecting;
        let counted = link.h2.borrow().negotiated;
        if counted {
            // HTTP/2 connections are shared: open another only when those
            // open have no room for this slot's stream under the server's
            // limit, one slot at a time.
            link.h2_warmed.set(link.h2_warmed.get() + 1);
            loop {
                let opened = {
                    let state = link.h2.borrow();
                    let room = state
                        .conns
                        .iter()
                        .filter(|e| !e.conn.is_closed())
                        .map(|e| e.conn.max_streams())
                        .fold(0, usize::saturating_add);
                    if room >= link.h2_warmed.get() {
                        return Ok(None);
                    }
                    if !state.connecting {
                        break;
                    }
                    link.h2_opened.notified()
                };
                opened.await;
            }
            link.h2.borrow_mut().connecting = true;
            _connecting = Connecting(link);
        }
        // At the limit of HTTP/1.1 connections: this slot will share
        // those open.
        let Some(ticket) = link.reserve() else {
            return Ok(None);
        };
        let t0 = Instant::now();
        let connect = Box::pin(link.dialer.connect());
        let connected = tokio::time::timeout(link.opts.timeout, connect)
            .await
            .unwrap_or(Err(Failure::Timeout));
        self.backoff.record(&connected);
        let connected = connected?;
        if matches!(connected, Connected::H1(_)) {
            link.capacity.kept.set(link.capacity.kept.get() + 1);
        }
        link.adopt(connected, None, ticket);
        if !counted && link.h2.borrow().negotiated {
            // The first connection negotiated HTTP/2: its stream.
            link.h2_warmed.set(link.h2_warmed.get() + 1);
        }
        Ok(Some(t0.elapsed()))
    }

    /// Send one request and read the whole answer, within `--timeout`.
    /// `keep_body` keeps the body for comparison; otherwise only its length
    /// is counted. `due` is the open model's scheduled time (latency counts
    /// from it). Cancel safe: dropping the future loses the connection of
    /// an HTTP/1.1 slot, which reconnects on its next request.
    pub async fn send(&mut self, req: &Request, keep_body: bool, due: Option<Instant>) -> Outcome {
        let mut out = None;
        send_on!(self, req, keep_body, due, &mut out);
        out.unwrap_or_else(|| unreachable!("send_on! leaves an outcome"))
    }

    /// Whether its next request can go by the quick path
    /// ([`Slot::send_kept`]): it kept a connection from its last request,
    /// on a stream that lends what it receives, so that an answer can be
    /// read where it landed (the ring; never HTTP/2 or WebSocket, TLS or
    /// epoll, whose every answer the general path would read).
    pub fn quick(&self) -> bool {
        self.h1.as_ref().is_some_and(|c| c.lends())
    }

    /// [`Slot::send`]'s quick path: the request on the connection this
    /// slot kept from its last one, when it can go there (see [`QuickSend`]),
    /// or the request in `flight` there (a lane's, see [`Slot::lane`]),
    /// taken up where it stands; its outcome put in `out` (where its
    /// reader finds it: not moved from future to future); where
    /// [`Slot::send_from`] is to take it up otherwise. The engine's request
    /// loop awaits the two itself: a future level fewer.
    pub fn send_kept<'a>(
        &'a mut self,
        req: &'a Request,
        keep_body: bool,
        due: Option<Instant>,
        out: &'a mut Option<Outcome>,
        flight: Option<InFlight>,
    ) -> impl std::future::Future<Output = Result<(), Resume>> + 'a {
        QuickSend {
            slot: self,
            req,
            keep_body,
            due,
            out,
            flight,
        }
    }

    /// [`Slot::send`], from where the kept connection's quick path left
    /// the request (see [`Slot::send_kept`]).
    pub async fn send_from(
        &mut self,
        req: &Request,
        keep_body: bool,
        due: Option<Instant>,
        resume: Resume,
    ) -> Outcome {
        let link = &*self.link;
        if let Some(ws) = &link.ws {
            return self
                .ws
                .get_or_insert_default()
                .send(ws, &link.dialer, &link.opts, req, keep_body, due)
                .await;
        }
        let start = match &resume.0 {
            Point::Start => Instant::now(),
            Point::Read(_, start, _) | Point::Resend(start) => *start,
        };
        // Nothing of an earlier request whose future was dropped (a flow
        // cut short) may stand for this one's.
        self.answered = None;
        self.port = 0;
        let bytes_out = req.body.len() as u64;
        let timeout = self.link.opts.timeout;
        let mut clock = start;
        let mut connect = None;
        let mut deadline = std::mem::take(&mut self.deadline);
        let result = {
            let exchange =
                std::pin::pin!(self.exchange(req, keep_body, &mut clock, &mut connect, resume));
            deadline.run(start, timeout, exchange).await
        };
        self.deadline = deadline;
        let result = result.unwrap_or(Err(Failure::Timeout));
        // Read when the answer was, or now.
        let end = match (&result, self.answered.take()) {
            (Ok(_), Some(at)) => at,
            _ => Instant::now(),
        };
        let elapsed = end.saturating_duration_since(clock);
        self.finish(result, (clock, elapsed), connect, bytes_out, due)
    }

    /// The outcome of a request sent at `clock`, ended `elapsed` after it
    /// (`times`, see [`Outcome::timed`]); the HTTP/1.1
    /// connection it went on kept for this slot's next request when it can
    /// carry one, unless another slot waits for a connection.
    #[inline(always)]
    fn finish(
        &mut self,
        result: Result<Response, Failure>,
        times: (Instant, Duration),
        connect: Option<Duration>,
        bytes_out: u64,
        due: Option<Instant>,
    ) -> Outcome {
        let port = std::mem::take(&mut self.port);
        match self.h1.take() {
            // An HTTP/1.1 connection is unusable after a failed exchange
            // (but untouched by a request that could not be formed).
            Some(c)
                if matches!(result, Ok(_) | Err(Failure::BadRequest))
                    && self.reuse
                    && self.link.opts.keepalive =>
            {
                if self.link.capacity.waiting.get() == 0 {
                    self.h1 = Some(c);
                } else {
                    self.link.give_back(c, None);
                }
            }
            _ => {}
        }
        Outcome {
            port,
            ..Outcome::timed(result, times, connect, bytes_out, due)
        }
    }

    /// The answer `r` on HTTP/1.1 connection `c`, kept as the slot's, as
    /// a response timed from `start`.
    #[inline(always)]
    fn answered_h1(
        &mut self,
        c: CountedConn,
        r: Result<RawResponse, Failure>,
        start: Instant,
    ) -> Result<Response, Failure> {
        self.h1 = Some(c);
        r.map(|a| {
            self.reuse = a.keep_alive;
            self.answered = a.done_at;
            a.response(start)
        })
    }

    async fn exchange(
        &mut self,
        req: &Request,
        keep_body: bool,
        clock: &mut Instant,
        connect: &mut Option<Duration>,
        resume: Resume,
    ) -> Result<Response, Failure> {
        // A request that never reached the server is sent once more, on a
        // new connection: an HTTP/2 one the server refused unprocessed (its
        // connection was going away), an HTTP/1.1 one on a reused
        // connection that turned out closed (see `Slot::resend_h1`).
        let mut refused = matches!(resume.0, Point::Resend(_));
        // A request the quick path wrote, whose answer is read here.
        let mut written = match resume.0 {
            Point::Read(c, _, head_request) => Some((c, head_request)),
            _ => None,
        };
        loop {
            let (kept, resumed) = match written.take() {
                Some((c, head_request)) => (Some(c), Some(head_request)),
                None => {
                    let kept = poll_fn(|cx| Poll::Ready(self.last_connection(refused, cx)));
                    (kept.await, None)
                }
            };
            let (sender, opened, waited) = match kept {
                Some(c) => (Sender::H1(c), None, None),
                None => self.sender(refused).await?,
            };
            if opened.is_some() {
                *connect = opened;
            }
            if let Some(since) = waited.filter(|_| self.link.opts.keepalive) {
                // A reconnect is not the request's latency from its send
                // (in the open model it is from its due time); the wait is
                // counted apart.
                let now = Instant::now();
                self.link.waited(now.saturating_duration_since(since));
                *clock = now;
            }
            let start = *clock;
            let stream = match sender {
                Sender::H1(mut c) => {
                    // One request on an HTTP/1.1 connection (here, not in
                    // a function of its own: an `async fn` level fewer).
                    let link = &*self.link;
                    self.port = c.port();
                    let opts = &link.opts;
                    let keep = (&opts.keep_headers[..], opts.max_body, keep_body);
                    // Written here, or by the quick path, which found
                    // other bytes than a plain answer where they landed;
                    // then the answer read (the codec's parts awaited
                    // here: an `async fn` level fewer).
                    let r = 'answer: {
                        let (head_request, in_place) = match resumed {
                            Some(head_request) => (head_request, false),
                            None => match link.build_h1(req, c.request_buf()) {
                                Ok((body, head_request)) => {
                                    // Not reused if the exchange fails or
                                    // is cut.
                                    self.reuse = false;
                                    let rest = c.stage(body);
                                    let mut done = 0;
                                    let sent = poll_fn(|cx| c.poll_send(cx, &mut done, rest));
                                    if let Err(f) = sent.await {
                                        break 'answer Err(f);
                                    }
                                    (head_request, true)
                                }
                                Err(f) => {
                                    // Untouched by a request that could not
                                    // be formed.
                                    self.reuse = true;
                                    break 'answer Err(f);
                                }
                            },
                        };
                        c.read_answer(head_request, keep, &link.heads, in_place)
                            .await
                    };
                    let r = self.answered_h1(c, r, start);
                    if refused || waited.is_some() || !self.resend_h1(&r, req) {
                        return r;
                    }
                    // Not given back: the connection is closed.
                    self.h1 = None;
                    refused = true;
                    continue;
                }
                Sender::H2(stream) => stream,
            };
            self.port = stream.conn.port();
            let exchanged = if self.link.grpc.is_some() {
                self.exchange_grpc(&stream.conn, req, keep_body, start)
                    .await
            } else {
                self.exchange_h2(&stream.conn, req, keep_body, start).await
            };
            match exchanged {
                Ok(r) => return Ok(r),
                Err(H2Error::Failed(f)) => return Err(f),
                Err(H2Error::Unprocessed) => {
                    if std::mem::replace(&mut refused, true) {
                        return Err(Failure::Reset);
                    }
                }
            }
        }
    }

    /// The HTTP/1.1 connection this slot's last request left open, unless
    /// a `fresh` one is wanted or the peer closed it (then it is closed).
    #[inline]
    fn last_connection(&mut self, fresh: bool, cx: &mut Context<'_>) -> Option<CountedConn> {
        let mut c = self.h1.take()?;
        if fresh || c.is_closed(cx) {
            return None;
        }
        Some(c)
    }

    /// Give back the HTTP/1.1 connection this slot kept from its last
    /// request, for a slot that is about to wait for work: while it waits,
    /// the connection is another slot's to take, or to close when idle.
    pub fn release(&mut self) {
        if let Some(c) = self.h1.take() {
            self.link.give_back(c, None);
        }
    }

    /// Whether a request that failed on a reused HTTP/1.1 connection
    /// (`self.h1`) never reached the server, so that sending it again on a
    /// new connection is safe: the connection was closed (a reset or its
    /// end) before any byte of the answer came back, and either the request
    /// was not wholly written or its method is idempotent (RFC 9110 9.2.2).
    fn resend_h1(&self, r: &Result<Response, Failure>, req: &Request) -> bool {
        let Some(c) = &self.h1 else { return false };
        match (r, c.reached()) {
            (Err(Failure::Reset), Reached::Nothing) => true,
            (Err(Failure::Reset), Reached::Written) => self.link.method(req).is_idempotent(),
            _ => false,
        }
    }

    /// One request on a stream of a shared HTTP/2 connection.
    async fn exchange_h2(
        &mut self,
        conn: &H2Conn,
        req: &Request,
        keep_body: bool,
        start: Instant,
    ) -> Result<Response, H2Error> {
        let link = &*self.link;
        let id = conn.open(
            |block| link.build_h2(req, block),
            keep_body,
            link.opts.max_body,
        )?;
        let a = OpenStream::answer(conn, id).await?;
        self.answered = a.done_at;
        Ok(a.response(start))
    }

    /// One gRPC call on a stream of a shared HTTP/2 connection: the
    /// method is the request's target (a flow step's) or the endpoint's.
    async fn exchange_grpc(
        &mut self,
        conn: &H2Conn,
        req: &Request,
        keep_body: bool,
        start: Instant,
    ) -> Result<Response, H2Error> {
        let link = self.link.clone();
        let Some(g) = &link.grpc else {
            return Err(H2Error::Failed(Failure::BadRequest));
        };
        let method = g
            .service
            .method(req.target.as_deref())
            .ok_or(H2Error::Failed(Failure::BadRequest))?;
        let body = self.encoded.get_or_insert_default().get(req, &method)?;
        let id = conn.open(
            |block| {
                g.put_block(
                    block,
                    &link.origin_h2,
                    &link.headers_h2,
                    &link.spec,
                    &method,
                    req,
                );
                Ok(&body[..])
            },
            keep_body,
            link.opts.max_body,
        )?;
        let a = OpenStream::answer(conn, id).await?;
        self.answered = a.done_at;
        Ok(super::grpc::response(
            a, &method, &g.service, keep_body, start,
        )?)
    }

    /// A sender ready for one request, connecting if needed (after the
    /// slot's back-off, when its last connects failed). The second value
    /// is the connect time of a new connection, reported by the first
    /// request on it; the third, when the request found no connection
    /// free, since when it waited for one (its clock then starts afresh).
    async fn sender(&mut self, fresh: bool) -> Result<Connection, Failure> {
        let link = self.link.clone();
        let delay = self.backoff.delay(link.opts.timeout);
        let r = self.connection(delay, fresh).await;
        link.dialer.halt.note(&r);
        self.backoff.record(&r);
        r
    }

    /// [`Slot::sender`], connecting after `delay`; `fresh`: an HTTP/1.1
    /// connection not taken from the idle ones (which may be as closed as
    /// the one a request just failed on).
    async fn connection(
        &mut self,
        delay: Option<Duration>,
        fresh: bool,
    ) -> Result<Connection, Failure> {
        let link = self.link.clone();
        let _connecting;
        let mut waited = None;
        if link.h2.borrow().negotiated {
            loop {
                if let Some(stream) = link.claim_h2() {
                    return Ok((Sender::H2(stream), None, waited));
                }
                let opened = {
                    // Every connection is closed or at the server's stream
                    // limit: one slot opens another.
                    let state = link.h2.borrow();
                    if !state.connecting {
                        break;
                    }
                    // Single-threaded: nothing can notify between the check
                    // and the creation of this waiter.
                    link.h2_opened.notified()
                };
                waited.get_or_insert_with(Instant::now);
                opened.await;
            }
            link.h2.borrow_mut().connecting = true;
            _connecting = Connecting(&link);
        } else {
            // (The slot's own connection, if it kept one, was tried first:
            // `Slot::last_connection`.) At the limit, a slot queues behind
            // those already waiting for a connection (one given back goes
            // to them), rather than taking one from the pool ahead of them:
            // the slot that just gave its connection back would take it
            // straight back.
            let capacity = &link.capacity;
            let queued = capacity.waiting.get() > 0 && capacity.open.get() >= capacity.max;
            if !fresh && !queued {
                if let Some(idle) = link.take_idle().await {
                    link.top_up();
                    return Ok((Sender::H1(idle.conn), idle.connect, None));
                }
            }
            link.top_up();
            let since = Some(Instant::now());
            // None idle: open one (if under the limit), but take whichever
            // connection is ready first, this one or one another slot gives
            // back. A burst of requests then neither waits for a connect
            // each nor opens a connection each (which, against a busy
            // server, slows every connect and opens still more).
            let mut dial = None;
            loop {
                if dial.is_none() {
                    dial = link.reserve().map(|ticket| link.dial(delay, ticket));
                }
                let returned = link.capacity.returned.notified();
                let waiting = Waiting::new(&link.capacity);
                let dialed = async {
                    match dial.as_mut() {
                        Some(handle) => Some(handle.await),
                        // At the limit: wait for a connection given back or
                        // closed.
                        None => std::future::pending().await,
                    }
                };
                let dialed = tokio::select! {
                    r = dialed => r,
                    () = returned => None,
                };
                drop(waiting);
                if let Some(r) = dialed {
                    dial = None;
                    match r {
                        Ok(Ok(())) => {}
                        Ok(Err(f)) => return Err(f),
                        Err(_) => return Err(Failure::Io),
                    }
                }
                if link.h2.borrow().negotiated {
                    // The connect negotiated HTTP/2 (ALPN): share it.
                    return match link.claim_h2() {
                        Some(stream) => Ok((Sender::H2(stream), None, since)),
                        None => Err(Failure::Reset),
                    };
                }
                if let Some(idle) = link.take_idle().await {
                    return Ok((Sender::H1(idle.conn), idle.connect, since));
                }
            }
        }
        let waited = Some(waited.unwrap_or_else(Instant::now));
        Backoff::wait(delay).await;
        let t0 = Instant::now();
        // Boxed: a connect future (TCP, TLS, the HTTP/2 handshake) is
        // several KiB, and every slot's task would carry it inline.
        let connected = Box::pin(link.dialer.connect()).await?;
        let took = Some(t0.elapsed());
        match connected {
            Connected::H1(conn) => {
                let held = CountedConn {
                    conn,
                    _ticket: link.ticket(),
                };
                Ok((Sender::H1(held), took, waited))
            }
            Connected::H2(c) => {
                link.keep_h2(c);
                match link.claim_h2() {
                    Some(stream) => Ok((Sender::H2(stream), took, waited)),
                    None => Err(Failure::Reset),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prepared head of a plain GET is byte for byte what the general
    /// path wrote for it (checked against the general path's output before
    /// the change).
    #[test]
    fn the_prepared_get_head_is_the_general_one() {
        let spec = EndpointSpec::parse("http://127.0.0.1:1/api/v1", false).unwrap();
        let opts = TransportOptions {
            timeout: Duration::from_secs(1),
            max_body: 1,
            keepalive: true,
            version: super::super::HttpVersion::Http1,
            keep_headers: Vec::new(),
            max_connections: None,
            io: super::super::IoDriver::Epoll,
        };
        let link = Link::new(Prepared::new(Arc::new(spec), Vec::new(), None, opts).unwrap());
        let mut get = Request::line(0, bytes::Bytes::new());
        get.method = Some(Method::GET);
        let mut head = BytesMut::new();
        assert_eq!(link.build_h1(&get, &mut head).unwrap(), (&[][..], false));
        // As a plain line's head (its Content-Type too), with no length.
        assert_eq!(
            String::from_utf8(head.to_vec()).unwrap(),
            "GET /api/v1 HTTP/1.1\r\nhost: 127.0.0.1:1\r\ncontent-type: application/json\r\n\r\n"
        );
    }

    #[test]
    fn joins_lines_and_targets_under_the_base_path() {
        assert_eq!(join_suffix("/api/", "/x?y=1"), "/api/x?y=1");
        assert_eq!(join_suffix("/api/", "x"), "/api/x");
        assert_eq!(join_suffix("/api", "?q=1"), "/api?q=1");
        assert_eq!(join_target("/", "/users?id=1"), "/users?id=1");
        assert!(matches!(join_target("/", "/users"), Cow::Borrowed(_)));
        assert_eq!(
            join_target("/v1", "/go?to=http://x/y"),
            "/v1/go?to=http://x/y"
        );
        assert_eq!(
            join_target("/v1/", "http://old.example:8080/users?id=1"),
            "/v1/users?id=1"
        );
        assert_eq!(join_target("/v1?key=k", "https://h?x=1"), "/v1/?x=1");
        assert_eq!(join_target("/", "https://h"), "/");
    }

    /// The check of a built target agrees with parsing it as a `Uri`, for
    /// every byte in the path, the query and the fragment.
    #[test]
    fn a_target_is_checked_as_the_http_crate_parses_it() {
        let mut cases: Vec<String> = vec![
            String::new(),
            "/".into(),
            "*".into(),
            "abc".into(),
            "/a?b?c".into(),
            "/ä/ö?ü".into(),
            "/a#".into(),
            "?q".into(),
            format!("/{}", "a".repeat(70_000)),
        ];
        for c in (0u8..0x80).map(char::from).chain(['é', '\u{7f}']) {
            for shape in ["/a{c}b", "/a?x{c}y", "/a#x{c}", "/{c}", "/?{c}"] {
                cases.push(shape.replace("{c}", &c.to_string()));
            }
        }
        for case in cases {
            assert_eq!(
                is_origin_form(&case),
                case.parse::<Uri>().is_ok(),
                "{case:?}"
            );
        }
    }
}
