//! The input thread: drains a [`Source`] into batches for the engine's
//! cores, numbers the requests, counts malformed records, and stops at
//! `--stop-after=N`. A partial batch is sent whenever the cores are idle or
//! the source may have to wait for input, so a request is never held back
//! waiting for a batch to fill; batches grow only while the cores are busy
//! and the input is flowing.

use std::sync::{Arc, Mutex};
use std::thread;

use super::{Malformed, Next, Request, Source};
use crate::model::Share;
use crate::stats::{InputStats, MALFORMED_SAMPLES};

/// The most requests in one batch for one core. Each batch costs a wake-up
/// of the input thread, and a context switch where it shares a CPU with
/// the core: at 64, a compared stream of 100,000 lines on one core made
/// 7,200 switches, at 256 2,200.
pub const MAX_BATCH_ONE_CORE: usize = 256;
/// The most requests in one batch when several cores take batches: a batch
/// is one core's work, so smaller ones keep the cores even to the end of a
/// finite input.
pub const MAX_BATCH: usize = 64;

/// Why the input ended early.
#[derive(Clone, Debug, thiserror::Error)]
pub enum InputError {
    /// `--strict` and a malformed record.
    #[error("{}: {} (--strict)", .0.location, .0.reason)]
    Strict(Malformed),
    /// Reading failed.
    #[error("reading the input failed: {0}")]
    Io(String),
    /// Either of the above, as a saved run recorded it.
    #[error("{0}")]
    Saved(String),
}

impl InputError {
    /// Whether `--strict` stopped the input at a malformed record (then
    /// that record was not skipped).
    pub fn is_strict(&self) -> bool {
        match self {
            InputError::Strict(_) => true,
            InputError::Io(_) => false,
            InputError::Saved(s) => s.ends_with("(--strict)"),
        }
    }
}

/// What the input thread shares with the rest of the run.
#[derive(Debug, Default)]
pub struct InputState {
    /// Counters, updated as records are read.
    pub stats: InputStats,
    /// Set when the input ended with an error.
    pub error: Option<InputError>,
}

/// One shard's records of a source (`--shard I/N`): record k (requests and
/// malformed records alike, by position) is shard `k % N`'s, so N shards
/// together read every record once. The others are read and dropped on the
/// input thread.
pub struct Sharded {
    source: Box<dyn Source>,
    shard: Share,
    /// Records read so far, this shard's and the others'.
    position: u64,
}

impl Sharded {
    /// `shard`'s records of `source`.
    pub fn new(source: Box<dyn Source>, shard: Share) -> Sharded {
        Sharded {
            source,
            shard,
            position: 0,
        }
    }
}

impl Source for Sharded {
    fn next(&mut self) -> std::io::Result<Next> {
        loop {
            let next = self.source.next()?;
            if matches!(next, Next::End) {
                return Ok(next);
            }
            self.position += 1;
            if self.shard.owns(self.position - 1) {
                return Ok(next);
            }
        }
    }

    // `buffered` is the source's own answer: with other shards' records
    // between, the next one of this shard may still have to wait for input.
    super::wrapped_source!(source);
}

