//! Transports: how one request reaches one endpoint and what came back.
//! This module owns connections (TCP, TLS, HTTP/1.1 and HTTP/2 on codecs
//! of its own in `h1.rs` and `h2.rs` with `hpack.rs`; WebSocket on
//! tokio-tungstenite), the per-request timeout, and the classification of
//! faults. It knows nothing about other endpoints,
//! comparison or statistics.

mod connect;
#[cfg(test)]
mod fuzz;
pub mod grpc;
mod h1;
mod h1_bufs;
mod h1_head;
mod h2;
mod h2_socket;
mod hpack;
mod http;
mod io;
pub mod spec;
mod uring;
mod uring_bufs;
mod ws;

use std::time::{Duration, Instant};

use bytes::Bytes;

pub use self::connect::{resolve, tls_config, ClientCert, Halt, TlsOptions};
pub(crate) use self::http::{carry, send_on};
pub use self::http::{park_in_ring, InFlight, LaneExit, Link, Prepared, Resume, Slot, Units};
pub use self::spec::{EndpointSpec, Scheme, SpecError};
pub use self::uring::{probe as probe_uring, IoDriver};
use crate::model::Style;

/// Which HTTP version to speak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/1.1 on `http://`; on `https://`, what ALPN negotiates (h2 or 1.1).
    #[default]
    Auto,
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/2 only: ALPN `h2` over TLS, prior knowledge (h2c) over TCP.
    Http2,
}

pub use crate::model::{Failure, Outcome, Response, TlsReason};

/// How versus talks to one endpoint: chosen once per endpoint, in
/// [`Protocol::choose`], from its URL and the HTTP version policy. Every
/// transport decision follows from it: the TLS ALPN offer, prior-knowledge
/// HTTP/2 on plain TCP, the WebSocket upgrade.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1 only.
    Http1,
    /// HTTP/2 only: ALPN `h2` over TLS, prior knowledge (h2c) over TCP.
    Http2,
    /// Over TLS, what ALPN negotiates (h2 or HTTP/1.1); HTTP/1.1 over TCP.
    Negotiate,
    /// JSON-RPC over a WebSocket (`ws://`, `wss://`), opened with an
    /// HTTP/1.1 upgrade.
    WebSocket,
    /// gRPC: HTTP/2 only (ALPN `h2` over TLS, prior knowledge over TCP),
    /// with `grpc-status` read from every stream.
    Grpc,
}

impl Protocol {
    /// The protocol of `spec` under the run's HTTP version policy.
    pub fn choose(spec: &EndpointSpec, version: HttpVersion) -> Protocol {
        match (spec.style, version) {
            (Style::WebSocket, _) => Protocol::WebSocket,
            (Style::Grpc, _) => Protocol::Grpc,
            (_, HttpVersion::Http1) => Protocol::Http1,
            (_, HttpVersion::Http2) => Protocol::Http2,
            (_, HttpVersion::Auto) => Protocol::Negotiate,
        }
    }

    /// What a TLS handshake offers for it (ALPN).
    pub fn alpn(self) -> Vec<Vec<u8>> {
        match self {
            Protocol::Negotiate => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
            Protocol::Http1 | Protocol::WebSocket => vec![b"http/1.1".to_vec()],
            Protocol::Http2 | Protocol::Grpc => vec![b"h2".to_vec()],
        }
    }
}

/// A slot's `--timeout` timer, kept from request to request: a
/// `tokio::time::timeout` per request inserts into and removes from the
/// timer wheel under its lock (about 700 instructions a request), and even
/// moving a registered timer later costs about 100; so the timer is moved
/// only when it fires before the request's own deadline. Nor is it polled
/// again while it waits in the wheel with the waker of an earlier poll
/// (about 120 instructions a request): it wakes that task when it fires,
/// and is polled then.
#[derive(Default)]
pub(crate) struct Deadline {
    timer: Option<Timer>,
    /// The waker the timer was last polled with (pending), since it was
    /// last set; `None` when it is to be polled.
    armed: Option<std::task::Waker>,
}

/// A slot's timer and its deadline, kept beside it: a request reads the
/// deadline without touching the timer, whose memory is cold when many
/// slots are open.
struct Timer {
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
    at: tokio::time::Instant,
}

