//! WebSocket endpoints (`ws://`, `wss://`): JSON-RPC over one socket per
//! slot, behind the same [`super::Slot`] API as HTTP.
//!
//! - **Sockets.** Each slot opens its own socket (TCP or TLS from the same
//!   dialer as HTTP; ALPN offers only `http/1.1`, since the upgrade is an
//!   HTTP/1.1 request) and keeps it. After any failure, a timeout included,
//!   the socket is dropped and the slot opens a new one on its next request,
//!   counted as a connect. A socket the server closed while the slot was idle
//!   is noticed before the next request and replaced without failing it.
//! - **Ids.** A request that is a JSON object with a top-level `id` (or a
//!   batch array of such objects) has each `id` replaced by a slot-local
//!   counter before it is sent. The answer is the first message whose `id`
//!   is one of those numbers (for a batch, an array holding any of them), or
//!   whose `id` is `null` (the server could not read the request; with one
//!   request in flight per socket it can only be the answer to it). The
//!   original `id`s are put back into the answer before it is compared, so
//!   its bytes are what the node would have answered over HTTP.
//! - **Other messages.** Notifications (objects with a `method` and no
//!   `id`: subscriptions) are skipped, as are ping and pong frames. A
//!   message with an `id` that is not in flight is skipped too; if the
//!   answer then never comes, the request fails as `malformed response`
//!   rather than `timeout`. A binary message, or a text message that is not
//!   JSON while an `id` is awaited, fails the request as `malformed
//!   response`. A close frame or the end of the stream is `connection
//!   reset`.
//! - **Lines without an id** (not JSON, or JSON without a top-level `id`) are
//!   sent as they are, and the next text message that is not a notification
//!   is taken as the answer.
//! - **Outcome.** A received answer is status 200, so that an HTTP and a
//!   WebSocket endpoint of the same node compare equal; its body is the
//!   message (ids restored), its first-byte time is when the answer had
//!   arrived. `bytes_out` is the request body's length, as for HTTP. A
//!   refused upgrade (any HTTP answer but 101) is `connect failed`. Answers
//!   over `--max-body` are `body too large`. Only the request's body is
//!   sent: method, target and headers of recorded requests (HAR, curl, ...)
//!   do not apply to a message; a body that is not UTF-8 goes as a binary
//!   message, an empty body is `bad request target`.

use std::ops::Range;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{FutureExt, SinkExt, StreamExt};
use http::header::{CONNECTION, HOST, UPGRADE};
use http::{HeaderMap, HeaderName, Uri};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{self, Message, Utf8Bytes};
use tokio_tungstenite::WebSocketStream;

use super::connect::{Backoff, Dialer};
use super::io::{classify_io, Io};
use super::{Deadline, EndpointSpec, Failure, Outcome, Response, Scheme, TransportOptions};
use crate::model::Request;

/// Boxed: the stream is ~300 bytes, and a slot's future would otherwise
/// carry it (twice) inline, for HTTP requests too.
type Socket = Box<WebSocketStream<Box<dyn Io>>>;

/// What a link to a WebSocket endpoint prepares once: the handshake.
pub(crate) struct WsLink {
    /// `ws://` or `wss://` URI of the endpoint (authority and base path).
    uri: Uri,
    /// Endpoint headers sent with the upgrade request (API keys, Basic
    /// credentials), less those the handshake sets itself.
    headers: HeaderMap,
    config: WebSocketConfig,
}

