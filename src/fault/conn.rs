//! One proxied connection's own decisions: which faults it drew (each
//! byte-stream fault's probability is rolled once, when the connection is
//! accepted) and which of them already acted on it (each is counted once
//! per connection, and marked in the endpoint's ledger under the
//! connection's name, `ConnKey`).

use std::cell::Cell;
use std::time::Instant;

use super::spec::{Action, Dir};
use super::state::{ConnKey, Shared};

/// A connection's draw of its endpoint's faults.
pub struct Conn<'a> {
    shared: &'a Shared,
    /// The connection's name in the ledger.
    key: ConnKey,
    drawn: Vec<bool>,
    acted: Vec<Cell<bool>>,
}

impl<'a> Conn<'a> {
    /// Roll every byte-stream fault's probability for a new connection
    /// (the HTTP faults roll per request, in `http::decide`), named `key`.
    pub fn new(shared: &'a Shared, key: ConnKey) -> Conn<'a> {
        let faults = shared.faults();
        shared.opened(key);
        Conn {
            key,
            drawn: (0..faults.len())
                .map(|i| faults[i].action.is_http() || shared.roll(i))
                .collect(),
            acted: faults.iter().map(|_| Cell::new(false)).collect(),
            shared,
        }
    }

    /// The endpoint's shared state.
    pub fn shared(&self) -> &Shared {
        self.shared
    }

    /// The first byte-stream fault this connection drew that is on now,
    /// acts on data flowing `way`, and matches `pick`; with its index.
    pub fn find<T>(&self, way: Dir, pick: impl Fn(&Action) -> Option<T>) -> Option<(usize, T)> {
        // The kind first: checking a span may read the clock.
        self.shared
            .faults()
            .iter()
            .enumerate()
            .filter(|(i, f)| self.drawn[*i] && f.dir.covers(way))
            .filter_map(|(i, f)| pick(&f.action).map(|t| (i, t)))
            .find(|(i, _)| self.shared.on(*i))
    }

    /// True when this connection drew fault `i`.
    pub fn drew(&self, i: usize) -> bool {
        self.drawn[i]
    }

    /// Count fault `i` as having acted on this connection (once).
    pub fn acted(&self, i: usize) {
        if !self.acted[i].replace(true) {
            self.shared.count(i);
            self.shared.mark(self.key, Some(i));
        }
    }

    /// HTTP fault `i` acted on the request that just came (`None`: none
    /// did, it goes on to the endpoint): counted per request.
    pub fn answered(&self, i: Option<usize>) {
        if let Some(i) = i {
            self.shared.count(i);
        }
        self.shared.mark(self.key, i);
    }

    /// True when some fault reads HTTP requests.
    pub fn reads_http(&self) -> bool {
        self.shared.faults().iter().any(|f| f.action.is_http())
    }

    /// When fault `i`'s span opens (`None` when the run's clock has not
    /// started or the span has no start).
    pub fn opens_at(&self, i: usize) -> Option<Instant> {
        self.shared.opens_at(i)
    }
}
