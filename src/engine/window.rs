//! The lead window of one core: the units of work (a request, or an
//! instance of a flow) that are open, that is started and not yet judged.
//! Each endpoint claims work in the order it was pushed and at its own
//! pace; work is finished at each endpoint in any order and judged as soon
//! as every endpoint has finished it. The window bounds how many units are
//! open, not how far the newest is from the oldest: a unit that hangs at
//! one endpoint holds one place, and nothing behind it waits. A fast
//! endpoint may run ahead of a slow one until the window is full; then it
//! is held back (and that time is counted and reported). Pure data: no
//! clock, no I/O.

use std::collections::VecDeque;
use std::time::Instant;

struct Entry<W> {
    /// The work; out with the endpoint that claimed it last (the others
    /// work on copies) until that endpoint gives it back.
    work: Option<W>,
    /// Open model: when the work is due.
    due: Option<Instant>,
    /// Sent during the warm-up: not counted.
    warmup: bool,
    /// Endpoints that claimed it.
    started: usize,
    /// Endpoints it was pushed for (all, unless each has its own rate).
    assigned: usize,
    /// Endpoints that have not delivered their result.
    pending: usize,
}

/// The mark of a place in an endpoint's queue (its top bit, above any
/// place): released when the endpoint had no free slot, so it is sent
/// late (the open model's `late`), counted when it is claimed, that is
/// sent, and never when the stop leaves it unsent.
const LATE: usize = 1 << (usize::BITS - 1);

/// What an endpoint may do next.
#[derive(Debug)]
pub(crate) enum Claim<W> {
    /// Carry out this work (its place in the window, the work, its due
    /// time in the open model, whether it belongs to the warm-up).
    Got(usize, W, Option<Instant>, bool),
    /// Nothing to do yet: wait for input or for the window to move.
    Wait,
    /// Workload is over and every unit was claimed.
    Done,
}

/// Open work `W` and each endpoint's result `D` for it.
pub(crate) struct LeadWindow<W, D> {
    endpoints: usize,
    /// `limit` places; `None` is free.
    entries: Vec<Option<Entry<W>>>,
    /// Free places, reused last-in first-out.
    free: Vec<usize>,
    /// Per endpoint, the places it has not claimed yet, in push order,
    /// each perhaps marked [`LATE`].
    queues: Vec<VecDeque<usize>>,
    /// Per endpoint, the counted units claimed that were marked late, not
    /// yet taken ([`LeadWindow::take_late`]).
    late: Vec<u64>,
    /// `limit * endpoints` results, by place and endpoint; none with one
    /// endpoint, whose result goes straight to the judge.
    results: Vec<Option<D>>,
    input_done: bool,
}

impl<W: Clone, D> LeadWindow<W, D> {
    pub fn new(limit: usize, endpoints: usize) -> Self {
        let limit = limit.max(1);
        LeadWindow {
            endpoints,
            entries: (0..limit).map(|_| None).collect(),
            free: (0..limit).rev().collect(),
            queues: (0..endpoints)
                .map(|_| VecDeque::with_capacity(limit))
                .collect(),
            late: vec![0; endpoints],
            results: if endpoints > 1 {
                (0..limit * endpoints).map(|_| None).collect()
            } else {
                Vec::new()
            },
            input_done: false,
        }
    }

    pub fn has_space(&self) -> bool {
        !self.free.is_empty()
    }

    pub fn push(&mut self, work: W, due: Option<Instant>, warmup: bool) {
        self.push_marked(work, due, warmup, |_, _| false, None);
    }

    /// [`LeadWindow::push`] for the endpoints `e` where `only[e]` (all
    /// when `None`; the others' results stay `None`), marked late at each
    /// endpoint `e` where `late(e, waiting)` (`waiting`: the units already
    /// waiting there).
    pub fn push_marked(
        &mut self,
        work: W,
        due: Option<Instant>,
        warmup: bool,
        late: impl Fn(usize, usize) -> bool,
        only: Option<&[bool]>,
    ) {
        let Some(place) = self.free.pop() else {
            debug_assert!(false, "push into a full window");
            return;
        };
        let assigned = only.map_or(self.endpoints, |o| o.iter().filter(|a| **a).count());
        self.entries[place] = Some(Entry {
            work: Some(work),
            due,
            warmup,
            started: 0,
            assigned,
            pending: assigned,
        });
        for (e, q) in self.queues.iter_mut().enumerate() {
            if only.is_some_and(|o| !o[e]) {
                continue;
            }
            let mark = if late(e, q.len()) { LATE } else { 0 };
            q.push_back(place | mark);
        }
    }