impl WsLink {
    pub(crate) fn new(spec: &EndpointSpec, opts: &TransportOptions) -> Result<WsLink, String> {
        let scheme = match spec.scheme {
            Scheme::Http => "ws",
            Scheme::Https => "wss",
        };
        let uri: Uri = format!("{scheme}://{}{}", spec.authority, spec.base_path)
            .parse()
            .map_err(|e| format!("{}: {e}", spec.label))?;
        let mut headers = spec.headers.clone();
        for name in [HOST, CONNECTION, UPGRADE] {
            headers.remove(name);
        }
        for name in ["sec-websocket-key", "sec-websocket-version"] {
            headers.remove(HeaderName::from_static(name));
        }
        let max = usize::try_from(opts.max_body).unwrap_or(usize::MAX);
        let config = WebSocketConfig::default()
            .max_message_size(Some(max))
            .max_frame_size(Some(max));
        Ok(WsLink {
            uri,
            headers,
            config,
        })
    }

    /// Open a socket and run the WebSocket handshake.
    /// A socket, upgraded, and the local port of its TCP connection.
    async fn connect(&self, dialer: &Dialer) -> Result<(Socket, u16), Failure> {
        let (io, port) = dialer.open().await?;
        let mut request = self
            .uri
            .clone()
            .into_client_request()
            .map_err(|_| Failure::BadRequest)?;
        for (name, value) in &self.headers {
            request.headers_mut().append(name.clone(), value.clone());
        }
        let (socket, _) =
            tokio_tungstenite::client_async_with_config(request, io, Some(self.config))
                .await
                .map_err(|e| match e {
                    tungstenite::Error::Http(_) => Failure::Connect,
                    e => classify(&e),
                })?;
        Ok((Box::new(socket), port))
    }
}

/// A slot's WebSocket state: its socket and its id counter.
#[derive(Default)]
pub(crate) struct WsSlot {
    socket: Option<Socket>,
    /// The last id sent on this slot.
    next_id: u64,
    /// Ids in flight: the number sent, and the original id's bytes.
    pending: Vec<(u64, Bytes)>,
    /// A message with an unknown id arrived during the current exchange.
    stray: bool,
    /// Reused: where the ids of the request being sent are.
    ids: Vec<Range<usize>>,
    /// The `--timeout` timer, kept from request to request.
    deadline: Deadline,
    /// The wait before the next connect after failed ones.
    backoff: Backoff,
    /// The local port of the socket's TCP connection (0: none yet), kept
    /// after a failure drops the socket: it names the connection to a
    /// fault proxy.
    port: u16,
}

impl WsSlot {
    /// Open the socket ahead of the run; returns the connect time.
    pub(crate) async fn warm(
        &mut self,
        link: &WsLink,
        dialer: &Dialer,
        opts: &TransportOptions,
    ) -> Result<Option<Duration>, Failure> {
        let t0 = Instant::now();
        let socket = tokio::time::timeout(opts.timeout, link.connect(dialer))
            .await
            .unwrap_or(Err(Failure::Timeout));
        self.backoff.record(&socket);
        let (socket, port) = socket?;
        self.socket = Some(socket);
        self.port = port;
        Ok(Some(t0.elapsed()))
    }

    /// Send one request and wait for its answer, within `--timeout`.
    pub(crate) async fn send(
        &mut self,
        link: &WsLink,
        dialer: &Dialer,
        opts: &TransportOptions,
        req: &Request,
        keep_body: bool,
        due: Option<Instant>,
    ) -> Outcome {
        let start = Instant::now();
        let mut clock = start;
        let mut connect = None;
        self.stray = false;
        let mut deadline = std::mem::take(&mut self.deadline);
        let result = {
            let exchange = std::pin::pin!(self.exchange(
                link,
                dialer,
                opts,
                req,
                keep_body,
                &mut clock,
                &mut connect
            ));
            deadline.run(start, opts.timeout, exchange).await
        };
        self.deadline = deadline;
        let result = match result {
            Some(r) => r,
            None if self.stray => Err(Failure::Protocol),
            None => Err(Failure::Timeout),
        };
        if result.is_err() || !opts.keepalive {
            self.socket = None;
        }
        Outcome {
            port: self.port,
            ..Outcome::timed(
                result,
                (clock, clock.elapsed()),
                connect,
                req.body.len() as u64,
                due,
            )
        }
    }

