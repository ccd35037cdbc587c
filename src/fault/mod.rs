//! Network faults per endpoint, injected by a proxy that versus runs on
//! 127.0.0.1 between itself and the endpoint, so they act on real sockets
//! whatever the protocol and the client code stays unchanged. An endpoint
//! without faults has no proxy: versus connects to it directly.
//!
//! `spec.rs` is the fault language, `state.rs` what an endpoint's
//! connections share (windows, counters, rate limits), `conn.rs` one
//! connection's draw, `pipe.rs` one direction's bytes, `http.rs` the
//! HTTP-level faults, `proxy.rs` the listener and a connection's life.
//! All proxies of a run share one thread with a single-threaded runtime,
//! apart from the engine's cores.

mod conn;
mod http;
mod pipe;
mod proxy;
mod spec;
mod state;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

pub use spec::{counted_as, Action, Dir, Fault, FaultError, ResetAt, Window};
use state::{Epoch, Shared};

use crate::stats::RunStats;

/// The proxies of one run, running on a thread of their own until
/// dropped.
pub struct Running {
    shared: Vec<Option<Arc<Shared>>>,
    epoch: Epoch,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Start a proxy for every endpoint that has faults (`faults[i]` for
/// endpoint i, whose addresses are `upstream[i]`; their acts counted per
/// `interval` of the run). Returns the running
/// proxies and, per endpoint, the address to connect to instead (`None`:
/// connect directly).
///
/// # Errors
/// When a listener cannot be opened on 127.0.0.1 or the thread cannot
/// start.
pub fn start(
    faults: &[Vec<Fault>],
    upstream: &[Vec<SocketAddr>],
    interval: std::time::Duration,
) -> std::io::Result<(Running, Vec<Option<SocketAddr>>)> {
    let epoch = Epoch::default();
    let mut shared = Vec::with_capacity(faults.len());
    let mut addrs = Vec::with_capacity(faults.len());
    let mut listeners = Vec::new();
    for (f, up) in faults.iter().zip(upstream) {
        if f.is_empty() {
            shared.push(None);
            addrs.push(None);
            continue;
        }
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        l.set_nonblocking(true)?;
        addrs.push(Some(l.local_addr()?));
        let s = Arc::new(Shared::new(f.clone(), epoch.clone(), interval));
        listeners.push((l, up.clone(), s.clone()));
        shared.push(Some(s));
    }
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let thread = std::thread::Builder::new()
        .name("versus-faults".into())
        .spawn(move || {
            let local = tokio::task::LocalSet::new();
            local.block_on(&rt, async move {
                for (l, up, s) in listeners {
                    match tokio::net::TcpListener::from_std(l) {
                        Ok(l) => drop(tokio::task::spawn_local(proxy::serve(l, up, s))),
                        Err(e) => eprintln!("versus: fault proxy: {e}"),
                    }
                }
                let _ = stopped.await;
            });
        })?;
    Ok((
        Running {
            shared,
            epoch,
            stop: Some(stop),
            thread: Some(thread),
        },
        addrs,
    ))
}

/// One endpoint's faults as the engine's cores see them: what puts an
/// error down to the fault that caused it.
#[derive(Clone)]
pub struct Ledger(Arc<Shared>);

impl Ledger {
    /// Count `outcome`'s error in `stats` under the fault that caused it,
    /// if one did (see [`crate::stats::EndpointStats::fault_errors`]).
    pub fn blame(&self, outcome: &crate::model::Outcome, stats: &mut crate::stats::EndpointStats) {
        self.0.blame(outcome, stats);
    }
}

impl Running {
    /// Per endpoint, its ledger (`None`: no faults, nothing to look up).
    pub fn ledgers(&self) -> Vec<Option<Ledger>> {
        self.shared
            .iter()
            .map(|s| s.as_ref().map(|s| Ledger(s.clone())))
            .collect()
    }

    /// The run's clock started now: windows count from here.
    pub fn clock_started(&self) {
        let _ = self.epoch.set(Instant::now());
    }

    /// Add what each fault did in intervals up to `index` (not taken
    /// before) to each endpoint's `faults` counts (every fault named, zero
    /// included).
    pub fn take_into(&self, stats: &mut RunStats, index: u64) {
        for (s, e) in self.shared.iter().zip(&mut stats.endpoints) {
            if let Some(s) = s {
                for (name, n) in s.take(index) {
                    *e.faults.entry(name).or_default() += n;
                }
            }
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
