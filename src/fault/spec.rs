//! The fault language: one `--fault NAME=SPEC` (or a scenario file's
//! `faults = [...]`) parsed into a [`Fault`], and printed back in the same
//! words for reports. No sockets here.
//!
//! ```text
//! SPEC   = ACTION [up|down|both] [prob P] [after DURATION] [for DURATION]
//! ACTION = latency DURATION [jitter DURATION]   | bandwidth SIZE/s [per DURATION]
//!        | slow-read SIZE every DURATION        | slow-open DURATION
//!        | slow-close DURATION                  | timeout [DURATION]
//!        | reset after DURATION|SIZE            | limit SIZE
//!        | slicer SIZE [delay DURATION]         | status CODE [body TEXT]
//!        | abort                                | rate-limit N/s [per DURATION]
//! ```

use std::fmt;
use std::time::Duration;

/// Which way data flows through the proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// From versus to the endpoint (the request).
    Up,
    /// From the endpoint to versus (the answer).
    Down,
    /// Both ways.
    Both,
}

impl Dir {
    /// True when data flowing `way` is affected (`Both`: the connection
    /// as a whole, whatever the fault's direction).
    pub fn covers(self, way: Dir) -> bool {
        self == Dir::Both || way == Dir::Both || self == way
    }

    fn word(self) -> &'static str {
        match self {
            Dir::Up => "up",
            Dir::Down => "down",
            Dir::Both => "both",
        }
    }
}

/// Where `reset` cuts the connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResetAt {
    /// This long after the connection opened (or the span opened).
    Delay(Duration),
    /// After this many bytes passed in the fault's direction.
    Bytes(u64),
}

/// What a fault does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Delay every chunk by `delay` ± a uniform `jitter`, order kept.
    Latency {
        /// The added delay.
        delay: Duration,
        /// Half-width of the uniform spread around `delay`.
        jitter: Duration,
    },
    /// At most `bytes` per `per` (the first at once, as toxy does).
    Bandwidth {
        /// Bytes per period.
        bytes: u64,
        /// The period.
        per: Duration,
    },
    /// Read at most `bytes` at a time, waiting `every` after each full
    /// read (a short read took all there was: the next waits for data).
    SlowRead {
        /// Bytes per read.
        bytes: u64,
        /// Wait after each read.
        every: Duration,
    },
    /// Wait this long after accepting before anything passes.
    SlowOpen(Duration),
    /// Wait this long before passing on a close.
    SlowClose(Duration),
    /// A black hole: data is read and dropped; closed after the duration
    /// when one is given.
    Timeout(Option<Duration>),
    /// Close the connection with a TCP RST.
    Reset(ResetAt),
    /// Close the connection (FIN) once this many bytes passed.
    Limit(u64),
    /// Cut data into segments of `size` bytes with `delay` between them.
    Slicer {
        /// Segment size.
        size: u64,
        /// Pause between segments.
        delay: Duration,
    },
    /// HTTP: answer with this status (and body) instead of the endpoint.
    Status {
        /// The status code.
        code: u16,
        /// The body.
        body: String,
    },
    /// HTTP: drop the connection (RST) when the request arrives.
    Abort,
    /// HTTP: answer 429 to requests beyond `limit` per `per` (all
    /// connections to the endpoint together).
    RateLimit {
        /// Requests let through per period.
        limit: u64,
        /// The period.
        per: Duration,
    },
}

impl Action {
    /// True for the faults that read HTTP/1.1 requests (status, abort,
    /// rate-limit): they need plain HTTP/1.1 between versus and the
    /// endpoint.
    pub fn is_http(&self) -> bool {
        matches!(
            self,
            Action::Status { .. } | Action::Abort | Action::RateLimit { .. }
        )
    }

    /// True for the faults that break a connection (timeout, reset,
    /// limit, abort): any failure of a request on it is theirs.
    pub fn breaks(&self) -> bool {
        matches!(
            self,
            Action::Timeout(_) | Action::Reset(_) | Action::Limit(_) | Action::Abort
        )
    }

    /// The direction it acts in when none is given.
    fn default_dir(&self) -> Dir {
        match self {
            Action::SlowRead { .. } => Dir::Up,
            Action::Timeout(_) | Action::SlowOpen(_) | Action::SlowClose(_) => Dir::Both,
            Action::Status { .. } | Action::Abort | Action::RateLimit { .. } => Dir::Up,
            _ => Dir::Down,
        }
    }

