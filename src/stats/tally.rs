//! Latencies counted on the hot path in a histogram's own buckets, and
//! added to the histogram when the statistics leave the core (at each
//! interval's end, and the run's). Every sample is kept at the
//! histogram's precision: a [`Tally`] counts in exactly the buckets of
//! the HDR histogram it is flushed into, and flushing records each bucket's
//! count at the bucket's lowest value, which the histogram files in the
//! same bucket. Its count, minimum, maximum, mean and percentiles are
//! then what recording each sample would have made them. What it saves
//! is the histogram's own work on each sample (its checks, its resizing
//! test, its minimum and maximum): a tally's record is a bucket index and
//! an increment.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::sends::SendInstants;
use super::{RunStats, MAX_MICROS};

/// Counts of samples in the buckets of an HDR histogram with a lowest
/// discernible value of 1 (as every histogram of [`super::new_histogram`]
/// and [`super::new_part_histogram`]) and the given significant figures.
#[derive(Clone, Debug)]
pub struct Tally {
    /// Count per bucket index, as the histogram indexes its counts; grown
    /// to the largest index recorded.
    counts: Vec<u64>,
    /// log2 of half a bucket's sub-bucket count.
    half: u32,
    /// The values of the first bucket, as a mask.
    first: u64,
}

impl Tally {
    /// An empty tally for a histogram of `sigfig` significant figures.
    pub fn new(sigfig: u8) -> Tally {
        // The histogram's own sizing: unit resolution up to 2 * 10^sigfig,
        // rounded up to a power of two sub-buckets.
        let largest = 2 * 10_u64.pow(u32::from(sigfig));
        let magnitude = u64::BITS - (largest - 1).leading_zeros();
        Tally {
            counts: Vec::new(),
            half: magnitude - 1,
            first: (1 << magnitude) - 1,
        }
    }

    /// The histogram's bucket index of `value` (µs).
    #[inline(always)]
    fn index(&self, value: u64) -> usize {
        // How many doublings `value` lies above the first bucket.
        let bucket = (u64::BITS - self.half - 1) - (value | self.first).leading_zeros();
        let sub = (value >> bucket) as usize;
        ((bucket as usize + 1) << self.half) + sub - (1 << self.half)
    }

    /// The lowest value of bucket index `index`.
    fn lowest(&self, index: usize) -> u64 {
        let half = 1usize << self.half;
        let bucket = (index >> self.half) as u32;
        match bucket {
            // The first bucket's two halves.
            0 => index as u64,
            _ => (((index & (half - 1)) + half) as u64) << (bucket - 1),
        }
    }

    /// Count one sample of `d`, in µs clamped to 1 ..= [`MAX_MICROS`] as
    /// [`super::record`] clamps it.
    #[inline(always)]
    pub fn record(&mut self, d: Duration) {
        let us = d
            .as_secs()
            .saturating_mul(1_000_000)
            .saturating_add(u64::from(d.subsec_micros()))
            .clamp(1, MAX_MICROS);
        let i = self.index(us);
        match self.counts.get_mut(i) {
            Some(c) => *c += 1,
            None => self.grow(i),
        }
    }

    /// Make room for index `i` and count one sample there.
    #[cold]
    fn grow(&mut self, i: usize) {
        // At least a bucket more, as the histogram grows.
        let len = (i + 1).max(self.counts.len() + (1 << self.half));
        self.counts.resize(len, 0);
        self.counts[i] += 1;
    }

    /// Add the counts to `h` and start again from none: a look at each
    /// bucket up to the largest value counted (some thousands, once an
    /// interval).
    pub fn flush_into(&mut self, h: &mut Histogram<u64>) {
        debug_assert_eq!(
            (Tally::new(h.sigfig()).half, h.low()),
            (self.half, 1),
            "a tally flushes into a histogram of its buckets"
        );
        for i in 0..self.counts.len() {
            let n = std::mem::take(&mut self.counts[i]);
            if n > 0 {
                // The histogram resizes itself up to MAX_MICROS, so this
                // cannot fail (see `super::record`).
                let _ = h.record_n(self.lowest(i), n);
            }
        }
    }

