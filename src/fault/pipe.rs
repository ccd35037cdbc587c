//! One direction of a proxied connection: a reader that takes bytes off
//! one socket (slow-read, black hole, latency stamps, HTTP framing) and a
//! writer that puts them on the other (bandwidth, slicer, limit, reset
//! after N bytes). Between them a queue of stamped chunks, so latency
//! delays each chunk by the setting and never adds up over a long
//! transfer.

use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc::{Receiver, Sender};
use tokio::time::{sleep, sleep_until};

use super::conn::Conn;
use super::http::{self, Requests, UpstreamPiece};
use super::spec::{Action, Dir, ResetAt};

/// How a direction (or a connection) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The sending side closed; the close was passed on.
    Eof,
    /// Close both sockets (a fault, or a socket error).
    Close,
    /// Close the connection to versus with a TCP RST.
    Reset,
}

/// What the reader hands the writer.
pub enum Msg {
    /// Bytes to write, not before `at` (`None`: at once).
    Data(Option<Instant>, Bytes),
    /// The sender closed: shut down the write side.
    Eof,
}

/// Size of a read.
const READ: usize = 64 * 1024;

/// Read `from` (data flowing `way`) into `to`; in HTTP mode (`answers`
/// given: the other direction's queue), frame requests and answer or
/// abort those the HTTP faults pick.
pub async fn read<R: AsyncRead + Unpin>(
    from: &mut R,
    to: &Sender<Msg>,
    conn: &Conn<'_>,
    way: Dir,
    answers: Option<&Sender<Msg>>,
) -> End {
    let mut buf = BytesMut::with_capacity(READ);
    let mut requests = answers.map(|_| Requests::new());
    let mut parts = Vec::new();
    let mut last = Instant::now();
    let mut drawn = Duration::ZERO;
    // A black hole with a time limit: when the connection is closed.
    let mut hole_closes: Option<Instant> = None;
    loop {
        let slow = conn.find(way, |a| match a {
            Action::SlowRead { bytes, every } => Some((*bytes, *every)),
            _ => None,
        });
        let cap = slow.map_or(READ, |(_, (b, _))| (b as usize).clamp(1, READ));
        buf.reserve(cap);
        let mut room = (&mut buf).limit(cap);
        let read = from.read_buf(&mut room);
        let n = match hole_closes {
            Some(at) => match tokio::time::timeout_at(at.into(), read).await {
                Ok(r) => r,
                Err(_) => return End::Close,
            },
            None => read.await,
        };
        let n = match n {
            Ok(0) => {
                if let Some((i, d)) = conn.find(way, |a| match a {
                    Action::SlowClose(d) => Some(*d),
                    _ => None,
                }) {
                    conn.acted(i);
                    sleep(d).await;
                }
                let _ = to.send(Msg::Eof).await;
                return End::Eof;
            }
            Ok(n) => n,
            Err(_) => return End::Close,
        };
        if let Some((i, close)) = conn.find(way, |a| match a {
            Action::Timeout(close) => Some(*close),
            _ => None,
        }) {
            conn.acted(i);
            if let (Some(d), None) = (close, hole_closes) {
                hole_closes = Some(Instant::now() + d);
            }
            continue;
        }
        let at = match conn.find(way, |a| match a {
            Action::Latency { delay, jitter } => Some((*delay, *jitter)),
            _ => None,
        }) {
            Some((i, (delay, jitter))) => {
                conn.acted(i);
                let now = Instant::now();
                // One draw per burst: a chunk that comes while the last is
                // still held keeps its delay (two draws would make the
                // burst wait for the larger). Never before an earlier
                // chunk: order is kept.
                if last <= now {
                    drawn = spread(delay, jitter);
                }
                last = last.max(now + drawn);
                // Nothing to wait for (`latency 0ms`): as without latency.
                (last > now).then_some(last)
            }
            None => None,
        };
        // A chunk that goes straight out (no latency, nothing queued
        // before it) is split off the read buffer, no copy: the writer
        // drops it soon and the buffer is reused. One that will wait is
        // copied, so it does not hold a whole read buffer meanwhile.
        let data = if at.is_none() && to.capacity() == to.max_capacity() {
            buf.split().freeze()
        } else {
            let data = Bytes::copy_from_slice(&buf);
            buf.clear();
            data
        };
        match (&mut requests, answers) {
            (Some(requests), Some(answers)) => {
                requests.feed(&data, &mut || http::decide(conn), &mut parts);
                for part in parts.drain(..) {
                    let sent = match part {
                        UpstreamPiece::Forward(b) => to.send(Msg::Data(at, b)).await,
                        UpstreamPiece::Answer(b) => answers.send(Msg::Data(None, b)).await,
                        UpstreamPiece::Abort => return End::Reset,
                    };
                    if sent.is_err() {
                        return End::Close;
                    }
                }
            }
            _ => {
                if to.send(Msg::Data(at, data)).await.is_err() {
                    return End::Close;
                }
            }
        }
        if let Some((i, (_, every))) = slow {
            conn.acted(i);
            // A full read: more is waiting, so wait first. A short one
            // took what there was; the next read waits for new data.
            if n == cap {
                sleep(every).await;
            }
        }
    }
}

