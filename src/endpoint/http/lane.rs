//! The lane: a slot's one request sent again and again on the connection
//! it kept, each answer taken and the next request sent by the ring's turn
//! itself, where the answer lands (a [`Relay`]), with no task woken between
//! them. Every answer is recorded by the engine's own code ([`Rounds`]) as
//! the quick path ([`Kept`](super::kept)) would have recorded it, timed by
//! the same turn's clock. The slot's future waits meanwhile, woken only
//! when the lane ends: an answer that is not a plain one whole where it
//! landed (it stays for the slot to read), a request not all sent at once,
//! no more work, or the deadline of the request in flight. It then takes
//! the request in flight up where the lane left it ([`Laned`]), as the
//! quick path does.
//!
//! For HTTP/1.1 on the ring only, for a request made once (the prepared
//! GET), with no headers of its answers kept.

use std::cell::Cell;
use std::future::poll_fn;
use std::rc::Rc;
use std::task::Poll;
use std::time::Instant;

use super::kept::Flight;
use super::{Link, Slot};
use crate::endpoint::h1;
use crate::endpoint::uring::{Relay, Relayed};
use crate::endpoint::Outcome;
use crate::model::Request;

/// The engine's side of a lane: what it does with each answer.
pub trait Rounds {
    /// The request in flight was answered with `outcome`: record it as any
    /// other, and claim the next unit of work. True when that is the same
    /// request again, to be sent now; false when the lane is to end (the
    /// engine then holds whatever it claimed).
    fn answered(&self, outcome: Outcome) -> bool;
}

/// How a lane ended, for the slot to take up.
pub enum Laned {
    /// Nothing is in flight: the last answer was taken and recorded.
    Idle,
    /// The lane did not start: send the request as any other.
    Start,
    /// A request is in flight (begun, and written as far as it says).
    Flight(Flight),
}

/// Why a lane ended, as its relay saw it.
#[derive(Clone, Copy)]
enum End {
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
    req: Rc<Request>,
    rounds: Rc<dyn Rounds>,
    /// Whether answers' bodies are kept.
    keep_body: bool,
    /// The connection's local port, for each outcome.
    port: u16,
    /// When the request in flight began.
    start: Cell<Instant>,
    end: Cell<Option<End>>,
}

impl Relay for Lane {
    fn landed(&self, bytes: &[u8], at: Instant) -> Relayed<'_> {
        let link = &*self.link;
        let keep = (&[][..], link.opts.max_body, self.keep_body);
        let answer = h1::plain_answer(bytes, Some(at), &link.heads, false, keep);
        // An answer that ends its connection, or a connection another slot
        // waits for, is left to the slot, whose quick path settles both.
        let Some(answer) = answer.filter(|a| a.keep_alive && link.capacity.waiting.get() == 0)
        else {
            self.end.set(Some(End::Declined));
            return Relayed::Declined;
        };
        let start = self.start.get();
        let response = answer.response(start);
        // Whole when its head came: its time to first byte is its latency
        // (as in `Kept`).
        let elapsed = response.ttfb;
        let bytes_out = self.req.body.len() as u64;
        let outcome = Outcome {
            port: self.port,
            ..Outcome::timed(Ok(response), (start, start, elapsed), None, bytes_out, None)
        };
        if !self.rounds.answered(outcome) {
            self.end.set(Some(End::Answered));
            return Relayed::Ended;
        }
        self.start.set(Instant::now());
        Relayed::Next(link.prepared_h1(&self.req).unwrap_or_default())
    }

    fn unsent(&self, written: usize) {
        self.end.set(Some(End::Unsent(written)));
    }

    fn left(&self) {
        self.end.set(Some(End::Declined));
    }
}

impl Slot {
    /// Whether `req` can go by a lane: the quick path's kept connection
    /// on the ring, the endpoint's prepared request, no headers of its
    /// answers kept.
    pub fn lane_fits(&self, req: &Request) -> bool {
        self.quick()
            && self.link.opts.keep_headers.is_empty()
            && self.link.prepared_h1(req).is_some()
    }

    /// Send `req` on the kept connection and go on sending it by a lane
    /// (see the module), each answer handed to `rounds`, until the lane
    /// ends; how it ended (see [`Laned`]). For a request [`Slot::lane_fits`]
    /// said yes to, in the closed model.
    pub async fn lane(
        &mut self,
        req: &Rc<Request>,
        keep_body: bool,
        rounds: Rc<dyn Rounds>,
    ) -> Laned {
        let mut flight: Option<Flight> = None;
        let mut lane: Option<Rc<Lane>> = None;
        poll_fn(|cx| {
            let (f, lane) = match (&mut flight, &lane) {
                (Some(f), Some(lane)) => (f, lane),
                _ => {
                    let Some(f) = self.take_off(req, cx) else {
                        return Poll::Ready(Laned::Start);
                    };
                    let f = flight.insert(f);
                    let new = Rc::new(Lane {
                        link: self.link.clone(),
                        req: req.clone(),
                        rounds: rounds.clone(),
                        keep_body,
                        port: self.port,
                        start: Cell::new(f.start),
                        end: Cell::new(None),
                    });
                    if !f.conn.relay(Some(new.clone()), cx) {
                        return Poll::Ready(Laned::Flight(flight.take().expect("made above")));
                    }
                    let mut done = 0;
                    let prepared = self.link.prepared_h1(req).unwrap_or_default();
                    match f.conn.poll_send(cx, &mut done, prepared) {
                        Poll::Ready(Ok(())) => f.writing = None,
                        // Taken up by the quick path, where the write stands.
                        _ => {
                            f.conn.relay(None, cx);
                            f.writing = Some(done);
                            return Poll::Ready(Laned::Flight(flight.take().expect("made above")));
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
                    End::Declined
                }
            };
            f.conn.relay(None, cx);
            let mut f = flight.take().expect("in flight");
            if let End::Answered = end {
                self.h1 = Some(f.conn);
                return Poll::Ready(Laned::Idle);
            }
            // The request in flight, begun when the ring's turn sent it.
            f.start = start;
            f.watch = self.deadline.watch(start, self.link.opts.timeout);
            if let End::Unsent(written) = end {
                // Not all written: taken up where the write stands.
                f.conn.stage_nothing();
                f.writing = Some(written);
            }
            Poll::Ready(Laned::Flight(f))
        })
        .await
    }
}
