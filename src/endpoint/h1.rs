//! A lean HTTP/1.1 client connection: one request at a time over any byte
//! stream (TCP, or TLS when ALPN chose `http/1.1`), owned by the slot that
//! uses it (no spawned task, no channel). The request head is serialized by
//! the caller into a write buffer lent by the thread's pool (`h1_bufs`) and
//! given back once it is written; the response is read into a buffer lent
//! the same way once the stream has bytes, given back when the answer is
//! read, and its head parsed by `h1_head` (a scan a word at a time,
//! `httparse` for the uncommon head), or replayed from the same bytes
//! parsed by another of the endpoint's connections on the core (`Heads`).
//! Only the headers asked for are allocated; the body is counted and
//! discarded, or kept (without a copy when it arrived whole with a
//! `Content-Length`).

use std::cell::RefCell;
use std::future::{poll_fn, Future};
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderName, HeaderValue};
use tokio::io::ReadBuf;

use super::h1_bufs::{self, INITIAL};
use super::h1_head::{self, Field};
use super::io::{classify_io, Io};
use super::{Failure, RawResponse};
/// Room asked for when streaming through a body (discarded, chunked or
/// read to the end of the stream).
const READ_CHUNK: usize = 16 * 1024;
/// Largest response head (status line and headers) accepted.
const MAX_HEAD: usize = 64 * 1024;
/// Largest chunk-size or trailer line accepted.
const MAX_LINE: usize = 4 * 1024;

/// How a response body is delimited.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Framing {
    /// (Also what a default [`Head`] says.)
    #[default]
    Empty,
    Length(u64),
    Chunked,
    Close,
}

/// What a response head says. Filled in place by [`Conn::parse_head`]
/// (moving it through nested `Result`s and `Option`s cost more than the
/// replay it came from).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Head {
    status: u16,
    /// How its body is delimited.
    framing: Framing,
    /// Whether the connection stays open.
    keep_alive: bool,
    /// The headers kept.
    headers: Vec<(HeaderName, HeaderValue)>,
}

impl Head {
    /// Become a copy of `other`, reusing this one's memory.
    fn copy_from(&mut self, other: &Head) {
        self.status = other.status;
        self.framing = other.framing;
        self.keep_alive = other.keep_alive;
        // Most runs keep no headers: nothing to clone then (a call and a
        // drop of nothing, 60 instructions a request).
        if !(self.headers.is_empty() && other.headers.is_empty()) {
            self.headers.clone_from(&other.headers);
        }
    }
}

/// How many response heads [`Heads`] keeps: an endpoint's servers may
/// answer with a few (several machines behind one address).
const RECENT_HEADS: usize = 4;

/// A response head parsed, kept for replay.
#[derive(Default)]
struct Recent {
    /// Its bytes, through the blank line.
    bytes: Vec<u8>,
    /// The headers asked for when it was parsed.
    keep: Vec<HeaderName>,
    head: Head,
}

/// The response heads an endpoint's connections on one core parsed last,
/// newest first, and the parser's scratch: what [`Conn::exchange`] replays
/// a head from. One copy for the endpoint and core, not one for each
/// connection: a server's connections answer with the same head (nginx's
/// differ only in `Date`, once a second), and one copy stays in cache where
/// a copy for each of 1,000 connections is cold whenever it is read.
#[derive(Default)]
pub(crate) struct Heads(RefCell<HeadsInner>);

#[derive(Default)]
struct HeadsInner {
    recent: Vec<Recent>,
    /// The fields of the head being parsed (reused).
    fields: Vec<Field>,
}

impl Heads {
    /// What the response head at the start of `buf` says, into `head`,
    /// and its length (`None` while incomplete): replayed from a head kept
    /// here that is the same byte for byte (the parse reads nothing past
    /// the head's blank line, and nothing of the connection, so the same
    /// bytes say the same), or parsed and kept.
    fn replay_or_parse(
        &self,
        buf: &[u8],
        keep: &[HeaderName],
        head: &mut Head,
    ) -> Result<Option<usize>, Failure> {
        let heads = &mut *self.0.borrow_mut();
        if let Some(r) = heads
            .recent
            .iter()
            .find(|r| buf.starts_with(&r.bytes) && r.keep == keep)
        {
            head.copy_from(&r.head);
            return Ok(Some(r.bytes.len()));
        }
        let Some((parsed, n)) = parse_new_head(buf, &mut heads.fields, keep)? else {
            return Ok(None);
        };
        let full = heads.recent.len() == RECENT_HEADS;
        let mut r = if full { heads.recent.pop() } else { None }.unwrap_or_default();
        r.bytes.clear();
        r.bytes.extend_from_slice(&buf[..n]);
        if r.keep != keep {
            r.keep = keep.to_vec();
        }
        r.head.copy_from(&parsed);
        heads.recent.insert(0, r);
        *head = parsed;
        Ok(Some(n))
    }
}

/// Tell once per process on stderr that a server answered an HTTP/1.1
/// request with HTTP/2 frames (`bytes` start with a SETTINGS or GOAWAY
/// frame on the connection's stream 0, as an HTTP/2-only cleartext port
/// answers), with the fix: the request fails as `malformed response`,
/// which alone does not point to `--http2`.
fn tell_h2_answer(bytes: &[u8]) {
    static TOLD: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    // Length (under 64 KiB), type, flags, stream 0.
    let frame = matches!(bytes, [0, _, _, 4 | 7, _, 0, 0, 0, 0, ..]);
    if frame && !TOLD.swap(true, std::sync::atomic::Ordering::Relaxed) {
        eprintln!(
            "versus: a server answered HTTP/1.1 with HTTP/2 frames: it speaks only HTTP/2 on that \
             port (h2c)\n  fix: give --http2 (HTTP/2 by prior knowledge)"
        );
    }
}

/// Parse a response head at the start of `buf` (into `fields`, reused):
/// what it says and its length, `None` while incomplete.
fn parse_new_head(
    buf: &[u8],
    fields: &mut Vec<Field>,
    keep: &[HeaderName],
) -> Result<Option<(Head, usize)>, Failure> {
    let Ok(head) = h1_head::parse(buf, fields) else {
        tell_h2_answer(buf);
        return Err(Failure::Protocol);
    };
    let Some(head) = head else {
        if buf.len() < MAX_HEAD {
            return Ok(None);
        }
        return Err(Failure::Protocol);
    };
    // httparse takes any three digits; below 100 is no HTTP status.
    if head.code < 100 {
        return Err(Failure::Protocol);
    }
    let (status, http11, n) = (head.code, head.http11, head.len);
    let mut facts = Facts::default();
    for f in fields.iter() {
        facts.see(f.name(buf), f.value(buf))?;
    }
    let mut headers = Vec::new();
    for name in keep {
        for f in fields.iter() {
            if f.name(buf).eq_ignore_ascii_case(name.as_str().as_bytes()) {
                let value = HeaderValue::from_bytes(f.value(buf)).map_err(|_| Failure::Protocol)?;
                headers.push((name.clone(), value));
            }
        }
    }
    let (framing, keep_alive) = facts.framing(http11);
    let head = Head {
        status,
        framing,
        keep_alive,
        headers,
    };
    Ok(Some((head, n)))
}

