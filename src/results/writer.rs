//! Writing a saved run as it goes: the header, one line per interval as
//! the engine reports it, the totals at the end. Each line is written
//! whole and flushed, so a killed run leaves every complete line readable;
//! nothing is kept between intervals, except before the file is created
//! (a live run creates it at its first request): until then the lines wait
//! in memory.

use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::input::saved::RequestLine;
use crate::input::{Next, Source};
use crate::model::Request;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::format::{
    Header, InputRecord, IntervalLine, TotalsLine, VerdictRecord, FORMAT, VERSION,
};
use super::info::RunInfo;
use crate::engine::{Observer, RunOutput};
use crate::stats::RunStats;

/// Milliseconds since the Unix epoch, now.
pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// This machine's host name (empty when it cannot be read).
pub fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|s| s.trim().to_string())
        .or_else(|_| std::env::var("HOSTNAME"))
        .unwrap_or_default()
}

/// The header of a run described by `info`, starting now, or at
/// `start_at` if that is later (`late_ms` says how long it has passed).
pub fn header(
    info: &RunInfo,
    command: Vec<String>,
    interval_ms: u64,
    concurrency: usize,
    start_at: Option<SystemTime>,
) -> Header {
    let now = SystemTime::now();
    let late = start_at.and_then(|at| now.duration_since(at).ok());
    let now = start_at.filter(|_| late.is_none()).unwrap_or(now);
    Header {
        format: FORMAT.into(),
        version: VERSION,
        versus: env!("CARGO_PKG_VERSION").into(),
        command,
        host: host_name(),
        start: humantime::format_rfc3339_millis(now).to_string(),
        start_unix_ms: unix_ms(now),
        interval_ms,
        endpoints: info.endpoints.clone(),
        lead: info.window,
        comparison: info.comparison,
        concurrency,
        rate: info.rate,
        max_in_flight: info.max_in_flight,
        twin: info.twin,
        shard: None,
        run_id: None,
        late_ms: late.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        shards: Vec::new(),
        notes: info.notes.clone(),
        io: info.io.clone(),
        warmup: info.warmup.clone(),
        stages: info.stages.clone(),
        sweep: info.sweep.clone(),
        search: info.search.clone(),
        record: info.record.unwrap_or_default(),
    }
}

/// A saved-run file being written.
pub struct RunWriter {
    path: PathBuf,
    /// Shared with the input thread's [`RequestRecorder`] and with
    /// [`RunFile`]; each line is written whole under the lock.
    out: Arc<Mutex<Sink>>,
    /// The first write error; later writes are skipped.
    error: Option<io::Error>,
}

/// Where a saved run's lines go: memory until the file is created (a live
/// run creates it at its first request), then the file.
enum Sink {
    Waiting(Vec<u8>),
    File(BufWriter<File>),
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Sink::Waiting(kept) => {
                kept.extend_from_slice(buf);
                Ok(buf.len())
            }
            Sink::File(f) => f.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Waiting(_) => Ok(()),
            Sink::File(f) => f.flush(),
        }
    }
}

/// Creates a [`RunWriter`]'s file, once, with the lines written so far.
#[derive(Clone)]
pub struct RunFile {
    path: PathBuf,
    out: Arc<Mutex<Sink>>,
}

impl RunFile {
    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Create (or truncate) the file and write what was kept for it; once
    /// created, nothing more.
    ///
    /// # Errors
    /// When the file cannot be created or written.
    pub fn create(&self) -> io::Result<()> {
        let mut out = self
            .out
            .lock()
            .map_err(|_| io::Error::other("writer lock poisoned"))?;
        if let Sink::Waiting(kept) = &*out {
            let mut file = BufWriter::with_capacity(1 << 16, File::create(&self.path)?);
            file.write_all(kept)?;
            file.flush()?;
            *out = Sink::File(file);
        }
        Ok(())
    }
}

impl RunWriter {
    /// A writer for `path`, its header written, that touches no file
    /// until [`RunFile::create`] (see [`RunWriter::file`]).
    pub fn pending(path: &Path, header: &Header) -> RunWriter {
        let mut w = RunWriter {
            path: path.to_path_buf(),
            out: Arc::new(Mutex::new(Sink::Waiting(Vec::new()))),
            error: None,
        };
        w.line(header);
        w
    }

    /// Create (or truncate) `path` and write the header.
    ///
    /// # Errors
    /// When the file cannot be created or written.
    pub fn create(path: &Path, header: &Header) -> io::Result<RunWriter> {
        let mut w = RunWriter::pending(path, header);
        w.file().create()?;
        w.check()?;
        Ok(w)
    }

