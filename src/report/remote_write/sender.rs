//! Sends `--out` bodies (remote write, OTLP) on a thread of its own, over a small
//! blocking HTTP/1.1 client: a bounded queue (the oldest body is dropped
//! when it is full; each body holds cumulative counters, so the newest
//! says most), a bounded number of tries per body, and counts of what
//! was delivered, so that nothing is lost without the report saying so.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Bodies waiting to be sent at most; past it the oldest is dropped.
const QUEUE: usize = 16;
/// Tries per body (a refused connection, a timeout, a 5xx or 429 answer
/// is tried again; any other answer is final).
const TRIES: u32 = 3;
/// The wait before the second try, doubled before each later one.
const BACKOFF: Duration = Duration::from_millis(200);
/// Connecting, writing a body, or waiting for the answer, at most.
const TIMEOUT: Duration = Duration::from_secs(2);
/// After the run, how long the bodies still queued may take to be sent.
const FINISH: Duration = Duration::from_secs(3);

/// Where bodies go: an `http://` URL, parsed, and the headers their
/// format asks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// `host` or `host:port`, as the `Host` header says it.
    authority: String,
    /// What to connect to.
    host: String,
    /// The port (80 by default).
    port: u16,
    /// The request target, `/` at least.
    path: String,
    /// The format's headers (`Content-Type`, ...), each ending in CRLF.
    headers: &'static str,
}

impl Target {
    /// Parse `url`: `http://HOST[:PORT][/PATH]`; each request sends
    /// `headers` (lines ending in CRLF).
    ///
    /// # Errors
    /// What is wrong with it, for the `--out` message.
    pub fn parse(url: &str, headers: &'static str) -> Result<Target, String> {
        let rest = if let Some(rest) = url.strip_prefix("http://") {
            rest
        } else if url.starts_with("https://") {
            return Err("https is not supported yet: use an http:// URL (a TLS proxy such as a local Prometheus agent can forward it)".into());
        } else {
            return Err("the URL must start with http://".into());
        };
        if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err("the URL holds spaces or control characters".into());
        }
        let (authority, path) = match rest.find(['/', '?']) {
            Some(at) if rest[at..].starts_with('/') => (&rest[..at], &rest[at..]),
            Some(at) => (&rest[..at], &rest[at..]),
            None => (rest, "/"),
        };
        let path = match path.starts_with('/') {
            true => path.to_string(),
            false => format!("/{path}"),
        };
        if authority.contains('@') {
            return Err("credentials in the URL are not supported".into());
        }
        let (host, port) = match authority.strip_prefix('[') {
            Some(v6) => {
                let end = v6.find(']').ok_or("an IPv6 host lacks its closing ]")?;
                (&v6[..end], v6[end + 1..].strip_prefix(':'))
            }
            None => match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            },
        };
        if host.is_empty() {
            return Err("the URL has no host".into());
        }
        let port = match port {
            None => 80,
            Some(p) => p
                .parse::<u16>()
                .ok()
                .filter(|p| *p > 0)
                .ok_or_else(|| format!("bad port {p:?}"))?,
        };
        Ok(Target {
            authority: authority.to_string(),
            host: host.to_string(),
            port,
            path,
            headers,
        })
    }

    /// POST `body` once: `Ok` when it was taken (2xx), else why not and
    /// whether to try again.
    fn post(&self, body: &[u8]) -> Result<(), (String, bool)> {
        let retry = |e: std::io::Error| (e.to_string(), true);
        let addr = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(retry)?
            .next()
            .ok_or_else(|| (format!("{} has no address", self.host), true))?;
        let mut conn = TcpStream::connect_timeout(&addr, TIMEOUT).map_err(retry)?;
        conn.set_write_timeout(Some(TIMEOUT)).map_err(retry)?;
        conn.set_read_timeout(Some(TIMEOUT)).map_err(retry)?;
        let head = format!(
            "POST {} HTTP/1.1\r\nHost: {}\r\nUser-Agent: versus/{}\r\n{}\
             Content-Length: {}\r\nConnection: close\r\n\r\n",
            self.path,
            self.authority,
            env!("CARGO_PKG_VERSION"),
            self.headers,
            body.len()
        );
        conn.write_all(head.as_bytes()).map_err(retry)?;
        conn.write_all(body).map_err(retry)?;
        let status = status_of(&mut conn).map_err(retry)?;
        if (200..=299).contains(&status) {
            return Ok(());
        }
        let why = format!("HTTP {status}{}", reason(&mut conn));
        Err((why, matches!(status, 429 | 500..=599)))
    }
}