    /// Add to `h` what `base` counted, less what `less` counted (some of
    /// `base`'s samples, replaced), plus what this tally counted (their
    /// replacements), and start this tally and `less` again from none
    /// (`base` is flushed on its own). A tally that is mostly another's
    /// samples records only where it differs.
    pub fn flush_beside(&mut self, base: &Tally, less: &mut Tally, h: &mut Histogram<u64>) {
        debug_assert_eq!((base.half, less.half), (self.half, self.half));
        let len = base.counts.len().max(self.counts.len());
        for i in 0..len {
            let taken = |t: &mut Tally| t.counts.get_mut(i).map_or(0, std::mem::take);
            let n = base.counts.get(i).copied().unwrap_or(0) - taken(less) + taken(self);
            if n > 0 {
                let _ = h.record_n(self.lowest(i), n);
            }
        }
    }
}

/// The tallies of a core's request stream, one set per endpoint: what
/// the engine records each answer's latencies into, flushed into the
/// core's [`RunStats`] as it hands them on.
#[derive(Debug)]
pub struct Tallies {
    endpoints: Vec<EndpointTallies>,
}

/// One endpoint's tallies.
#[derive(Debug)]
struct EndpointTallies {
    /// Into [`super::EndpointStats::latency`].
    latency: Tally,
    /// Into [`super::EndpointStats::ttfb`]: the latencies, less those of
    /// answers whose time to first byte was not their latency (`parted`),
    /// plus those times (`ttfb`). An answer read whole with its head, the
    /// common case, has one time for both and is counted once.
    parted: Tally,
    ttfb: Tally,
    /// Into the latency of [`super::EndpointStats::methods`], by index.
    methods: Vec<Tally>,
    /// Into [`super::EndpointStats::sends`].
    sends: SendInstants,
}

impl Tallies {
    /// Empty tallies for `endpoints` endpoints.
    pub fn new(endpoints: usize) -> Tallies {
        Tallies {
            endpoints: (0..endpoints)
                .map(|_| EndpointTallies {
                    latency: Tally::new(super::SIGFIG),
                    parted: Tally::new(super::SIGFIG),
                    ttfb: Tally::new(super::SIGFIG),
                    methods: Vec::new(),
                    sends: SendInstants::default(),
                })
                .collect(),
        }
    }

    /// Count a response's latency and time to first byte at endpoint `e`.
    #[inline(always)]
    pub fn response(&mut self, e: usize, (latency, ttfb): (Duration, Duration)) {
        let t = &mut self.endpoints[e];
        t.latency.record(latency);
        if ttfb != latency {
            t.parted.record(latency);
            t.ttfb.record(ttfb);
        }
    }

    /// A request of endpoint `e` that started at `start` ended (answered
    /// or failed).
    #[inline(always)]
    pub fn ended(&mut self, e: usize, start: Instant) {
        self.endpoints[e].sends.record(start);
    }

    /// Count a latency of endpoint `e`'s method (or route) at index `i`
    /// of its [`super::EndpointStats::methods`].
    #[inline(always)]
    pub fn method(&mut self, e: usize, i: usize, latency: Duration) {
        let methods = &mut self.endpoints[e].methods;
        if methods.len() <= i {
            methods.resize_with(i + 1, || Tally::new(super::PART_SIGFIG));
        }
        methods[i].record(latency);
    }