    /// The handle that creates the file.
    pub fn file(&self) -> RunFile {
        RunFile {
            path: self.path.clone(),
            out: self.out.clone(),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A handle that records the requests of the run into this file, for
    /// the input thread.
    pub fn recorder(&self, show_secrets: bool) -> RequestRecorder {
        RequestRecorder {
            out: self.out.clone(),
            seq: 0,
            show_secrets,
        }
    }

    fn line<T: serde::Serialize>(&mut self, value: &T) {
        if self.error.is_some() {
            return;
        }
        let result = serde_json::to_vec(value)
            .map_err(io::Error::other)
            .and_then(|mut bytes| {
                bytes.push(b'\n');
                // One write of the whole line, then a flush (of the request
                // lines before it too): a kill leaves at most a partial
                // last line.
                let mut out = self
                    .out
                    .lock()
                    .map_err(|_| io::Error::other("writer lock poisoned"))?;
                out.write_all(&bytes)?;
                out.flush()
            });
        if let Err(e) = result {
            self.error = Some(e);
        }
    }

    /// Write one interval line.
    pub fn interval(&mut self, index: u64, delta: &RunStats) {
        let line = IntervalLine {
            kind: "interval".into(),
            index,
            written_unix_ms: unix_ms(SystemTime::now()),
            endpoints: super::format::records_of(delta),
            verdicts: VerdictRecord::from_stats(&delta.verdicts),
        };
        self.line(&line);
    }

    /// Write a line as it is (used by merge).
    pub fn raw<T: serde::Serialize>(&mut self, value: &T) {
        self.line(value);
    }

    /// Write the totals line of a finished run.
    pub fn totals(&mut self, run: &RunOutput, info: &RunInfo) {
        let line = TotalsLine {
            kind: "totals".into(),
            elapsed_ns: u64::try_from(run.elapsed.as_nanos()).unwrap_or(u64::MAX),
            interrupted: run.interrupted,
            input: InputRecord::from_stats(&run.input),
            input_error: run.input_error.as_ref().map(ToString::to_string),
            endpoints: super::format::records_of(&run.stats),
            verdicts: VerdictRecord::from_stats(&run.stats.verdicts),
            logged: info.logged,
            recorded: info.recorded,
        };
        self.line(&line);
    }

    /// The first write error, if any.
    ///
    /// # Errors
    /// The first error met while writing.
    pub fn check(&mut self) -> io::Result<()> {
        match self.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

/// Saves each interval of a live run to a [`RunWriter`].
pub struct Recorder<'a> {
    /// The file.
    pub writer: &'a mut RunWriter,
}

impl Observer for Recorder<'_> {
    fn interval(&mut self, index: u64, delta: &RunStats, _total: &RunStats) {
        self.writer.interval(index, delta);
    }
}

/// Shows each interval to several observers in turn.
pub struct Tee<'a>(pub Vec<&'a mut dyn Observer>);

impl Observer for Tee<'_> {
    fn interval(&mut self, index: u64, delta: &RunStats, total: &RunStats) {
        for o in &mut self.0 {
            o.interval(index, delta, total);
        }
    }

    fn judging(&mut self, left: u64) {
        for o in &mut self.0 {
            o.judging(left);
        }
    }
}

/// Mask secrets on a command line: URLs (keys in paths and queries,
/// passwords) and the values of credential headers given with `-H`,
/// `--header` or `--endpoint-header`.
pub fn mask_command(args: &[String]) -> Vec<String> {
    use crate::model::secret;
    let mask_header = |h: &str| -> String {
        // `Name: value` or `LABEL=Name: value`.
        let Some((name, _)) = h.split_once(':') else {
            return h.to_string();
        };
        let bare = name.rsplit('=').next().unwrap_or(name).trim();
        if secret::is_secret_header(bare) {
            format!("{name}: {}", secret::MASK)
        } else {
            h.to_string()
        }
    };
    let mut out = Vec::with_capacity(args.len());
    let mut header_next = false;
    for a in args {
        let masked = if header_next {
            mask_header(a)
        } else if let Some(v) = a
            .strip_prefix("--header=")
            .or_else(|| a.strip_prefix("--endpoint-header="))
        {
            format!("{}={}", &a[..a.len() - v.len() - 1], mask_header(v))
        } else if let Some(i) = a.find("://") {
            // NAME=URL or URL.
            let start = a[..i].rfind('=').map_or(0, |e| e + 1);
            format!("{}{}", &a[..start], secret::mask_url(&a[start..]))
        } else {
            a.clone()
        };
        header_next = matches!(a.as_str(), "-H" | "--header" | "--endpoint-header");
        out.push(masked);
    }
    out
}

