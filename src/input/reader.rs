//! The input thread: drains a [`Source`] into batches for the engine's
//! cores, numbers the requests, counts malformed records, and stops at
//! `--stop-after=N`. A partial batch is sent whenever the cores are idle or
//! the source may have to wait for input, so a request is never held back
//! waiting for a batch to fill; batches grow only while the cores are busy
//! and the input is flowing.

use std::sync::{Arc, Mutex};
use std::thread;

use super::{Malformed, Next, Request, Source};
use crate::stats::{InputStats, MALFORMED_SAMPLES};

/// The most requests in one batch.
const MAX_BATCH: usize = 64;

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

/// What the input thread shares with the rest of the run.
#[derive(Debug, Default)]
pub struct InputState {
    /// Counters, updated as records are read.
    pub stats: InputStats,
    /// Set when the input ended with an error.
    pub error: Option<InputError>,
}

/// Start the input thread. It ends when the source ends, `limit` requests
/// were read, or every receiver is gone; `on_error` runs when the input
/// fails (to stop the run).
pub fn spawn(
    mut source: Box<dyn Source>,
    limit: Option<u64>,
    strict: bool,
    tx: async_channel::Sender<Vec<Request>>,
    state: Arc<Mutex<InputState>>,
    on_error: impl FnOnce() + Send + 'static,
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
                        if batch.len() >= MAX_BATCH || tx.is_empty() || !source.buffered() {
                            update(&mut |s| s.stats.requests = seq);
                            if tx.send_blocking(std::mem::take(&mut batch)).is_err() {
                                return;
                            }
                        }
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
            };
            let summary = source.summary();
            update(&mut |s| {
                s.stats.requests = seq;
                s.stats.summary = summary.clone();
            });
            if !batch.is_empty() {
                let _ = tx.send_blocking(batch);
            }
            if let Some(e) = error {
                update(&mut |s| s.error = Some(e.clone()));
                on_error();
            }
        })
}
