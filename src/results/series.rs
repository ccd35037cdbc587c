//! Per-interval figures of a run, small enough to keep for every second:
//! what the HTML charts and `versus compare`'s significance tests use.
//! Built from interval statistics, live or read back from a file.

use crate::stats::RunStats;

/// One endpoint in one interval.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EndpointPoint {
    /// Requests completed.
    pub completed: u64,
    /// Errors (failures, statuses of 400 or more, JSON-RPC error answers).
    pub errors: u64,
    /// Responses.
    pub responses: u64,
    /// Response body bytes.
    pub bytes_in: u64,
    /// Latency mean, µs (`None` without responses).
    pub mean: Option<f64>,
    /// Latency percentiles p50, p95, p99 and the max, µs.
    pub p50: Option<u64>,
    /// p95.
    pub p95: Option<u64>,
    /// p99.
    pub p99: Option<u64>,
    /// Max.
    pub max: Option<u64>,
    /// Open model: requests that fell due per second (the load offered).
    pub offered: Option<f64>,
    /// Closed model: the virtual users on average.
    pub users: Option<f64>,
}

/// One interval of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Point {
    /// Interval number from the start.
    pub index: u64,
    /// Its length in seconds (the last may be shorter).
    pub seconds: f64,
    /// Per endpoint.
    pub endpoints: Vec<EndpointPoint>,
    /// Requests compared.
    pub compared: u64,
    /// Requests mismatched.
    pub mismatched: u64,
}

impl Point {
    /// The figures of one interval's statistics.
    pub fn of(index: u64, seconds: f64, s: &RunStats) -> Point {
        let q = |h: &hdrhistogram::Histogram<u64>, p: f64| {
            (!h.is_empty()).then(|| h.value_at_quantile(p))
        };
        Point {
            index,
            seconds,
            endpoints: s
                .endpoints
                .iter()
                .map(|e| EndpointPoint {
                    completed: e.completed(),
                    errors: e.errors(),
                    responses: e.responses,
                    bytes_in: e.bytes_in,
                    mean: (!e.latency.is_empty()).then(|| e.latency.mean()),
                    p50: q(&e.latency, 0.5),
                    p95: q(&e.latency, 0.95),
                    p99: q(&e.latency, 0.99),
                    max: (!e.latency.is_empty()).then(|| e.latency.max()),
                    offered: (e.offered > 0).then(|| e.offered as f64 / seconds.max(1e-9)),
                    users: (!e.user_time.is_zero())
                        .then(|| e.user_time.as_secs_f64() / seconds.max(1e-9)),
                })
                .collect(),
            compared: s.verdicts.compared,
            mismatched: s.verdicts.mismatched,
        }
    }
}

/// The series of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Intervals in order (missing ones are intervals with nothing in them).
    pub points: Vec<Point>,
    /// Interval length, seconds.
    pub interval: f64,
}

impl Series {
    /// The intervals long enough to stand for a rate: all but a last one
    /// cut to less than half an interval by the stop. Charted as a whole
    /// interval, such a sliver made every throughput chart end in a
    /// cliff; `compare` leaves it out of its tests for the same reason.
    pub fn full_points(&self) -> impl Iterator<Item = &Point> {
        let half = self.interval * 0.5;
        self.points.iter().filter(move |p| p.seconds >= half)
    }

    /// Fix the last interval's length once the run's wall time is known.
    pub fn close(&mut self, elapsed_s: f64) {
        let interval = self.interval;
        if let Some(last) = self.points.last_mut() {
            let rest = elapsed_s - last.index as f64 * interval;
            if rest > 0.0 && rest < interval {
                last.seconds = rest;
            }
        }
    }
}

/// Collects the series of a live run (a few numbers per endpoint and
/// interval).
pub struct SeriesObserver {
    /// The series so far.
    pub series: Series,
}

impl SeriesObserver {
    /// An empty series of intervals `interval` seconds long.
    pub fn new(interval: f64) -> SeriesObserver {
        SeriesObserver {
            series: Series {
                points: Vec::new(),
                interval,
            },
        }
    }
}

impl crate::engine::Observer for SeriesObserver {
    fn interval(&mut self, index: u64, delta: &RunStats, _total: &RunStats) {
        let p = Point::of(index, self.series.interval, delta);
        self.series.points.push(p);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The stop cuts the last interval to a sliver: it is no rate, and
    /// the charts and `compare` leave it out.
    #[test]
    fn a_last_interval_cut_short_by_the_stop_is_not_a_full_point() {
        let stats = RunStats::new(1);
        let mut s = Series {
            points: (0..4).map(|i| Point::of(i, 1.0, &stats)).collect(),
            interval: 1.0,
        };
        s.close(3.001);
        assert!((s.points[3].seconds - 0.001).abs() < 1e-9);
        assert_eq!(s.full_points().count(), 3);
        s.close(3.6);
        assert_eq!(s.full_points().count(), 4);
    }
}