    /// True when `up`/`down` means something for it.
    fn has_dir(&self) -> bool {
        !matches!(
            self,
            Action::SlowOpen(_)
                | Action::SlowClose(_)
                | Action::Reset(ResetAt::Delay(_))
                | Action::Status { .. }
                | Action::Abort
                | Action::RateLimit { .. }
        )
    }
}

/// When a fault is on, from the start of the run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FaultSpan {
    /// On from this long after the start.
    pub after: Duration,
    /// For this long; `None`: to the end.
    pub length: Option<Duration>,
}

impl FaultSpan {
    /// True at `t` after the start of the run.
    pub fn contains(&self, t: Duration) -> bool {
        t >= self.after && self.length.is_none_or(|l| t < self.after + l)
    }

    /// True when the fault is on from the start to the end.
    pub fn always(&self) -> bool {
        self.after.is_zero() && self.length.is_none()
    }
}

/// One fault on one endpoint.
#[derive(Clone, Debug, PartialEq)]
pub struct Fault {
    /// What it does.
    pub action: Action,
    /// Which way it acts.
    pub dir: Dir,
    /// The chance it applies: per connection for the byte-stream faults,
    /// per request for the HTTP ones.
    pub prob: f64,
    /// When it is on.
    pub span: FaultSpan,
}

/// A fault that does not parse: the reason, for a usage error.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FaultError(pub String);

fn err<T>(s: impl Into<String>) -> Result<T, FaultError> {
    Err(FaultError(s.into()))
}

/// Split on spaces, keeping what is inside "double" or 'single' quotes.
fn words(s: &str) -> Result<Vec<String>, FaultError> {
    let mut out = Vec::new();
    let mut chars = s.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut w = String::new();
        if c == '"' || c == '\'' {
            chars.next();
            loop {
                match chars.next() {
                    Some(q) if q == c => break,
                    Some(x) => w.push(x),
                    None => return err(format!("a quote ({c}) is not closed")),
                }
            }
        } else {
            while let Some(&x) = chars.peek() {
                if x.is_whitespace() {
                    break;
                }
                w.push(x);
                chars.next();
            }
        }
        out.push(w);
    }
    Ok(out)
}

/// The words of a spec, taken one at a time with errors that name what
/// was expected.
struct Words {
    list: Vec<String>,
    at: usize,
}

impl Words {
    fn next(&mut self, what: &str) -> Result<String, FaultError> {
        let w = self.list.get(self.at).cloned();
        self.at += 1;
        w.ok_or_else(|| FaultError(format!("expected {what}")))
    }

    fn peek_is(&self, word: &str) -> bool {
        self.list.get(self.at).is_some_and(|w| w == word)
    }

    fn duration(&mut self, what: &str) -> Result<Duration, FaultError> {
        let w = self.next(&format!("a duration after {what}"))?;
        humantime::parse_duration(&w)
            .map_err(|_| FaultError(format!("{what}: {w:?} is not a duration (200ms, 1s, 2m)")))
    }

    /// `WORD DURATION` when the next word is `word`; zero otherwise.
    fn optional_duration(&mut self, word: &str) -> Result<Duration, FaultError> {
        if !self.peek_is(word) {
            return Ok(Duration::ZERO);
        }
        self.at += 1;
        self.duration(word)
    }

    fn size(&mut self, what: &str) -> Result<u64, FaultError> {
        let w = self.next(&format!("a size after {what}"))?;
        size(&w, what)
    }

    /// `N/s`, `N/100ms`, optionally followed by `per DURATION`: the
    /// amount per period.
    fn rate(&mut self, what: &str, bytes: bool) -> Result<(u64, Duration), FaultError> {
        let w = self.next(&format!("a rate after {what}"))?;
        let Some((n, unit)) = w.split_once('/') else {
            return err(format!("{what}: {w:?} is not a rate (1KB/s, 100/s)"));
        };
        let n = if bytes {
            size(n, what)?
        } else {
            n.parse::<u64>()
                .map_err(|_| FaultError(format!("{what}: {n:?} is not a count")))?
        };
        let unit = match unit {
            "s" => Duration::from_secs(1),
            "m" | "min" => Duration::from_secs(60),
            u => humantime::parse_duration(u)
                .map_err(|_| FaultError(format!("{what}: {w:?} is not a rate (1KB/s, 100/s)")))?,
        };
        if n == 0 || unit.is_zero() {
            return err(format!("{what}: {w:?} must be more than zero"));
        }
        let per = if self.peek_is("per") {
            self.at += 1;
            let p = self.duration("a period after per")?;
            if p.is_zero() {
                return err("per: the period must be more than zero");
            }
            p
        } else {
            unit
        };
        // The amount per `per`, at the rate n per unit.
        let amount = (n as f64 * per.as_secs_f64() / unit.as_secs_f64()).round() as u64;
        if amount == 0 {
            return err(format!(
                "{what}: less than one per {}: use a longer period",
                humantime::format_duration(per)
            ));
        }
        Ok((amount, per))
    }
}

