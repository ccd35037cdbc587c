//! versus's own HTTP/2 client connection (RFC 9113), as `h1.rs` is for
//! HTTP/1.1: made for one core and a load tester's traffic.
//!
//! A connection is shared by the slots of one core. Its driver, a local
//! task, owns the socket: it reads frames and files each answer under its
//! stream, and writes whatever the slots queued since it last ran, so
//! answers that arrive together send the next requests in one write. A
//! slot writes its request straight into the connection's write buffer
//! (a prepared HPACK block, no header map) and waits for its stream to end.
//! No lock, channel or allocation per request: the state is a `RefCell`
//! on the core's thread, a stream an entry in a map, a body without
//! comparison only counted.
//!
//! Requests never touch the server's dynamic table (see `hpack.rs`).
//! Flow control: versus reads as fast as frames come, so its windows are
//! large (4 MiB a stream, 8 MiB the connection) and handed back once half
//! is used; request bodies wait for the server's windows. Server push is
//! refused in the SETTINGS. A GOAWAY or REFUSED_STREAM marks the streams
//! the server did not process, which the caller may send again.

use std::cell::RefCell;
use std::collections::hash_map::{Entry, HashMap};
use std::future::poll_fn;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::ControlFlow;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderName, HeaderValue};

use super::h2_socket::Socket;
use super::hpack;
use super::io::classify_io;
use super::{Failure, RawResponse};
use crate::model::GrpcStatus;

pub(super) const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
/// The receive window of each stream (SETTINGS_INITIAL_WINDOW_SIZE).
const STREAM_WINDOW: u32 = 4 << 20;
/// The receive window of the connection.
const CONN_WINDOW: u32 = 8 << 20;
/// Every window's size before SETTINGS or WINDOW_UPDATE change it.
const DEFAULT_WINDOW: u32 = 65_535;
const MAX_WINDOW: i64 = (1 << 31) - 1;
/// The largest frame versus accepts (SETTINGS_MAX_FRAME_SIZE's default):
/// frames are parsed whole from the read buffer, which holds two.
const MAX_FRAME: usize = 16_384;
const READ_BUF: usize = 2 * (9 + MAX_FRAME);
/// The largest header block accepted across CONTINUATION frames.
const MAX_HEADER_BLOCK: usize = 256 << 10;
/// SETTINGS_HEADER_TABLE_SIZE (the default).
const TABLE_SIZE: usize = 4096;
const MAX_STREAM_ID: u32 = (1 << 31) - 1;
/// Most bytes of replies a server's frames made versus queue (PING and
/// SETTINGS acknowledgements) while writes do not drain: past it, the
/// driver stops reading until they do, so a server that floods PINGs
/// without reading is slowed to its own pace, not buffered without bound.
const MAX_REPLIES: usize = 64 << 10;
/// Reads a driver makes in one turn before it lets the core's other tasks
/// (the slots, their timeouts) run: a flood never holds the core.
const READS_PER_TURN: usize = 64;

/// Frame types.
mod kind {
    pub const DATA: u8 = 0;
    pub const HEADERS: u8 = 1;
    pub const RST_STREAM: u8 = 3;
    pub const SETTINGS: u8 = 4;
    pub const PUSH_PROMISE: u8 = 5;
    pub const PING: u8 = 6;
    pub const GOAWAY: u8 = 7;
    pub const WINDOW_UPDATE: u8 = 8;
    pub const CONTINUATION: u8 = 9;
}

/// Frame flags.
mod flag {
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const PADDED: u8 = 0x8;
    pub const PRIORITY: u8 = 0x20;
}

/// Error codes.
mod code {
    pub const NO_ERROR: u32 = 0;
    pub const PROTOCOL_ERROR: u32 = 1;
    pub const FLOW_CONTROL_ERROR: u32 = 3;
    pub const FRAME_SIZE_ERROR: u32 = 6;
    pub const REFUSED_STREAM: u32 = 7;
    pub const CANCEL: u32 = 8;
    pub const COMPRESSION_ERROR: u32 = 9;
}

/// How an HTTP/2 exchange failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum H2Error {
    /// The server did not process the request: safe to send again (RFC
    /// 9113 8.7): the connection went away before it (GOAWAY, or closed
    /// before the request was opened), or the stream alone was refused
    /// (REFUSED_STREAM, e.g. sent before the server's stream limit was
    /// known).
    Unprocessed,
    Failed(Failure),
}

impl From<Failure> for H2Error {
    fn from(f: Failure) -> H2Error {
        H2Error::Failed(f)
    }
}

/// One HTTP/2 connection, shared by the slots of one core (`Rc`).
pub(crate) struct Conn(RefCell<Inner>);

struct Inner {
    /// Frames not yet written.
    wbuf: Vec<u8>,
    /// Bytes at the front of `wbuf` that end a frame partly written (the
    /// whole frames start after them).
    wbuf_skip: usize,
    /// Bytes of replies queued (see [`MAX_REPLIES`]) since `wbuf` was
    /// last written out.
    replies: usize,
    /// Wakes the driver to write them.
    driver: Option<Waker>,
    streams: HashMap<u32, Stream, BuildHasherDefault<IdHasher>>,
    next_id: u32,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS.
    max_streams: usize,
    /// The server's SETTINGS_INITIAL_WINDOW_SIZE: a new stream's send
    /// window.
    peer_window: i64,
    /// The server's SETTINGS_MAX_FRAME_SIZE.
    max_frame: usize,
    /// The connection's send window.
    send_window: i64,
    /// Bytes received on the connection not yet handed back.
    unacked: u32,
    /// Streams whose body waits for a window to open.
    blocked: Vec<u32>,
    /// The last stream id of the server's GOAWAY.
    goaway: Option<u32>,
    /// Why the connection ended, once it has.
    gone: Option<Failure>,
    /// The server's SETTINGS arrived (the handshake is complete).
    settings_arrived: bool,
    /// Wakes the handshake.
    handshake: Option<Waker>,
    /// The next header block must start with a table size update.
    table_update: bool,
    /// The highest stream id whose frames have all been written.
    sent: u32,
    decoder: hpack::Decoder,
    /// Response headers to keep (`--compare-header`).
    keep: Vec<HeaderName>,
    /// A gRPC connection: `grpc-status` and `grpc-message` are read from
    /// every stream's header blocks.
    grpc: bool,
    /// A header block arriving in CONTINUATION frames: its stream (0 for
    /// none), whether it ends the stream, the fragments so far.
    block_stream: u32,
    block_end: bool,
    block: Vec<u8>,
    /// The local port of its TCP connection (0: not known), which names
    /// the connection to a fault proxy.
    port: u16,
    /// When the bytes being handled were read: the time of every answer
    /// (head, first data, end) whose frames they complete. One clock read
    /// a read of the socket, not one a frame.
    read_at: Instant,
}