    #[allow(clippy::too_many_arguments)]
    async fn exchange(
        &mut self,
        link: &WsLink,
        dialer: &Dialer,
        opts: &TransportOptions,
        req: &Request,
        keep_body: bool,
        clock: &mut Instant,
        connect: &mut Option<Duration>,
    ) -> Result<Response, Failure> {
        if req.body.is_empty() {
            return Err(Failure::BadRequest);
        }
        let mut socket = match self.socket.take().and_then(alive) {
            Some(s) => s,
            None => {
                // A failed connect is not the old socket's: no port.
                self.port = 0;
                Backoff::wait(self.backoff.delay(opts.timeout)).await;
                let t0 = Instant::now();
                // Boxed: the connect and upgrade future is several KiB that
                // every slot's task would otherwise carry inline.
                let s = Box::pin(link.connect(dialer)).await;
                dialer.halt.note(&s);
                self.backoff.record(&s);
                let (s, port) = s?;
                self.port = port;
                *connect = Some(t0.elapsed());
                if opts.keepalive {
                    // A reconnect is not the request's latency; it is counted apart.
                    *clock = Instant::now();
                }
                s
            }
        };
        let start = *clock;
        let message = self.message(&req.body);
        socket.send(message).await.map_err(|e| classify(&e))?;
        loop {
            let message = match socket.next().await {
                None => return Err(Failure::Reset),
                Some(Err(e)) => return Err(classify(&e)),
                Some(Ok(m)) => m,
            };
            let text: Bytes = match message {
                Message::Text(t) => t.into(),
                Message::Binary(_) => return Err(Failure::Protocol),
                Message::Close(_) => return Err(Failure::Reset),
                Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
            };
            let restore = match answer(&text, &self.pending) {
                Incoming::Mine(restore) => restore,
                Incoming::Notification => continue,
                Incoming::Stray => {
                    self.stray = true;
                    continue;
                }
                Incoming::Invalid => return Err(Failure::Protocol),
            };
            let ttfb = start.elapsed();
            let body_len = restored_len(text.len(), &restore, &self.pending);
            let body = if keep_body {
                restored(&text, &restore, &self.pending)
            } else {
                Bytes::new()
            };
            self.socket = Some(socket);
            return Ok(Response {
                headers: Vec::new(),
                status: 200,
                body,
                body_len: body_len as u64,
                ttfb,
                grpc: None,
            });
        }
    }

    /// The message for `body`: ids rewritten to this slot's counter (and
    /// remembered in `pending`) when it has any.
    fn message(&mut self, body: &Bytes) -> Message {
        use std::io::Write;
        self.pending.clear();
        let mut ids = std::mem::take(&mut self.ids);
        ids.clear();
        match scan(body) {
            Some(Shape::Object(o)) => ids.extend(o.id),
            Some(Shape::Array(items)) => ids.extend(items.into_iter().filter_map(|o| o.id)),
            _ => {}
        }
        let message = if ids.is_empty() {
            text_or_binary(body.clone())
        } else {
            let mut out = Vec::with_capacity(body.len() + ids.len() * 20);
            let mut at = 0;
            for r in &ids {
                out.extend_from_slice(&body[at..r.start]);
                self.next_id += 1;
                let _ = write!(out, "{}", self.next_id);
                self.pending.push((self.next_id, body.slice(r.clone())));
                at = r.end;
            }
            out.extend_from_slice(&body[at..]);
            text_or_binary(Bytes::from(out))
        };
        self.ids = ids;
        message
    }
}

/// A text message, or a binary one when `b` is not UTF-8.
fn text_or_binary(b: Bytes) -> Message {
    match Utf8Bytes::try_from(b.clone()) {
        Ok(t) => Message::Text(t),
        Err(_) => Message::Binary(b),
    }
}

