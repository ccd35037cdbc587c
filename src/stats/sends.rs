//! When an endpoint's requests started and the last one ended: what
//! vegeta's report computes an attack's duration, wait and throughput
//! from (its `Earliest`, `Latest` and `End`), kept per endpoint so that a
//! fast endpoint beside a slow one shows its own.

use std::time::{Duration, Instant};

/// The first and last start of an endpoint's counted requests and the
/// latest end of one, as offsets from the start of the clock of the core
/// that sent them (cores and shards run side by side, so merging keeps
/// the earliest and the latest). A request's start is when its latency
/// counts from (in the open model its due time when it started late), its
/// end that start plus its latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sends {
    /// The earliest start; `Duration::MAX` while none was recorded.
    pub first: Duration,
    /// The latest start.
    pub last: Duration,
    /// The latest end.
    pub end: Duration,
}

impl Default for Sends {
    fn default() -> Self {
        Sends {
            first: Duration::MAX,
            last: Duration::ZERO,
            end: Duration::ZERO,
        }
    }
}

impl Sends {
    /// Record a request that started `start` after the clock and took
    /// `latency`: for tests that make figures by hand (the engine records
    /// instants, [`SendInstants`]).
    #[cfg(test)]
    pub fn record(&mut self, start: Duration, latency: Duration) {
        self.first = self.first.min(start);
        self.last = self.last.max(start);
        self.end = self.end.max(start.saturating_add(latency));
    }

    /// Add another core's (or interval's, or shard's) record.
    pub fn merge(&mut self, other: &Sends) {
        self.first = self.first.min(other.first);
        self.last = self.last.max(other.last);
        self.end = self.end.max(other.end);
    }

    /// Whether no request was recorded (or the record is from a saved
    /// run written before send times were kept).
    pub fn is_empty(&self) -> bool {
        self.first > self.last
    }

    /// vegeta's attack: from the first start to the last; zero when
    /// empty.
    pub fn attack(&self) -> Duration {
        self.last.saturating_sub(self.first)
    }

    /// vegeta's wait: from the last start to the latest end; zero when
    /// empty.
    pub fn wait(&self) -> Duration {
        self.end.saturating_sub(self.last)
    }
}

/// What [`Sends`] is made of, as a core records it request by request:
/// the first and last start as instants. Comparing two instants costs a
/// few instructions; the offset from the clock's start (a subtraction of
/// instants and a carry of nanoseconds) is taken once an interval, when
/// the statistics leave the core, and the latest end is then the core's
/// last completion, which it reads the clock for anyway.
#[derive(Clone, Copy, Debug, Default)]
pub struct SendInstants {
    first: Option<Instant>,
    last: Option<Instant>,
}

impl SendInstants {
    /// A request that started at `start` ended.
    #[inline(always)]
    pub fn record(&mut self, start: Instant) {
        if self.first.is_none_or(|f| start < f) {
            self.first = Some(start);
        }
        if self.last.is_none_or(|l| start > l) {
            self.last = Some(start);
        }
    }

    /// Into `sends`, as offsets from `origin`; `end` is the latest end
    /// when known (else the latest start stands for it: merging keeps the
    /// latest). Starts again from none.
    pub fn flush_into(&mut self, origin: Instant, end: Option<Instant>, sends: &mut Sends) {
        let (Some(first), Some(last)) = (self.first.take(), self.last.take()) else {
            return;
        };
        let offset = |t: Instant| t.saturating_duration_since(origin);
        let mut mine = Sends {
            first: offset(first),
            last: offset(last),
            end: offset(last),
        };
        if let Some(end) = end {
            mine.end = mine.end.max(offset(end));
        }
        sends.merge(&mine);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attack_and_wait_are_vegetas_and_merging_keeps_the_extremes() {
        let ms = Duration::from_millis;
        let mut a = Sends::default();
        assert!(a.is_empty());
        assert_eq!((a.attack(), a.wait()), (Duration::ZERO, Duration::ZERO));
        // Starts at 10, 20 and 30 ms; the one at 20 ms ends last (at 250).
        a.record(ms(20), ms(230));
        a.record(ms(10), ms(5));
        a.record(ms(30), ms(40));
        assert_eq!((a.attack(), a.wait()), (ms(20), ms(220)));
        let mut b = Sends::default();
        b.record(ms(35), ms(1));
        let mut merged = Sends::default();
        merged.merge(&a);
        merged.merge(&b);
        merged.merge(&Sends::default());
        assert_eq!(
            (merged.first, merged.last, merged.end),
            (ms(10), ms(35), ms(250))
        );
    }

    #[test]
    fn instants_recorded_in_any_order_flush_as_offsets_with_the_last_completion() {
        let origin = Instant::now();
        let ms = Duration::from_millis;
        let mut live = SendInstants::default();
        for at in [30, 10, 50, 20] {
            live.record(origin + ms(at));
        }
        let mut sends = Sends::default();
        live.flush_into(origin, Some(origin + ms(80)), &mut sends);
        assert_eq!(
            (sends.first, sends.last, sends.end),
            (ms(10), ms(50), ms(80))
        );
        // Nothing recorded since: nothing changes.
        live.flush_into(origin, Some(origin + ms(90)), &mut sends);
        assert_eq!(sends.end, ms(80));
        // No completion known yet: the latest start stands for the end.
        live.record(origin + ms(60));
        live.flush_into(origin, None, &mut sends);
        assert_eq!(
            (sends.first, sends.last, sends.end),
            (ms(10), ms(60), ms(80))
        );
    }
}