struct Stream {
    waker: Option<Waker>,
    /// Set when the exchange is over.
    end: Option<Result<(), H2Error>>,
    /// The final status, 0 until the response head.
    status: u16,
    head_at: Option<Instant>,
    headers: Vec<(HeaderName, HeaderValue)>,
    keep_body: bool,
    body: BytesMut,
    len: u64,
    max_body: u64,
    send_window: i64,
    /// Request body not yet sent.
    unsent: Bytes,
    /// Bytes received not yet handed back.
    unacked: u32,
    /// gRPC: the status its header blocks carried.
    grpc: Option<GrpcStatus>,
    /// When the first DATA frame with data arrived.
    first_data: Option<Instant>,
    /// When the frame that ended the stream was read.
    done_at: Option<Instant>,
}

/// A connection-level error: versus sends GOAWAY with the code and fails
/// every stream.
struct ConnError(u32);

impl Conn {
    /// Send the connection preface and wait for the server's SETTINGS; the
    /// connection's driver is spawned on the current `LocalSet`. `keep`:
    /// the response headers to keep.
    pub(crate) async fn handshake(
        io: Socket,
        keep: Vec<HeaderName>,
        grpc: bool,
    ) -> Result<Rc<Conn>, Failure> {
        let mut wbuf = Vec::with_capacity(4096);
        wbuf.extend_from_slice(PREFACE);
        put_head(&mut wbuf, 12, kind::SETTINGS, 0, 0);
        for (id, value) in [(2u16, 0u32), (4, STREAM_WINDOW)] {
            wbuf.extend_from_slice(&id.to_be_bytes());
            wbuf.extend_from_slice(&value.to_be_bytes());
        }
        put_window_update(&mut wbuf, 0, CONN_WINDOW - DEFAULT_WINDOW);
        let mut inner = Inner::new(wbuf, keep);
        inner.grpc = grpc;
        let conn = Rc::new(Conn(RefCell::new(inner)));
        let driver = Driver {
            conn: conn.clone(),
            io,
            rbuf: vec![0; READ_BUF].into_boxed_slice(),
            start: 0,
            filled: 0,
            unflushed: false,
            deferred: false,
        };
        tokio::task::spawn_local(driver.run());
        // A handshake given up (its timeout) ends the connection too: its
        // driver would otherwise wait on a silent socket for ever.
        struct Abandon<'a>(&'a Conn);
        impl Drop for Abandon<'_> {
            fn drop(&mut self) {
                if !self.0 .0.borrow().settings_arrived {
                    self.0.shut();
                }
            }
        }
        let settings_arrived = {
            let _abandon = Abandon(&conn);
            poll_fn(|cx| {
                let mut inner = conn.0.borrow_mut();
                if inner.settings_arrived {
                    Poll::Ready(Ok(()))
                } else if let Some(f) = inner.gone {
                    Poll::Ready(Err(f))
                } else {
                    inner.handshake = Some(cx.waker().clone());
                    Poll::Pending
                }
            })
            .await
        };
        settings_arrived.map(|()| conn)
    }

    /// End the connection now (its driver closes the socket): for one
    /// versus will not use.
    pub(crate) fn shut(&self) {
        let mut inner = self.0.borrow_mut();
        if inner.gone.is_none() {
            inner.close(Failure::Reset);
            if let Some(w) = inner.driver.take() {
                w.wake();
            }
        }
    }

    /// Whether the connection takes no new streams: it ended, the server
    /// is going away, or the stream ids ran out.
    pub(crate) fn is_closed(&self) -> bool {
        let inner = self.0.borrow();
        inner.gone.is_some() || inner.goaway.is_some() || inner.next_id > MAX_STREAM_ID
    }

    /// The server's limit of concurrent streams.
    pub(crate) fn max_streams(&self) -> usize {
        self.0.borrow().max_streams
    }

    /// Note the local port of its TCP connection.
    pub(crate) fn set_port(&self, port: u16) {
        self.0.borrow_mut().port = port;
    }

    /// The local port of its TCP connection (0: not known).
    pub(crate) fn port(&self) -> u16 {
        self.0.borrow().port
    }

    /// A connection with no socket, for tests of the frame parser.
    #[cfg(test)]
    pub(crate) fn detached(keep: Vec<HeaderName>, grpc: bool) -> Conn {
        let mut inner = Inner::new(Vec::new(), keep);
        inner.grpc = grpc;
        Conn(RefCell::new(inner))
    }

    /// Handle `input` as frames read from the socket, `chunk` bytes at a
    /// time as the driver would; a connection error ends it (`false`).
    #[cfg(test)]
    pub(crate) fn receive(&self, input: &[u8], chunk: usize) -> bool {
        let mut inner = self.0.borrow_mut();
        let mut pending = Vec::new();
        for part in input.chunks(chunk.max(1)) {
            pending.extend_from_slice(part);
            match inner.frames(&pending, Instant::now()) {
                Ok(used) => drop(pending.drain(..used)),
                Err(ConnError(_)) => {
                    inner.close(Failure::Protocol);
                    return false;
                }
            }
            // Frames are parsed whole: at most one partial one waits.
            assert!(
                pending.len() < 9 + MAX_FRAME,
                "a partial frame over the limit"
            );
        }
        true
    }

    /// Bytes queued to write.
    #[cfg(test)]
    pub(crate) fn queued(&self) -> usize {
        self.0.borrow().wbuf.len()
    }

    /// Open a stream: `encode` appends the request's HPACK block and
    /// returns the body, sent after it as the windows allow. The stream
    /// ends with [`Conn::answer`] or [`Conn::cancel`].
    pub(crate) fn open<'r>(
        &self,
        encode: impl FnOnce(&mut Vec<u8>) -> Result<&'r [u8], Failure>,
        keep_body: bool,
        max_body: u64,
    ) -> Result<u32, H2Error> {
        let mut guard = self.0.borrow_mut();
        let inner = &mut *guard;
        if inner.gone.is_some() || inner.goaway.is_some() || inner.next_id > MAX_STREAM_ID {
            return Err(H2Error::Unprocessed);
        }
        let id = inner.next_id;
        let at = inner.wbuf.len();
        inner.wbuf.extend_from_slice(&[0; 9]);
        if inner.table_update {
            inner.wbuf.push(0x20);
        }
        let body = match encode(&mut inner.wbuf) {
            Ok(b) => b,
            Err(f) => {
                inner.wbuf.truncate(at);
                return Err(H2Error::Failed(f));
            }
        };
        inner.next_id += 2;
        inner.table_update = false;
        let end = if body.is_empty() { flag::END_STREAM } else { 0 };
        let block = inner.wbuf.len() - at - 9;
        if block <= inner.max_frame {
            set_head(
                &mut inner.wbuf[at..],
                block,
                kind::HEADERS,
                end | flag::END_HEADERS,
                id,
            );
        } else {
            // Larger than a frame: HEADERS, then CONTINUATION frames.
            let rest = inner.wbuf.split_off(at + 9 + inner.max_frame);
            set_head(
                &mut inner.wbuf[at..],
                inner.max_frame,
                kind::HEADERS,
                end,
                id,
            );
            let mut chunks = rest.chunks(inner.max_frame).peekable();
            while let Some(chunk) = chunks.next() {
                let last = if chunks.peek().is_none() {
                    flag::END_HEADERS
                } else {
                    0
                };
                put_head(&mut inner.wbuf, chunk.len(), kind::CONTINUATION, last, id);
                inner.wbuf.extend_from_slice(chunk);
            }
        }
        let mut stream = Stream {
            waker: None,
            end: None,
            status: 0,
            head_at: None,
            headers: Vec::new(),
            keep_body,
            body: BytesMut::new(),
            len: 0,
            max_body,
            send_window: inner.peer_window,
            unsent: Bytes::new(),
            unacked: 0,
            grpc: None,
            first_data: None,
            done_at: None,
        };
        let sent = put_data(
            &mut inner.wbuf,
            (&mut inner.send_window, &mut stream.send_window),
            inner.max_frame,
            id,
            body,
        );
        if sent < body.len() {
            // The rest waits for the server's windows.
            stream.unsent = Bytes::copy_from_slice(&body[sent..]);
            inner.blocked.push(id);
        }
        inner.streams.insert(id, stream);
        if let Some(w) = &inner.driver {
            w.wake_by_ref();
        }
        Ok(id)
    }

    /// The answer on stream `id`, once it is whole.
    pub(crate) fn answer(
        &self,
        id: u32,
        cx: &mut Context<'_>,
    ) -> Poll<Result<RawResponse, H2Error>> {
        let mut inner = self.0.borrow_mut();
        let Entry::Occupied(entry) = inner.streams.entry(id) else {
            return Poll::Ready(Err(H2Error::Failed(Failure::Reset)));
        };
        let Some(end) = entry.get().end else {
            let s = entry.into_mut();
            if !s.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
                s.waker = Some(cx.waker().clone());
            }
            return Poll::Pending;
        };
        let s = entry.remove();
        Poll::Ready(end.map(|()| RawResponse {
            status: s.status,
            head_at: s.head_at.unwrap_or_else(Instant::now),
            headers: s.headers,
            body: s.body.freeze(),
            body_len: s.len,
            // A stream ends, not its connection.
            keep_alive: true,
            grpc: s.grpc.map(Box::new),
            first_data: s.first_data,
            done_at: s.done_at,
        }))
    }

    /// Give up stream `id` (a timeout): reset it if it is still open.
    pub(crate) fn cancel(&self, id: u32) {
        let mut guard = self.0.borrow_mut();
        let inner = &mut *guard;
        if let Some(s) = inner.streams.remove(&id) {
            if !s.unsent.is_empty() {
                inner.blocked.retain(|&b| b != id);
            }
            if s.end.is_none() && inner.gone.is_none() {
                put_rst(&mut inner.wbuf, id, code::CANCEL);
                if let Some(w) = &inner.driver {
                    w.wake_by_ref();
                }
            }
        }
    }
}