/// `delay` ± a uniform draw within `jitter`, never below zero.
fn spread(delay: Duration, jitter: Duration) -> Duration {
    if jitter.is_zero() {
        return delay;
    }
    let j = jitter.as_nanos() as f64;
    let d = delay.as_nanos() as f64 + (fastrand::f64() * 2.0 - 1.0) * j;
    Duration::from_nanos(d.max(0.0) as u64)
}

/// The bandwidth budget of one direction: `bytes` per period, the first
/// at once; a new burst starts a new period.
struct Budget {
    left: u64,
    period_ends: Option<Instant>,
}

impl Budget {
    /// Wait until some of the budget is left; how much may be sent now.
    async fn take(&mut self, bytes: u64, per: Duration, want: u64) -> u64 {
        let now = Instant::now();
        match self.period_ends {
            Some(end) if now < end => {
                if self.left == 0 {
                    sleep_until(end.into()).await;
                    self.left = bytes;
                    self.period_ends = Some(end + per);
                }
            }
            _ => {
                self.left = bytes;
                self.period_ends = Some(now + per);
            }
        }
        let n = want.min(self.left);
        self.left -= n;
        n
    }
}

/// Write what `from` brings to `to` (data flowing `way`).
pub async fn write<W: AsyncWrite + Unpin>(
    to: &mut W,
    from: &mut Receiver<Msg>,
    conn: &Conn<'_>,
    way: Dir,
) -> End {
    let mut passed: u64 = 0;
    let mut budget = Budget {
        left: 0,
        period_ends: None,
    };
    loop {
        // A burst starts when data comes to a direction that had nothing
        // queued: the bandwidth budget starts afresh (per request or
        // answer, as toxy limits each).
        let msg = match from.try_recv() {
            Ok(msg) => msg,
            Err(tokio::sync::mpsc::error::TryRecvError::Empty) => {
                budget.period_ends = None;
                match from.recv().await {
                    Some(msg) => msg,
                    None => return End::Eof,
                }
            }
            Err(tokio::sync::mpsc::error::TryRecvError::Disconnected) => return End::Eof,
        };
        let (at, mut data) = match msg {
            Msg::Eof => {
                let _ = to.shutdown().await;
                return End::Eof;
            }
            Msg::Data(at, data) => (at, data),
        };
        if let Some(at) = at.filter(|at| *at > Instant::now()) {
            sleep_until(at.into()).await;
        }
        while !data.is_empty() {
            let mut n = data.len() as u64;
            let slicer = conn.find(way, |a| match a {
                Action::Slicer { size, delay } => Some((*size, *delay)),
                _ => None,
            });
            if let Some((i, (size, _))) = slicer {
                conn.acted(i);
                n = n.min(size);
            }
            // Limit and reset after N bytes: the bytes left before the cut.
            let cut = conn.find(way, |a| match a {
                Action::Limit(max) => Some((*max, End::Close)),
                Action::Reset(ResetAt::Bytes(max)) => Some((*max, End::Reset)),
                _ => None,
            });
            if let Some((i, (max, end))) = cut {
                if passed >= max {
                    conn.acted(i);
                    return end;
                }
                n = n.min(max - passed);
            }
            if let Some((i, (bytes, per))) = conn.find(way, |a| match a {
                Action::Bandwidth { bytes, per } => Some((*bytes, *per)),
                _ => None,
            }) {
                conn.acted(i);
                n = budget.take(bytes, per, n).await;
            }
            let piece = data.split_to(n as usize);
            if to.write_all(&piece).await.is_err() {
                return End::Close;
            }
            passed += n;
            if let Some((i, (max, end))) = cut {
                if passed >= max {
                    conn.acted(i);
                    return end;
                }
            }
            if let Some((_, (_, delay))) = slicer {
                if !data.is_empty() && !delay.is_zero() {
                    sleep(delay).await;
                }
            }
        }
    }
}

/// Run a direction's reader and writer together: done when the writer is
/// (after the reader's close reached it), or at once when either ends the
/// connection.
pub async fn both(
    read: impl std::future::Future<Output = End>,
    write: impl std::future::Future<Output = End>,
) -> End {
    tokio::pin!(read, write);
    let mut read_done = false;
    loop {
        tokio::select! {
            e = &mut read, if !read_done => match e {
                End::Eof => read_done = true,
                e => return e,
            },
            e = &mut write => return e,
        }
    }
}