    /// Unit in the window that the leading endpoint has not claimed: what
    /// the feeder keeps ready without hoarding input from other cores.
    pub fn unclaimed(&self) -> usize {
        self.queues.iter().map(VecDeque::len).min().unwrap_or(0)
    }

    pub fn finish_input(&mut self) {
        self.input_done = true;
    }

    pub fn claim(&mut self, e: usize) -> Claim<W> {
        match self.queues[e].pop_front() {
            Some(marked) => match &mut self.entries[marked & !LATE] {
                Some(entry) => {
                    let place = marked & !LATE;
                    if marked & LATE != 0 && !entry.warmup {
                        self.late[e] += 1;
                    }
                    entry.started += 1;
                    let work = if entry.started == entry.assigned {
                        entry.work.take()
                    } else {
                        entry.work.clone()
                    };
                    match work {
                        Some(work) => Claim::Got(place, work, entry.due, entry.warmup),
                        None => Claim::Wait,
                    }
                }
                None => Claim::Wait,
            },
            None if self.input_done => Claim::Done,
            None => Claim::Wait,
        }
    }

    /// True when endpoint `e` has nothing to claim only because the window
    /// is full of work that slower endpoints have not finished.
    pub fn holds_back(&self, e: usize) -> bool {
        self.free.is_empty() && self.queues[e].is_empty()
    }

    /// Store endpoint `e`'s result for the work at `place`, taken from
    /// `result` (left empty), and take back the work it claimed. When it
    /// was the last one missing, hand the work, every endpoint's result (in
    /// endpoint order) and whether it was warm-up work to `judge`, free the
    /// place, and return the work (its copies dropped, for the caller to
    /// reuse what it holds); `None` while it waits for others. With one
    /// endpoint, `judge` is given the result where it lies, in `result`,
    /// which keeps it.
    pub fn complete(
        &mut self,
        e: usize,
        place: usize,
        work: W,
        result: &mut Option<D>,
        judge: impl FnOnce(&W, &[Option<D>], bool),
    ) -> Option<W> {
        let Some(entry) = &mut self.entries[place] else {
            return None;
        };
        let work = entry.work.get_or_insert(work);
        entry.pending -= 1;
        if self.endpoints == 1 {
            // Not through the table: one write of a result less, to a
            // place that is cold when many units are open.
            judge(work, std::slice::from_ref(result), entry.warmup);
        } else {
            let at = place * self.endpoints;
            // Swapped with the empty place: taken and then stored, the
            // result was copied twice (a `memcpy` call each).
            std::mem::swap(&mut self.results[at + e], result);
            if entry.pending > 0 {
                return None;
            }
            let results = &mut self.results[at..at + self.endpoints];
            judge(work, results, entry.warmup);
            results.iter_mut().for_each(|r| *r = None);
        }
        let entry = self.entries[place].take();
        self.free.push(place);
        entry.and_then(|e| e.work)
    }

    /// How many counted units endpoint `e` has not claimed.
    pub fn unclaimed_counted(&self, e: usize) -> u64 {
        self.queues[e]
            .iter()
            .filter(|p| {
                self.entries[**p & !LATE]
                    .as_ref()
                    .is_some_and(|x| !x.warmup)
            })
            .count() as u64
    }

    /// The counted units endpoint `e` claimed (sent) late since the last
    /// call.
    pub fn take_late(&mut self, e: usize) -> u64 {
        std::mem::take(&mut self.late[e])
    }