fn size(w: &str, what: &str) -> Result<u64, FaultError> {
    match crate::model::parse_size(w) {
        Ok(n) if n > 0 => Ok(n),
        _ => err(format!("{what}: {w:?} is not a size (512B, 1KB, 2MB)")),
    }
}

impl std::str::FromStr for Fault {
    type Err = FaultError;

    /// Parse a SPEC (see the module's grammar).
    fn from_str(spec: &str) -> Result<Fault, FaultError> {
        let list = words(spec)?;
        let mut w = Words { list, at: 0 };
        let kind = w.next("a fault (latency, bandwidth, slow-read, slow-open, slow-close, timeout, reset, limit, slicer, status, abort, rate-limit)")?;
        let action = match kind.as_str() {
            "latency" => {
                let delay = w.duration("latency")?;
                let jitter = w.optional_duration("jitter")?;
                Action::Latency { delay, jitter }
            }
            "bandwidth" => {
                let (bytes, per) = w.rate("bandwidth", true)?;
                Action::Bandwidth { bytes, per }
            }
            "slow-read" => {
                let bytes = w.size("slow-read")?;
                if w.next("`every` (slow-read SIZE every DURATION)")? != "every" {
                    return err("slow-read: expected `slow-read SIZE every DURATION`");
                }
                let every = w.duration("every")?;
                Action::SlowRead { bytes, every }
            }
            "slow-open" => Action::SlowOpen(w.duration("slow-open")?),
            "slow-close" => Action::SlowClose(w.duration("slow-close")?),
            "timeout" => {
                let close = match w.list.get(w.at) {
                    Some(d) if humantime::parse_duration(d).is_ok() => {
                        Some(w.duration("timeout")?)
                    }
                    _ => None,
                };
                Action::Timeout(close)
            }
            "reset" => {
                if w.next("`after` (reset after DURATION or SIZE)")? != "after" {
                    return err("reset: expected `reset after DURATION` or `reset after SIZE`");
                }
                let v = w.next("a duration or a size after reset after")?;
                match humantime::parse_duration(&v) {
                    Ok(d) => Action::Reset(ResetAt::Delay(d)),
                    Err(_) => Action::Reset(ResetAt::Bytes(size(&v, "reset after")?)),
                }
            }
            "limit" => Action::Limit(w.size("limit")?),
            "slicer" => {
                let size = w.size("slicer")?;
                let delay = w.optional_duration("delay")?;
                Action::Slicer { size, delay }
            }
            "status" => {
                let c = w.next("a status code")?;
                let code = c
                    .parse::<u16>()
                    .ok()
                    .filter(|c| (100..=999).contains(c))
                    .ok_or_else(|| FaultError(format!("status: {c:?} is not a status code")))?;
                let body = if w.peek_is("body") {
                    w.at += 1;
                    w.next("the body after body (quote it when it has spaces)")?
                } else {
                    String::new()
                };
                Action::Status { code, body }
            }
            "abort" => Action::Abort,
            "rate-limit" => {
                let (limit, per) = w.rate("rate-limit", false)?;
                Action::RateLimit { limit, per }
            }
            k => return err(format!("{k:?} is not a fault (latency, bandwidth, slow-read, slow-open, slow-close, timeout, reset, limit, slicer, status, abort, rate-limit)")),
        };
        let mut fault = Fault {
            dir: action.default_dir(),
            action,
            prob: 1.0,
            span: FaultSpan::default(),
        };
        while w.at < w.list.len() {
            let word = w.next("a clause")?;
            match word.as_str() {
                "up" | "down" | "both" if fault.action.has_dir() => {
                    fault.dir = match word.as_str() {
                        "up" => Dir::Up,
                        "down" => Dir::Down,
                        _ => Dir::Both,
                    };
                }
                "up" | "down" | "both" => {
                    return err(format!("{kind} has no direction: leave out {word:?}"))
                }
                "prob" => {
                    let p = w.next("a probability after prob")?;
                    fault.prob = probability(&p)?;
                }
                "after" => fault.span.after = w.duration("after")?,
                "for" => {
                    let l = w.duration("for")?;
                    if l.is_zero() {
                        return err("for: the time the fault is on must be longer than zero");
                    }
                    fault.span.length = Some(l);
                }
                other => {
                    return err(format!(
                        "{other:?} is not understood here (clauses: up, down, both, prob P, after DURATION, for DURATION)"
                    ))
                }
            }
        }
        Ok(fault)
    }
}