/// The socket, unless the server closed it while the slot was idle.
/// Messages that arrived meanwhile (notifications) are dropped.
fn alive(mut socket: Socket) -> Option<Socket> {
    loop {
        match socket.next().now_or_never() {
            None => return Some(socket),
            Some(Some(Ok(Message::Close(_)))) | Some(Some(Err(_))) | Some(None) => return None,
            Some(Some(Ok(_))) => continue,
        }
    }
}

/// Map a WebSocket error to a failure kind.
fn classify(e: &tungstenite::Error) -> Failure {
    use tungstenite::error::ProtocolError;
    use tungstenite::Error as E;
    match e {
        E::ConnectionClosed | E::AlreadyClosed => Failure::Reset,
        E::Io(io) => classify_io(io, Failure::Io),
        E::Capacity(_) => Failure::BodyTooLarge,
        E::Protocol(ProtocolError::ResetWithoutClosingHandshake) => Failure::Reset,
        E::Url(_) | E::HttpFormat(_) => Failure::BadRequest,
        E::Http(_) => Failure::Connect,
        E::WriteBufferFull(_) => Failure::Io,
        _ => Failure::Protocol,
    }
}

/// What a received text message is to the request in flight.
#[derive(Debug, PartialEq, Eq)]
enum Incoming {
    /// The answer; the ranges of the ids to restore, each with its index
    /// in `pending`.
    Mine(Vec<(Range<usize>, usize)>),
    /// A notification: skipped.
    Notification,
    /// An answer with an id not in flight: skipped.
    Stray,
    /// Not JSON while an id is awaited.
    Invalid,
}

fn answer(msg: &[u8], pending: &[(u64, Bytes)]) -> Incoming {
    let shape = scan(msg);
    let notification = matches!(&shape, Some(Shape::Object(o)) if o.id.is_none() && o.method);
    if notification {
        return Incoming::Notification;
    }
    if pending.is_empty() {
        return Incoming::Mine(Vec::new());
    }
    let find = |r: &Range<usize>| {
        let id = std::str::from_utf8(&msg[r.clone()])
            .ok()?
            .parse::<u64>()
            .ok()?;
        pending.iter().position(|(n, _)| *n == id)
    };
    match shape {
        None | Some(Shape::Other) => Incoming::Invalid,
        Some(Shape::Object(o)) => match o.id {
            Some(r) if &msg[r.clone()] == b"null" => Incoming::Mine(Vec::new()),
            Some(r) => match find(&r) {
                Some(i) => Incoming::Mine(vec![(r, i)]),
                None => Incoming::Stray,
            },
            None => Incoming::Stray,
        },
        Some(Shape::Array(items)) => {
            let mine: Vec<_> = items
                .into_iter()
                .filter_map(|o| o.id)
                .filter_map(|r| find(&r).map(|i| (r, i)))
                .collect();
            if mine.is_empty() {
                Incoming::Stray
            } else {
                Incoming::Mine(mine)
            }
        }
    }
}

fn restored_len(len: usize, restore: &[(Range<usize>, usize)], pending: &[(u64, Bytes)]) -> usize {
    restore
        .iter()
        .fold(len, |n, (r, i)| n - r.len() + pending[*i].1.len())
}

/// `msg` with the original ids put back.
fn restored(msg: &Bytes, restore: &[(Range<usize>, usize)], pending: &[(u64, Bytes)]) -> Bytes {
    if restore
        .iter()
        .all(|(r, i)| msg[r.clone()] == pending[*i].1[..])
    {
        return msg.clone();
    }
    let mut out = Vec::with_capacity(restored_len(msg.len(), restore, pending));
    let mut at = 0;
    for (r, i) in restore {
        out.extend_from_slice(&msg[at..r.start]);
        out.extend_from_slice(&pending[*i].1);
        at = r.end;
    }
    out.extend_from_slice(&msg[at..]);
    Bytes::from(out)
}

/// The top level of a JSON text, as far as ids are concerned.
#[derive(Debug, PartialEq, Eq)]
enum Shape {
    Object(Members),
    /// A batch: the members of each element (non-objects have none).
    Array(Vec<Members>),
    /// A string, number or literal.
    Other,
}

