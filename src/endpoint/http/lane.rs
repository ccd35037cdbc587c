//! The lane: a slot's one request sent again and again on the connection
//! it kept, each answer taken and the next request sent by the ring's turn
//! itself, where the answer lands (a [`Relay`]), with no task woken between
//! them. Every answer is recorded by the engine's own code ([`Units`]) as
//! the quick path ([`QuickSend`](super::kept)) would have recorded it, timed by
//! the same turn's clock. The slot's future waits meanwhile, woken only
//! when the lane ends: an answer that is not a plain one whole where it
//! landed (it stays for the slot to read), a request not all sent at once,
//! no more work, or the deadline of the request in flight. It then takes
//! the request in flight up where the lane left it ([`LaneExit`]), as the
//! quick path does.
//!
//! For HTTP/1.1 on the ring only, with no headers of its answers kept,
//! for requests the lane forms itself: the endpoint's prepared one (a
//! request made once, repeated), or a plain POST line of a stream
//! (`Link::post_line_h1`: the prepared head, the length, the body). A
//! claimed request of any other kind ends the lane unsent, and the slot
//! sends it.

use std::cell::{Cell, RefCell};
use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;
use std::time::Instant;

use bytes::BytesMut;

use super::quick::InFlight;
use super::{Link, Slot};
use crate::endpoint::io::{Relay, Relayed};
use crate::endpoint::Outcome;
use crate::endpoint::{h1, h1_bufs};
use crate::model::Request;

/// The engine's side of carrying a slot's requests ([`carry!`]): where
/// the requests after the first come from and the answers before the last
/// go, while a lane carries them.
///
/// [`carry!`]: crate::endpoint::carry
pub trait Units {
    /// The request in flight was answered with `outcome`: record it as any
    /// other, and claim the next unit of work. Its request when it is to be
    /// sent now; `None` when the lane is to end (the engine then holds
    /// whatever it claimed).
    fn answered(&self, outcome: Outcome) -> Option<Rc<Request>>;

    /// The request of the unit claimed now, if the unit is a request: the
    /// one a lane left in flight or did not send, for the slot to carry
    /// on; `None` when the last answer was taken and nothing, or a unit
    /// of another kind, was claimed after it.
    fn claimed(&self) -> Option<Rc<Request>>;
}

thread_local! {
    /// This thread's slots, and how many of them a lane carries now.
    static SLOTS: Cell<(usize, usize)> = const { Cell::new((0, 0)) };
}

/// Add to this thread's slot counts: `live` slots made (or, negative,
/// gone) and `laned` slots onto (off) a lane.
fn count(live: isize, laned: isize) {
    SLOTS.with(|s| {
        let (l, n) = s.get();
        s.set((l.wrapping_add_signed(live), n.wrapping_add_signed(laned)));
    });
}

/// A slot made on this thread ([`Slot::new`]), or one gone (its drop).
pub(super) fn count_slot(made: bool) {
    count(if made { 1 } else { -1 }, 0);
}

/// A slot on a lane, counted among this thread's laned slots while it is.
struct OnLane;

impl OnLane {
    fn new() -> OnLane {
        count(0, 1);
        OnLane
    }
}

impl Drop for OnLane {
    fn drop(&mut self) {
        count(0, -1);
    }
}

/// For a core runtime's `on_thread_park` hook: while lanes carry every
/// slot of this thread, nothing waits on the runtime's reactor but its
/// timers (a slot's deadline, the run's end, the ticks) and other threads'
/// wake-ups, so the thread waits in its ring instead (where a timer is
/// late by the ring's alarm at most, 10 ms). Only for a thread where
/// nothing else uses the reactor (no fault proxy).
pub fn park_in_ring() {
    let (live, laned) = SLOTS.get();
    if laned > 0 && laned == live {
        super::super::uring::wait_in_ring();
    }
}

/// How a lane ended, for the slot to take up.
pub enum LaneExit {
    /// Nothing is in flight: the last answer was taken and recorded.
    Idle,
    /// The lane did not start: send the request as any other.
    Start,
    /// A request is in flight (begun, and written as far as it says).
    InFlight(InFlight),
}

/// Why a lane ended, as its relay saw it.
#[derive(Clone, Copy)]
enum RelayEnd {
    /// An answer was not taken: it is the slot's to read.
    Declined,
    /// The last answer was taken, and nothing more was sent.
    Answered,
    /// The next request went only this far.
    Unsent(usize),
}

/// A lane's relay on the ring.
struct Lane {
    link: Rc<Link>,
    /// The request in flight (let go once it is answered, so that the
    /// engine holds the only reference when it judges it).
    req: RefCell<Option<Rc<Request>>>,
    /// Where a request that is not the endpoint's prepared one is formed,
    /// lent by the pool once one is.
    buf: RefCell<BytesMut>,
    units: Rc<dyn Units>,
    /// Whether answers' bodies are kept.
    keep_body: bool,
    /// The connection's local port, for each outcome.
    port: u16,
    /// When the request in flight began.
    start: Cell<Instant>,
    end: Cell<Option<RelayEnd>>,
}

impl Drop for Lane {
    fn drop(&mut self) {
        let buf = std::mem::take(self.buf.get_mut());
        if buf.capacity() > 0 {
            h1_bufs::give(buf);
        }
    }
}