/// `0.25` or `25%`.
fn probability(p: &str) -> Result<f64, FaultError> {
    let v = match p.strip_suffix('%') {
        Some(pc) => pc.parse::<f64>().map(|v| v / 100.0),
        None => p.parse::<f64>(),
    };
    match v {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => err(format!(
            "prob: {p:?} is not a probability (0.1 or 10%, from 0 to 1)"
        )),
    }
}

fn dur(d: Duration) -> String {
    humantime::format_duration(d).to_string()
}

fn bytes(n: u64) -> String {
    if n >= 1024 * 1024 && n % (1024 * 1024) == 0 {
        format!("{}MB", n / (1024 * 1024))
    } else if n >= 1024 && n % 1024 == 0 {
        format!("{}KB", n / 1024)
    } else {
        format!("{n}B")
    }
}

impl Fault {
    /// What a request the fault ends is counted as, in the report's words
    /// (`connection reset`, `HTTP 503`); `None` for the faults that only
    /// slow requests down.
    pub fn causes(&self) -> Option<String> {
        use crate::model::Failure;
        match &self.action {
            Action::Reset(_) | Action::Abort | Action::Limit(_) => {
                Some(Failure::Reset.name().to_string())
            }
            Action::Timeout(None) => Some(Failure::Timeout.name().to_string()),
            Action::Timeout(Some(_)) => Some(format!(
                "{} or {}",
                Failure::Timeout.name(),
                Failure::Reset.name()
            )),
            Action::Status { code, .. } => Some(format!("HTTP {code}")),
            Action::RateLimit { .. } => Some("HTTP 429".to_string()),
            _ => None,
        }
    }
}

/// The error kind a request a fault ends is counted as, found from the
/// fault's name (as saved runs keep it); `None` for a fault that only
/// slows requests down, or a name that does not parse.
pub fn counted_as(name: &str) -> Option<String> {
    name.parse::<Fault>().ok().and_then(|f| f.causes())
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Latency { delay, jitter } if jitter.is_zero() => {
                write!(f, "latency {}", dur(*delay))
            }
            Action::Latency { delay, jitter } => {
                write!(f, "latency {} jitter {}", dur(*delay), dur(*jitter))
            }
            Action::Bandwidth { bytes: b, per } => {
                write!(f, "bandwidth {}/{}", bytes(*b), dur(*per))
            }
            Action::SlowRead { bytes: b, every } => {
                write!(f, "slow-read {} every {}", bytes(*b), dur(*every))
            }
            Action::SlowOpen(d) => write!(f, "slow-open {}", dur(*d)),
            Action::SlowClose(d) => write!(f, "slow-close {}", dur(*d)),
            Action::Timeout(None) => write!(f, "timeout"),
            Action::Timeout(Some(d)) => write!(f, "timeout {}", dur(*d)),
            Action::Reset(ResetAt::Delay(d)) => write!(f, "reset after {}", dur(*d)),
            Action::Reset(ResetAt::Bytes(n)) => write!(f, "reset after {}", bytes(*n)),
            Action::Limit(n) => write!(f, "limit {}", bytes(*n)),
            Action::Slicer { size, delay } => {
                write!(f, "slicer {} delay {}", bytes(*size), dur(*delay))
            }
            Action::Status { code, body } if body.is_empty() => write!(f, "status {code}"),
            Action::Status { code, body } => write!(f, "status {code} body {body:?}"),
            Action::Abort => write!(f, "abort"),
            Action::RateLimit { limit, per } => write!(f, "rate-limit {limit}/{}", dur(*per)),
        }
    }
}