impl Timer {
    fn new(at: tokio::time::Instant) -> Timer {
        Timer {
            sleep: Box::pin(tokio::time::sleep_until(at)),
            at,
        }
    }

    /// Set to fire at `at` instead.
    fn reset(&mut self, at: tokio::time::Instant) {
        self.sleep.as_mut().reset(at);
        self.at = at;
    }

    /// Poll it: whether it fired. Pending, it keeps the waker as `armed`
    /// unless the task's cooperative budget was spent (the poll then
    /// returned at once, the timer neither made nor given the waker).
    fn poll(
        &mut self,
        armed: &mut Option<std::task::Waker>,
        cx: &mut std::task::Context<'_>,
    ) -> bool {
        let budget = tokio::task::coop::has_budget_remaining();
        if std::future::Future::poll(self.sleep.as_mut(), cx).is_ready() {
            return true;
        }
        if budget {
            *armed = Some(cx.waker().clone());
        }
        false
    }
}

impl Deadline {
    /// Run `exchange` until it completes, or until `timeout` after `start`
    /// (`None`). Pinned by the caller, so the future is built in place and
    /// not moved (a copy of several hundred bytes per request). `start` is
    /// read in the same poll of the caller's task as this future's first.
    /// A plain function returning a hand-written future, not an `async
    /// fn`: no state machine of its own around the exchange's, a level
    /// fewer in every request's two polls.
    pub(crate) fn run<'a, F: std::future::Future>(
        &'a mut self,
        start: Instant,
        timeout: Duration,
        exchange: std::pin::Pin<&'a mut F>,
    ) -> Run<'a, F> {
        let watch = self.watch(start, timeout);
        Run {
            deadline: self,
            watch,
            exchange,
        }
    }

    /// Set the timer for an exchange begun at `start` (read in the same
    /// poll of the caller's task as the first [`Deadline::poll`]) that may
    /// take `timeout`.
    #[inline(always)]
    pub(crate) fn watch(&mut self, start: Instant, timeout: Duration) -> Watch {
        let begun = tokio::time::Instant::from_std(start);
        let at = begun
            .checked_add(timeout)
            .unwrap_or(begun + Duration::from_secs(30 * 365 * 86_400));
        // Deadlines only move later: a timer set no later than `at` (for
        // an earlier request) stays, and is moved to `at` only if it fires
        // first (see `passed`), not once per request.
        match &mut self.timer {
            Some(t) if t.at > at => {
                t.reset(at);
                self.armed = None;
            }
            Some(_) => {}
            None => self.timer = Some(Timer::new(at)),
        }
        Watch {
            begun,
            at,
            polls: 0,
        }
    }

    /// Whether the deadline `watch` set has passed, the timer polled (with
    /// the waker of `cx`) when it may have fired.
    pub(crate) fn fired(&mut self, watch: &Watch, cx: &mut std::task::Context<'_>) -> bool {
        let Deadline { timer, armed } = self;
        timer
            .as_mut()
            .is_some_and(|timer| passed(timer, armed, watch.at, None, cx))
    }

    /// Poll an exchange (`poll`) within the deadline `watch` set: `None`
    /// once it has passed.
    #[inline(always)]
    pub(crate) fn poll<T>(
        &mut self,
        watch: &mut Watch,
        cx: &mut std::task::Context<'_>,
        poll: impl FnOnce(&mut std::task::Context<'_>) -> std::task::Poll<T>,
    ) -> std::task::Poll<Option<T>> {
        let Deadline { timer, armed } = self;
        let Some(timer) = timer else {
            unreachable!("a deadline polled before it was watched")
        };
        let Watch { begun, at, polls } = watch;
        // An exchange polled again and again (a server flooding it with
        // messages it skips) can use up the task's cooperative budget
        // each time before the timer is polled, which then never fires:
        // from the third poll on (a plain exchange takes one or two), the
        // timer goes first.
        *polls += 1;
        // Timers fire only between polls of the runtime's tasks: in the
        // poll that read `start`, a timer due after it has not fired.
        let now = (*polls == 1).then_some(*begun);
        if *polls > 2 && passed(timer, armed, *at, now, cx) {
            return std::task::Poll::Ready(None);
        }
        if let std::task::Poll::Ready(r) = poll(cx) {
            return std::task::Poll::Ready(Some(r));
        }
        if passed(timer, armed, *at, now, cx) {
            std::task::Poll::Ready(None)
        } else {
            std::task::Poll::Pending
        }
    }
}