/// The answer `bytes` hold, landed at `at` (or now), when they are all of
/// one plain answer (see [`Conn::poll_plain_answer`]); `None` otherwise.
#[inline(always)]
pub(crate) fn plain_answer(
    bytes: &[u8],
    at: Option<Instant>,
    heads: &Heads,
    head_request: bool,
    (keep, max_body, keep_body): (&[HeaderName], u64, bool),
) -> Option<RawResponse> {
    let mut head = Head::default();
    let Ok(Some(n)) = heads.replay_or_parse(bytes, keep, &mut head) else {
        return None;
    };
    let rest = &bytes[n..];
    let (body, len) = match head.framing {
        _ if head.status < 200 => return None,
        _ if head_request || head.status == 204 || head.status == 304 => {
            (rest.is_empty().then(Bytes::new)?, 0)
        }
        Framing::Length(len) if len <= max_body && rest.len() as u64 == len => {
            let body = if keep_body {
                h1_bufs::keep(rest)
            } else {
                Bytes::new()
            };
            (body, len)
        }
        Framing::Chunked => whole_chunked(rest, max_body, keep_body)?,
        _ => return None,
    };
    // Whole in hand: it ended when its head came.
    let head_at = at.unwrap_or_else(Instant::now);
    Some(RawResponse {
        grpc: None,
        first_data: None,
        status: head.status,
        head_at,
        headers: head.headers,
        body,
        body_len: len,
        keep_alive: head.keep_alive,
        done_at: Some(head_at),
    })
}

/// A chunked body whole in `bytes`, and nothing after it: its bytes (when
/// `keep_body`, the chunks joined) and its length, as
/// [`Conn::read_chunked`] reads them. `None` when it is incomplete,
/// malformed, longer than `max_body` or followed by other bytes: the
/// answer is then read as any other, which says what is wrong with it.
/// Not inlined into [`plain_answer`], whose common case it is not.
#[inline(never)]
fn whole_chunked(mut rest: &[u8], max_body: u64, keep_body: bool) -> Option<(Bytes, u64)> {
    // The next line's length, within `MAX_LINE`.
    let line = |rest: &[u8]| crlf(rest).filter(|&n| n <= MAX_LINE);
    let mut kept = keep_body.then(BytesMut::new);
    let mut len: u64 = 0;
    loop {
        let n = line(rest)?;
        let size = chunk_size(&rest[..n])?;
        rest = &rest[n + 2..];
        if size == 0 {
            break;
        }
        len = len.checked_add(size).filter(|&len| len <= max_body)?;
        let size = usize::try_from(size).ok()?;
        let (data, after) = rest.split_at_checked(size)?;
        rest = after.strip_prefix(b"\r\n")?;
        if let Some(k) = &mut kept {
            k.extend_from_slice(data);
        }
    }
    // Trailers, ignored, up to the empty line.
    loop {
        let n = line(rest)?;
        rest = &rest[n + 2..];
        if n == 0 {
            break;
        }
    }
    rest.is_empty()
        .then(|| (kept.map_or_else(Bytes::new, BytesMut::freeze), len))
}

/// How far the last exchange on a connection got before it ended: whether
/// a failed request may be sent again (see `http.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reached {
    /// The request was not wholly written.
    Nothing,
    /// The request was written, and no byte of an answer came back.
    Written,
    /// Some of the answer came back.
    Answered,
}

/// One HTTP/1.1 client connection.
pub(crate) struct Conn<S> {
    io: S,
    /// Bytes read and not yet consumed, in a buffer lent by `h1_bufs`; no
    /// memory at all (`BytesMut::new()`) between answers.
    rbuf: BytesMut,
    /// The request being written, in a buffer lent by `h1_bufs` too: none
    /// between requests.
    wbuf: BytesMut,
    reached: Reached,
    /// The local port of its TCP connection (0: not known), which names
    /// the connection to a fault proxy.
    port: u16,
    /// Whether its stream lends what it receives (see [`Io::lends`]),
    /// asked once.
    lends: bool,
}

impl<S: Io> Conn<S> {
    pub fn new(io: S) -> Conn<S> {
        Conn {
            lends: io.lends(),
            io,
            rbuf: BytesMut::new(),
            wbuf: BytesMut::new(),
            reached: Reached::Nothing,
            port: 0,
        }
    }

    /// The same connection, its TCP connection's local port known.
    pub fn with_port(mut self, port: u16) -> Conn<S> {
        self.port = port;
        self
    }

    /// The local port of its TCP connection (0: not known).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Whether its stream lends the bytes it receives, so that an answer
    /// can be read where it landed (see [`Conn::poll_plain_answer`]).
    pub fn lends(&self) -> bool {
        self.lends
    }

    /// How far the last exchange got.
    pub fn reached(&self) -> Reached {
        self.reached
    }

    /// The write buffer, empty, for the next request's head (and body):
    /// taken from the thread's pool, to which [`Conn::exchange`] gives it
    /// back once the request is written.
    pub fn request_buf(&mut self) -> &mut BytesMut {
        if self.wbuf.capacity() == 0 {
            self.wbuf = h1_bufs::take();
        } else {
            self.wbuf.clear();
        }
        &mut self.wbuf
    }

    /// Start noticing that the peer closes the connection while it sits
    /// idle (see [`Io::watch_idle`]), for [`Conn::is_closed`] to see.
    pub fn watch_idle(&mut self) {
        if self.rbuf.is_empty() {
            self.io.watch_idle();
        }
    }

    /// Whether the peer closed the idle connection (or sent something
    /// unasked). Polls the stream once without waiting (a plain function,
    /// not an `async` one: a future level fewer on every reused
    /// connection's request).
    pub fn is_closed(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.rbuf.is_empty() {
            // Bytes are already waiting: the connection is alive (pipelined).
            return false;
        }
        if self.io.quiet() {
            // Nothing has come since the last read (on the ring: nothing
            // landed, the connection's receive armed or not): a poll could
            // only find nothing.
            return false;
        }
        // Nothing came: alive. The end, an error, or bytes nobody asked
        // for: not a connection to trust.
        self.poll_fill(cx, INITIAL).is_ready()
    }

    /// Send the request in the write buffer (see [`Conn::request_buf`]),
    /// followed by `body`, and read one whole response: the parts a slot
    /// awaits itself ([`Conn::stage`], [`Conn::poll_send`],
    /// [`Conn::read_answer`]), in one call for the tests. `head_request`:
    /// the response has no body whatever its headers say. Bodies over
    /// `max_body` fail as `BodyTooLarge`; only the headers named in `keep`
    /// are returned.
    #[cfg(test)]
    pub async fn exchange(
        &mut self,
        body: &[u8],
        head_request: bool,
        max_body: u64,
        keep_body: bool,
        keep: &[HeaderName],
        heads: &Heads,
    ) -> Result<RawResponse, Failure> {
        let rest = self.stage(body);
        let mut done = 0;
        poll_fn(|cx| self.poll_send(cx, &mut done, rest)).await?;
        self.read_answer(head_request, (keep, max_body, keep_body), heads, true)
            .await
    }

