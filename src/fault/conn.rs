//! One proxied connection's own decisions: which faults it drew (each
//! byte-stream fault's probability is rolled once, when the connection is
//! accepted) and which of them already acted on it (each is counted once
//! per connection).

use std::cell::Cell;
use std::time::Instant;

use super::spec::{Action, Dir};
use super::state::Shared;

/// A connection's draw of its endpoint's faults.
pub struct Conn<'a> {
    shared: &'a Shared,
    drawn: Vec<bool>,
    acted: Vec<Cell<bool>>,
}

impl<'a> Conn<'a> {
    /// Roll every byte-stream fault's probability for a new connection
    /// (the HTTP faults roll per request, in [`Conn::http_fault`]'s caller).
    pub fn new(shared: &'a Shared) -> Conn<'a> {
        let faults = shared.faults();
        Conn {
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
        self.shared
            .faults()
            .iter()
            .enumerate()
            .filter(|(i, f)| self.drawn[*i] && f.dir.covers(way) && self.shared.on(*i))
            .find_map(|(i, f)| pick(&f.action).map(|t| (i, t)))
    }

    /// True when this connection drew fault `i`.
    pub fn drew(&self, i: usize) -> bool {
        self.drawn[i]
    }

    /// Count fault `i` as having acted on this connection (once).
    pub fn acted(&self, i: usize) {
        if !self.acted[i].replace(true) {
            self.shared.count(i);
        }
    }

    /// True when some fault reads HTTP requests.
    pub fn reads_http(&self) -> bool {
        self.shared.faults().iter().any(|f| f.action.is_http())
    }

    /// When fault `i`'s window opens (`None` when the run's clock has not
    /// started or the window has no start).
    pub fn opens_at(&self, i: usize) -> Option<Instant> {
        self.shared.opens_at(i)
    }
}