/// One exchange's deadline (see [`Deadline::watch`]).
pub(crate) struct Watch {
    begun: tokio::time::Instant,
    at: tokio::time::Instant,
    polls: u32,
}

/// [`Deadline::run`]'s future.
pub(crate) struct Run<'a, F> {
    deadline: &'a mut Deadline,
    watch: Watch,
    exchange: std::pin::Pin<&'a mut F>,
}

impl<F: std::future::Future> std::future::Future for Run<'_, F> {
    type Output = Option<F::Output>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        // Every field is a reference, a pinned reference or a copy.
        let Run {
            deadline,
            watch,
            exchange,
        } = self.get_mut();
        deadline.poll(watch, cx, |cx| exchange.as_mut().poll(cx))
    }
}

/// Whether the deadline `at` has passed. A timer that fired at an earlier
/// deadline is set to `at` and polled again (so it wakes the task then).
/// A timer still in the wheel with this task's waker (`armed`) is not
/// polled: it has not fired, and will wake the task when it does; nor is it
/// looked at when it is due after `now` (a time in this poll, when known):
/// that look, made for every request, is inlined; the rest is not.
#[inline(always)]
fn passed(
    timer: &mut Timer,
    armed: &mut Option<std::task::Waker>,
    at: tokio::time::Instant,
    now: Option<tokio::time::Instant>,
    cx: &mut std::task::Context<'_>,
) -> bool {
    if armed.as_ref().is_some_and(|w| w.will_wake(cx.waker()))
        && (now.is_some_and(|now| now < timer.at) || !timer.sleep.is_elapsed())
    {
        return false;
    }
    poll_timer(timer, armed, at, cx)
}

/// [`passed`] past its first look: the timer polled, and set to `at` if
/// it fired at an earlier deadline.
#[inline(never)]
fn poll_timer(
    timer: &mut Timer,
    armed: &mut Option<std::task::Waker>,
    at: tokio::time::Instant,
    cx: &mut std::task::Context<'_>,
) -> bool {
    *armed = None;
    if !timer.poll(armed, cx) {
        return false;
    }
    if timer.at >= at {
        return true;
    }
    timer.reset(at);
    timer.poll(armed, cx)
}

impl Outcome {
    /// The outcome of an exchange sent at `clock` (the clock read as it
    /// began, or read again once a connection it waited for was ready, so
    /// that the wait is not counted as the answer's) and that ended
    /// `elapsed` after it (when its answer was read). `due` is the open
    /// model's scheduled time: latency and time to first byte then count
    /// from it, and the send lag runs from it to `clock`, the one send
    /// instant the uncorrected latency starts from too.
    #[inline(always)]
    pub(crate) fn timed(
        mut result: Result<Response, Failure>,
        (clock, elapsed): (Instant, Duration),
        connect: Option<Duration>,
        bytes_out: u64,
        due: Option<Instant>,
    ) -> Outcome {
        let origin = due.map_or(clock, |d| d.min(clock));
        // Closed model (or on time): both count from the clock.
        let from_clock = origin == clock;
        // Open model: how long before the clock the request was due.
        let late = match from_clock {
            true => Duration::ZERO,
            false => clock.saturating_duration_since(origin),
        };
        // Changed where it lies: a `map` moved the response out and back.
        if let Ok(r) = &mut result {
            r.ttfb = r.ttfb.saturating_add(late);
        }
        Outcome {
            result,
            latency: elapsed.saturating_add(late),
            start: origin,
            uncorrected: elapsed,
            lag: due.map(|_| late),
            connect,
            bytes_out,
            port: 0,
        }
    }
}