    /// Begin an exchange with `body` after the request head in the write
    /// buffer: a body up to 64 KiB is copied after it (one write), a larger
    /// one is returned, to be written after it (see [`Conn::poll_send`]).
    pub fn stage<'b>(&mut self, body: &'b [u8]) -> &'b [u8] {
        self.reached = Reached::Nothing;
        if body.len() <= 64 * 1024 {
            self.wbuf.extend_from_slice(body);
            &[]
        } else {
            body
        }
    }

    /// Begin an exchange whose request is all in what is given to
    /// [`Conn::poll_send`] as `rest` (made once, elsewhere): no write
    /// buffer is taken.
    pub fn stage_nothing(&mut self) {
        self.reached = Reached::Nothing;
        self.wbuf.clear();
    }

    /// Write the write buffer and then `rest` (what [`Conn::stage`]
    /// returned), `done` bytes of them written so far, and flush: a write
    /// to a socket that takes it all is done in its first poll. Once it is
    /// done, the request counts as written and the write buffer goes back
    /// to the pool: the read of the answer takes it again (the pool's
    /// last), while it is still in cache.
    #[inline(always)]
    pub fn poll_send(
        &mut self,
        cx: &mut Context<'_>,
        done: &mut usize,
        rest: &[u8],
    ) -> Poll<Result<(), Failure>> {
        let Conn { io, wbuf, .. } = self;
        let written = loop {
            let left = match wbuf.get(*done..) {
                Some(head) if !head.is_empty() => head,
                _ => &rest[*done - wbuf.len()..],
            };
            if left.is_empty() {
                break ready!(Pin::new(&mut *io).poll_flush(cx));
            }
            match ready!(Pin::new(&mut *io).poll_write(cx, left)) {
                Ok(0) => break Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => *done += n,
                Err(e) => break Err(e),
            }
        };
        written.map_err(|e| classify_io(&e, Failure::Io))?;
        self.reached = Reached::Written;
        if self.wbuf.capacity() > 0 {
            h1_bufs::give(std::mem::take(&mut self.wbuf));
        }
        Poll::Ready(Ok(()))
    }

    /// Read one whole answer to the request written. `in_place`: first try
    /// to read it where it landed (see [`Conn::poll_plain_answer`]; only on
    /// a stream that lends what it receives); false when that was just
    /// tried and found other bytes.
    pub async fn read_answer(
        &mut self,
        head_request: bool,
        (keep, max_body, keep_body): (&[HeaderName], u64, bool),
        heads: &Heads,
        in_place: bool,
    ) -> Result<RawResponse, Failure> {
        let mut in_place = in_place && self.lends;
        // The head, skipping interim (1xx) responses.
        let mut head = Head::default();
        loop {
            if self.rbuf.is_empty() && std::mem::replace(&mut in_place, self.lends) {
                let read = poll_fn(|cx| {
                    let keep = (keep, max_body, keep_body);
                    self.poll_plain_answer(cx, heads, head_request, keep)
                });
                if let Some(answer) = read.await? {
                    return Ok(answer);
                }
            }
            // (Nothing to parse in an empty buffer.)
            if self.rbuf.is_empty() || !self.parse_head(keep, heads, &mut head)? {
                self.read_more(INITIAL).await?;
                self.reached = Reached::Answered;
                continue;
            }
            match head.status {
                101 => return Err(Failure::Protocol),
                100..200 => continue,
                _ => break,
            }
        }
        let Head {
            status,
            framing,
            mut keep_alive,
            headers,
        } = head;
        // When the read that completed the head ran (see `Io::read_at`).
        let head_at = self.io.read_at().unwrap_or_else(Instant::now);
        let framing = if head_request || status == 204 || status == 304 {
            Framing::Empty
        } else {
            framing
        };
        // An answer whole in hand already (with no body, or with its body
        // in the buffer) ends when its head came.
        let done_at = match framing {
            Framing::Empty => Some(head_at),
            Framing::Length(n) if n <= self.rbuf.len() as u64 => Some(head_at),
            _ => None,
        };
        let (body, body_len) = match framing {
            Framing::Empty => (Bytes::new(), 0),
            Framing::Length(n) => self.read_length(n, max_body, keep_body).await?,
            Framing::Chunked => self.read_chunked(max_body, keep_body).await?,
            Framing::Close => {
                keep_alive = false;
                self.read_to_close(max_body, keep_body).await?
            }
        };
        self.release_read_buf();
        // An answer that needed more reads ends with the last of them: when
        // it ran, if the stream knows (otherwise the caller reads the clock).
        let done_at = done_at.or_else(|| self.io.read_at());
        Ok(RawResponse {
            grpc: None,
            first_data: None,
            status,
            head_at,
            headers,
            body,
            body_len,
            keep_alive,
            done_at,
        })
    }

    /// Parse a response head from the read buffer into `head`, or replay
    /// it from `heads`; false when it is not complete yet. Consumes the
    /// head.
    fn parse_head(
        &mut self,
        keep: &[HeaderName],
        heads: &Heads,
        head: &mut Head,
    ) -> Result<bool, Failure> {
        let Some(n) = heads.replay_or_parse(&self.rbuf, keep, head)? else {
            return Ok(false);
        };
        self.rbuf.advance(n);
        Ok(true)
    }

    /// Give the read buffer back to the pool when nothing in it is left
    /// to read: the connection holds none while it waits.
    fn release_read_buf(&mut self) {
        if self.rbuf.is_empty() && self.rbuf.capacity() > 0 {
            h1_bufs::give(std::mem::take(&mut self.rbuf));
        }
    }

    /// On a stream that holds the bytes it receives (see
    /// [`Io::poll_read_landed`]), wait for them, holding no read buffer,
    /// and read the answer where they landed when they are all of it: a
    /// head (with the headers in `keep`) that is no interim one, and the
    /// whole body its length (or the request, or the status) says, or a
    /// whole chunked body, no longer than `max_body`, copied out when
    /// `keep_body`. `None`, with nothing read, otherwise (the bytes are
    /// then read into the read buffer as any others, and parsed there).
    /// For an empty read buffer.
    #[inline(always)]
    pub fn poll_plain_answer(
        &mut self,
        cx: &mut Context<'_>,
        heads: &Heads,
        head_request: bool,
        keep: (&[HeaderName], u64, bool),
    ) -> Poll<Result<Option<RawResponse>, Failure>> {
        self.release_read_buf();
        // Made where the bytes are: a poll that finds none (most requests'
        // first) has nothing to drop.
        let mut read = None;
        let landed = self.io.poll_read_landed(cx, &mut |bytes, at| {
            read = plain_answer(bytes, at, heads, head_request, keep);
            if read.is_some() {
                bytes.len()
            } else {
                0
            }
        });
        ready!(landed).map_err(|e| classify_io(&e, Failure::Io))?;
        if read.is_some() {
            self.reached = Reached::Answered;
        }
        Poll::Ready(Ok(read))
    }

    /// Hand the answers that land from now on to `relay` (see
    /// [`Io::relay`]); `None` takes it off. False when none can be set.
    pub fn relay(
        &mut self,
        relay: Option<std::rc::Rc<dyn super::io::Relay>>,
        cx: &Context<'_>,
    ) -> bool {
        (relay.is_none() || self.rbuf.is_empty()) && self.io.relay(relay, cx)
    }

    /// Read more bytes into the read buffer, room for at least `want`;
    /// the end of the stream is a reset (the answer is incomplete). A
    /// plain function returning a `poll_fn`, not an `async fn`: no state
    /// machine of its own around the poll, a level fewer for every read.
    fn read_more(&mut self, want: usize) -> impl Future<Output = Result<(), Failure>> + '_ {
        poll_fn(move |cx| {
            Poll::Ready(match ready!(self.poll_fill(cx, want)) {
                Ok(0) => Err(Failure::Reset),
                Ok(_) => Ok(()),
                Err(e) => Err(classify_io(&e, Failure::Io)),
            })
        })
    }

    /// One read into the read buffer, room for at least `want`; 0 at the
    /// end of the stream, the I/O error as it came.
    fn fill_io(&mut self, want: usize) -> impl Future<Output = io::Result<usize>> + '_ {
        poll_fn(move |cx| self.poll_fill(cx, want))
    }

    /// [`Conn::fill_io`], polled. With nothing buffered, it holds no
    /// buffer while it waits: it gives back the one it has, waits for the
    /// stream to have bytes, and takes one from the pool.
    fn poll_fill(&mut self, cx: &mut Context<'_>, want: usize) -> Poll<io::Result<usize>> {
        if self.rbuf.is_empty() {
            self.release_read_buf();
            ready!(self.io.poll_read_ready(cx))?;
            self.rbuf = h1_bufs::take();
        }
        if self.rbuf.capacity() - self.rbuf.len() < want.min(READ_CHUNK) {
            self.rbuf.reserve(want.max(INITIAL));
        }
        let mut buf = ReadBuf::uninit(self.rbuf.spare_capacity_mut());
        let start = buf.filled().as_ptr();
        ready!(Pin::new(&mut self.io).poll_read(cx, &mut buf))?;
        // As tokio's `read_buf` checks: the reader filled this buffer, not
        // one it swapped in.
        assert_eq!(start, buf.filled().as_ptr(), "a reader swapped its buffer");
        let n = buf.filled().len();
        // SAFETY: `poll_read` initialised the first `n` bytes of the spare
        // capacity (a `ReadBuf` tracks what it filled).
        unsafe { self.rbuf.set_len(self.rbuf.len() + n) };
        Poll::Ready(Ok(n))
    }

    async fn read_length(
        &mut self,
        n: u64,
        max_body: u64,
        keep_body: bool,
    ) -> Result<(Bytes, u64), Failure> {
        if n > max_body {
            return Err(Failure::BodyTooLarge);
        }
        if keep_body {
            let n = usize::try_from(n).map_err(|_| Failure::BodyTooLarge)?;
            while self.rbuf.len() < n {
                let missing = n - self.rbuf.len();
                self.read_more(missing).await?;
            }
            return Ok((self.take_body(n), n as u64));
        }
        self.discard(n).await?;
        Ok((Bytes::new(), n))
    }

    /// The next `n` buffered bytes as a body of their own. A small body
    /// (under 4 KiB or a quarter of the buffer) is copied out, so the
    /// connection keeps reusing its read buffer; a larger one is split off
    /// without a copy.
    fn take_body(&mut self, n: usize) -> Bytes {
        if n < INITIAL.max(self.rbuf.capacity() / 4) {
            let body = h1_bufs::keep(&self.rbuf[..n]);
            bytes::Buf::advance(&mut self.rbuf, n);
            body
        } else {
            self.rbuf.split_to(n).freeze()
        }
    }

    /// Consume `n` body bytes without keeping them.
    async fn discard(&mut self, mut n: u64) -> Result<(), Failure> {
        loop {
            let take = (self.rbuf.len() as u64).min(n);
            if take == self.rbuf.len() as u64 {
                // All of it: cheaper than moving the start past it.
                self.rbuf.clear();
            } else {
                self.rbuf.advance(take as usize);
            }
            n -= take;
            if n == 0 {
                return Ok(());
            }
            self.read_more(READ_CHUNK).await?;
        }
    }

    /// Take `n` body bytes, into `out` when kept.
    async fn take(&mut self, mut n: u64, out: Option<&mut BytesMut>) -> Result<(), Failure> {
        let Some(out) = out else {
            return self.discard(n).await;
        };
        loop {
            let take = (self.rbuf.len() as u64).min(n) as usize;
            out.extend_from_slice(&self.rbuf[..take]);
            self.rbuf.advance(take);
            n -= take as u64;
            if n == 0 {
                return Ok(());
            }
            self.read_more(READ_CHUNK).await?;
        }
    }

    /// Wait for a whole CRLF-terminated line at the start of the read
    /// buffer; returns its length without the CRLF (the caller consumes it).
    async fn line(&mut self) -> Result<usize, Failure> {
        let mut from = 0;
        loop {
            if let Some(i) = crlf(&self.rbuf[from..]) {
                return Ok(from + i);
            }
            if self.rbuf.len() > MAX_LINE {
                return Err(Failure::Protocol);
            }
            from = self.rbuf.len().saturating_sub(1);
            self.read_more(INITIAL).await?;
        }
    }

    async fn read_chunked(
        &mut self,
        max_body: u64,
        keep_body: bool,
    ) -> Result<(Bytes, u64), Failure> {
        let mut kept = keep_body.then(BytesMut::new);
        let mut len: u64 = 0;
        loop {
            let n = self.line().await?;
            let size = chunk_size(&self.rbuf[..n]).ok_or(Failure::Protocol)?;
            self.rbuf.advance(n + 2);
            if size == 0 {
                break;
            }
            len = len.checked_add(size).ok_or(Failure::Protocol)?;
            if len > max_body {
                return Err(Failure::BodyTooLarge);
            }
            self.take(size, kept.as_mut()).await?;
            while self.rbuf.len() < 2 {
                self.read_more(2).await?;
            }
            if &self.rbuf[..2] != b"\r\n" {
                return Err(Failure::Protocol);
            }
            self.rbuf.advance(2);
        }
        // Trailers, ignored, up to the empty line.
        loop {
            let n = self.line().await?;
            self.rbuf.advance(n + 2);
            if n == 0 {
                break;
            }
        }
        Ok((kept.map_or_else(Bytes::new, BytesMut::freeze), len))
    }

    async fn read_to_close(
        &mut self,
        max_body: u64,
        keep_body: bool,
    ) -> Result<(Bytes, u64), Failure> {
        let mut kept = keep_body.then(BytesMut::new);
        let mut len: u64 = 0;
        loop {
            len += self.rbuf.len() as u64;
            if len > max_body {
                return Err(Failure::BodyTooLarge);
            }
            match &mut kept {
                Some(k) if k.is_empty() => *k = self.rbuf.split(),
                Some(k) => k.extend_from_slice(&self.rbuf.split()),
                None => self.rbuf.clear(),
            }
            match self.fill_io(READ_CHUNK).await {
                Ok(0) => break,
                Ok(_) => {}
                // TLS without close_notify (rustls reports an unexpected
                // end): the end of a close-delimited body. A reset is not.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                Err(e) => return Err(classify_io(&e, Failure::Io)),
            }
        }
        Ok((kept.map_or_else(Bytes::new, BytesMut::freeze), len))
    }
}