#[derive(Debug, Default, PartialEq, Eq)]
struct Members {
    /// Where the value of the first `id` member is.
    id: Option<Range<usize>>,
    /// Whether a `method` member is present.
    method: bool,
}

/// Find the top-level ids of a JSON text without building a tree: strings
/// are skipped with `memchr`, nested values by depth. `None` when the text
/// is not JSON (as far as this scan can tell; values are not validated).
fn scan(b: &[u8]) -> Option<Shape> {
    let mut s = Scanner { b, i: 0 };
    s.ws();
    let shape = match s.peek()? {
        b'{' => Shape::Object(s.object()?),
        b'[' => {
            s.i += 1;
            let mut items = Vec::new();
            s.ws();
            if s.peek()? == b']' {
                s.i += 1;
            } else {
                loop {
                    s.ws();
                    if s.peek()? == b'{' {
                        items.push(s.object()?);
                    } else {
                        s.value()?;
                        items.push(Members::default());
                    }
                    s.ws();
                    match s.peek()? {
                        b',' => s.i += 1,
                        b']' => {
                            s.i += 1;
                            break;
                        }
                        _ => return None,
                    }
                }
            }
            Shape::Array(items)
        }
        _ => {
            s.value()?;
            Shape::Other
        }
    };
    s.ws();
    (s.i == b.len()).then_some(shape)
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    /// At `{`: the members that matter, and past the closing `}`.
    fn object(&mut self) -> Option<Members> {
        self.i += 1;
        let mut m = Members::default();
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(m);
        }
        loop {
            self.ws();
            if self.peek()? != b'"' {
                return None;
            }
            let key = self.string()?;
            self.ws();
            if self.peek()? != b':' {
                return None;
            }
            self.i += 1;
            self.ws();
            let value = self.value()?;
            match &self.b[key] {
                b"id" if m.id.is_none() => m.id = Some(value),
                b"method" => m.method = true,
                _ => {}
            }
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(m);
                }
                _ => return None,
            }
        }
    }

    /// At `"`: the range of the contents, and past the closing quote.
    fn string(&mut self) -> Option<Range<usize>> {
        let start = self.i + 1;
        let mut i = start;
        loop {
            i += memchr::memchr2(b'"', b'\\', self.b.get(i..)?)?;
            if self.b[i] == b'\\' {
                i += 2;
            } else {
                self.i = i + 1;
                return Some(start..i);
            }
        }
    }

    /// Any value: its range, and past it.
    fn value(&mut self) -> Option<Range<usize>> {
        let start = self.i;
        match self.peek()? {
            b'"' => {
                self.string()?;
            }
            b'{' | b'[' => {
                let mut depth = 0usize;
                loop {
                    match self.peek()? {
                        b'"' => {
                            self.string()?;
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth -= 1;
                            if depth == 0 {
                                self.i += 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            _ => {
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b'}' | b']' | b' ' | b'\t' | b'\r' | b'\n' | b'"')
                ) {
                    self.i += 1;
                }
                if self.i == start {
                    return None;
                }
            }
        }
        Some(start..self.i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id_text(b: &[u8]) -> Option<String> {
        match scan(b)? {
            Shape::Object(Members { id: Some(r), .. }) => {
                Some(String::from_utf8(b[r].to_vec()).unwrap())
            }
            _ => None,
        }
    }

    #[test]
    fn finds_top_level_ids_only() {
        assert_eq!(
            id_text(br#"{"jsonrpc":"2.0","id":7,"method":"m","params":[]}"#).as_deref(),
            Some("7")
        );
        assert_eq!(
            id_text(br#" { "params" : {"id": 1, "x": "}\"{"}, "id" : "a\"b" } "#).as_deref(),
            Some(r#""a\"b""#)
        );
        assert_eq!(
            id_text(br#"{"result":[{"id":1}],"id":null}"#).as_deref(),
            Some("null")
        );
        assert_eq!(id_text(br#"{"method":"m"}"#), None);
        assert_eq!(scan(b"not json"), None);
        assert_eq!(scan(br#"{"id":1} x"#), None);
        assert_eq!(scan(br#"{"id":1"#), None);
        assert_eq!(scan(b"12"), Some(Shape::Other));
        let batch = br#"[{"id":1,"method":"a"}, 3, {"method":"b"}, {"id":"x"}]"#;
        let Some(Shape::Array(items)) = scan(batch) else {
            panic!()
        };
        let ids: Vec<Option<&[u8]>> = items
            .iter()
            .map(|m| m.id.clone().map(|r| &batch[r]))
            .collect();
        assert_eq!(ids, vec![Some(&b"1"[..]), None, None, Some(&br#""x""#[..])]);
    }

    fn text(m: Message) -> String {
        match m {
            Message::Text(t) => t.as_str().to_string(),
            m => panic!("{m:?}"),
        }
    }

    #[test]
    fn rewrites_ids_and_restores_them_in_the_answer() {
        let mut slot = WsSlot::default();
        let req = Bytes::from_static(br#"{"id":"abc","method":"m"}"#);
        assert_eq!(text(slot.message(&req)), r#"{"id":1,"method":"m"}"#);
        let ans = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#);
        let Incoming::Mine(restore) = answer(&ans, &slot.pending) else {
            panic!()
        };
        let body = restored(&ans, &restore, &slot.pending);
        assert_eq!(&body[..], br#"{"jsonrpc":"2.0","id":"abc","result":"0x1"}"#);
        assert_eq!(restored_len(ans.len(), &restore, &slot.pending), body.len());

        // A batch: every element's id, answers in any order.
        let req = Bytes::from_static(br#"[{"id":5,"method":"a"},{"id":5,"method":"b"}]"#);
        assert_eq!(
            text(slot.message(&req)),
            r#"[{"id":2,"method":"a"},{"id":3,"method":"b"}]"#
        );
        let ans = Bytes::from_static(br#"[{"id":3,"result":"b"},{"id":2,"result":"a"}]"#);
        let Incoming::Mine(restore) = answer(&ans, &slot.pending) else {
            panic!()
        };
        assert_eq!(
            &restored(&ans, &restore, &slot.pending)[..],
            br#"[{"id":5,"result":"b"},{"id":5,"result":"a"}]"#
        );
    }

    #[test]
    fn skips_notifications_and_strays() {
        let mut slot = WsSlot::default();
        slot.message(&Bytes::from_static(br#"{"id":9,"method":"m"}"#));
        let pending = &slot.pending;
        assert_eq!(
            answer(
                br#"{"jsonrpc":"2.0","method":"eth_subscription","params":{}}"#,
                pending
            ),
            Incoming::Notification
        );
        assert_eq!(answer(br#"{"id":2,"result":1}"#, pending), Incoming::Stray);
        assert_eq!(answer(br#"{"result":1}"#, pending), Incoming::Stray);
        assert_eq!(answer(b"oops", pending), Incoming::Invalid);
        assert_eq!(
            answer(br#"{"id":null,"error":{}}"#, pending),
            Incoming::Mine(Vec::new())
        );
        assert_eq!(
            answer(br#"{"id":1,"result":1}"#, pending),
            Incoming::Mine(vec![(6..7, 0)])
        );

        // Without an id, the next message that is not a notification.
        let m = slot.message(&Bytes::from_static(b"hello"));
        assert_eq!(text(m), "hello");
        assert!(slot.pending.is_empty());
        assert_eq!(
            answer(b"anything", &slot.pending),
            Incoming::Mine(Vec::new())
        );
        assert_eq!(
            answer(br#"{"method":"x"}"#, &slot.pending),
            Incoming::Notification
        );
    }
}