impl fmt::Display for Fault {
    /// The fault in the words it was given in (canonical order): the name
    /// reports and saved runs use.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.action)?;
        if self.action.has_dir() && self.dir != self.action.default_dir() {
            write!(f, " {}", self.dir.word())?;
        }
        if self.prob < 1.0 {
            write!(f, " prob {}", self.prob)?;
        }
        if !self.span.after.is_zero() {
            write!(f, " after {}", dur(self.span.after))?;
        }
        if let Some(l) = self.span.length {
            write!(f, " for {}", dur(l))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Fault {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn bad(s: &str) -> String {
        s.parse::<Fault>().unwrap_err().0
    }

    #[test]
    fn every_fault_parses_and_prints_back_in_its_own_words() {
        for s in [
            "latency 200ms",
            "latency 200ms jitter 20ms up",
            "bandwidth 1KB/1s up",
            "slow-read 1KB every 1s",
            "slow-open 500ms",
            "slow-close 1s",
            "timeout",
            "timeout 2s",
            "reset after 1s",
            "reset after 100B",
            "limit 2KB",
            "slicer 64B delay 1ms",
            "status 503",
            "status 503 body \"try later\"",
            "abort prob 0.1",
            "rate-limit 10/1s",
            "latency 1s after 10s for 5s",
        ] {
            assert_eq!(p(s).to_string(), s);
        }
    }

    #[test]
    fn rates_become_an_amount_per_period() {
        // 1 KB/s in periods of 1 s: 1024 bytes at a time (toxy's way).
        assert_eq!(
            p("bandwidth 1KB/s up").action,
            Action::Bandwidth {
                bytes: 1024,
                per: Duration::from_secs(1)
            }
        );
        // 200 KB/s in periods of 50 ms: 200 × 1024 × 0.05 = 10240 bytes.
        assert_eq!(
            p("bandwidth 200KB/s per 50ms").action,
            Action::Bandwidth {
                bytes: 10240,
                per: Duration::from_millis(50)
            }
        );
        // 100 requests per second.
        assert_eq!(
            p("rate-limit 100/s").action,
            Action::RateLimit {
                limit: 100,
                per: Duration::from_secs(1)
            }
        );
    }

    #[test]
    fn clauses_set_direction_probability_and_window() {
        let f = p("latency 100ms up prob 25% after 10s for 5s");
        assert_eq!(f.dir, Dir::Up);
        assert_eq!(f.prob, 0.25);
        assert!(!f.span.contains(Duration::from_secs(9)));
        assert!(f.span.contains(Duration::from_secs(10)));
        assert!(f.span.contains(Duration::from_millis(14_999)));
        assert!(!f.span.contains(Duration::from_secs(15)));
        assert_eq!(p("latency 1ms").dir, Dir::Down);
        assert_eq!(p("slow-read 1KB every 1s").dir, Dir::Up);
    }

    #[test]
    fn a_fault_names_the_error_it_is_counted_as() {
        let c = |s: &str| counted_as(s).unwrap_or_default();
        assert_eq!(c("reset after 20B"), "connection reset");
        assert_eq!(c("status 503 prob 0.3"), "HTTP 503");
        assert_eq!(c("rate-limit 10/1s"), "HTTP 429");
        assert_eq!(c("timeout"), "timeout");
        assert_eq!(c("latency 1s"), "");
        assert_eq!(c("not a fault"), "");
    }

    #[test]
    fn bad_faults_say_what_is_wrong() {
        assert!(bad("").contains("expected a fault"));
        assert_eq!(bad("latency"), "expected a duration after latency");
        assert_eq!(
            bad("reset"),
            "expected `after` (reset after DURATION or SIZE)"
        );
        assert!(bad("latency fast").contains("not a duration"));
        assert!(bad("wobble 1s").contains("not a fault"));
        assert!(bad("latency 1s prob 2").contains("not a probability"));
        assert!(bad("latency 1s sideways").contains("not understood"));
        assert!(bad("status 99999").contains("not a status code"));
        assert!(bad("bandwidth 1KB").contains("not a rate"));
        assert!(bad("bandwidth 0/s").contains("not a size"));
        assert!(bad("abort up").contains("no direction"));
        assert!(bad("status 500 body 'open").contains("not closed"));
        assert!(bad("slow-read 1KB each 1s").contains("every"));
    }
}