/// What a failed answer's body says, as `: text` (its first line, at most
/// 200 bytes), or nothing.
fn reason(conn: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let _ = conn.take(4096).read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let line: String = body
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .chars()
        .take(200)
        .collect();
    match line.is_empty() {
        true => String::new(),
        false => format!(": {line}"),
    }
}

/// The status code of the answer on `conn` (its status line read; the
/// rest is read only when it failed, for its reason).
fn status_of(conn: &mut TcpStream) -> std::io::Result<u16> {
    let mut head = Vec::with_capacity(64);
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n") && head.len() < 1024 {
        if conn.read(&mut byte)? == 0 {
            break;
        }
        head.push(byte[0]);
    }
    let line = String::from_utf8_lossy(&head);
    let mut words = line.split_whitespace();
    match (words.next(), words.next().and_then(|c| c.parse().ok())) {
        (Some(v), Some(code)) if v.starts_with("HTTP/") => Ok(code),
        _ => Err(std::io::Error::other(format!(
            "not an HTTP answer: {:?}",
            line.trim_end()
        ))),
    }
}

/// One interval as a target's format writes it: `main`, and `plain`, the
/// same without what a receiver may refuse (native histograms), sent
/// instead once the receiver refused a `main` (a 4xx answer).
pub struct Body {
    /// The interval whole.
    pub main: Vec<u8>,
    /// Without native histograms, for a receiver that refuses them.
    pub plain: Option<Vec<u8>>,
}

/// What became of the bodies handed to a [`Sender`].
#[derive(Debug, Default)]
struct Counts {
    delivered: AtomicU64,
    /// Sends tried again.
    retried: AtomicU64,
    /// The receiver refused a body that had a plain form: plain ones are
    /// sent from then on.
    plain: std::sync::atomic::AtomicBool,
}

/// A thread sending bodies to one target.
pub struct Sender {
    target: Target,
    queue: crossbeam_channel::Sender<Body>,
    /// Kept to drop the oldest body when the queue is full.
    oldest: crossbeam_channel::Receiver<Body>,
    counts: Arc<Counts>,
    /// Bodies handed over.
    handed: u64,
    /// The last error, for the report.
    last_error: Arc<std::sync::Mutex<Option<String>>>,
    done: crossbeam_channel::Receiver<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What a [`Sender`] delivered, at the end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delivery {
    /// Bodies (intervals) handed over.
    pub intervals: u64,
    /// Of those, taken by the receiver.
    pub delivered: u64,
    /// Sends tried again.
    pub retried: u64,
    /// The last failure, if any.
    pub last_error: Option<String>,
    /// The receiver refused native histograms: the latency went as fixed
    /// buckets alone.
    pub plain: bool,
}

impl Sender {
    /// Start the thread sending to `target`.
    ///
    /// # Errors
    /// When the thread cannot start.
    pub fn start(target: Target) -> Result<Sender, String> {
        let (queue, bodies) = crossbeam_channel::bounded::<Body>(QUEUE);
        let (finished, done) = crossbeam_channel::bounded(1);
        let counts = Arc::new(Counts::default());
        let last_error = Arc::new(std::sync::Mutex::new(None));
        let (to, c, e, rx) = (
            target.clone(),
            counts.clone(),
            last_error.clone(),
            bodies.clone(),
        );
        let thread = std::thread::Builder::new()
            .name("versus-metrics".into())
            .spawn(move || {
                for body in rx.iter() {
                    deliver(&to, body, &c, &e);
                }
                let _ = finished.send(());
            })
            .map_err(|e| format!("--out: cannot start its thread: {e}"))?;
        Ok(Sender {
            target,
            queue,
            oldest: bodies,
            counts,
            handed: 0,
            last_error,
            done,
            thread: Some(thread),
        })
    }

