//! The lead window of one core: the requests that at least one endpoint has
//! not finished, in order. Each endpoint claims requests in order and may
//! run ahead of the slowest by at most the window's size, so a slow endpoint
//! never slows a fast one's requests while memory stays bounded. When every
//! endpoint has answered the oldest request, it leaves the window for
//! comparison. Pure data: no clock, no I/O.

use std::collections::VecDeque;
use std::time::Instant;

use crate::endpoint::Outcome;
use crate::input::Request;

struct Entry {
    req: Request,
    /// Open model: when the request is due.
    due: Option<Instant>,
    /// Sent during the warm-up: not counted.
    warmup: bool,
    /// Endpoints that claimed it.
    started: usize,
    /// Endpoints that have not delivered an outcome.
    pending: usize,
}

/// What an endpoint may do next.
#[derive(Debug)]
pub(crate) enum Claim {
    /// Send this request (local index, request, due time in the open
    /// model, whether it belongs to the warm-up).
    Got(u64, Request, Option<Instant>, bool),
    /// Nothing to send yet: wait for input or for the window to move.
    Wait,
    /// Input is over and every request was claimed.
    Done,
}

pub(crate) struct Window {
    limit: usize,
    endpoints: usize,
    base: u64,
    entries: VecDeque<Entry>,
    /// `limit * endpoints` outcome places, a ring indexed by local index.
    outcomes: Vec<Option<Outcome>>,
    next: Vec<u64>,
    input_done: bool,
}

impl Window {
    pub fn new(limit: usize, endpoints: usize) -> Window {
        let limit = limit.max(1);
        Window {
            limit,
            endpoints,
            base: 0,
            entries: VecDeque::with_capacity(limit),
            outcomes: (0..limit * endpoints).map(|_| None).collect(),
            next: vec![0; endpoints],
            input_done: false,
        }
    }

    pub fn has_space(&self) -> bool {
        self.entries.len() < self.limit
    }

    pub fn push(&mut self, req: Request, due: Option<Instant>, warmup: bool) {
        debug_assert!(self.has_space());
        self.entries.push_back(Entry {
            req,
            due,
            warmup,
            started: 0,
            pending: self.endpoints,
        });
    }

    /// Requests in the window that the leading endpoint has not claimed:
    /// what the feeder keeps ready without hoarding input from other cores.
    pub fn unclaimed(&self) -> usize {
        let lead = self.next.iter().copied().max().unwrap_or(self.base);
        (self.base + self.entries.len() as u64 - lead) as usize
    }

    pub fn finish_input(&mut self) {
        self.input_done = true;
    }

    pub fn claim(&mut self, e: usize) -> Claim {
        let i = self.next[e];
        match self.entries.get_mut((i - self.base) as usize) {
            Some(entry) => {
                self.next[e] += 1;
                entry.started += 1;
                Claim::Got(i, entry.req.clone(), entry.due, entry.warmup)
            }
            None if self.input_done => Claim::Done,
            None => Claim::Wait,
        }
    }

    /// True when endpoint `e` is waiting only because it is a full window
    /// ahead of the slowest endpoint.
    pub fn holds_back(&self, e: usize) -> bool {
        self.entries.len() == self.limit && self.next[e] == self.base + self.limit as u64
    }

    /// Store endpoint `e`'s outcome for local index `i`.
    pub fn complete(&mut self, e: usize, i: u64, outcome: Outcome) {
        let Some(entry) = self.entries.get_mut((i - self.base) as usize) else {
            return;
        };
        entry.pending -= 1;
        let place = (i as usize % self.limit) * self.endpoints + e;
        self.outcomes[place] = Some(outcome);
    }

    /// Hand every request that all endpoints finished, oldest first, to `f`
    /// with its outcomes (in endpoint order) and whether it was a warm-up
    /// request, and drop it from the window. Returns how many left.
    pub fn drain_ready(
        &mut self,
        mut f: impl FnMut(&Request, &mut [Option<Outcome>], bool),
    ) -> usize {
        let mut n = 0;
        while self.entries.front().is_some_and(|e| e.pending == 0) {
            let Some(entry) = self.entries.pop_front() else {
                break;
            };
            let at = (self.base as usize % self.limit) * self.endpoints;
            let outcomes = &mut self.outcomes[at..at + self.endpoints];
            f(&entry.req, outcomes, entry.warmup);
            outcomes.iter_mut().for_each(|o| *o = None);
            self.base += 1;
            n += 1;
        }
        n
    }