/// Append DATA frames of the rest of a request body, `data`, as far as
/// the windows (connection, stream) allow; the last frame ends the stream.
/// Returns the bytes sent.
fn put_data(
    wbuf: &mut Vec<u8>,
    (conn, stream): (&mut i64, &mut i64),
    max_frame: usize,
    id: u32,
    data: &[u8],
) -> usize {
    let mut sent = 0;
    while sent < data.len() {
        let room = (*conn).min(*stream).min(max_frame as i64);
        if room <= 0 {
            break;
        }
        let n = (data.len() - sent).min(room as usize);
        let end = if sent + n == data.len() {
            flag::END_STREAM
        } else {
            0
        };
        put_head(wbuf, n, kind::DATA, end, id);
        wbuf.extend_from_slice(&data[sent..sent + n]);
        sent += n;
        *conn -= n as i64;
        *stream -= n as i64;
    }
    sent
}

fn put_head(out: &mut Vec<u8>, len: usize, kind: u8, flags: u8, id: u32) {
    out.extend_from_slice(&[0; 9]);
    let at = out.len() - 9;
    set_head(&mut out[at..], len, kind, flags, id);
}

fn set_head(out: &mut [u8], len: usize, kind: u8, flags: u8, id: u32) {
    out[..3].copy_from_slice(&(len as u32).to_be_bytes()[1..]);
    out[3] = kind;
    out[4] = flags;
    out[5..9].copy_from_slice(&id.to_be_bytes());
}

fn put_rst(out: &mut Vec<u8>, id: u32, code: u32) {
    put_head(out, 4, kind::RST_STREAM, 0, id);
    out.extend_from_slice(&code.to_be_bytes());
}

fn put_window_update(out: &mut Vec<u8>, id: u32, n: u32) {
    put_head(out, 4, kind::WINDOW_UPDATE, 0, id);
    out.extend_from_slice(&n.to_be_bytes());
}

/// Keep the whole frames of `wbuf` (after the `skip` bytes that end a
/// frame partly written) whose stream id `keep` accepts, and those of the
/// connection (stream 0).
fn retain_frames(wbuf: &mut Vec<u8>, skip: usize, keep: impl Fn(u32) -> bool) {
    let (mut from, mut to) = (skip, skip);
    while from + 9 <= wbuf.len() {
        let len = 9 + be32(&[0, wbuf[from], wbuf[from + 1], wbuf[from + 2]]) as usize;
        let id = be32(&wbuf[from + 5..from + 9]) & MAX_STREAM_ID;
        if id == 0 || keep(id) {
            wbuf.copy_within(from..from + len, to);
            to += len;
        }
        from += len;
    }
    wbuf.truncate(to);
}

