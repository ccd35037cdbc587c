//! What one endpoint's proxy shares between its connections and with the
//! engine: the faults, the run's start (for spans), how often each fault
//! acted in each interval of the run, and the rate limits' counts. The
//! counts are taken once per interval by the collector; nothing here runs
//! per byte (a count is once per connection, or per request for the HTTP
//! faults, under an uncontended lock).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::spec::{Action, Fault};
use crate::model::{Failure, Outcome};
use crate::stats::EndpointStats;

/// The start of the run, set by the engine when its clock starts; a
/// span counts from it (before it is set, only faults without `after`
/// are on).
pub type Epoch = Arc<OnceLock<Instant>>;

/// One endpoint's faults and their counters.
pub struct Shared {
    faults: Vec<Fault>,
    /// Per fault: interval index → acts in it.
    acted: Vec<Mutex<BTreeMap<u64, u64>>>,
    epoch: Epoch,
    interval: Duration,
    /// Per rate-limit fault: the start of its current period and the
    /// requests let through in it.
    periods: Vec<Mutex<(Instant, u64)>>,
    /// Each fault's name, as reports show it.
    names: Vec<String>,
    /// Per connection: what the faults did to it.
    ports: Mutex<HashMap<ConnKey, Marks>>,
}

/// A proxied connection's name in the ledger: the port of the proxy it
/// came to (each core has its own) and versus's local port. The local
/// port alone is not enough: two cores' connections to their own proxies
/// may hold the same local port at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnKey {
    pub proxy: u16,
    pub client: u16,
}

/// What the faults did to one connection: fault indices.
#[derive(Clone, Copy, Debug, Default)]
struct Marks {
    /// The fault that broke it (reset, limit, timeout, abort).
    broke: Option<usize>,
    /// The last fault that slowed it (latency, bandwidth, slow-*,
    /// slicer): a timeout on it is put down to that fault.
    slowed: Option<usize>,
    /// The HTTP fault that answered its last request (none when the
    /// request went on to the endpoint).
    answered: Option<usize>,
}

impl Shared {
    /// The state of `faults`, spans counted from `epoch`, acts counted
    /// per `interval` of the run.
    pub fn new(faults: Vec<Fault>, epoch: Epoch, interval: Duration) -> Shared {
        let now = Instant::now();
        Shared {
            acted: faults.iter().map(|_| Mutex::default()).collect(),
            periods: faults.iter().map(|_| Mutex::new((now, 0))).collect(),
            names: faults.iter().map(Fault::to_string).collect(),
            ports: Mutex::default(),
            faults,
            epoch,
            interval,
        }
    }

    /// The faults, in the order given.
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    /// True when fault `i`'s span is open now.
    pub fn on(&self, i: usize) -> bool {
        let w = &self.faults[i].span;
        if w.always() {
            return true;
        }
        match self.epoch.get() {
            Some(start) => w.contains(start.elapsed()),
            None => w.after.is_zero(),
        }
    }

    /// When fault `i`'s span opens: `None` before the run's clock
    /// starts.
    pub fn opens_at(&self, i: usize) -> Option<Instant> {
        self.epoch.get().map(|s| *s + self.faults[i].span.after)
    }

    /// Roll fault `i`'s probability once.
    pub fn roll(&self, i: usize) -> bool {
        let p = self.faults[i].prob;
        p >= 1.0 || fastrand::f64() < p
    }

    /// Count one act of fault `i` (one connection, or one request for the
    /// HTTP faults) in the interval of the run it falls in (the first
    /// before the run's clock starts).
    pub fn count(&self, i: usize) {
        let index = self.epoch.get().map_or(0, |start| {
            (start.elapsed().as_nanos() / self.interval.as_nanos().max(1)) as u64
        });
        let mut acted = self.acted[i].lock().unwrap_or_else(|e| e.into_inner());
        *acted.entry(index).or_default() += 1;
    }

    /// Each fault's name and its acts in intervals up to `index` not taken
    /// yet (zero included: a fault that never acted still shows it was
    /// set).
    pub fn take(&self, index: u64) -> Vec<(String, u64)> {
        self.acted
            .iter()
            .enumerate()
            .map(|(i, acted)| {
                let mut acted = acted.lock().unwrap_or_else(|e| e.into_inner());
                let later = acted.split_off(&index.saturating_add(1));
                let n = std::mem::replace(&mut *acted, later).values().sum();
                (self.names[i].clone(), n)
            })
            .collect()
    }

