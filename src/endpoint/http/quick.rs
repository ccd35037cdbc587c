//! The quick path of an HTTP/1.1 request on the connection its slot kept
//! from the last one, the common case of a load test: one hand-written
//! future that writes the request and reads the answer where it landed
//! (see `h1::Conn::poll_plain_answer`), within the deadline, with no
//! `async fn` levels between the slot and the stream. Anything else is
//! handed to [`Slot::send_from`] at the point reached ([`Resume`]): a
//! request the quick path cannot start (no kept connection, or it was
//! closed, a body over 64 KiB, a request that cannot be formed), an
//! answer that is not plain (read by the codec's general read, where the
//! quick path left it), and a request that never reached the server on
//! the kept connection (sent again on a new one).

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Instant;

use super::{CountedConn, Slot};
use crate::endpoint::{Failure, Outcome, Watch};
use crate::model::Request;

/// [`Slot::send`]'s first future: the request on the kept connection, or
/// where to take it up when it is not for the quick path.
pub(super) struct QuickSend<'a> {
    pub(super) slot: &'a mut Slot,
    pub(super) req: &'a Request,
    pub(super) keep_body: bool,
    pub(super) due: Option<Instant>,
    /// Where its outcome goes.
    pub(super) out: &'a mut Option<Outcome>,
    /// The request in flight, once started.
    pub(super) flight: Option<InFlight>,
}

/// A request in flight on the kept connection.
pub struct InFlight {
    pub(super) conn: CountedConn,
    /// When it began, which its latency and deadline count from.
    pub(super) start: Instant,
    pub(super) watch: Watch,
    /// A `HEAD` request: the answer has no body whatever its head says.
    head_request: bool,
    /// Bytes of the request written so far; `None` once all are.
    pub(super) writing: Option<usize>,
}

/// Where [`Slot::send_from`] takes up a request the quick path did not
/// finish.
pub struct Resume(pub(super) Point);

impl Resume {
    /// From the start: for a request the quick path was not tried for.
    pub fn start() -> Resume {
        Resume(Point::Start)
    }
}

/// The point [`Resume`] names.
pub(super) enum Point {
    /// From the start: the quick path did not apply.
    Start,
    /// The request was written on the connection at the time given (a
    /// `HEAD` request if the flag says so), and what came back was not a
    /// plain answer whole where it landed: read it as any other.
    Read(CountedConn, Instant, bool),
    /// It failed on the kept connection without reaching the server (see
    /// `Slot::resend_h1`), begun at the time given: send it again on a new
    /// connection.
    Resend(Instant),
}

impl Future for QuickSend<'_> {
    type Output = Result<(), Resume>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let QuickSend {
            slot,
            req,
            keep_body,
            due,
            out,
            flight,
        } = self.get_mut();
        let f = match flight {
            Some(f) => f,
            None => match slot.take_off(req, cx) {
                Some(f) => flight.insert(f),
                None => return Poll::Ready(Err(Resume::start())),
            },
        };
        let Slot { link, deadline, .. } = &mut **slot;
        let opts = &link.opts;
        let keep = (&opts.keep_headers[..], opts.max_body, *keep_body);
        let polled = deadline.poll(&mut f.watch, cx, |cx| {
            if let Some(done) = &mut f.writing {
                // The endpoint's prepared request is written from where it
                // was made (nothing was staged); any other was staged whole.
                let prepared = link.prepared_h1(req).unwrap_or_default();
                ready!(f.conn.poll_send(cx, done, prepared))?;
                f.writing = None;
            }
            f.conn
                .poll_plain_answer(cx, &link.heads, f.head_request, keep)
        });
        let polled = ready!(polled);
        let Some(InFlight {
            conn,
            start,
            head_request,
            ..
        }) = flight.take()
        else {
            unreachable!("a request in flight")
        };
        let r = match polled {
            Some(Ok(Some(answer))) => Ok(answer),
            Some(Ok(None)) => {
                return Poll::Ready(Err(Resume(Point::Read(conn, start, head_request))))
            }
            Some(Err(f)) => Err(f),
            None => {
                // Out of time: the connection goes with the request, as
                // when the general path's future is dropped.
                drop(conn);
                let timeout = Err(Failure::Timeout);
                let times = (start, start.elapsed());
                let bytes_out = req.body.len() as u64;
                **out = Some(slot.finish(timeout, times, None, bytes_out, *due));
                return Poll::Ready(Ok(()));
            }
        };
        let r = slot.answered_h1(conn, r, start);
        if slot.resend_h1(&r, req) {
            // Not given back: the connection is closed.
            slot.h1 = None;
            return Poll::Ready(Err(Resume(Point::Resend(start))));
        }
        // An answer read here was whole when its head came (see
        // `Conn::poll_plain_answer`): its time to first byte is its
        // latency, counted once. A failure ended now. (`Slot::answered`
        // is the general path's, which clears it when it starts.)
        let elapsed = match &r {
            Ok(response) => response.ttfb,
            Err(_) => start.elapsed(),
        };
        let bytes_out = req.body.len() as u64;
        **out = Some(slot.finish(r, (start, elapsed), None, bytes_out, *due));
        Poll::Ready(Ok(()))
    }
}

impl Slot {
    /// Start `req` on the connection this slot kept from its last request:
    /// its request formed and staged, the deadline set. `None`, with the
    /// slot as it was (a closed connection dropped), when the quick path
    /// does not apply.
    #[inline(always)]
    pub(super) fn take_off(&mut self, req: &Request, cx: &mut Context<'_>) -> Option<InFlight> {
        // (Called where `Slot::quick` said yes: on a stream that lends
        // nothing it would only be slower, every answer read on by the
        // general path.)
        let start = Instant::now();
        let mut conn = self.last_connection(false, cx)?;
        let Some(head_request) = self.link.stage_h1(&mut conn, req) else {
            self.h1 = Some(conn);
            return None;
        };
        self.port = conn.port();
        // Not reused if the exchange fails or is cut.
        self.reuse = false;
        let watch = self.deadline.watch(start, self.link.opts.timeout);
        Some(InFlight {
            conn,
            start,
            watch,
            head_request,
            writing: Some(0),
        })
    }
}