#[cfg(test)]
impl Outcome {
    /// A response with `status` and `body` and no timing, for tests.
    pub(crate) fn test_response(status: u16, body: &str) -> Outcome {
        Outcome {
            result: Ok(Response {
                status,
                headers: Vec::new(),
                body: bytes::Bytes::copy_from_slice(body.as_bytes()),
                body_len: body.len() as u64,
                ttfb: Duration::ZERO,
                grpc: None,
            }),
            latency: Duration::ZERO,
            start: Instant::now(),
            uncorrected: Duration::ZERO,
            lag: None,
            connect: None,
            bytes_out: 0,
            port: 0,
        }
    }

    /// A failure of kind `f` and no timing, for tests.
    pub(crate) fn test_failure(f: Failure) -> Outcome {
        Outcome {
            result: Err(f),
            latency: Duration::ZERO,
            start: Instant::now(),
            uncorrected: Duration::ZERO,
            lag: None,
            connect: None,
            bytes_out: 0,
            port: 0,
        }
    }
}

/// A whole answer as a codec read it.
#[derive(Debug)]
pub(crate) struct RawResponse {
    pub status: u16,
    /// When the response head arrived: when the read that completed it ran
    /// (on the ring, the turn that filed its receive; see `Io::read_at`).
    pub head_at: Instant,
    /// The kept headers (`--compare-header`), in order.
    pub headers: Vec<(::http::HeaderName, ::http::HeaderValue)>,
    /// The body when kept, otherwise empty.
    pub body: Bytes,
    pub body_len: u64,
    /// Whether the connection can carry another request (always over
    /// HTTP/2, where a stream ends, not its connection).
    pub keep_alive: bool,
    /// A gRPC stream's status (its trailers, or a trailers-only head);
    /// `None` when it sent none, and on any other stream. Boxed: so an
    /// answer is 128 bytes, which a move copies inline rather than by a
    /// call to `memcpy` (an HTTP/1.1 answer is moved twice a request).
    pub grpc: Option<Box<crate::model::GrpcStatus>>,
    /// When the first DATA arrived (gRPC streams: the first message).
    pub first_data: Option<Instant>,
    /// When the whole answer was read, if known without another read of
    /// the clock: the exchange's end. HTTP/1.1: when its body was already
    /// in hand with the head (then `head_at`), or, on the ring, when the
    /// receive that brought its last bytes ran; HTTP/2: the read of the
    /// socket that brought the stream's last frame.
    pub done_at: Option<Instant>,
}

// Moved whole twice a request: at most 128 bytes, a move is inline.
const _: () = assert!(std::mem::size_of::<RawResponse>() <= 128);

impl RawResponse {
    /// The response, its time to first byte counted from `start`.
    #[inline(always)]
    pub(crate) fn response(self, start: Instant) -> Response {
        Response {
            status: self.status,
            headers: self.headers,
            body: self.body,
            body_len: self.body_len,
            ttfb: self.head_at.saturating_duration_since(start),
            grpc: self.grpc.map(|g| *g),
        }
    }
}

