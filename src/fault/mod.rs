//! Network faults per endpoint, injected by a proxy that versus runs on
//! 127.0.0.1 between itself and the endpoint, so they act on real sockets
//! whatever the protocol and the client code stays unchanged. An endpoint
//! without faults has no proxy: versus connects to it directly.
//!
//! `spec.rs` is the fault language, `state.rs` what an endpoint's
//! connections share (windows, counters, rate limits), `conn.rs` one
//! connection's draw, `pipe.rs` one direction's bytes, `http.rs` the
//! HTTP-level faults, `proxy.rs` the listener and a connection's life.
//! Each engine core runs its own proxies on its own runtime (a listener
//! per endpoint with faults, its connections sent to it), so a request
//! through the proxy wakes the same thread a direct one does; the faults'
//! state (windows, counts, rate limits, the ledger) is shared by all.

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

/// The faults of one run: what every core's proxies share.
pub struct Running {
    shared: Vec<Option<Arc<Shared>>>,
    upstream: Vec<Vec<SocketAddr>>,
    epoch: Epoch,
}

/// One core's proxies, listening, to be run on the core's runtime
/// ([`CoreProxies::spawn`]).
pub struct CoreProxies(Vec<(std::net::TcpListener, Vec<SocketAddr>, Arc<Shared>)>);

impl CoreProxies {
    /// Serve each proxy on the current `LocalSet` (the core's), until the
    /// set is dropped.
    pub fn spawn(self) {
        for (l, up, s) in self.0 {
            match tokio::net::TcpListener::from_std(l) {
                Ok(l) => drop(tokio::task::spawn_local(proxy::serve(l, up, s))),
                Err(e) => eprintln!("versus: fault proxy: {e}"),
            }
        }
    }
}

/// The faults of a run: `faults[i]` for endpoint i, whose addresses are
/// `upstream[i]`, their acts counted per `interval` of the run. Each core
/// opens its own proxies with [`Running::listen`].
pub fn start(
    faults: &[Vec<Fault>],
    upstream: &[Vec<SocketAddr>],
    interval: std::time::Duration,
) -> Running {
    let epoch = Epoch::default();
    let shared = faults
        .iter()
        .map(|f| (!f.is_empty()).then(|| Arc::new(Shared::new(f.clone(), epoch.clone(), interval))))
        .collect();
    Running {
        shared,
        upstream: upstream.to_vec(),
        epoch,
    }
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
    /// Open one core's proxies: a listener on 127.0.0.1 for each endpoint
    /// with faults. Returns them and, per endpoint, the address that core
    /// connects to instead (`None`: connect directly).
    ///
    /// # Errors
    /// When a listener cannot be opened.
    pub fn listen(&self) -> std::io::Result<(CoreProxies, Vec<Option<SocketAddr>>)> {
        let mut proxies = Vec::new();
        let mut addrs = Vec::with_capacity(self.shared.len());
        for (s, up) in self.shared.iter().zip(&self.upstream) {
            let Some(s) = s else {
                addrs.push(None);
                continue;
            };
            let l = std::net::TcpListener::bind("127.0.0.1:0")?;
            l.set_nonblocking(true)?;
            addrs.push(Some(l.local_addr()?));
            proxies.push((l, up.clone(), s.clone()));
        }
        Ok((CoreProxies(proxies), addrs))
    }

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