/// What a response head's headers say about its body and connection.
#[derive(Default)]
struct Facts {
    length: Option<u64>,
    chunked: bool,
    close: bool,
    keep_alive_token: bool,
}

impl Facts {
    /// Take in one header: a malformed or conflicting `Content-Length` is
    /// a protocol failure.
    fn see(&mut self, name: &[u8], value: &[u8]) -> Result<(), Failure> {
        // The length first: most names are told apart without comparing.
        match name.len() {
            14 if name == b"Content-Length" || name.eq_ignore_ascii_case(b"content-length") => {
                let v = parse_decimal(value).ok_or(Failure::Protocol)?;
                if self.length.is_some_and(|l| l != v) {
                    return Err(Failure::Protocol);
                }
                self.length = Some(v);
            }
            17 if name == b"Transfer-Encoding"
                || name.eq_ignore_ascii_case(b"transfer-encoding") =>
            {
                // Chunked when it is the last coding.
                self.chunked = value
                    .rsplit(|&b| b == b',')
                    .next()
                    .is_some_and(|t| t.trim_ascii().eq_ignore_ascii_case(b"chunked"));
            }
            10 if name == b"Connection" || name.eq_ignore_ascii_case(b"connection") => {
                if value == b"keep-alive" {
                    self.keep_alive_token = true;
                    return Ok(());
                }
                for token in value.split(|&b| b == b',') {
                    let token = token.trim_ascii();
                    self.close |= token.eq_ignore_ascii_case(b"close");
                    self.keep_alive_token |= token.eq_ignore_ascii_case(b"keep-alive");
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// The body's framing, and whether the connection stays open.
    fn framing(&self, http11: bool) -> (Framing, bool) {
        let keep_alive = !self.close && (http11 || self.keep_alive_token);
        let framing = if self.chunked {
            Framing::Chunked
        } else if let Some(l) = self.length {
            Framing::Length(l)
        } else {
            Framing::Close
        };
        (framing, keep_alive)
    }
}

fn parse_decimal(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || v.len() > 19 {
        return None;
    }
    v.iter().try_fold(0u64, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + u64::from(b - b'0'))
    })
}

/// Where the first CRLF in `buf` starts.
fn crlf(buf: &[u8]) -> Option<usize> {
    buf.windows(2).position(|w| w == b"\r\n")
}

/// The size a chunk-size line (without its CRLF) gives, its extensions
/// after `;` ignored.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let size = line.split(|&b| b == b';').next().unwrap_or(&[]);
    parse_hex(size.trim_ascii())
}

fn parse_hex(v: &[u8]) -> Option<u64> {
    if v.is_empty() || v.len() > 15 {
        return None;
    }
    v.iter().try_fold(0u64, |n, &b| {
        let d = (b as char).to_digit(16)?;
        Some(n * 16 + u64::from(d))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    /// A server that reads one request head (or not, for pipelined tests),
    /// writes `parts` one write each (with a pause between), then closes
    /// when `close` or waits.
    async fn serve(parts: Vec<Vec<u8>>, close: bool) -> Conn<TcpStream> {
        Conn::new(serve_raw(parts, close).await)
    }

    /// [`serve`]'s server, and the client's stream to it.
    async fn serve_raw(parts: Vec<Vec<u8>>, close: bool) -> TcpStream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            s.set_nodelay(true).unwrap();
            let mut buf = vec![0u8; 4096];
            let _ = s.read(&mut buf).await;
            for p in parts {
                s.write_all(&p).await.unwrap();
                s.flush().await.unwrap();
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            if !close {
                let _ = s.read(&mut buf).await;
                tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            }
        });
        let s = TcpStream::connect(addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        s
    }

    /// Whether the idle connection is closed, looked at once.
    async fn closed(c: &mut Conn<TcpStream>) -> bool {
        poll_fn(|cx| Poll::Ready(c.is_closed(cx))).await
    }

    async fn get(c: &mut Conn<TcpStream>, head: bool, max: u64) -> Result<RawResponse, Failure> {
        let method = if head { "HEAD" } else { "GET" };
        let buf = c.request_buf();
        buf.extend_from_slice(format!("{method} / HTTP/1.1\r\nhost: x\r\n\r\n").as_bytes());
        c.exchange(b"", head, max, true, &[], &Heads::default())
            .await
    }

    /// A close-delimited body cut by a TCP reset is a reset, not a body.
    #[tokio::test]
    async fn a_reset_is_not_the_end_of_a_close_delimited_body() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let _ = s.read(&mut buf).await;
            s.write_all(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npart")
                .await
                .unwrap();
            s.flush().await.unwrap();
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            // Linger 0: closing sends RST, not FIN.
            s.set_zero_linger().unwrap();
            drop(s);
        });
        let mut c = Conn::new(TcpStream::connect(addr).await.unwrap());
        assert_eq!(get(&mut c, false, 100).await.unwrap_err(), Failure::Reset);
    }