    /// Queue `body`, dropping the oldest queued one if the queue is full:
    /// never waits.
    pub fn send(&mut self, body: Body) {
        self.handed += 1;
        let mut body = body;
        loop {
            match self.queue.try_send(body) {
                Err(crossbeam_channel::TrySendError::Full(b)) => {
                    let _ = self.oldest.try_recv();
                    body = b;
                }
                _ => return,
            }
        }
    }

    /// Close the queue, give the bodies still queued [`FINISH`] to be
    /// sent, and say what was delivered.
    pub fn finish(self) -> Delivery {
        let Sender {
            queue,
            oldest,
            counts,
            handed,
            last_error,
            done,
            thread,
            ..
        } = self;
        drop((queue, oldest));
        // A thread still sending after that is left to end on its own
        // timeouts.
        if done.recv_timeout(FINISH).is_ok() {
            if let Some(t) = thread {
                let _ = t.join();
            }
        }
        Delivery {
            intervals: handed,
            delivered: counts.delivered.load(Ordering::Relaxed),
            retried: counts.retried.load(Ordering::Relaxed),
            last_error: last_error.lock().ok().and_then(|e| e.clone()),
            plain: counts.plain.load(Ordering::Relaxed),
        }
    }

    /// The target's URL, as given.
    pub fn url(&self) -> String {
        format!("http://{}{}", self.target.authority, self.target.path)
    }
}

/// Send one interval: its plain form once the receiver refused a main
/// one; else its main form, and if the receiver refuses that (a 4xx), its
/// plain form, and plain ones from then on.
fn deliver(to: &Target, body: Body, counts: &Counts, last: &std::sync::Mutex<Option<String>>) {
    let Body { main, plain } = body;
    match plain {
        Some(plain) if counts.plain.load(Ordering::Relaxed) => {
            send(to, &plain, counts, last);
        }
        Some(plain) => {
            if send(to, &main, counts, last) == Sent::Refused {
                counts.plain.store(true, Ordering::Relaxed);
                send(to, &plain, counts, last);
            }
        }
        None => {
            send(to, &main, counts, last);
        }
    }
}

/// How a send ended.
#[derive(PartialEq)]
enum Sent {
    Taken,
    /// A 4xx answer (but 429), or one naming histograms: the receiver
    /// will not take this body.
    Refused,
    /// Tried [`TRIES`] times, or refused for another reason.
    Failed,
}

/// Send one body, trying again within [`TRIES`].
fn send(
    to: &Target,
    body: &[u8],
    counts: &Counts,
    last: &std::sync::Mutex<Option<String>>,
) -> Sent {
    let mut wait = BACKOFF;
    for attempt in 1..=TRIES {
        match to.post(body) {
            Ok(()) => {
                counts.delivered.fetch_add(1, Ordering::Relaxed);
                return Sent::Taken;
            }
            Err((e, again)) => {
                // An answer's failure reads `HTTP {status}: {reason}`
                // (`Target::post`); Prometheus refuses native histograms
                // it is not set to take with a 500 that names them.
                let refused = e.starts_with("HTTP 4") || e.contains("histogram");
                if let Ok(mut l) = last.lock() {
                    *l = Some(e);
                }
                if refused {
                    return Sent::Refused;
                }
                if !again || attempt == TRIES {
                    return Sent::Failed;
                }
                counts.retried.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(wait);
                wait *= 2;
            }
        }
    }
    Sent::Failed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_or_say_why_not() {
        let t = Target::parse("http://127.0.0.1:9090/api/v1/write", "").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 9090, "/api/v1/write")
        );
        let t = Target::parse("http://[::1]/w", "").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.authority.as_str()),
            ("::1", 80, "[::1]")
        );
        assert_eq!(Target::parse("http://h", "").unwrap().path, "/");
        for (bad, why) in [
            ("ftp://h/", "must start with http://"),
            ("127.0.0.1:9090", "must start with http://"),
            ("https://h/", "https is not supported"),
            ("http:///w", "no host"),
            ("http://h:99999/", "bad port"),
            ("http://h:x/", "bad port"),
            ("http://u:p@h/", "credentials"),
            ("http://h/a b", "spaces"),
        ] {
            let e = Target::parse(bad, "").unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