impl Lane {
    /// Send `next` as the request now in flight: true when it went whole.
    /// One the lane cannot form is not sent (`RelayEnd::Answered`: the slot
    /// sends it); one not all sent is `RelayEnd::Unsent`.
    fn send(&self, next: Rc<Request>, send: &mut dyn FnMut(&[u8]) -> usize) -> bool {
        let link = &*self.link;
        self.start.set(Instant::now());
        let (went, len) = match link.prepared_h1(&next) {
            Some(prepared) => (send(prepared), prepared.len()),
            None => {
                let mut buf = self.buf.borrow_mut();
                if buf.capacity() == 0 {
                    *buf = h1_bufs::take();
                }
                buf.clear();
                if !link.post_line_h1(&next, &mut buf) {
                    self.end.set(Some(RelayEnd::Answered));
                    return false;
                }
                (send(&buf), buf.len())
            }
        };
        *self.req.borrow_mut() = Some(next);
        if went < len {
            self.end.set(Some(RelayEnd::Unsent(went)));
            return false;
        }
        true
    }
}

impl Relay for Lane {
    fn landed(&self, bytes: &[u8], at: Instant, send: &mut dyn FnMut(&[u8]) -> usize) -> Relayed {
        let link = &*self.link;
        let keep = (&[][..], link.opts.max_body, self.keep_body);
        let answer = h1::plain_answer(bytes, Some(at), &link.heads, false, keep);
        // An answer that ends its connection, or a connection another slot
        // waits for, is left to the slot, whose quick path handles both.
        let Some(answer) = answer.filter(|a| a.keep_alive && link.capacity.waiting.get() == 0)
        else {
            self.end.set(Some(RelayEnd::Declined));
            return Relayed::Declined;
        };
        let start = self.start.get();
        let response = answer.response(start);
        // Whole when its head came: its time to first byte is its latency
        // (as in `QuickSend`).
        let elapsed = response.ttfb;
        let bytes_out = self.req.take().map_or(0, |r| r.body.len() as u64);
        let outcome = Outcome {
            port: self.port,
            ..Outcome::timed(Ok(response), (start, elapsed), None, bytes_out, None)
        };
        let Some(next) = self.units.answered(outcome) else {
            self.end.set(Some(RelayEnd::Answered));
            return Relayed::Ended;
        };
        match self.send(next, send) {
            true => Relayed::Sent,
            false => Relayed::Ended,
        }
    }

    fn left(&self) {
        self.end.set(Some(RelayEnd::Declined));
    }
}

impl Slot {
    /// Whether `req` can go by a lane: the quick path's kept connection
    /// on the ring, a request the lane forms (the endpoint's prepared one,
    /// or a plain POST line), no headers of its answers kept.
    pub fn lane_fits(&self, req: &Request) -> bool {
        self.quick()
            && self.link.opts.keep_headers.is_empty()
            && (self.link.prepared_h1(req).is_some() || self.link.forms_post_line(req))
    }

    /// Send `req` on the kept connection and go on sending it by a lane
    /// (see the module), each answer handed to `units`, until the lane
    /// ends; how it ended (see [`LaneExit`]). For a request [`Slot::lane_fits`]
    /// said yes to, in the closed model.
    pub async fn lane(
        &mut self,
        req: &Rc<Request>,
        keep_body: bool,
        units: Rc<dyn Units>,
    ) -> LaneExit {
        let _on = OnLane::new();
        let mut flight: Option<InFlight> = None;
        let mut lane: Option<Rc<Lane>> = None;
        poll_fn(|cx| {
            let (f, lane) = match (&mut flight, &lane) {
                (Some(f), Some(lane)) => (f, lane),
                _ => {
                    let Some(f) = self.take_off(req, cx) else {
                        return Poll::Ready(LaneExit::Start);
                    };
                    let f = flight.insert(f);
                    let new = Rc::new(Lane {
                        link: self.link.clone(),
                        req: RefCell::new(Some(req.clone())),
                        buf: RefCell::new(BytesMut::new()),
                        units: units.clone(),
                        keep_body,
                        port: self.port,
                        start: Cell::new(f.start),
                        end: Cell::new(None),
                    });
                    if !f.conn.relay(Some(new.clone()), cx) {
                        return Poll::Ready(LaneExit::InFlight(flight.take().expect("made above")));
                    }
                    let mut done = 0;
                    let prepared = self.link.prepared_h1(req).unwrap_or_default();
                    match f.conn.poll_send(cx, &mut done, prepared) {
                        Poll::Ready(Ok(())) => f.writing = None,
                        // Taken up by the quick path, where the write stands.
                        _ => {
                            f.conn.relay(None, cx);
                            f.writing = Some(done);
                            return Poll::Ready(LaneExit::InFlight(
                                flight.take().expect("made above"),
                            ));
                        }
                    }
                    (f, &*lane.insert(new))
                }
            };
            let start = lane.start.get();
            let end = match lane.end.get() {
                Some(end) => end,
                None => {
                    // Asleep while the ring carries the lane: woken by its
                    // end, or by the timer of the request in flight.
                    let watch = self.deadline.watch(start, self.link.opts.timeout);
                    if !self.deadline.fired(&watch, cx) {
                        return Poll::Pending;
                    }
                    // Out of time: the quick path times it out.
                    RelayEnd::Declined
                }
            };
            f.conn.relay(None, cx);
            let mut f = flight.take().expect("in flight");
            if let RelayEnd::Answered = end {
                self.h1 = Some(f.conn);
                return Poll::Ready(LaneExit::Idle);
            }
            // The request in flight, begun when the ring's turn sent it.
            f.start = start;
            f.watch = self.deadline.watch(start, self.link.opts.timeout);
            if let RelayEnd::Unsent(written) = end {
                // Not all written: taken up where the write stands, from
                // the same bytes, staged as the quick path stages them (the
                // request the lane sent, which it holds while in flight).
                if let Some(req) = lane.req.borrow().as_deref() {
                    self.link.stage_h1(&mut f.conn, req);
                }
                f.writing = Some(written);
            }
            Poll::Ready(LaneExit::InFlight(f))
        })
        .await
    }
}