/// Settings shared by every connection of a run.
#[derive(Clone, Debug)]
pub struct TransportOptions {
    /// Whole-request timeout (connect, send, head and body).
    pub timeout: Duration,
    /// Largest body kept or accepted; larger bodies fail as `BodyTooLarge`.
    pub max_body: u64,
    /// Reuse connections (the default). Off: a new connection per request,
    /// and its connect time is part of the request's latency.
    pub keepalive: bool,
    /// HTTP version policy.
    pub version: HttpVersion,
    /// Response headers to keep for comparison.
    pub keep_headers: Vec<::http::HeaderName>,
    /// Most HTTP/1.1 connections open (or opening) at once on one core's
    /// link (`--max-connections`, shared out among the cores); a request
    /// finding none free waits for one. `None`: no limit.
    pub max_connections: Option<usize>,
    /// The driver of plain-TCP HTTP/1.1 connections (`--io`).
    pub io: IoDriver,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The timer kept from an earlier request (set for its earlier
    /// deadline) neither cuts a later request short nor lets it run
    /// forever: it ends at the later request's own deadline, not before.
    #[tokio::test]
    async fn a_timer_kept_from_an_earlier_request_ends_a_later_one_at_its_own_deadline() {
        let mut d = Deadline::default();
        let timeout = Duration::from_millis(100);
        let first = std::pin::pin!(async { 1 });
        assert_eq!(d.run(Instant::now(), timeout, first).await, Some(1));
        // The next request starts later: the kept timer would fire 50 ms
        // before its deadline.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let start = Instant::now();
        let second = std::pin::pin!(std::future::pending::<()>());
        assert_eq!(d.run(start, timeout, second).await, None);
        assert!(start.elapsed() >= timeout, "ended before its deadline");
        // A deadline earlier than the timer's moves the timer back (else
        // this would wait an hour).
        let long = std::pin::pin!(async {});
        assert_eq!(
            d.run(Instant::now(), Duration::from_secs(3600), long).await,
            Some(())
        );
        let third = std::pin::pin!(std::future::pending::<()>());
        assert_eq!(d.run(Instant::now(), Duration::ZERO, third).await, None);
    }

    /// A request that waits once (leaving the timer in the wheel with this
    /// task's waker), then ends.
    async fn waits_once(d: &mut Deadline, timeout: Duration) {
        let waits = std::pin::pin!(async {
            tokio::task::yield_now().await;
            7
        });
        assert_eq!(d.run(Instant::now(), timeout, waits).await, Some(7));
    }

    /// A request that never completes ends at its deadline: not before, and
    /// not only when something else polls it (not a wrapping `timeout`,
    /// which would poll the request first when it fires, and the request
    /// would see its deadline passed then).
    async fn never_ends_at_its_deadline(d: &mut Deadline, timeout: Duration, what: &str) {
        let start = Instant::now();
        let never = std::pin::pin!(std::future::pending::<()>());
        let ended = tokio::select! {
            biased;
            () = tokio::time::sleep(Duration::from_secs(2)) => panic!("{what}: not ended at its deadline"),
            r = d.run(start, timeout, never) => r,
        };
        assert_eq!(ended, None, "{what}");
        assert!(
            start.elapsed() >= timeout,
            "{what}: ended before its deadline"
        );
    }

    /// A timer left in the wheel by earlier requests that waited (so it
    /// is not polled again) still ends a request that never completes at
    /// that request's deadline, not before; and again after a timeout.
    #[tokio::test]
    async fn a_timer_not_polled_again_still_ends_each_request_at_its_deadline() {
        let mut d = Deadline::default();
        let timeout = Duration::from_millis(30);
        for round in 0..3 {
            for _ in 0..10 {
                waits_once(&mut d, timeout).await;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
            never_ends_at_its_deadline(&mut d, timeout, &format!("round {round}")).await;
        }
    }

    /// A timer that fired while the slot was idle after its request (its
    /// deadline is before the next request began) is moved to the next
    /// request's deadline, not taken for a timer still waiting.
    #[tokio::test]
    async fn a_timer_that_fired_between_requests_ends_the_next_at_its_deadline() {
        let mut d = Deadline::default();
        let timeout = Duration::from_millis(20);
        waits_once(&mut d, timeout).await;
        // Its timer fires while the slot is idle.
        tokio::time::sleep(Duration::from_millis(50)).await;
        never_ends_at_its_deadline(&mut d, timeout, "after a fired timer").await;
    }

    /// After a reconnect kept out of the latency, the time to first byte
    /// counts from the same restarted clock, not from before the connect.
    #[test]
    fn ttfb_counts_from_the_clock_after_a_reconnect() {
        let start = Instant::now();
        let clock = start + Duration::from_millis(50);
        let response = || Response {
            status: 200,
            headers: Vec::new(),
            body: bytes::Bytes::new(),
            body_len: 0,
            ttfb: Duration::from_millis(10),
            grpc: None,
        };
        let elapsed = Duration::from_millis(20);
        let o = Outcome::timed(Ok(response()), (clock, elapsed), None, 0, None);
        assert_eq!(o.result.unwrap().ttfb, Duration::from_millis(10));
        assert_eq!(
            (o.latency, o.uncorrected),
            (Duration::from_millis(20), Duration::from_millis(20))
        );
        // In the open model it counts from the due time, like the latency.
        let o = Outcome::timed(Ok(response()), (clock, elapsed), None, 0, Some(start));
        assert_eq!(o.result.unwrap().ttfb, Duration::from_millis(60));
        assert_eq!(
            (o.latency, o.uncorrected),
            (Duration::from_millis(70), Duration::from_millis(20))
        );
    }
}
