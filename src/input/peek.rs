//! A request stream read up to its first request before the run starts,
//! so that a run whose input holds none (an empty file, only malformed
//! records) is known before any output file is created: it leaves an
//! earlier run's files alone. The records read ahead are handed on first,
//! so the run counts them as it counts every other.

use std::collections::VecDeque;

use super::{Next, Source};

/// Malformed records read ahead at most while looking for a request;
/// beyond them the stream is taken to hold requests (the run finds out).
const MOST_AHEAD: usize = 1000;

/// A source with its first records read ahead.
pub struct Peeked {
    ahead: VecDeque<std::io::Result<Next>>,
    rest: Box<dyn Source>,
    ended: bool,
}

impl Peeked {
    /// Read `source` up to its first request, its end, a read error, or
    /// [`MOST_AHEAD`] malformed records (blocking, as a source does).
    /// Returns the source and whether it may hold a request: false only
    /// when it ended without one.
    pub fn new(mut source: Box<dyn Source>) -> (Peeked, bool) {
        let mut ahead = VecDeque::new();
        let (may_hold, ended) = loop {
            if ahead.len() >= MOST_AHEAD {
                break (true, false);
            }
            match source.next() {
                Ok(Next::Malformed(m)) => ahead.push_back(Ok(Next::Malformed(m))),
                Ok(Next::End) => break (false, true),
                other => {
                    ahead.push_back(other);
                    break (true, false);
                }
            }
        };
        let peeked = Peeked {
            ahead,
            rest: source,
            ended,
        };
        (peeked, may_hold)
    }
}

impl Source for Peeked {
    fn next(&mut self) -> std::io::Result<Next> {
        match self.ahead.pop_front() {
            Some(n) => n,
            None if self.ended => Ok(Next::End),
            None => self.rest.next(),
        }
    }

    fn buffered(&self) -> bool {
        !self.ahead.is_empty() || self.ended || self.rest.buffered()
    }

    fn summary(&self) -> Option<String> {
        self.rest.summary()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::lines::LinesSource;

    fn lines(text: &str) -> Box<dyn Source> {
        Box::new(LinesSource::new(
            std::io::Cursor::new(text.as_bytes().to_vec()),
            8,
        ))
    }

    fn drain(mut s: Peeked) -> (usize, usize) {
        let (mut requests, mut malformed) = (0, 0);
        loop {
            match s.next().unwrap() {
                Next::Request(_) => requests += 1,
                Next::Malformed(_) => malformed += 1,
                Next::End => return (requests, malformed),
            }
        }
    }

    #[test]
    fn records_read_ahead_are_handed_on_in_order_and_counted() {
        let (s, may_hold) = Peeked::new(lines("a line far too long\nok\nok2\n"));
        assert!(may_hold);
        assert_eq!(drain(s), (2, 1));
        let (s, may_hold) = Peeked::new(lines("\n\n"));
        assert!(!may_hold);
        assert_eq!(drain(s), (0, 0));
        let (s, may_hold) = Peeked::new(lines("much too long a line\n"));
        assert!(!may_hold);
        assert_eq!(drain(s), (0, 1));
    }
}