    fn one(s: &str) -> Vec<Vec<u8>> {
        vec![s.as_bytes().to_vec()]
    }

    #[tokio::test]
    async fn content_length_body() {
        let mut c = serve(
            one("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\n\r\nhello"),
            false,
        )
        .await;
        let keep = [HeaderName::from_static("x-a")];
        c.request_buf().extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
        let a = c
            .exchange(b"", false, 100, true, &keep, &Heads::default())
            .await
            .unwrap();
        assert_eq!((a.status, &a.body[..], a.body_len), (200, &b"hello"[..], 5));
        assert!(a.keep_alive);
        assert_eq!(
            a.headers,
            vec![(keep[0].clone(), HeaderValue::from_static("1"))]
        );
    }

    /// Found by `fuzz_h1_response`: `HTTP/1.1 099` was taken as an answer
    /// with status 99 (HTTP/2 already refused it).
    #[tokio::test]
    async fn a_status_below_100_is_a_malformed_response() {
        let mut c = serve(one("HTTP/1.1 099 Low\r\nContent-Length: 0\r\n\r\n"), false).await;
        assert_eq!(
            get(&mut c, false, 100).await.unwrap_err(),
            Failure::Protocol
        );
    }

    #[tokio::test]
    async fn content_length_body_counted_only() {
        let mut c = serve(
            vec![
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello".to_vec(),
                b"world".to_vec(),
            ],
            false,
        )
        .await;
        c.request_buf().extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
        let a = c
            .exchange(b"", false, 100, false, &[], &Heads::default())
            .await
            .unwrap();
        assert_eq!((a.body_len, a.body.len()), (10, 0));
    }

    /// A stream that knows when its bytes arrived (as the ring does).
    struct Stamped(TcpStream, Instant);