    /// Rate-limit fault `i`: true when one more request in the current
    /// period would be over its limit (the request is then counted
    /// nowhere), false when it is let through (and counted).
    pub fn over_limit(&self, i: usize) -> bool {
        let Action::RateLimit { limit, per } = self.faults[i].action else {
            return false;
        };
        let mut p = self.periods[i].lock().unwrap_or_else(|e| e.into_inner());
        let now = Instant::now();
        if now.duration_since(p.0) >= per {
            // A new period starts at a whole number of periods after the
            // last, so the limit holds on a fixed grid.
            let periods = now.duration_since(p.0).as_nanos() / per.as_nanos().max(1);
            p.0 += Duration::from_nanos((periods * per.as_nanos()) as u64);
            p.1 = 0;
        }
        if p.1 >= limit {
            return true;
        }
        p.1 += 1;
        false
    }

    /// A new connection `key`: what was marked on an earlier connection
    /// of the same name is forgotten.
    pub fn opened(&self, key: ConnKey) {
        self.ports().remove(&key);
    }

    /// Fault `i` acted on connection `key` (for an HTTP fault: on its
    /// last request; `None`: that request went on to the endpoint).
    pub fn mark(&self, key: ConnKey, i: Option<usize>) {
        let mut ports = self.ports();
        match i.map(|i| (i, &self.faults[i].action)) {
            Some((i, a)) if a.breaks() => ports.entry(key).or_default().broke = Some(i),
            Some((i, a)) if a.is_http() => ports.entry(key).or_default().answered = Some(i),
            Some((i, _)) => ports.entry(key).or_default().slowed = Some(i),
            None => {
                if let Some(m) = ports.get_mut(&key) {
                    m.answered = None;
                }
            }
        }
    }

    /// Put `outcome`'s error, on a connection to the proxy listening on
    /// port `proxy`, down to the fault that caused it, if one did: a
    /// failure on a connection a fault broke (a timeout also on one a
    /// fault slowed), an error status a fault answered.
    pub fn blame(&self, outcome: &Outcome, proxy: u16, stats: &mut EndpointStats) {
        if outcome.port == 0 {
            return;
        }
        let kind = match &outcome.result {
            Err(f) => Err(*f),
            Ok(r) if r.status >= 400 => Ok(r.status),
            Ok(_) => return,
        };
        let key = ConnKey {
            proxy,
            client: outcome.port,
        };
        let Some(m) = self.ports().get(&key).copied() else {
            return;
        };
        let fault = match kind {
            Ok(_) => m.answered,
            Err(Failure::Timeout) => m.broke.or(m.slowed),
            Err(_) => m.broke,
        };
        if let Some(i) = fault {
            let kind = match kind {
                Ok(status) => crate::stats::status_error_name(status),
                Err(f) => f.name().to_string(),
            };
            *stats
                .fault_errors
                .entry((kind, self.names[i].clone()))
                .or_default() += 1;
        }
    }

    fn ports(&self) -> std::sync::MutexGuard<'_, HashMap<ConnKey, Marks>> {
        self.ports.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two cores' connections to their own proxies may hold the same
    /// local port at once: what a fault did to one is not put on the
    /// other's errors, and a new connection forgets its name's old marks.
    #[test]
    fn a_connection_is_named_by_its_proxy_and_its_local_port() {
        let fault: Fault = "reset after 1B".parse().unwrap();
        let shared = Shared::new(vec![fault], Epoch::default(), Duration::from_secs(1));
        let (core0, core1) = (
            ConnKey {
                proxy: 4000,
                client: 50_000,
            },
            ConnKey {
                proxy: 4001,
                client: 50_000,
            },
        );
        shared.opened(core0);
        shared.opened(core1);
        shared.mark(core0, Some(0));
        let mut failed = Outcome::test_failure(Failure::Reset);
        failed.port = 50_000;
        let blamed = |proxy: u16| {
            let mut stats = EndpointStats::default();
            shared.blame(&failed, proxy, &mut stats);
            stats.fault_errors.values().sum::<u64>()
        };
        assert_eq!((blamed(4000), blamed(4001)), (1, 0));
        shared.opened(core0);
        assert_eq!(blamed(4000), 0);
    }
}