    /// Add every count to `stats`' histograms, and the send times to its
    /// [`super::EndpointStats::sends`] as offsets from `origin` (with each
    /// endpoint's last completion, when known, in `ends`); start again
    /// from none.
    pub fn flush_into(
        &mut self,
        stats: &mut RunStats,
        (origin, ends): (Instant, &[Option<Instant>]),
    ) {
        for (e, (t, s)) in self
            .endpoints
            .iter_mut()
            .zip(&mut stats.endpoints)
            .enumerate()
        {
            t.sends
                .flush_into(origin, ends.get(e).copied().flatten(), &mut s.sends);
            t.ttfb.flush_beside(&t.latency, &mut t.parted, &mut s.ttfb);
            t.latency.flush_into(&mut s.latency);
            for (m, p) in t.methods.iter_mut().zip(&mut s.methods) {
                m.flush_into(&mut p.latency);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{new_histogram, new_part_histogram, record};

    /// Latencies (µs) over every bucket a run can fill: each of the first
    /// buckets' values, bucket edges up to the clamp, and beyond it.
    fn samples() -> Vec<u64> {
        let mut v: Vec<u64> = (0..5000).collect();
        let mut x = 4096u64;
        while x < 2 * MAX_MICROS {
            v.extend([x - 1, x, x + 1, x + x / 3, x * 3 / 2]);
            x *= 2;
        }
        v.push(u64::MAX / 1000);
        v
    }

    /// A tally flushed into a histogram leaves it as recording every
    /// sample into it would have: count, minimum, maximum, mean, each
    /// bucket's count.
    fn flushes_as_recorded(make: fn() -> Histogram<u64>) {
        let mut direct = make();
        let mut tallied = make();
        let mut t = Tally::new(tallied.sigfig());
        for (n, us) in samples().into_iter().enumerate() {
            let d = Duration::from_micros(us);
            record(&mut direct, d);
            t.record(d);
            // Settled several times over, as at every interval's end.
            if n % 1777 == 0 {
                t.flush_into(&mut tallied);
            }
        }
        t.flush_into(&mut tallied);
        assert_eq!(tallied.len(), direct.len());
        assert_eq!(tallied.min(), direct.min());
        assert_eq!(tallied.max(), direct.max());
        assert_eq!(tallied.mean(), direct.mean());
        let buckets = |h: &Histogram<u64>| {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect::<Vec<_>>()
        };
        assert_eq!(buckets(&tallied), buckets(&direct));
        // Settling again adds nothing.
        t.flush_into(&mut tallied);
        assert_eq!(tallied.len(), direct.len());
    }

    #[test]
    fn a_tally_flushes_into_an_endpoint_histogram_as_its_samples_recorded() {
        flushes_as_recorded(new_histogram);
    }

    #[test]
    fn a_tally_flushes_into_a_part_histogram_as_its_samples_recorded() {
        flushes_as_recorded(new_part_histogram);
    }

    /// An endpoint's times to first byte, counted only where they differ
    /// from their answer's latency, flush_into as every one recorded would:
    /// answers read whole with their head (one time) mixed with answers
    /// whose body came later, over every bucket, flushed many times over.
    #[test]
    fn times_to_first_byte_flush_as_recorded_when_counted_only_apart() {
        let mut stats = RunStats::new(1);
        let (mut latency, mut ttfb) = (new_histogram(), new_histogram());
        let mut t = Tallies::new(1);
        for (n, us) in samples().into_iter().enumerate() {
            let l = Duration::from_micros(us);
            // Every third answer's body came later: its first byte earlier.
            let f = match n % 3 {
                0 => l / 3,
                _ => l,
            };
            record(&mut latency, l);
            record(&mut ttfb, f);
            t.response(0, (l, f));
            if n % 1777 == 0 {
                t.flush_into(&mut stats, (Instant::now(), &[]));
            }
        }
        t.flush_into(&mut stats, (Instant::now(), &[]));
        let e = &stats.endpoints[0];
        let buckets = |h: &Histogram<u64>| {
            h.iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect::<Vec<_>>()
        };
        assert_eq!(buckets(&e.latency), buckets(&latency));
        assert_eq!(buckets(&e.ttfb), buckets(&ttfb));
        assert_eq!(
            (e.ttfb.len(), e.ttfb.min(), e.ttfb.max()),
            (ttfb.len(), ttfb.min(), ttfb.max())
        );
        assert_eq!(e.ttfb.mean(), ttfb.mean());
    }
}