    impl tokio::io::AsyncRead for Stamped {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            Pin::new(&mut self.0).poll_read(cx, buf)
        }
    }

    /// A test stream's writes, by its TCP stream's.
    macro_rules! write_through {
        ($t:ty, $f:tt) => {
            impl tokio::io::AsyncWrite for $t {
                fn poll_write(
                    mut self: Pin<&mut Self>,
                    cx: &mut Context<'_>,
                    buf: &[u8],
                ) -> Poll<io::Result<usize>> {
                    Pin::new(&mut self.$f).poll_write(cx, buf)
                }
                fn poll_flush(
                    mut self: Pin<&mut Self>,
                    cx: &mut Context<'_>,
                ) -> Poll<io::Result<()>> {
                    Pin::new(&mut self.$f).poll_flush(cx)
                }
                fn poll_shutdown(
                    mut self: Pin<&mut Self>,
                    cx: &mut Context<'_>,
                ) -> Poll<io::Result<()>> {
                    Pin::new(&mut self.$f).poll_shutdown(cx)
                }
            }
        };
    }

    write_through!(Stamped, 0);

    impl Io for Stamped {
        fn read_at(&self) -> Option<Instant> {
            Some(self.1)
        }
    }

    /// Where the stream knows when its bytes arrived, the answer's head and
    /// end are that time, not a clock read by the codec as it got to them
    /// (whole in one read, or its body in later reads); where it does not,
    /// an answer read in parts leaves its end to the caller's clock.
    #[tokio::test]
    async fn an_answer_is_timed_by_when_its_bytes_arrived() {
        let parts = || {
            vec![
                b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello".to_vec(),
                b"world".to_vec(),
            ]
        };
        let whole = || one("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello");
        for (answer, split) in [(whole(), false), (parts(), true)] {
            let plain = serve(answer.clone(), false).await;
            let arrived = Instant::now() - std::time::Duration::from_secs(1);
            let mut c = Conn::new(Stamped(plain.io, arrived));
            c.request_buf().extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
            let a = c
                .exchange(b"", false, 100, false, &[], &Heads::default())
                .await
                .unwrap();
            assert_eq!(
                (a.head_at, a.done_at),
                (arrived, Some(arrived)),
                "split {split}"
            );

            let before = Instant::now();
            let mut c = serve(answer, false).await;
            let a = get(&mut c, false, 100).await.unwrap();
            assert!(a.head_at >= before, "split {split}");
            assert_eq!(a.done_at.is_none(), split, "split {split}");
        }
    }

    /// A stream that holds what it received in memory of its own and
    /// lends it to the reader where it lies (as the ring does): each wait
    /// for readiness receives what has arrived, as one receive of the
    /// ring's lands.
    struct Landing {
        tcp: TcpStream,
        landed: Vec<u8>,
        at: usize,
        end: bool,
        /// Bytes read where they landed.
        taken: usize,
    }

    impl Landing {
        fn new(tcp: TcpStream) -> Landing {
            Landing {
                tcp,
                landed: Vec::new(),
                at: 0,
                end: false,
                taken: 0,
            }
        }
    }

    impl tokio::io::AsyncRead for Landing {
        fn poll_read(
            mut self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            if self.at == self.landed.len() {
                if self.end {
                    return Poll::Ready(Ok(()));
                }
                return Pin::new(&mut self.tcp).poll_read(cx, buf);
            }
            let n = buf.remaining().min(self.landed.len() - self.at);
            buf.put_slice(&self.landed[self.at..self.at + n]);
            self.at += n;
            Poll::Ready(Ok(()))
        }
    }

    write_through!(Landing, tcp);

    impl Io for Landing {
        fn poll_read_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            if self.at < self.landed.len() || self.end {
                return Poll::Ready(Ok(()));
            }
            let mut room = [0u8; 4096];
            let mut buf = ReadBuf::new(&mut room);
            ready!(tokio::io::AsyncRead::poll_read(
                Pin::new(&mut self.tcp),
                cx,
                &mut buf
            ))?;
            self.landed = buf.filled().to_vec();
            self.at = 0;
            self.end = self.landed.is_empty();
            Poll::Ready(Ok(()))
        }

        fn poll_read_landed(
            &mut self,
            cx: &mut Context<'_>,
            read: &mut dyn FnMut(&[u8], Option<Instant>) -> usize,
        ) -> Poll<io::Result<bool>> {
            ready!(self.poll_read_ready(cx))?;
            if self.at == self.landed.len() {
                return Poll::Ready(Ok(false));
            }
            let n = read(&self.landed[self.at..], None);
            self.at += n;
            self.taken += n;
            Poll::Ready(Ok(true))
        }

        fn lends(&self) -> bool {
            true
        }
    }

    /// An answer read where it landed is the answer the copying read
    /// makes of the same bytes, whatever they are: whole or in parts,
    /// interim heads, no body, bodies too large, pipelined answers,
    /// malformed ones, ends mid-answer, bodies kept or only counted.
    #[tokio::test]
    async fn answers_read_where_they_landed_are_the_answers_a_copy_reads() {
        let cl = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        let cases: Vec<(&str, Vec<&str>, bool, bool)> = vec![
            // (what, parts, HEAD request, the server closes)
            ("whole", vec![cl], false, false),
            ("split body", vec!["HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", "world"], false, false),
            ("split head", vec!["HTTP/1.1 200 OK\r\nContent-", "Length: 2\r\n\r\nok"], false, false),
            ("interim, one read", vec!["HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"], false, false),
            ("interim, two reads", vec!["HTTP/1.1 100 Continue\r\n\r\n", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"], false, false),
            ("head", vec!["HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n"], true, false),
            ("204", vec!["HTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\n"], false, false),
            ("too large", vec!["HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world"], false, false),
            ("pipelined", vec!["HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nbc"], false, false),
            ("chunked", vec!["HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n"], false, false),
            ("close-delimited", vec!["HTTP/1.1 200 OK\r\n\r\nsome", " more"], false, true),
            ("connection close", vec!["HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\na"], false, true),
            ("malformed", vec!["HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"], false, false),
            ("switching", vec!["HTTP/1.1 101 Switching Protocols\r\n\r\n"], false, false),
            ("end mid-body", vec!["HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello"], false, true),
        ];
        type Got = Vec<Result<(u16, Vec<u8>, u64, bool), Failure>>;
        /// The answers to `n` requests, up to the first failure.
        async fn answers<S: Io>(c: &mut Conn<S>, n: usize, head: bool, keep: bool) -> Got {
            let (mut got, heads) = (Vec::new(), Heads::default());
            for _ in 0..n {
                let method = if head { "HEAD" } else { "GET" };
                let buf = c.request_buf();
                buf.extend_from_slice(format!("{method} / HTTP/1.1\r\n\r\n").as_bytes());
                let a = c.exchange(b"", head, 10, keep, &[], &heads).await;
                let failed = a.is_err();
                got.push(a.map(|a| (a.status, a.body.to_vec(), a.body_len, a.keep_alive)));
                if failed {
                    break;
                }
            }
            got
        }
        for (what, parts, head, close) in cases {
            for keep in [true, false] {
                let parts: Vec<Vec<u8>> = parts.iter().map(|p| p.as_bytes().to_vec()).collect();
                let mut copied = serve(parts.clone(), close).await;
                let mut landed = Conn::new(Landing::new(serve_raw(parts, close).await));
                // The pipelined answers are read by two requests.
                let n = if what == "pipelined" { 2 } else { 1 };
                let want = answers(&mut copied, n, head, keep).await;
                let got = answers(&mut landed, n, head, keep).await;
                assert_eq!(got, want, "{what}, keep {keep}");
                if matches!(what, "whole" | "head" | "204") {
                    assert!(landed.io.taken > 0, "{what}: not read where it landed");
                }
            }
        }
    }

    #[tokio::test]
    async fn chunked_split_at_every_byte() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: t\r\n\r\n";
        for at in 1..raw.len() {
            for keep in [true, false] {
                let mut c = serve(vec![raw[..at].to_vec(), raw[at..].to_vec()], false).await;
                c.request_buf().extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
                let a = c
                    .exchange(b"", false, 100, keep, &[], &Heads::default())
                    .await
                    .unwrap();
                assert_eq!(a.body_len, 11, "split at {at}");
                if keep {
                    assert_eq!(&a.body[..], b"hello world", "split at {at}");
                }
                assert!(a.keep_alive);
                assert!(c.rbuf.is_empty());
            }
        }
    }

    /// [`chunked_split_at_every_byte`]'s answer.
    const CHUNKED: &[u8] = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: t\r\n\r\n";

    /// [`plain_answer`] of `bytes`, at most `max_body` bytes of body,
    /// kept or not.
    fn in_place(bytes: &[u8], max_body: u64, keep_body: bool) -> Option<RawResponse> {
        plain_answer(
            bytes,
            None,
            &Heads::default(),
            false,
            (&[], max_body, keep_body),
        )
    }

    #[test]
    fn a_whole_chunked_answer_is_read_where_it_landed() {
        for keep in [true, false] {
            let a = in_place(CHUNKED, 11, keep).expect("whole");
            assert_eq!((a.status, a.body_len, a.keep_alive), (200, 11, true));
            assert_eq!(&a.body[..], if keep { &b"hello world"[..] } else { b"" });
        }
        let one = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n";
        let a = in_place(one, 100, true).expect("whole");
        assert_eq!((a.body_len, &a.body[..]), (3, &b"abc"[..]));
    }

    #[test]
    fn a_chunked_answer_not_whole_and_alone_where_it_landed_is_read_as_any_other() {
        // Every part of it short of the whole.
        for at in 0..CHUNKED.len() {
            assert!(in_place(&CHUNKED[..at], 100, true).is_none(), "{at} bytes");
        }
        // Followed by other bytes.
        let mut more = CHUNKED.to_vec();
        more.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        assert!(in_place(&more, 100, true).is_none());
        // Longer than the most kept.
        assert!(in_place(CHUNKED, 10, false).is_none());
        // Malformed: a size that is no number, a chunk longer than its
        // size, a line longer than any accepted.
        let head = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        let long = format!("3;{}\r\nabc\r\n0\r\n\r\n", "x".repeat(MAX_LINE));
        for body in ["zz\r\nabc\r\n0\r\n\r\n", "3\r\nabcd\r\n0\r\n\r\n", &long] {
            assert!(
                in_place(format!("{head}{body}").as_bytes(), u64::MAX, true).is_none(),
                "{body}"
            );
        }
    }

    #[tokio::test]
    async fn pipelined_keep_alive() {
        let mut c = serve(
            one("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nbc"),
            false,
        )
        .await;
        let a = get(&mut c, false, 100).await.unwrap();
        assert_eq!((a.status, &a.body[..]), (200, &b"a"[..]));
        assert!(!closed(&mut c).await);
        let b = get(&mut c, false, 100).await.unwrap();
        assert_eq!((b.status, &b.body[..]), (201, &b"bc"[..]));
        assert!(b.keep_alive);
    }

    #[tokio::test]
    async fn connection_close_and_http10() {
        let mut c = serve(
            one("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\na"),
            true,
        )
        .await;
        assert!(!get(&mut c, false, 100).await.unwrap().keep_alive);
        let mut c = serve(one("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\na"), false).await;
        assert!(!get(&mut c, false, 100).await.unwrap().keep_alive);
        let mut c = serve(
            one("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\na"),
            false,
        )
        .await;
        assert!(get(&mut c, false, 100).await.unwrap().keep_alive);
    }

    #[tokio::test]
    async fn close_delimited_body() {
        let mut c = serve(
            vec![b"HTTP/1.1 200 OK\r\n\r\nsome".to_vec(), b" more".to_vec()],
            true,
        )
        .await;
        let a = get(&mut c, false, 100).await.unwrap();
        assert_eq!(&a.body[..], b"some more");
        assert!(!a.keep_alive);
        assert!(closed(&mut c).await);
    }

    #[tokio::test]
    async fn continue_before_the_answer() {
        let mut c = serve(
            vec![
                b"HTTP/1.1 100 Continue\r\n\r\n".to_vec(),
                b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok".to_vec(),
            ],
            false,
        )
        .await;
        let a = get(&mut c, false, 100).await.unwrap();
        assert_eq!((a.status, &a.body[..]), (200, &b"ok"[..]));
    }

    #[tokio::test]
    async fn body_over_max() {
        let mut c = serve(
            one("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello world"),
            false,
        )
        .await;
        assert_eq!(
            get(&mut c, false, 10).await.unwrap_err(),
            Failure::BodyTooLarge
        );
        let mut c = serve(
            one("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n5\r\nworld\r\n0\r\n\r\n"),
            false,
        )
        .await;
        assert_eq!(
            get(&mut c, false, 10).await.unwrap_err(),
            Failure::BodyTooLarge
        );
        let mut c = serve(one("HTTP/1.1 200 OK\r\n\r\nhello world"), true).await;
        assert_eq!(
            get(&mut c, false, 10).await.unwrap_err(),
            Failure::BodyTooLarge
        );
    }

    #[tokio::test]
    async fn malformed_status_line() {
        let mut c = serve(one("HTTP/1.1 OK 200\r\n\r\n"), false).await;
        assert_eq!(get(&mut c, false, 10).await.unwrap_err(), Failure::Protocol);
        let mut c = serve(one("HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"), false).await;
        assert_eq!(get(&mut c, false, 10).await.unwrap_err(), Failure::Protocol);
    }

    #[tokio::test]
    async fn eof_mid_body_and_before_head() {
        let mut c = serve(
            one("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello"),
            true,
        )
        .await;
        assert_eq!(get(&mut c, false, 100).await.unwrap_err(), Failure::Reset);
        let mut c = serve(one("HTTP/1.1 200 OK\r\nContent-"), true).await;
        assert_eq!(get(&mut c, false, 100).await.unwrap_err(), Failure::Reset);
        let mut c = serve(
            one("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel"),
            true,
        )
        .await;
        assert_eq!(get(&mut c, false, 100).await.unwrap_err(), Failure::Reset);
    }

    #[tokio::test]
    async fn head_and_204_have_no_body() {
        let mut c = serve(
            one("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nHTTP/1.1 204 No Content\r\nContent-Length: 3\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz"),
            false,
        )
        .await;
        let a = get(&mut c, true, 100).await.unwrap();
        assert_eq!((a.status, a.body_len), (200, 0));
        let b = get(&mut c, false, 100).await.unwrap();
        assert_eq!((b.status, b.body_len), (204, 0));
        let z = get(&mut c, false, 100).await.unwrap();
        assert_eq!((z.status, &z.body[..]), (200, &b"z"[..]));
    }

    /// Connections waiting on their answers hold no read buffer, and none
    /// between answers: a buffer is taken from the thread's pool when an
    /// answer's bytes are there and given back once it is read. Nor do they
    /// keep a write buffer past the request's write. On `wrap`'s streams
    /// (plain TCP on tokio, or on the ring).
    async fn waiting_connections_hold_no_read_buffer(wrap: impl Fn(TcpStream) -> Box<dyn Io>) {
        const N: usize = 4;
        const ANSWER: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
        const REQUEST: &[u8] = b"GET / HTTP/1.1\r\n\r\n";
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut conns = Vec::new();
        let mut servers = Vec::new();
        for _ in 0..N {
            let client = TcpStream::connect(l.local_addr().unwrap()).await.unwrap();
            conns.push(Conn::new(wrap(client)));
            servers.push(l.accept().await.unwrap().0);
        }
        // One exchange each, answered at once.
        let mut request = [0; REQUEST.len()];
        for (c, s) in conns.iter_mut().zip(&mut servers) {
            s.write_all(ANSWER).await.unwrap();
            c.request_buf().extend_from_slice(REQUEST);
            let a = c
                .exchange(b"", false, 100, true, &[], &Heads::default())
                .await
                .unwrap();
            assert_eq!((a.status, &a.body[..]), (200, &b"ok"[..]));
            s.read_exact(&mut request).await.unwrap();
            assert_eq!(c.rbuf.capacity(), 0, "a buffer kept between answers");
            assert_eq!(c.wbuf.capacity(), 0, "a buffer kept after the request");
        }
        let pooled = h1_bufs::pooled();
        assert!(pooled > 0, "no buffer given back");
        // Then all at once, the answers held back until every request came.
        let heads = &Heads::default();
        let exchanges = futures_util::future::join_all(conns.iter_mut().map(|c| async move {
            c.request_buf().extend_from_slice(REQUEST);
            c.exchange(b"", false, 100, true, &[], heads).await
        }));
        let serve = async {
            for s in &mut servers {
                s.read_exact(&mut request).await.unwrap();
            }
            // Each connection went on from its write to wait for the answer
            // in the same turn that the server's read saw: they all wait now.
            assert_eq!(
                h1_bufs::pooled(),
                pooled,
                "a waiting connection took a buffer"
            );
            for s in &mut servers {
                s.write_all(ANSWER).await.unwrap();
            }
        };
        let (answers, ()) = tokio::join!(exchanges, serve);
        for a in answers {
            assert_eq!(&a.unwrap().body[..], b"ok");
        }
        for c in &conns {
            assert_eq!(c.rbuf.capacity(), 0, "a buffer kept after the answer");
        }
        assert_eq!(h1_bufs::pooled(), pooled, "a buffer was not given back");
    }

    #[tokio::test]
    async fn waiting_connections_hold_no_read_buffer_on_tokio() {
        waiting_connections_hold_no_read_buffer(|s| Box::new(s)).await;
    }

    #[tokio::test]
    async fn waiting_connections_hold_no_read_buffer_on_the_ring() {
        if let Err(e) = super::super::uring::probe() {
            eprintln!("skipped: io_uring is unavailable here ({e})");
            return;
        }
        waiting_connections_hold_no_read_buffer(|s| super::super::uring::Stream::wrap(s).unwrap())
            .await;
    }

    /// The in-memory stream of the parse tests: reads take a buffer at once.
    impl Io for tokio::io::DuplexStream {}

    #[test]
    fn numbers() {
        assert_eq!(parse_decimal(b" 12 "), Some(12));
        assert_eq!(parse_decimal(b"1a"), None);
        assert_eq!(parse_hex(b"fF"), Some(255));
        assert_eq!(parse_hex(b""), None);
    }

    /// A head replayed from one parsed by any connection of the endpoint
    /// (the `Heads` shared) says exactly what parsing it says, and leaves the same
    /// bytes after it: over a long mixed sequence of heads (the same one
    /// again, a new `Date`, other framings, a cut head, a broken one, other
    /// headers kept, more servers than the thread keeps heads of), each
    /// followed by body bytes, read by three connections in turn, against a
    /// parse afresh of every head.
    #[test]
    fn a_replayed_head_says_what_a_parse_says() {
        let heads: &[&[u8]] = &[
            b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Tue, 24 Nov 2026 10:00:00 GMT\r\nX-Id: 1\r\nContent-Length: 4\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Tue, 24 Nov 2026 10:00:01 GMT\r\nContent-Length: 4\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Tue, 24 Nov 2026 10:00:01 GMT\r\nContent-Length: 12\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Id: 7\r\n\r\n",
            b"HTTP/1.1 404 Not Found\r\nConnection: close\r\nX-Id: 8\r\n\r\n",
            b"HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Tue, 24 Nov 2026 10:00:01 GMT\r\nContent-Len",
            b"HTTP/1.1 200 OK\r\nServer: nginx\r\n",
        ];
        let keeps = [Vec::new(), vec![HeaderName::from_static("x-id")]];
        let kept = Heads::default();
        let mut replaying: Vec<_> = (0..3).map(|_| Conn::new(tokio::io::duplex(64).0)).collect();
        let mut seed = 7u64;
        let mut next = |n: usize| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        let mut replays = 0;
        for round in 0..2000 {
            // Mostly the same head again, as a server sends it.
            let head = heads[if next(3) == 0 { next(heads.len()) } else { 0 }];
            let keep = &keeps[usize::from(next(10) == 0)];
            let mut bytes = head.to_vec();
            bytes.extend_from_slice(&b"body"[..next(5)]);
            let mut fresh = BytesMut::from(&bytes[..]);
            let want = parse_new_head(&fresh, &mut Vec::new(), keep).map(|head| {
                head.map(|(head, n)| {
                    fresh.advance(n);
                    head
                })
            });
            let c = &mut replaying[round % 3];
            c.rbuf.clear();
            c.rbuf.extend_from_slice(&bytes);
            // A replay does not parse: the fields stay as they are put.
            kept.0.borrow_mut().fields.clear();
            let mut head = Head::default();
            let got = c
                .parse_head(keep, &kept, &mut head)
                .map(|parsed| parsed.then_some(head));
            if kept.0.borrow().fields.is_empty() && matches!(got, Ok(Some(_))) {
                replays += 1;
            }
            assert_eq!(got, want, "round {round}");
            assert_eq!(c.rbuf, fresh, "round {round}");
        }
        assert!(replays > 500, "{replays} replays");
    }
}
