//! The byte stream every transport reads and writes: TCP, TLS, or a
//! stream of the io_uring driver; how an I/O error becomes a failure; and
//! the relay through which the ring hands a connection's answers on as
//! they land. The codecs (`h1`, `h2`, `ws`) and the drivers (`connect`,
//! `uring`) all build on it, and it on none of them.

use std::io;
use std::task::Poll;
use std::time::Instant;

use tokio::net::TcpStream;

use super::{Failure, TlsReason};

/// A byte stream, TCP or TLS.
pub(crate) trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {
    /// Ready when a read would not wait: bytes, the end of the stream or
    /// an error are there to read. A reader waits for this before it takes
    /// a buffer to read into (`h1_bufs`), so a connection waiting on its
    /// answer holds none. By default ready at once: the read waits.
    fn poll_read_ready(&mut self, _cx: &mut std::task::Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    /// Start noticing, while the stream sits idle, that the peer closed it
    /// (or sent something unasked), so that the check before its next use
    /// sees it. By default nothing: tokio's reactor watches every socket.
    fn watch_idle(&mut self) {}

    /// True when nothing has come since the last read, as far as the
    /// stream can know without a system call: a poll for readiness could
    /// only find nothing (and start to watch, where nothing watches yet).
    /// By default false.
    fn quiet(&mut self) -> bool {
        false
    }

    /// When the bytes last read arrived, if the stream knows it better than
    /// a clock read by its reader would: on the ring, the receive ran in
    /// the kernel during the driver's enter, and the answers of one turn
    /// are handled one after another after it (each sending its next
    /// request), so a clock read while handling one would count the
    /// handling of those before it as its latency. By default `None`: the
    /// read itself is the arrival, and the reader reads the clock.
    fn read_at(&self) -> Option<std::time::Instant> {
        None
    }

    /// For a stream that holds the bytes it receives in memory of its own
    /// (the ring's receive buffers): wait as [`Io::poll_read_ready`] does,
    /// then hand the bytes that arrived and were not yet read to `read`,
    /// with when they arrived (as [`Io::read_at`] says); `read` returns how
    /// many of them it used (marked read). True when `read` was handed
    /// bytes; false when the stream holds none, or holds no bytes of its
    /// own at all (its bytes are read by `poll_read`). A reader may so take
    /// an answer that arrived whole where it landed, without copying it
    /// into a buffer of its own first. By default false at once, without
    /// waiting: the read that follows waits.
    fn poll_read_landed(
        &mut self,
        _cx: &mut std::task::Context<'_>,
        _read: &mut dyn FnMut(&[u8], Option<std::time::Instant>) -> usize,
    ) -> Poll<io::Result<bool>> {
        Poll::Ready(Ok(false))
    }

    /// Whether the stream lends the bytes it receives (see
    /// [`Io::poll_read_landed`]), so that an answer can be read where it
    /// landed. By default false.
    fn lends(&self) -> bool {
        false
    }

    /// Hand the answers that land from now on to `relay` (see
    /// [`Relay`]), the task of `cx` woken when it ends;
    /// `None` takes it off. False when the stream has no relays (by
    /// default), or is not in a state to start one.
    fn relay(
        &mut self,
        _relay: Option<std::rc::Rc<dyn Relay>>,
        _cx: &std::task::Context<'_>,
    ) -> bool {
        false
    }
}

impl<T: Io + ?Sized> Io for Box<T> {
    fn poll_read_ready(&mut self, cx: &mut std::task::Context<'_>) -> Poll<io::Result<()>> {
        (**self).poll_read_ready(cx)
    }

    fn watch_idle(&mut self) {
        (**self).watch_idle();
    }

    fn quiet(&mut self) -> bool {
        (**self).quiet()
    }

    fn read_at(&self) -> Option<std::time::Instant> {
        (**self).read_at()
    }

    fn poll_read_landed(
        &mut self,
        cx: &mut std::task::Context<'_>,
        read: &mut dyn FnMut(&[u8], Option<std::time::Instant>) -> usize,
    ) -> Poll<io::Result<bool>> {
        (**self).poll_read_landed(cx, read)
    }

    fn lends(&self) -> bool {
        (**self).lends()
    }

    fn relay(
        &mut self,
        relay: Option<std::rc::Rc<dyn Relay>>,
        cx: &std::task::Context<'_>,
    ) -> bool {
        (**self).relay(relay, cx)
    }
}

impl Io for TcpStream {
    fn poll_read_ready(&mut self, cx: &mut std::task::Context<'_>) -> Poll<io::Result<()>> {
        TcpStream::poll_read_ready(self, cx)
    }
}

/// TLS may hold decrypted bytes the socket no longer shows: its reads
/// take a buffer at once.
impl Io for tokio_rustls::client::TlsStream<TcpStream> {}

/// Map an I/O error to a failure kind; `fallback` for the rest. A TLS
/// error is a TLS failure by its reason wherever it is met: a TLS 1.3
/// server refuses a client's certificate (or its lack of one) after the
/// client's side of the handshake ended, so its alert comes with the
/// first read.
pub(crate) fn classify_io(e: &io::Error, fallback: Failure) -> Failure {
    use io::ErrorKind::*;
    if let Some(tls) = e.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()) {
        return Failure::Tls(tls_reason(tls));
    }
    match e.kind() {
        ConnectionRefused => Failure::Refused,
        ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => Failure::Reset,
        TimedOut => Failure::Timeout,
        _ => fallback,
    }
}

