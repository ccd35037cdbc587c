//! What the engine carries out: the endpoints, the load (closed or open
//! model), when to stop, how answers are compared, and what sees each
//! request. The app layer's plan builds these from the command line; the
//! engine never sees a flag.

use std::sync::Arc;
use std::time::Duration;

use crate::compare::method::{self, MethodName};
use crate::compare::Comparer;
use crate::endpoint::{EndpointSpec, TransportOptions};
use crate::fault::Fault;
use crate::model::Share;

/// When to stop sending.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StopAfter {
    /// Requests per endpoint.
    pub count: Option<u64>,
    /// Time from the start of sending.
    pub duration: Option<Duration>,
}

impl std::str::FromStr for StopAfter {
    type Err = String;
    fn from_str(s: &str) -> Result<StopAfter, String> {
        let s = s.trim();
        if let Ok(n) = s.parse::<u64>() {
            if n == 0 {
                return Err("--stop-after: 0 requests would send nothing; give N >= 1 or a duration like 10s".into());
            }
            return Ok(StopAfter {
                count: Some(n),
                duration: None,
            });
        }
        match humantime::parse_duration(s) {
            Ok(d) if !d.is_zero() => Ok(StopAfter {
                count: None,
                duration: Some(d),
            }),
            _ => Err(format!(
                "--stop-after: {s:?} is neither a request count nor a duration (examples: 1000, 10s, 2m)"
            )),
        }
    }
}

/// The settings of one run, shared by every core.
#[derive(Debug)]
pub struct Settings {
    /// Endpoints in command-line order; the first is the reference.
    pub endpoints: Vec<Arc<EndpointSpec>>,
    /// Per endpoint, the faults its proxy injects (`--fault`); empty: no
    /// proxy.
    pub faults: Vec<Vec<Fault>>,
    /// Connection and request settings.
    pub transport: TransportOptions,
    /// TLS client configuration, when an endpoint uses TLS.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Requests in flight per endpoint (closed model); the least
    /// connections opened before the clock starts (open model, which also
    /// opens those its rate needs).
    pub concurrency: usize,
    /// Open model: the whole run's rate per endpoint over time (`--rate`,
    /// `--stages` of rates), every shard's together.
    pub open: Option<Arc<dyn super::shape::Shape>>,
    /// Closed model with `--stages`: the whole run's virtual users over
    /// time, at most `concurrency` (this shard's share of their peak).
    pub users: Option<super::shape::Users>,
    /// Open model: most requests in flight per endpoint.
    pub max_in_flight: usize,
    /// Cores to use.
    pub threads: usize,
    /// When to stop (counted after the warm-up).
    pub stop_after: StopAfter,
    /// Requests (or time) sent first and not counted (`--warmup`).
    pub warmup: StopAfter,
    /// Grace period for requests in flight after a stop.
    pub drain: Duration,
    /// The comparison of answers.
    pub comparer: Comparer,
    /// Verbosity (`-v` count).
    pub verbose: u8,
    /// Lead window per core, in requests.
    pub window: usize,
    /// Most bytes of differing answers waiting for the judge threads; a
    /// unit past it is judged on its core.
    pub judge_memory: u64,
    /// Threads that judge differing answers, off the timing cores.
    pub judges: usize,
    /// First malformed record ends the run.
    pub strict: bool,
    /// Length of the intervals the statistics are reported in while the
    /// run goes (progress, live view, saved runs).
    pub interval: Duration,
    /// What sees each request as the cores carry it out: the `-v` printer
    /// and the mismatch log, when asked for.
    pub taps: Vec<Arc<dyn super::Tap>>,
    /// This run's share of a sharded run ([`Share::WHOLE`] unsharded):
    /// `concurrency`, and the counts of `stop_after` and `warmup`
    /// are already this shard's.
    pub shard: Share,
    /// When to start sending (`--start-at`).
    pub start_at: Option<std::time::SystemTime>,
}

impl Settings {
    /// Open model: this shard's share of the highest rate.
    pub fn rate(&self) -> Option<super::pace::Rate> {
        let open = self.open.as_ref()?;
        Some(super::pace::Rate(open.peak().0 / self.shard.count as f64))
    }

    /// The method `req` is counted under: as the reference names it, or,
    /// when the reference makes its own request of each record
    /// (`--template`), as it names that request (`GET /items/{id}`, not
    /// the record's `POST /`).
    pub fn method_of(&self, req: &crate::model::Request) -> MethodName {
        let reference = &self.endpoints[0];
        let kind = |req| method::kind(req, reference.style, &reference.base_path);
        match &reference.template {
            Some(t) => kind(&t.request(req)),
            None => kind(req),
        }
    }
}
