//! `--out prometheus=URL` and `--out otlp=URL`: each interval's figures
//! sent while the run goes, as Prometheus remote write 1.0 (protobuf,
//! snappy) or as OTLP metrics over HTTP (protobuf), per endpoint, per
//! method or route and per flow step (docs/metrics.md lists them). The
//! observer encodes the interval on the collector's thread (the only new
//! work: nothing is done per request), one walk over the statistics
//! ([`figures`]) per wire format; a thread per target sends it
//! ([`sender`]), so a receiver that is down or slow never slows the run,
//! and the report says how many intervals were not delivered.

mod figures;
mod otlp;
pub mod otlp_proto;
mod prometheus;
pub mod proto;
mod sender;

use crate::engine::Observer;
use crate::stats::RunStats;
pub use figures::{RunLabels, BUCKETS};
use sender::{Body, Delivery, Sender, Target};

/// A wire format `--out` sends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    /// Prometheus remote write 1.0.
    Prometheus,
    /// OTLP/HTTP, binary protobuf.
    Otlp,
}

/// The kinds `--out` takes, by name.
const KINDS: [(&str, Kind); 2] = [("prometheus", Kind::Prometheus), ("otlp", Kind::Otlp)];

impl Kind {
    /// The headers of its requests besides `Host`, `User-Agent` and
    /// `Content-Length`, each ending in CRLF.
    fn headers(self) -> &'static str {
        match self {
            Kind::Prometheus => {
                "Content-Encoding: snappy\r\nContent-Type: application/x-protobuf\r\n\
                 X-Prometheus-Remote-Write-Version: 0.1.0\r\n"
            }
            Kind::Otlp => "Content-Type: application/x-protobuf\r\n",
        }
    }
}

/// One `--out KIND=URL`, checked.
pub struct Out {
    kind: Kind,
    target: Target,
}

/// Check every `--out KIND=URL`, before anything is sent.
///
/// # Errors
/// A message naming `--out` and how to put it right (exit 2).
pub fn targets(outs: &[String]) -> Result<Vec<Out>, String> {
    outs.iter()
        .map(|out| {
            let Some((kind, url)) = out.split_once('=') else {
                return Err(format!(
                    "--out {out:?}: give KIND=URL, like --out prometheus=http://127.0.0.1:9090/api/v1/write"
                ));
            };
            let Some(&(_, kind)) = KINDS.iter().find(|(name, _)| *name == kind) else {
                let names: Vec<&str> = KINDS.iter().map(|(name, _)| *name).collect();
                return Err(format!(
                    "--out {out:?}: unknown kind {kind:?}; the kinds are: {}",
                    names.join(", ")
                ));
            };
            let target = Target::parse(url, kind.headers());
            let target = target.map_err(|e| format!("--out {out:?}: {e}"))?;
            Ok(Out { kind, target })
        })
        .collect()
}

/// A random run id: 16 hex digits.
pub fn random_run_id() -> String {
    format!("{:016x}", fastrand::u64(..))
}

/// The observer that sends each interval to every target.
pub struct RemoteWrite {
    labels: RunLabels,
    senders: Vec<(Kind, Sender)>,
    /// When sending began, just before the run's clock started: the
    /// start of OTLP's cumulative counts, nanoseconds since the epoch.
    start_ns: u64,
    /// The last interval's timestamp, ms: each is later than the last,
    /// even when intervals end within a millisecond (at the end of a
    /// run), since a receiver rejects a second sample at one time.
    last_ms: i64,
}

impl RemoteWrite {
    /// Start a sending thread per target.
    ///
    /// # Errors
    /// When a thread cannot start.
    pub fn start(outs: Vec<Out>, labels: RunLabels) -> Result<RemoteWrite, String> {
        let senders = outs
            .into_iter()
            .map(|o| Sender::start(o.target).map(|s| (o.kind, s)))
            .collect::<Result<_, _>>()?;
        Ok(RemoteWrite {
            labels,
            senders,
            start_ns: now_ns(),
            last_ms: 0,
        })
    }

    /// Stop sending (the bodies still queued get a bounded time) and say,
    /// per target, what was delivered: notes for the report.
    pub fn finish(self) -> Vec<String> {
        let run_id = self.labels.run_id;
        self.senders
            .into_iter()
            .map(|(_, s)| {
                let url = s.url();
                note(&run_id, &url, &s.finish())
            })
            .collect()
    }
}

/// The report's note on one target.
fn note(run_id: &str, url: &str, d: &Delivery) -> String {
    let lost = d.intervals - d.delivered.min(d.intervals);
    let mut note = format!(
        "metrics (run_id {run_id}) sent to {url}: {} of {} intervals delivered",
        d.delivered, d.intervals
    );
    if lost > 0 {
        note.push_str(&format!(", {lost} not delivered"));
        if let Some(e) = &d.last_error {
            note.push_str(&format!(" (last error: {e})"));
        }
    }
    if d.plain {
        note.push_str("; the receiver refused native histograms: latency sent as fixed buckets");
    }
    if d.retried > 0 {
        let sends = if d.retried == 1 { "send" } else { "sends" };
        note.push_str(&format!("; {} {sends} tried again", d.retried));
    }
    note
}

/// Nanoseconds since the Unix epoch, now.
fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

impl Observer for RemoteWrite {
    fn interval(&mut self, _index: u64, delta: &RunStats, total: &RunStats) {
        let now_ms = i64::try_from(now_ns() / 1_000_000).unwrap_or(i64::MAX);
        self.last_ms = now_ms.max(self.last_ms + 1);
        let at_ns = u64::try_from(self.last_ms).unwrap_or(0) * 1_000_000;
        // Each format encoded once, for all its targets.
        let (mut prom, mut otlp) = (None, None);
        for (kind, s) in &mut self.senders {
            let body = match kind {
                // With native histograms, and without for a receiver that
                // refuses them.
                Kind::Prometheus => prom.get_or_insert_with(|| {
                    let with = |native| {
                        prometheus::encode(&self.labels, delta, total, self.last_ms, native)
                            .encode_snappy()
                    };
                    (with(true), Some(with(false)))
                }),
                Kind::Otlp => otlp.get_or_insert_with(|| {
                    let request = otlp::encode(&self.labels, delta, total, self.start_ns, at_ns);
                    (prost::Message::encode_to_vec(&request), None)
                }),
            };
            s.send(Body {
                main: body.0.clone(),
                plain: body.1.clone(),
            });
        }
    }
}