    /// At the end of the run: hand every request that all endpoints
    /// finished to `f` as [`Window::drain_ready`] does, also those behind an
    /// unfinished one, and return how many counted requests some endpoint
    /// sent but not every endpoint finished. The window is left empty.
    pub fn drain_rest(&mut self, mut f: impl FnMut(&Request, &mut [Option<Outcome>], bool)) -> u64 {
        let mut incomplete = 0;
        for (k, entry) in self.entries.iter().enumerate() {
            if entry.pending == 0 {
                let at = ((self.base as usize + k) % self.limit) * self.endpoints;
                f(
                    &entry.req,
                    &mut self.outcomes[at..at + self.endpoints],
                    entry.warmup,
                );
            } else if entry.started > 0 && !entry.warmup {
                incomplete += 1;
            }
        }
        self.base += self.entries.len() as u64;
        for n in &mut self.next {
            *n = (*n).max(self.base);
        }
        self.entries.clear();
        self.outcomes.iter_mut().for_each(|o| *o = None);
        incomplete
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::Failure;

    fn req(n: u64) -> Request {
        Request::line(n, bytes::Bytes::from(n.to_string()))
    }

    fn out() -> Outcome {
        Outcome::test_failure(Failure::Timeout)
    }

    #[test]
    fn a_fast_endpoint_leads_by_at_most_the_window() {
        let mut w = Window::new(3, 2);
        for n in 0..3 {
            w.push(req(n), None, false);
        }
        // Endpoint 0 claims all three and finishes them; endpoint 1 nothing.
        for i in 0..3 {
            assert!(matches!(w.claim(0), Claim::Got(j, ..) if j == i));
            w.complete(0, i, out());
        }
        assert!(matches!(w.claim(0), Claim::Wait));
        assert!(w.holds_back(0));
        assert!(!w.has_space());
        assert_eq!(w.drain_ready(|_, _, _| {}), 0);
        // Endpoint 1 finishes the oldest: it leaves, making room for one.
        assert!(matches!(w.claim(1), Claim::Got(0, ..)));
        w.complete(1, 0, out());
        let mut seen = Vec::new();
        assert_eq!(
            w.drain_ready(|r, o, _| {
                assert!(o.iter().all(Option::is_some));
                seen.push(r.seq)
            }),
            1
        );
        assert_eq!(seen, [0]);
        assert!(w.has_space());
        assert!(!w.holds_back(0));
        assert_eq!(w.unclaimed(), 0);
        w.push(req(3), None, false);
        assert!(matches!(w.claim(0), Claim::Got(3, r, ..) if r.seq == 3));
    }

    #[test]
    fn done_only_after_input_ends_and_the_rest_is_judged_at_the_end() {
        let mut w = Window::new(4, 2);
        w.push(req(0), None, false);
        w.push(req(1), None, false);
        w.push(req(2), None, false);
        assert_eq!(w.unclaimed(), 3);
        assert!(matches!(w.claim(0), Claim::Got(0, ..)));
        assert!(matches!(w.claim(0), Claim::Got(1, ..)));
        w.finish_input();
        w.complete(0, 0, out());
        w.complete(0, 1, out());
        assert!(matches!(w.claim(1), Claim::Got(0, ..)));
        assert!(matches!(w.claim(1), Claim::Got(1, ..)));
        w.complete(1, 1, out());
        // Request 1 is answered everywhere but waits behind request 0.
        assert_eq!(w.drain_ready(|_, _, _| {}), 0);
        let mut judged = Vec::new();
        let incomplete = w.drain_rest(|r, outcomes, _| {
            assert!(outcomes.iter().all(Option::is_some));
            judged.push(r.seq);
        });
        // 1 judged; 0 sent but unfinished; 2 never sent, so not counted.
        assert_eq!(judged, [1]);
        assert_eq!(incomplete, 1);
        assert!(matches!(w.claim(0), Claim::Done));
    }

    #[test]
    fn ring_places_do_not_collide_after_wrapping() {
        let mut w = Window::new(2, 1);
        for n in 0..10 {
            w.push(req(n), None, false);
            let Claim::Got(i, r, ..) = w.claim(0) else {
                panic!("no claim")
            };
            assert_eq!(r.seq, n);
            w.complete(0, i, out());
            assert_eq!(w.drain_ready(|r, _, _| assert_eq!(r.seq, n)), 1);
        }
    }
}