    /// At the end of the run: how many counted units some endpoint started
    /// but not every endpoint finished. The window is left empty.
    pub fn drain_rest(&mut self) -> u64 {
        let incomplete = self
            .entries
            .iter()
            .flatten()
            .filter(|e| e.started > 0 && !e.warmup)
            .count() as u64;
        for (place, entry) in self.entries.iter_mut().enumerate() {
            if entry.take().is_some() {
                self.free.push(place);
            }
        }
        self.queues.iter_mut().for_each(VecDeque::clear);
        self.results.iter_mut().for_each(|r| *r = None);
        incomplete
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type W = LeadWindow<u64, &'static str>;

    fn got(c: Claim<u64>) -> (usize, u64) {
        match c {
            Claim::Got(place, work, ..) => (place, work),
            other => panic!("expected work, got {other:?}"),
        }
    }

    /// Work pushed for some endpoints only (each at its own rate) is
    /// claimed by those, judged once they delivered, with `None` for the
    /// others.
    #[test]
    fn work_for_some_endpoints_is_judged_when_those_delivered() {
        let mut w = W::new(4, 3);
        w.push_marked(7, None, false, |_, _| false, Some(&[true, false, true]));
        assert!(matches!(w.claim(1), Claim::Wait));
        let (p0, work) = got(w.claim(0));
        assert!(w
            .complete(0, p0, work, &mut Some("a"), |_, _, _| panic!("early"))
            .is_none());
        let (p2, work) = got(w.claim(2));
        let mut judged = Vec::new();
        w.complete(2, p2, work, &mut Some("c"), |work, results, _| {
            judged.push((*work, results.to_vec()));
        });
        assert_eq!(judged, [(7, vec![Some("a"), None, Some("c")])]);
        assert_eq!(w.unclaimed_counted(1), 0);
    }

    #[test]
    fn a_fast_endpoint_leads_by_at_most_the_window() {
        let mut w = W::new(3, 2);
        for n in 0..3 {
            w.push(n, None, false);
        }
        // Endpoint 0 claims all three and finishes them; endpoint 1 nothing.
        let mut places = Vec::new();
        for n in 0..3 {
            let (place, work) = got(w.claim(0));
            assert_eq!(work, n);
            places.push(place);
            assert!(w
                .complete(0, place, work, &mut Some("a"), |_, _, _| panic!(
                    "judged early"
                ))
                .is_none());
        }
        assert!(matches!(w.claim(0), Claim::Wait));
        assert!(w.holds_back(0));
        assert!(!w.holds_back(1));
        assert!(!w.has_space());
        // Endpoint 1 finishes the oldest: it is judged, making room for one.
        let (place, work) = got(w.claim(1));
        assert_eq!((place, work), (places[0], 0));
        let mut seen = Vec::new();
        assert!(w
            .complete(1, place, work, &mut Some("b"), |work, results, _| {
                assert_eq!(results, [Some("a"), Some("b")]);
                seen.push(*work)
            })
            .is_some());
        assert_eq!(seen, [0]);
        assert!(w.has_space());
        assert!(!w.holds_back(0));
        assert_eq!(w.unclaimed(), 0);
        w.push(3, None, false);
        assert_eq!(got(w.claim(0)).1, 3);
    }

    #[test]
    fn work_hanging_at_one_endpoint_holds_one_place_and_nothing_behind_it() {
        // One endpoint, a window of 4: work 0 hangs, everything after it
        // is finished and judged at once, for as long as the run goes on.
        let mut w = W::new(4, 1);
        w.push(0, None, false);
        let (hung, hung_work) = got(w.claim(0));
        let mut judged = Vec::new();
        for n in 1..100 {
            assert!(w.has_space());
            w.push(n, None, false);
            let (place, work) = got(w.claim(0));
            assert_eq!(work, n);
            assert_ne!(place, hung);
            assert!(
                w.complete(0, place, work, &mut Some("ok"), |work, results, _| {
                    assert_eq!(results, [Some("ok")]);
                    judged.push(*work);
                }) == Some(n)
            );
        }
        assert_eq!(judged, (1..100).collect::<Vec<_>>());
        assert!(
            w.complete(0, hung, hung_work, &mut Some("late"), |work, results, _| {
                assert_eq!(results, [Some("late")]);
                judged.push(*work);
            }) == Some(0)
        );
        assert_eq!(judged.last(), Some(&0));
    }

    #[test]
    fn done_only_after_input_ends_and_unfinished_work_is_counted_at_the_end() {
        let mut w = W::new(4, 2);
        for n in 0..3 {
            w.push(n, None, false);
        }
        assert_eq!(w.unclaimed(), 3);
        let (p0, w0) = got(w.claim(0));
        let (p1, w1) = got(w.claim(0));
        w.finish_input();
        w.complete(0, p0, w0, &mut Some("a"), |_, _, _| {});
        w.complete(0, p1, w1, &mut Some("a"), |_, _, _| {});
        got(w.claim(1));
        let (_, w1) = got(w.claim(1));
        // Unit 1 is finished everywhere and judged although 0 is not.
        let mut judged = Vec::new();
        let back = w.complete(1, p1, w1, &mut Some("b"), |work, _, _| judged.push(*work));
        assert_eq!(back, Some(1));
        assert_eq!(judged, [1]);
        // 0 started but unfinished; 2 never claimed: not counted.
        assert_eq!(w.drain_rest(), 1);
        assert!(matches!(w.claim(0), Claim::Done));
        assert!(matches!(w.claim(1), Claim::Done));
    }

    #[test]
    fn places_are_reused_without_mixing_results() {
        let mut w = W::new(2, 2);
        for n in 0..10 {
            w.push(n, None, false);
            let (p, work) = got(w.claim(0));
            assert_eq!(work, n);
            let (q, last) = got(w.claim(1));
            assert_eq!(p, q);
            w.complete(1, q, last, &mut Some("b"), |_, _, _| panic!("judged early"));
            let back = w.complete(0, p, work, &mut Some("a"), |work, results, _| {
                assert_eq!(*work, n);
                assert_eq!(results, [Some("a"), Some("b")]);
            });
            assert_eq!(back, Some(n));
        }
    }

    /// The work is copied for every endpoint but the last to claim it,
    /// which takes it; the judge sees it whoever gives it back first.
    #[test]
    fn the_last_endpoint_to_claim_work_takes_it_without_a_copy() {
        use std::rc::Rc;
        let mut w: LeadWindow<Rc<u64>, &str> = LeadWindow::new(2, 2);
        let unit = Rc::new(7);
        w.push(unit.clone(), None, false);
        let Claim::Got(p, first, ..) = w.claim(0) else {
            panic!()
        };
        assert_eq!(Rc::strong_count(&unit), 3);
        let Claim::Got(_, last, ..) = w.claim(1) else {
            panic!()
        };
        assert_eq!(Rc::strong_count(&unit), 3);
        assert!(w
            .complete(1, p, last, &mut Some("b"), |_, _, _| panic!("judged early"))
            .is_none());
        assert_eq!(Rc::strong_count(&unit), 3);
        // The judged work is handed back, its copies dropped.
        let back = w.complete(0, p, first, &mut Some("a"), |work, _, _| {
            assert_eq!(**work, 7)
        });
        assert!(back.is_some_and(|b| Rc::ptr_eq(&b, &unit)));
        assert_eq!(Rc::strong_count(&unit), 1);
        let mut one: LeadWindow<Rc<u64>, &str> = LeadWindow::new(1, 1);
        one.push(unit.clone(), None, false);
        let Claim::Got(p, only, ..) = one.claim(0) else {
            panic!()
        };
        assert_eq!(Rc::strong_count(&unit), 2);
        let back = one.complete(0, p, only, &mut Some("a"), |work, _, _| {
            assert_eq!(**work, 7)
        });
        assert!(back.is_some_and(|b| Rc::ptr_eq(&b, &unit)));
        assert_eq!(Rc::strong_count(&unit), 1);
    }

    /// A unit marked late at an endpoint is counted late there when that
    /// endpoint claims (sends) it, never while it waits: one the stop
    /// leaves unclaimed is unsent, not late. Warm-up units count in
    /// neither.
    #[test]
    fn late_counts_units_claimed_and_unsent_those_left() {
        let mut w = W::new(8, 2);
        // Late at endpoint 0 only, then late at both, then warm-up.
        w.push_marked(1, None, false, |e, _| e == 0, None);
        w.push_marked(2, None, false, |_, _| true, None);
        w.push_marked(3, None, true, |_, _| true, None);
        assert!(matches!(w.claim(0), Claim::Got(_, 1, ..)));
        assert!(matches!(w.claim(1), Claim::Got(_, 1, ..)));
        assert_eq!((w.take_late(0), w.take_late(1)), (1, 0));
        assert!(matches!(w.claim(0), Claim::Got(_, 2, ..)));
        assert!(matches!(w.claim(0), Claim::Got(_, 3, ..)));
        assert_eq!((w.take_late(0), w.take_late(0)), (1, 0));
        // Endpoint 1 never claimed 2 (counted) nor 3 (warm-up).
        assert_eq!((w.unclaimed_counted(0), w.unclaimed_counted(1)), (0, 1));
        assert_eq!(w.take_late(1), 0);
    }
}
