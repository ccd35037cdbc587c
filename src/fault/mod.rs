//! Network faults per endpoint, injected by a proxy that versus runs on
//! 127.0.0.1 between itself and the endpoint, so they act on real sockets
//! whatever the protocol and the client code stays unchanged. An endpoint
//! without faults has no proxy: versus connects to it directly.
//!
//! `spec.rs` is the fault language, `state.rs` what an endpoint's
//! connections share (spans, counters, rate limits), `conn.rs` one
//! connection's draw, `pipe.rs` one direction's bytes, `http.rs` the
//! HTTP-level faults, `proxy.rs` the listener and a connection's life.
//! Each engine core runs its own proxies on its own runtime (a listener
//! per endpoint with faults, its connections sent to it), so a request
//! through the proxy wakes the same thread a direct one does; the faults'
//! state (spans, counts, rate limits, the ledger) is shared by all.

mod conn;
mod http;
mod pipe;
mod proxy;
mod spec;
mod state;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

pub use spec::{counted_as, Action, Dir, Fault, FaultError, FaultSpan, ResetAt};
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
pub struct CoreProxies(Vec<Listener>);

/// One endpoint's proxy on one core, before it runs.
struct Listener {
    listener: std::net::TcpListener,
    /// Its port: the first half of its connections' names in the ledger,
    /// as the core's [`Ledger`] looks them up.
    port: u16,
    upstream: Vec<SocketAddr>,
    shared: Arc<Shared>,
}

impl CoreProxies {
    /// Serve each proxy on the current `LocalSet` (the core's), until the
    /// set is dropped.
    pub fn spawn(self) {
        for l in self.0 {
            match tokio::net::TcpListener::from_std(l.listener) {
                Ok(t) => drop(tokio::task::spawn_local(proxy::serve(
                    t, l.port, l.upstream, l.shared,
                ))),
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

/// One endpoint's faults as one engine core sees them: what puts an
/// error on a connection to the core's proxy down to the fault that
/// caused it.
pub struct Ledger {
    shared: Arc<Shared>,
    /// The port the core's proxy listens on.
    proxy: u16,
}

impl Ledger {
    /// Count `outcome`'s error in `stats` under the fault that caused it,
    /// if one did (see [`crate::stats::EndpointStats::fault_errors`]).
    pub fn blame(&self, outcome: &crate::model::Outcome, stats: &mut crate::stats::EndpointStats) {
        self.shared.blame(outcome, self.proxy, stats);
    }
}

/// One core's proxies as [`Running::listen`] opens them.
pub struct Listening {
    /// To be run on the core's runtime.
    pub proxies: CoreProxies,
    /// Per endpoint, the address the core connects to instead (`None`:
    /// connect directly).
    pub addrs: Vec<Option<SocketAddr>>,
    /// Per endpoint, its ledger (`None`: no faults, nothing to look up).
    pub ledgers: Vec<Option<Ledger>>,
}

impl Running {
    /// Open one core's proxies: a listener on 127.0.0.1 for each endpoint
    /// with faults.
    ///
    /// # Errors
    /// When a listener cannot be opened.
    pub fn listen(&self) -> std::io::Result<Listening> {
        let mut proxies = Vec::new();
        let mut addrs = Vec::with_capacity(self.shared.len());
        let mut ledgers = Vec::with_capacity(self.shared.len());
        for (s, up) in self.shared.iter().zip(&self.upstream) {
            let Some(s) = s else {
                addrs.push(None);
                ledgers.push(None);
                continue;
            };
            let l = std::net::TcpListener::bind("127.0.0.1:0")?;
            l.set_nonblocking(true)?;
            let addr = l.local_addr()?;
            addrs.push(Some(addr));
            ledgers.push(Some(Ledger {
                shared: s.clone(),
                proxy: addr.port(),
            }));
            proxies.push(Listener {
                listener: l,
                port: addr.port(),
                upstream: up.clone(),
                shared: s.clone(),
            });
        }
        Ok(Listening {
            proxies: CoreProxies(proxies),
            addrs,
            ledgers,
        })
    }

    /// The run's clock started now: spans count from here.
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