/// Where the whole frames start in `wbuf` once its first `written` bytes
/// are gone, as bytes after them: frames are walked from `skip` (where
/// the first whole one started).
fn skip_after(wbuf: &[u8], skip: usize, written: usize) -> usize {
    let mut at = skip;
    while at < written {
        at += 9 + be32(&[0, wbuf[at], wbuf[at + 1], wbuf[at + 2]]) as usize;
    }
    at - written
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A frame's payload without its padding (PADDED flag).
fn unpad(payload: &[u8], flags: u8) -> Result<&[u8], ConnError> {
    if flags & flag::PADDED == 0 {
        return Ok(payload);
    }
    let (&pad, rest) = payload
        .split_first()
        .ok_or(ConnError(code::FRAME_SIZE_ERROR))?;
    rest.len()
        .checked_sub(usize::from(pad))
        .map(|n| &rest[..n])
        .ok_or(ConnError(code::PROTOCOL_ERROR))
}

impl Stream {
    fn finish(&mut self, end: Result<(), H2Error>) {
        self.end = Some(end);
        self.unsent = Bytes::new();
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

impl Inner {
    /// A connection's state before the server's SETTINGS, `wbuf` holding
    /// what versus sends first.
    fn new(wbuf: Vec<u8>, keep: Vec<HeaderName>) -> Inner {
        Inner {
            wbuf,
            wbuf_skip: 0,
            replies: 0,
            driver: None,
            streams: HashMap::default(),
            next_id: 1,
            max_streams: usize::MAX,
            peer_window: i64::from(DEFAULT_WINDOW),
            max_frame: MAX_FRAME,
            send_window: i64::from(DEFAULT_WINDOW),
            unacked: 0,
            blocked: Vec::new(),
            goaway: None,
            gone: None,
            settings_arrived: false,
            handshake: None,
            table_update: false,
            sent: 0,
            decoder: hpack::Decoder::new(TABLE_SIZE),
            keep,
            grpc: false,
            block_stream: 0,
            block_end: false,
            block: Vec::new(),
            port: 0,
            read_at: Instant::now(),
        }
    }

    /// Handle the whole frames at the front of `buf`, read at `read_at`;
    /// returns the bytes used.
    fn frames(&mut self, buf: &[u8], read_at: Instant) -> Result<usize, ConnError> {
        self.read_at = read_at;
        let mut at = 0;
        while buf.len() - at >= 9 {
            let head = &buf[at..at + 9];
            let len = be32(&[0, head[0], head[1], head[2]]) as usize;
            if len > MAX_FRAME {
                return Err(ConnError(code::FRAME_SIZE_ERROR));
            }
            if buf.len() - at < 9 + len {
                break;
            }
            let (kind, flags, id) = (head[3], head[4], be32(&head[5..]) & MAX_STREAM_ID);
            let payload = &buf[at + 9..at + 9 + len];
            at += 9 + len;
            // The server's preface is a SETTINGS frame; a header block is
            // continued by nothing but CONTINUATION frames.
            if (!self.settings_arrived && kind != kind::SETTINGS)
                || (self.block_stream != 0 && kind != kind::CONTINUATION)
            {
                return Err(ConnError(code::PROTOCOL_ERROR));
            }
            self.frame(kind, flags, id, payload)?;
        }
        Ok(at)
    }

    fn frame(&mut self, kind: u8, flags: u8, id: u32, payload: &[u8]) -> Result<(), ConnError> {
        let zero = id == 0;
        match kind {
            kind::DATA if !zero => self.data(flags, id, payload)?,
            kind::HEADERS if !zero => {
                let mut frag = unpad(payload, flags)?;
                if flags & flag::PRIORITY != 0 {
                    frag = frag.get(5..).ok_or(ConnError(code::FRAME_SIZE_ERROR))?;
                }
                let end = flags & flag::END_STREAM != 0;
                if flags & flag::END_HEADERS != 0 {
                    self.headers(id, frag, end)?;
                } else {
                    self.block.clear();
                    self.block.extend_from_slice(frag);
                    self.block_stream = id;
                    self.block_end = end;
                }
            }
            kind::CONTINUATION => {
                if id != self.block_stream || zero {
                    return Err(ConnError(code::PROTOCOL_ERROR));
                }
                if self.block.len() + payload.len() > MAX_HEADER_BLOCK {
                    return Err(ConnError(code::PROTOCOL_ERROR));
                }
                self.block.extend_from_slice(payload);
                if flags & flag::END_HEADERS != 0 {
                    self.block_stream = 0;
                    let block = std::mem::take(&mut self.block);
                    let r = self.headers(id, &block, self.block_end);
                    self.block = block;
                    r?;
                }
            }
            kind::RST_STREAM if !zero => {
                if payload.len() != 4 {
                    return Err(ConnError(code::FRAME_SIZE_ERROR));
                }
                if let Some(s) = self.streams.get_mut(&id) {
                    if s.end.is_none() {
                        s.finish(Err(if be32(payload) == code::REFUSED_STREAM {
                            H2Error::Unprocessed
                        } else {
                            H2Error::Failed(Failure::StreamReset)
                        }));
                    }
                }
            }
            kind::SETTINGS if zero => self.settings(flags, payload)?,
            kind::PING if zero => {
                if payload.len() != 8 {
                    return Err(ConnError(code::FRAME_SIZE_ERROR));
                }
                if flags & flag::ACK == 0 {
                    put_head(&mut self.wbuf, 8, kind::PING, flag::ACK, 0);
                    self.wbuf.extend_from_slice(payload);
                    self.replies += 17;
                }
            }
            kind::GOAWAY if zero => {
                if payload.len() < 8 {
                    return Err(ConnError(code::FRAME_SIZE_ERROR));
                }
                let last = be32(payload) & MAX_STREAM_ID;
                let last = self.goaway.map_or(last, |l| l.min(last));
                if self.goaway.replace(last) == Some(last) {
                    // A GOAWAY again (a storm): nothing changes.
                    return Ok(());
                }
                for (&id, s) in &mut self.streams {
                    if id > last && s.end.is_none() {
                        s.finish(Err(H2Error::Unprocessed));
                    }
                }
                // Streams above it are not opened after all: their queued
                // frames go (they are sent again elsewhere).
                retain_frames(&mut self.wbuf, self.wbuf_skip, |id| id <= last);
            }
            kind::WINDOW_UPDATE => {
                if payload.len() != 4 {
                    return Err(ConnError(code::FRAME_SIZE_ERROR));
                }
                let n = i64::from(be32(payload) & MAX_STREAM_ID);
                if zero {
                    if n == 0 {
                        return Err(ConnError(code::PROTOCOL_ERROR));
                    }
                    self.send_window += n;
                    if self.send_window > MAX_WINDOW {
                        return Err(ConnError(code::FLOW_CONTROL_ERROR));
                    }
                } else if let Some(s) = self.streams.get_mut(&id) {
                    s.send_window += n;
                    if (n == 0 || s.send_window > MAX_WINDOW) && s.end.is_none() {
                        put_rst(&mut self.wbuf, id, code::FLOW_CONTROL_ERROR);
                        s.finish(Err(H2Error::Failed(Failure::Protocol)));
                    }
                }
                self.unblock();
            }
            // Push is refused in versus's SETTINGS.
            kind::PUSH_PROMISE => return Err(ConnError(code::PROTOCOL_ERROR)),
            kind::DATA
            | kind::HEADERS
            | kind::RST_STREAM
            | kind::SETTINGS
            | kind::PING
            | kind::GOAWAY => return Err(ConnError(code::PROTOCOL_ERROR)),
            // PRIORITY and unknown types are ignored.
            _ => {}
        }
        Ok(())
    }

    fn data(&mut self, flags: u8, id: u32, payload: &[u8]) -> Result<(), ConnError> {
        let data = unpad(payload, flags)?;
        // Flow control counts the whole payload, padding included, also on
        // streams already given up.
        let n = payload.len() as u32;
        self.unacked += n;
        if self.unacked >= CONN_WINDOW / 2 {
            put_window_update(&mut self.wbuf, 0, self.unacked);
            self.unacked = 0;
        }
        let Some(s) = self.streams.get_mut(&id) else {
            return Ok(());
        };
        if s.end.is_some() {
            return Ok(());
        }
        if s.status == 0 {
            put_rst(&mut self.wbuf, id, code::PROTOCOL_ERROR);
            s.finish(Err(H2Error::Failed(Failure::Protocol)));
            return Ok(());
        }
        s.len += data.len() as u64;
        if s.len > s.max_body {
            put_rst(&mut self.wbuf, id, code::CANCEL);
            s.finish(Err(H2Error::Failed(Failure::BodyTooLarge)));
            return Ok(());
        }
        if s.first_data.is_none() && !data.is_empty() {
            s.first_data = Some(self.read_at);
        }
        if s.keep_body {
            s.body.extend_from_slice(data);
        }
        if flags & flag::END_STREAM != 0 {
            if !s.unsent.is_empty() {
                // Answered before the request body was all sent: stop.
                put_rst(&mut self.wbuf, id, code::NO_ERROR);
            }
            s.done_at = Some(self.read_at);
            s.finish(Ok(()));
        } else {
            s.unacked += n;
            if s.unacked >= STREAM_WINDOW / 2 {
                put_window_update(&mut self.wbuf, id, s.unacked);
                s.unacked = 0;
            }
        }
        Ok(())
    }

    /// A whole header block on stream `id`: the response head (after any
    /// 1xx), or trailers.
    fn headers(&mut self, id: u32, block: &[u8], end: bool) -> Result<(), ConnError> {
        let keep = &self.keep;
        let grpc = self.grpc;
        let mut status = 0u16;
        let mut kept = Vec::new();
        let mut grpc_code = None;
        let mut grpc_message = None;
        // Decoded even for a stream given up: the dynamic table depends on
        // every block.
        self.decoder
            .decode(
                block,
                |name| {
                    name == b":status"
                        || (grpc && (name == b"grpc-status" || name == b"grpc-message"))
                        || keep.iter().any(|k| k.as_str().as_bytes() == name)
                },
                |name, value| {
                    if grpc && name == b"grpc-status" {
                        // Not a number: UNKNOWN, as gRPC clients take it.
                        grpc_code = Some(
                            std::str::from_utf8(value)
                                .ok()
                                .and_then(|v| v.parse::<u32>().ok())
                                .unwrap_or(2),
                        );
                    } else if grpc && name == b"grpc-message" {
                        if !value.is_empty() {
                            grpc_message = Some(crate::grpc::decode_message(value));
                        }
                    } else if name == b":status" {
                        status = match value {
                            &[a, b, c] if value.iter().all(u8::is_ascii_digit) && a != b'0' => {
                                u16::from(a - b'0') * 100
                                    + u16::from(b - b'0') * 10
                                    + u16::from(c - b'0')
                            }
                            _ => 0,
                        };
                    } else if let (Ok(n), Ok(v)) =
                        (HeaderName::from_bytes(name), HeaderValue::from_bytes(value))
                    {
                        kept.push((n, v));
                    }
                },
            )
            .map_err(|hpack::Error| ConnError(code::COMPRESSION_ERROR))?;
        let Some(s) = self.streams.get_mut(&id) else {
            return Ok(());
        };
        if s.end.is_some() {
            return Ok(());
        }
        let malformed = if s.status == 0 {
            // A response head needs a status; a 1xx one is interim.
            status == 0 || (status < 200 && end)
        } else {
            // Trailers end the stream.
            !end
        };
        if malformed {
            put_rst(&mut self.wbuf, id, code::PROTOCOL_ERROR);
            s.finish(Err(H2Error::Failed(Failure::Protocol)));
            return Ok(());
        }
        if let Some(code) = grpc_code {
            s.grpc = Some(GrpcStatus {
                code,
                message: grpc_message,
            });
        }
        if s.status == 0 {
            if status < 200 {
                return Ok(());
            }
            s.status = status;
            s.head_at = Some(self.read_at);
            s.headers = kept;
        }
        if end {
            if !s.unsent.is_empty() {
                put_rst(&mut self.wbuf, id, code::NO_ERROR);
            }
            s.done_at = Some(self.read_at);
            s.finish(Ok(()));
        }
        Ok(())
    }

    fn settings(&mut self, flags: u8, payload: &[u8]) -> Result<(), ConnError> {
        if flags & flag::ACK != 0 {
            return if payload.is_empty() {
                Ok(())
            } else {
                Err(ConnError(code::FRAME_SIZE_ERROR))
            };
        }
        if payload.len() % 6 != 0 {
            return Err(ConnError(code::FRAME_SIZE_ERROR));
        }
        for setting in payload.chunks(6) {
            let value = be32(&setting[2..]);
            match u16::from_be_bytes([setting[0], setting[1]]) {
                // The server's decoder table changed size: the next block
                // starts with a size update (to 0: versus never indexes),
                // as RFC 7541 4.2 requires of the encoder.
                1 => self.table_update = value as usize != TABLE_SIZE,
                2 if value > 1 => return Err(ConnError(code::PROTOCOL_ERROR)),
                3 => self.max_streams = value as usize,
                4 => {
                    let value = i64::from(value);
                    if value > MAX_WINDOW {
                        return Err(ConnError(code::FLOW_CONTROL_ERROR));
                    }
                    let delta = value - self.peer_window;
                    self.peer_window = value;
                    for s in self.streams.values_mut() {
                        s.send_window += delta;
                    }
                }
                5 => {
                    if !(16_384..=16_777_215).contains(&value) {
                        return Err(ConnError(code::PROTOCOL_ERROR));
                    }
                    self.max_frame = value as usize;
                }
                _ => {}
            }
        }
        put_head(&mut self.wbuf, 0, kind::SETTINGS, flag::ACK, 0);
        self.replies += 9;
        self.unblock();
        if !self.settings_arrived {
            self.settings_arrived = true;
            if let Some(w) = self.handshake.take() {
                w.wake();
            }
        }
        Ok(())
    }

    /// Send what the windows now allow of the bodies that waited.
    fn unblock(&mut self) {
        if self.blocked.is_empty() {
            return;
        }
        let mut blocked = std::mem::take(&mut self.blocked);
        blocked.retain(|&id| match self.streams.get_mut(&id) {
            Some(s) => {
                let windows = (&mut self.send_window, &mut s.send_window);
                let sent = put_data(&mut self.wbuf, windows, self.max_frame, id, &s.unsent);
                s.unsent.advance(sent);
                !s.unsent.is_empty()
            }
            None => false,
        });
        self.blocked = blocked;
    }

    /// The connection ended: every stream still waiting fails, as not
    /// processed when a GOAWAY said so or when its request never left.
    fn close(&mut self, why: Failure) {
        self.gone = Some(why);
        let last = self.goaway.unwrap_or(self.sent).min(self.sent);
        for (&id, s) in &mut self.streams {
            if s.end.is_none() {
                s.finish(Err(if id > last {
                    H2Error::Unprocessed
                } else {
                    H2Error::Failed(why)
                }));
            }
        }
        if let Some(w) = self.handshake.take() {
            w.wake();
        }
    }

    /// Whether the connection has nothing left to do: no new streams
    /// will come and none is open.
    fn finished(&self) -> bool {
        (self.goaway.is_some() || self.next_id > MAX_STREAM_ID)
            && self.streams.values().all(|s| s.end.is_some())
    }
}

/// The task that owns a connection's socket.
struct Driver {
    conn: Rc<Conn>,
    io: Socket,
    rbuf: Box<[u8]>,
    /// Unparsed bytes are `rbuf[start..filled]`.
    start: usize,
    filled: usize,
    /// Bytes written may still sit in the TLS layer: flush until it says
    /// they are out (a TLS stream takes a write before the socket does).
    unflushed: bool,
    /// The write of requests the slots queued was put off for answers
    /// that had arrived meanwhile (once: see [`Driver::poll`]).
    deferred: bool,
}

impl Driver {
    async fn run(mut self) {
        poll_fn(|cx| self.poll(cx)).await;
    }

    /// Read and handle every frame that has arrived, then write every frame
    /// queued; ready when the connection has ended.
    ///
    /// tokio stops reading at the first read that does not fill the buffer
    /// and waits for epoll to report more. With requests to write (woken
    /// by the slots that queued them), the driver first reads on past that
    /// over TCP, until the socket would block: answers that came while
    /// those slots ran are handled now, and the write waits for their
    /// slots' requests, so that one write carries them all (once; then it
    /// writes whatever came). Fewer, larger writes cost the kernel less on
    /// both sides (on loopback the writer's core also does the server's
    /// receive): measured against nginx, about 8 % less CPU per request.
    /// Reading on so after every read, with nothing to write, cost more
    /// than it saved once reads peeked (4.50 against 4.35 µs per request):
    /// the answers it found are found by the next turn's read. Over TCP the
    /// reads peek, and what they read leaves the socket after a write has
    /// carried its acknowledgement (see `h2_socket.rs`). Every answer is
    /// timed by the read that brought it.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if self.conn.0.borrow().gone.is_some() {
            return Poll::Ready(());
        }
        let ControlFlow::Continue(answers_came) = self.read_frames(cx) else {
            return Poll::Ready(());
        };
        if answers_came {
            // Answers came while requests waited: let their slots queue
            // theirs, then write all at once.
            self.deferred = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.deferred = false;
        let mut guard = self.conn.0.borrow_mut();
        let inner = &mut *guard;
        let ControlFlow::Continue(written) = Self::write(&mut self.io, cx, inner) else {
            return Poll::Ready(());
        };
        let ControlFlow::Continue(()) =
            Self::release_and_flush(&mut self.io, &mut self.unflushed, cx, inner, written)
        else {
            return Poll::Ready(());
        };
        if inner.finished() || Rc::strong_count(&self.conn) == 1 {
            inner.close(Failure::Reset);
            return Poll::Ready(());
        }
        if !inner
            .driver
            .as_ref()
            .is_some_and(|w| w.will_wake(cx.waker()))
        {
            inner.driver = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// The reads of one turn ([`Driver::poll`]): read and handle frames
    /// until the socket has nothing more (over TCP, with requests to write,
    /// until it would block), the server's replies pile up, or the turn
    /// has read enough. `Continue(true)`: answers came while requests
    /// waited to be written; `Break`: the connection has ended.
    #[inline]
    fn read_frames(&mut self, cx: &mut Context<'_>) -> ControlFlow<(), bool> {
        let mut progress = false;
        // The read before a write (see `poll`) was made.
        let mut before_write = false;
        let mut reads = 0;
        loop {
            if self.conn.0.borrow().replies > MAX_REPLIES {
                // The server does not read its replies: neither do we,
                // until they are out.
                break;
            }
            if reads == READS_PER_TURN {
                cx.waker().wake_by_ref();
                break;
            }
            reads += 1;
            if self.filled == self.rbuf.len() {
                // Only a partial frame is left (less than half the buffer).
                self.rbuf.copy_within(self.start..self.filled, 0);
                self.filled -= self.start;
                self.start = 0;
            }
            let buf = &mut self.rbuf[self.filled..];
            let read = match self.io.poll_read(cx, buf) {
                Poll::Pending => match &mut self.io {
                    Socket::Tcp(t) if !self.deferred && !self.conn.0.borrow().wbuf.is_empty() => {
                        before_write |= !progress;
                        t.read_now(buf)
                    }
                    _ => Poll::Pending,
                },
                r => r,
            };
            match read {
                Poll::Ready(Ok(n)) => {
                    progress = true;
                    self.handle(cx, n)?;
                }
                Poll::Ready(Err(e)) => {
                    self.conn.0.borrow_mut().close(classify_io(&e, Failure::Io));
                    return ControlFlow::Break(());
                }
                Poll::Pending => break,
            }
        }
        ControlFlow::Continue(before_write && progress)
    }

    /// Handle the frames complete in the buffer after a read of `n` bytes
    /// (none: the server closed); a bad one ends the connection with a
    /// GOAWAY that says why.
    #[inline]
    fn handle(&mut self, cx: &mut Context<'_>, n: usize) -> ControlFlow<()> {
        let mut inner = self.conn.0.borrow_mut();
        if n == 0 {
            inner.close(Failure::Reset);
            return ControlFlow::Break(());
        }
        self.filled += n;
        match inner.frames(&self.rbuf[self.start..self.filled], Instant::now()) {
            Ok(used) => self.start += used,
            Err(ConnError(code)) => {
                if !inner.settings_arrived {
                    tell_h1_answer(&self.rbuf[self.start..self.filled]);
                }
                // Tell the server why, if it still listens.
                inner.wbuf.clear();
                put_head(&mut inner.wbuf, 8, kind::GOAWAY, 0, 0);
                inner.wbuf.extend_from_slice(&[0; 4]);
                inner.wbuf.extend_from_slice(&code.to_be_bytes());
                let _ = self.io.poll_write(cx, &inner.wbuf);
                inner.close(Failure::Protocol);
                return ControlFlow::Break(());
            }
        }
        if self.start == self.filled {
            self.start = 0;
            self.filled = 0;
        }
        ControlFlow::Continue(())
    }

    /// Write the frames queued, as far as the socket takes them, and drop
    /// them from the queue: `Continue` with the bytes written, `Break` when
    /// the connection has ended.
    #[inline]
    fn write(io: &mut Socket, cx: &mut Context<'_>, inner: &mut Inner) -> ControlFlow<(), usize> {
        let mut written = 0;
        while written < inner.wbuf.len() {
            match io.poll_write(cx, &inner.wbuf[written..]) {
                Poll::Ready(Ok(0)) => {
                    inner.close(Failure::Reset);
                    return ControlFlow::Break(());
                }
                Poll::Ready(Ok(n)) => written += n,
                Poll::Ready(Err(e)) => {
                    inner.close(classify_io(&e, Failure::Io));
                    return ControlFlow::Break(());
                }
                Poll::Pending => break,
            }
        }
        if written == inner.wbuf.len() {
            if written > 0 {
                // Every stream opened so far has left (see `Inner::close`).
                inner.sent = inner.next_id.saturating_sub(2);
            }
            inner.wbuf_skip = 0;
            if inner.replies > MAX_REPLIES {
                // Reading stopped for them: go on.
                cx.waker().wake_by_ref();
            }
            inner.replies = 0;
        } else {
            inner.wbuf_skip = skip_after(&inner.wbuf, inner.wbuf_skip, written);
        }
        inner.wbuf.drain(..written);
        ControlFlow::Continue(written)
    }

    /// After a write of `written` bytes: let the bytes the reads peeked
    /// leave the socket (a write has carried their acknowledgement), and
    /// flush what the TLS layer still holds. `Break`: the connection has
    /// ended.
    #[inline]
    fn release_and_flush(
        io: &mut Socket,
        unflushed: &mut bool,
        cx: &mut Context<'_>,
        inner: &mut Inner,
        written: usize,
    ) -> ControlFlow<()> {
        if let Err(e) = io.release_peeked(written > 0) {
            inner.close(classify_io(&e, Failure::Io));
            return ControlFlow::Break(());
        }
        *unflushed |= written > 0;
        if *unflushed {
            match io.poll_flush(cx) {
                Poll::Ready(Ok(())) => *unflushed = false,
                Poll::Ready(Err(e)) => {
                    inner.close(classify_io(&e, Failure::Io));
                    return ControlFlow::Break(());
                }
                Poll::Pending => {}
            }
        }
        ControlFlow::Continue(())
    }
}

/// Hashes stream ids (odd, consecutive) for the stream map.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }

    fn write_u32(&mut self, id: u32) {
        self.0 = u64::from(id >> 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// The status line of an HTTP/1 answer at the start of `bytes` (what an
/// HTTP/1.1-only server answers the HTTP/2 preface with), if it is one.
pub(super) fn h1_status_line(bytes: &[u8]) -> Option<&str> {
    if !bytes.starts_with(b"HTTP/1.") {
        return None;
    }
    let end = bytes.iter().position(|&b| b == b'\r' || b == b'\n')?;
    std::str::from_utf8(&bytes[..end]).ok()
}

/// Tell once per process on stderr that a server answered the HTTP/2
/// preface in HTTP/1 (`bytes`, when they are such an answer), with the
/// fix: the requests fail as `malformed response`, which alone does not
/// say that the server does not speak HTTP/2.
fn tell_h1_answer(bytes: &[u8]) {
    static TOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let Some(line) = h1_status_line(bytes) else {
        return;
    };
    if !TOLD.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "versus: a server answered HTTP/2 in HTTP/1 ({line:?}): it does not speak HTTP/2 on that \
             port\n  fix: point grpc:// at the gRPC server's port; for http://, drop --http2"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame of `kind` on stream `id` with `len` bytes of payload.
    fn frame(out: &mut Vec<u8>, kind: u8, id: u32, len: usize) {
        put_head(out, len, kind, 0, id);
        out.extend(std::iter::repeat_n(0xAB, len));
    }

    fn grpc_block(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (n, v) in fields {
            hpack::put_field(&mut out, n.as_bytes(), v.as_bytes());
        }
        out
    }

    fn answer_of(conn: &Conn, id: u32) -> Result<RawResponse, H2Error> {
        let mut cx = Context::from_waker(Waker::noop());
        match conn.answer(id, &mut cx) {
            Poll::Ready(a) => a,
            Poll::Pending => panic!("stream {id} not finished"),
        }
    }

    /// A gRPC connection takes the status from the trailers, or from the
    /// head of a trailers-only answer, percent-decoding the message; the
    /// first DATA frame is the time to the first message.
    #[test]
    fn grpc_statuses_come_from_trailers_and_trailers_only_heads() {
        let conn = Conn::detached(Vec::new(), true);
        assert!(conn.receive(&[0, 0, 0, 4, 0, 0, 0, 0, 0], 9));
        let one = conn
            .open(|_| Ok(&b"\0\0\0\0\0"[..]), true, 1 << 20)
            .unwrap();
        let three = conn
            .open(|_| Ok(&b"\0\0\0\0\0"[..]), true, 1 << 20)
            .unwrap();
        let mut frames = Vec::new();
        // Stream 1: head, a message, trailers.
        let head = [
            vec![0x88],
            grpc_block(&[("content-type", "application/grpc")]),
        ]
        .concat();
        put_head(
            &mut frames,
            head.len(),
            kind::HEADERS,
            flag::END_HEADERS,
            one,
        );
        frames.extend_from_slice(&head);
        put_head(&mut frames, 7, kind::DATA, 0, one);
        frames.extend_from_slice(&[0, 0, 0, 0, 2, 8, 1]);
        let trailers = grpc_block(&[("grpc-status", "14"), ("grpc-message", "try%20again")]);
        put_head(
            &mut frames,
            trailers.len(),
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            one,
        );
        frames.extend_from_slice(&trailers);
        // Stream 3: trailers-only.
        let only = [vec![0x88], grpc_block(&[("grpc-status", "5")])].concat();
        put_head(
            &mut frames,
            only.len(),
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            three,
        );
        frames.extend_from_slice(&only);
        assert!(conn.receive(&frames, 5));
        let a = answer_of(&conn, one).unwrap();
        assert_eq!(a.status, 200);
        assert_eq!(
            a.grpc.map(|g| *g),
            Some(GrpcStatus {
                code: 14,
                message: Some("try again".into())
            })
        );
        assert!(a.first_data.is_some());
        assert_eq!(&a.body[..], &[0, 0, 0, 0, 2, 8, 1]);
        let b = answer_of(&conn, three).unwrap();
        assert_eq!(
            b.grpc.map(|g| *g),
            Some(GrpcStatus {
                code: 5,
                message: None
            })
        );
        assert!(b.first_data.is_none());
        // The same frames on a connection that is not gRPC keep nothing.
        let plain = Conn::detached(Vec::new(), false);
        assert!(plain.receive(&[0, 0, 0, 4, 0, 0, 0, 0, 0], 9));
        let id = plain.open(|_| Ok(&b""[..]), false, 1 << 20).unwrap();
        let mut only_plain = Vec::new();
        put_head(
            &mut only_plain,
            only.len(),
            kind::HEADERS,
            flag::END_HEADERS | flag::END_STREAM,
            id,
        );
        only_plain.extend_from_slice(&only);
        assert!(plain.receive(&only_plain, 64));
        assert_eq!(answer_of(&plain, id).unwrap().grpc, None);
    }

    /// An answer is timed by the reads that brought its frames: head, first
    /// data and end all at the one read when they came together, with no
    /// clock read of its own.
    #[test]
    fn an_answer_is_timed_by_the_reads_that_brought_it() {
        let conn = Conn::detached(Vec::new(), false);
        assert!(conn.receive(&[0, 0, 0, 4, 0, 0, 0, 0, 0], 9));
        let one = conn.open(|_| Ok(&b""[..]), false, 1 << 20).unwrap();
        let three = conn.open(|_| Ok(&b""[..]), false, 1 << 20).unwrap();
        let answer = |id: u32| {
            let mut frames = Vec::new();
            put_head(&mut frames, 1, kind::HEADERS, flag::END_HEADERS, id);
            frames.push(0x88);
            put_head(&mut frames, 2, kind::DATA, flag::END_STREAM, id);
            frames.extend_from_slice(b"ok");
            frames
        };
        assert!(conn.receive(&answer(one), 64));
        let a = answer_of(&conn, one).unwrap();
        assert_eq!(a.done_at, Some(a.head_at));
        assert_eq!(a.first_data, Some(a.head_at));
        // Head and data in two reads: each its own.
        let frames = answer(three);
        assert!(conn.receive(&frames[..10], 64));
        assert!(conn.receive(&frames[10..], 64));
        let b = answer_of(&conn, three).unwrap();
        assert!(b.done_at.is_some_and(|d| d >= b.head_at && d >= a.head_at));
        assert_eq!(b.body_len, 2);
    }

    /// A stream the server resets (RST_STREAM, not REFUSED_STREAM) fails as
    /// a stream reset, not a connection reset: the connection stays.
    #[test]
    fn a_reset_stream_is_a_stream_reset() {
        let conn = Conn::detached(Vec::new(), true);
        assert!(conn.receive(&[0, 0, 0, 4, 0, 0, 0, 0, 0], 9));
        let id = conn.open(|_| Ok(&b""[..]), false, 1 << 20).unwrap();
        let mut frames = Vec::new();
        put_rst(&mut frames, id, 2); // INTERNAL_ERROR
        assert!(conn.receive(&frames, 13));
        assert!(matches!(
            answer_of(&conn, id),
            Err(H2Error::Failed(Failure::StreamReset))
        ));
        assert!(!conn.is_closed());
    }

    /// After a GOAWAY, the frames queued for the streams above its last
    /// one are dropped: no frame opens a stream the server will not take.
    #[test]
    fn no_frame_of_a_stream_above_a_goaway_is_left_to_write() {
        let mut wbuf = vec![0xAB; 5]; // the end of a frame partly written
        frame(&mut wbuf, kind::HEADERS, 1, 20);
        frame(&mut wbuf, kind::HEADERS, 3, 20);
        frame(&mut wbuf, kind::CONTINUATION, 3, 7);
        frame(&mut wbuf, kind::PING, 0, 8);
        frame(&mut wbuf, kind::DATA, 3, 100);
        frame(&mut wbuf, kind::RST_STREAM, 1, 4);
        frame(&mut wbuf, kind::HEADERS, 5, 20);
        retain_frames(&mut wbuf, 5, |id| id <= 1);
        let mut expected = vec![0xAB; 5];
        frame(&mut expected, kind::HEADERS, 1, 20);
        frame(&mut expected, kind::PING, 0, 8);
        frame(&mut expected, kind::RST_STREAM, 1, 4);
        assert_eq!(wbuf, expected);
    }

    /// A partial write leaves the rest of a frame at the front of the
    /// buffer; the whole frames start after it.
    #[test]
    fn a_partial_write_keeps_track_of_where_whole_frames_start() {
        let mut wbuf = Vec::new();
        frame(&mut wbuf, kind::HEADERS, 1, 20); // 29 bytes
        frame(&mut wbuf, kind::DATA, 1, 100); // 109 bytes
        assert_eq!(skip_after(&wbuf, 0, 10), 19);
        assert_eq!(skip_after(&wbuf, 0, 29), 0);
        assert_eq!(skip_after(&wbuf, 0, 30), 108);
        // Less written than the tail already there.
        assert_eq!(skip_after(&wbuf, 19, 4), 15);
    }
}