/// Start the input thread, sending batches of up to `max_batch` requests.
/// It ends when the source ends, `limit` requests were read, every
/// receiver is gone, or the input fails (reading it, or `--strict` and a
/// malformed record): then the requests read before are still sent, and
/// the error is left in `state` for the report.
pub fn spawn(
    mut source: Box<dyn Source>,
    limit: Option<u64>,
    strict: bool,
    max_batch: usize,
    tx: async_channel::Sender<Vec<Request>>,
    state: Arc<Mutex<InputState>>,
) -> std::io::Result<thread::JoinHandle<()>> {
    thread::Builder::new()
        .name("versus-input".into())
        .spawn(move || {
            let mut seq: u64 = 0;
            let mut batch = Vec::new();
            let update = |f: &mut dyn FnMut(&mut InputState)| {
                if let Ok(mut s) = state.lock() {
                    f(&mut s);
                }
            };
            let error = loop {
                if limit.is_some_and(|l| seq >= l) {
                    break None;
                }
                match source.next() {
                    Ok(Next::Request(mut r)) => {
                        r.seq = seq;
                        seq += 1;
                        batch.push(r);
                    }
                    Ok(Next::Malformed(m)) => {
                        update(&mut |s| {
                            s.stats.malformed += 1;
                            if s.stats.samples.len() < MALFORMED_SAMPLES {
                                s.stats.samples.push(m.clone());
                            }
                        });
                        if strict {
                            break Some(InputError::Strict(m));
                        }
                    }
                    Ok(Next::End) => break None,
                    Err(e) => break Some(InputError::Io(e.to_string())),
                }
                // After any record, a request or a malformed one: the batch
                // goes when the next record may have to wait for input.
                if !batch.is_empty()
                    && (batch.len() >= max_batch || tx.is_empty() || !source.buffered())
                {
                    update(&mut |s| s.stats.requests = seq);
                    // The next batch has room for as many as this one: one
                    // grown a push at a time was reallocated, and its
                    // requests copied, a dozen times over (60 instructions
                    // a request; callgrind, `bench/callgrind.sh stream2`).
                    let room = batch.len();
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(room));
                    if tx.send_blocking(full).is_err() {
                        return;
                    }
                    super::peel_spent(&mut source);
                }
            };
            let summary = source.summary();
            update(&mut |s| {
                s.stats.requests = seq;
                s.stats.summary = summary.clone();
            });
            if let Some(e) = error {
                update(&mut |s| s.error = Some(e.clone()));
            }
            if !batch.is_empty() {
                let _ = tx.send_blocking(batch);
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::Malformed;
    use std::collections::VecDeque;
    use std::sync::mpsc;

    /// Records given in order, `buffered` as scripted; at the end it says
    /// so on `waiting` and waits for `release`, as a live pipe waits for
    /// input.
    struct Scripted {
        records: VecDeque<(Next, bool)>,
        buffered: bool,
        waiting: mpsc::Sender<()>,
        release: mpsc::Receiver<()>,
    }

    impl Source for Scripted {
        fn next(&mut self) -> std::io::Result<Next> {
            match self.records.pop_front() {
                Some((next, buffered)) => {
                    self.buffered = buffered;
                    Ok(next)
                }
                None => {
                    let _ = self.waiting.send(());
                    let _ = self.release.recv();
                    Ok(Next::End)
                }
            }
        }

        fn buffered(&self) -> bool {
            self.buffered
        }
    }

    /// A request followed by a malformed record and then a wait for input:
    /// the request is sent before the wait, not held back through it.
    #[test]
    fn a_malformed_record_does_not_hold_back_the_requests_before_it() {
        let (waiting, waits) = mpsc::channel();
        let (release, released) = mpsc::channel();
        let source = Scripted {
            records: VecDeque::from([
                (Next::Request(Request::line(0, "a".into())), true),
                (
                    Next::Malformed(Malformed {
                        location: "line 2".into(),
                        reason: "bad".into(),
                    }),
                    false,
                ),
            ]),
            buffered: false,
            waiting,
            release: released,
        };
        // A batch already queued, so only `buffered` decides when the
        // request goes.
        let (tx, rx) = async_channel::bounded(4);
        tx.send_blocking(Vec::new()).unwrap();
        let state = Arc::new(Mutex::new(InputState::default()));
        let input = spawn(Box::new(source), None, false, MAX_BATCH, tx, state).unwrap();
        waits
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("the source reaches its wait");
        assert_eq!(rx.len(), 2, "the request waited with the input");
        release.send(()).unwrap();
        input.join().unwrap();
        assert!(rx.recv_blocking().unwrap().is_empty());
        assert_eq!(rx.recv_blocking().unwrap().len(), 1);
    }

    /// While the cores are busy (the channel holds a batch) and the input
    /// is buffered, batches fill to the size asked for, never beyond it.
    #[test]
    fn batches_fill_to_their_size_and_no_further() {
        struct Buffered(u64);
        impl Source for Buffered {
            fn next(&mut self) -> std::io::Result<Next> {
                if self.0 == 0 {
                    return Ok(Next::End);
                }
                self.0 -= 1;
                Ok(Next::Request(Request::line(0, "r".into())))
            }
            fn buffered(&self) -> bool {
                true
            }
        }
        for max in [MAX_BATCH, MAX_BATCH_ONE_CORE] {
            let (tx, rx) = async_channel::bounded(100);
            tx.send_blocking(Vec::new()).unwrap();
            let state = Arc::new(Mutex::new(InputState::default()));
            let source = Box::new(Buffered(1000));
            spawn(source, None, false, max, tx, state)
                .unwrap()
                .join()
                .unwrap();
            assert!(rx.recv_blocking().unwrap().is_empty());
            let sizes: Vec<usize> = std::iter::from_fn(|| rx.try_recv().ok())
                .map(|b| b.len())
                .collect();
            let mut want = vec![max; 1000 / max];
            want.push(1000 % max);
            assert_eq!(sizes, want);
        }
    }

    /// A wrapper that is spent after a batch goes is taken out of the
    /// chain, outside a wrapper that stays or inside one: the records after
    /// it come from its source directly, all of them, in order.
    #[test]
    fn a_spent_wrapper_is_passed_by() {
        struct Counting(u64, u64);
        impl Source for Counting {
            fn next(&mut self) -> std::io::Result<Next> {
                if self.0 == self.1 {
                    return Ok(Next::End);
                }
                self.0 += 1;
                Ok(Next::Request(Request::line(0, self.0.to_string().into())))
            }
            fn buffered(&self) -> bool {
                true
            }
        }
        /// Counts the records it hands on; spent after its first.
        struct Wrapper(Option<Box<dyn Source>>, Arc<Mutex<u64>>);
        impl Source for Wrapper {
            fn next(&mut self) -> std::io::Result<Next> {
                *self.1.lock().unwrap() += 1;
                self.0.as_mut().map_or(Ok(Next::End), |s| s.next())
            }
            fn spent(&mut self) -> Option<Box<dyn Source>> {
                self.0.take()
            }
        }
        /// Counts the records it hands on, and stays: it peels what it
        /// wraps.
        struct Staying(Box<dyn Source>, Arc<Mutex<u64>>);
        impl Source for Staying {
            fn next(&mut self) -> std::io::Result<Next> {
                *self.1.lock().unwrap() += 1;
                self.0.next()
            }
            fn spent(&mut self) -> Option<Box<dyn Source>> {
                super::super::peel_spent(&mut self.0);
                None
            }
        }
        let (passed, stayed) = (Arc::new(Mutex::new(0)), Arc::new(Mutex::new(0)));
        let inner = Box::new(Counting(0, 100));
        let inner = Box::new(Wrapper(Some(inner), passed.clone()));
        let staying = Box::new(Staying(inner, stayed.clone()));
        let source = Box::new(Wrapper(Some(staying), passed.clone()));
        // An empty channel: the first record goes as a batch of its own.
        let (tx, rx) = async_channel::bounded(100);
        let state = Arc::new(Mutex::new(InputState::default()));
        spawn(source, None, false, MAX_BATCH, tx, state)
            .unwrap()
            .join()
            .unwrap();
        let bodies: Vec<String> = std::iter::from_fn(|| rx.try_recv().ok())
            .flatten()
            .map(|r| String::from_utf8(r.body.to_vec()).unwrap())
            .collect();
        let want: Vec<String> = (1..=100).map(|i: u64| i.to_string()).collect();
        assert_eq!(bodies, want);
        // The first record through both spending wrappers, and nothing
        // after it; every record (and the end) through the one that stays.
        assert_eq!(*passed.lock().unwrap(), 2);
        assert_eq!(*stayed.lock().unwrap(), 101);
    }

    /// A stream of requests and malformed records read by N sharded
    /// readers: each record by one shard, by position.
    #[test]
    fn shards_read_every_record_once() {
        struct Records(VecDeque<Next>);
        impl Source for Records {
            fn next(&mut self) -> std::io::Result<Next> {
                Ok(self.0.pop_front().unwrap_or(Next::End))
            }
        }
        let stream = || {
            Records(
                (0..50u64)
                    .map(|k| match k % 7 {
                        3 => Next::Malformed(Malformed {
                            location: format!("line {k}"),
                            reason: "bad".into(),
                        }),
                        _ => Next::Request(Request::line(k, k.to_string().into())),
                    })
                    .collect(),
            )
        };
        for n in 1..8u64 {
            let mut seen = Vec::new();
            for i in 0..n {
                let mut shard = Sharded::new(Box::new(stream()), Share { index: i, count: n });
                loop {
                    match shard.next().unwrap() {
                        Next::Request(r) => seen.push(r.seq),
                        Next::Malformed(m) => seen.push(m.location[5..].parse().unwrap()),
                        Next::End => break,
                    }
                }
            }
            seen.sort_unstable();
            assert_eq!(seen, (0..50).collect::<Vec<u64>>(), "n={n}");
        }
    }
}