/// What takes a connection's answers in the driver's turn, as they land,
/// and gives the next request to send at once: a slot's requests on its
/// kept connection carried on with no task woken between them (see
/// `http::lane`). It sees only bursts that land alone (nothing unread
/// before them, no send in flight, the buffer not filled), and must not
/// touch the ring.
pub(crate) trait Relay {
    /// The burst `bytes` landed at `at`: taken or not, and what follows.
    /// The next request, if any, is given to `send`, which sends it at
    /// once and returns how many of its bytes went (none when the socket
    /// took none or failed: the slot's own write meets that again).
    fn landed(&self, bytes: &[u8], at: Instant, send: &mut dyn FnMut(&[u8]) -> usize) -> Relayed;
    /// The relay is over without a word from it: what came (bytes that
    /// did not land alone, the end of the stream, an error) is the
    /// reader's, who is woken.
    fn left(&self);
}

/// What a [`Relay`] did with a burst that landed.
pub(crate) enum Relayed {
    /// Not taken: the bytes are read as any others, and the relay is over.
    Declined,
    /// Taken, and the relay is over: nothing more was sent, or the next
    /// request not all of it.
    Ended,
    /// Taken, and the next request sent whole: the relay goes on.
    Sent,
}

/// The reason of a TLS error.
pub(crate) fn tls_reason(tls: &rustls::Error) -> TlsReason {
    use rustls::{CertificateError as C, Error as E};
    match tls {
        E::InvalidCertificate(c) => match c {
            C::Expired | C::ExpiredContext { .. } => TlsReason::Expired,
            C::NotValidYet | C::NotValidYetContext { .. } => TlsReason::NotYetValid,
            C::NotValidForName | C::NotValidForNameContext { .. } => TlsReason::NameMismatch,
            C::UnknownIssuer => TlsReason::UnknownIssuer,
            C::Other(o) if is_ca_used_as_end_entity(o) => TlsReason::CaAsEndEntity,
            _ => TlsReason::BadCertificate,
        },
        E::InvalidMessage(_) | E::InappropriateMessage { .. } => TlsReason::NotTls,
        E::AlertReceived(_) => TlsReason::Alert,
        E::PeerIncompatible(_) | E::NoApplicationProtocol => TlsReason::Incompatible,
        _ => TlsReason::Other,
    }
}

/// webpki's "CA used as an end entity", which rustls passes on only as an
/// opaque error (named by its `Debug` form).
pub(crate) fn is_ca_used_as_end_entity(e: &rustls::OtherError) -> bool {
    e.to_string() == "CaUsedAsEndEntity"
}