/// Records each request of a run as a `request` line of the saved run, so
/// that `--input-file RUN` replays exactly what was read. Lines are
/// buffered and reach the disk with the next interval line.
pub struct RequestRecorder {
    out: Arc<Mutex<Sink>>,
    seq: u64,
    show_secrets: bool,
}

impl RequestRecorder {
    /// Record one request; `repeat` marks single-request mode's request.
    pub fn record(&mut self, req: &Request, repeat: bool) {
        self.line(self.seq, req, repeat);
        self.seq += 1;
    }

    /// Write the line of request number `seq`.
    fn line(&self, seq: u64, req: &Request, repeat: bool) {
        let line = RequestLine::of(seq, req, repeat, self.show_secrets);
        if let (Ok(mut bytes), Ok(mut out)) = (serde_json::to_vec(&line), self.out.lock()) {
            bytes.push(b'\n');
            // A failed write shows at the next interval line's check.
            let _ = out.write_all(&bytes);
        }
    }
}

/// `--record mismatches`: a tap that writes the request line of each
/// request of a stream that mismatched or met an error, as the engine
/// finds it (on the judge thread, or on the core for an error whose
/// answers agreed), once each and numbered as read, up to `limit` lines
/// (the rest are counted); nothing until a stream's recorder is attached
/// ([`ProblemLines::attach`]), so a flow or a repeated request writes
/// none here.
pub struct ProblemLines {
    recorder: std::sync::OnceLock<RequestRecorder>,
    limit: u64,
    seen: AtomicU64,
    written: AtomicU64,
}

impl std::fmt::Debug for ProblemLines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProblemLines")
            .field("attached", &self.recorder.get().is_some())
            .finish()
    }
}

impl ProblemLines {
    /// Up to `limit` lines (`--record-limit`), once attached.
    pub fn new(limit: u64) -> ProblemLines {
        ProblemLines {
            recorder: std::sync::OnceLock::new(),
            limit,
            seen: AtomicU64::new(0),
            written: AtomicU64::new(0),
        }
    }

    /// Write the lines with `recorder` from now on (once; later calls are
    /// ignored).
    pub fn attach(&self, recorder: RequestRecorder) {
        let _ = self.recorder.set(recorder);
    }

    /// The requests that mismatched or met an error, and the lines
    /// written for them; `None` when no stream was attached.
    pub fn counts(&self) -> Option<(u64, u64)> {
        self.recorder.get()?;
        Some((
            self.seen.load(Ordering::Relaxed),
            self.written.load(Ordering::Relaxed),
        ))
    }

    /// Write the line of request `seq`, unless the limit is reached.
    fn keep(&self, seq: u64, req: &Request) {
        let Some(r) = self.recorder.get() else { return };
        if self.seen.fetch_add(1, Ordering::Relaxed) < self.limit {
            r.line(seq, req, false);
            self.written.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl crate::engine::Tap for ProblemLines {
    fn mismatch(
        &self,
        _: &crate::engine::Settings,
        req: &Request,
        _: &str,
        _: &[Option<&crate::model::Outcome>],
        _: &[crate::compare::Finding],
    ) {
        self.keep(req.seq, req);
    }

    fn failed(&self, _: &crate::engine::Settings, req: &Request, seq: u64) {
        self.keep(seq, req);
    }
}

/// A source that records every request it passes on.
pub struct Recording {
    source: Box<dyn Source>,
    recorder: RequestRecorder,
}

impl Recording {
    /// Record what `source` yields.
    pub fn new(source: Box<dyn Source>, recorder: RequestRecorder) -> Recording {
        Recording { source, recorder }
    }
}

impl Source for Recording {
    fn next(&mut self) -> io::Result<Next> {
        let next = self.source.next()?;
        if let Next::Request(r) = &next {
            self.recorder.record(r, false);
        }
        Ok(next)
    }

    crate::input::wrapped_source!(source);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masks_keys_and_credential_headers_on_the_command_line() {
        let args: Vec<String> = [
            "versus",
            "-H",
            "Authorization: Bearer sekret",
            "--endpoint-header=b=X-Api-Key: k123",
            "-H",
            "Accept: text/plain",
            "infura=https://mainnet.infura.io/v3/9aa3d95b3bc440fa88ea12eaa4456161",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        let m = mask_command(&args);
        assert_eq!(m[2], "Authorization: ...");
        assert_eq!(m[3], "--endpoint-header=b=X-Api-Key: ...");
        assert_eq!(m[5], "Accept: text/plain");
        assert_eq!(m[6], "infura=https://mainnet.infura.io/v3/...");
    }
}
