//! Reading a saved run line by line: the header (recognised from the first
//! bytes, its version checked), then intervals one at a time, then the
//! totals. A cut-off last line (a killed run) is ignored with a warning; a
//! missing totals line is rebuilt from the intervals, with a warning. Every
//! error names the file and the problem.

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::time::Duration;

use super::format::{stats_of, Header, IntervalLine, TotalsLine, FORMAT, VERSION};
use crate::stats::{InputStats, RunStats};

/// A file that cannot be read as a saved run.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {problem}")]
pub struct ReadError {
    /// The file as given.
    pub path: String,
    /// What is wrong with it.
    pub problem: String,
}

/// A saved run being read.
pub struct RunReader {
    path: String,
    /// The header line.
    pub header: Header,
    input: BufReader<File>,
    line_no: u64,
    buf: Vec<u8>,
    /// Warnings met so far (a cut-off last line, a missing totals line).
    pub warnings: Vec<String>,
    /// The sum of the intervals read so far.
    sum: RunStats,
    last_index: Option<u64>,
    intervals: u64,
    totals: Option<TotalsLine>,
    ended: bool,
    /// An interval read ahead (to merge lines of the same index).
    ahead: Option<(u64, RunStats)>,
}

/// What a whole saved run holds at its end.
#[derive(Debug)]
pub struct Finished {
    /// The header.
    pub header: Header,
    /// Statistics of the whole run.
    pub stats: RunStats,
    /// Input counters.
    pub input: InputStats,
    /// Why the input failed, if it did.
    pub input_error: Option<String>,
    /// The run's wall time.
    pub elapsed: Duration,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
    /// False when the totals line was missing (a killed run).
    pub complete: bool,
    /// `--mismatches`: mismatched requests seen, lines written, and the
    /// limit.
    pub logged: Option<(u64, u64, u64)>,
    /// `--record mismatches`: requests that mismatched or met an error,
    /// and the lines written for them.
    pub recorded: Option<(u64, u64)>,
    /// Warnings.
    pub warnings: Vec<String>,
}

impl RunReader {
    /// Open `path` and read its header.
    ///
    /// # Errors
    /// When the file cannot be opened, is not a saved versus run, or has a
    /// format version this versus does not read.
    pub fn open(path: &Path) -> Result<RunReader, ReadError> {
        let name = path.display().to_string();
        let fail = |problem: String| ReadError {
            path: name.clone(),
            problem,
        };
        let file = File::open(path).map_err(|e| fail(format!("cannot open: {e}")))?;
        let mut input = BufReader::with_capacity(1 << 16, file);
        let mut buf = Vec::new();
        input
            .read_until(b'\n', &mut buf)
            .map_err(|e| fail(format!("cannot read: {e}")))?;
        let header = parse_header(&buf).map_err(fail)?;
        if header.endpoints.is_empty() {
            return Err(fail("the header names no endpoint".into()));
        }
        if header.interval_ms == 0 {
            return Err(fail("the header's interval_ms is 0".into()));
        }
        let n = header.endpoints.len();
        Ok(RunReader {
            path: name,
            header,
            input,
            line_no: 1,
            buf,
            warnings: Vec::new(),
            sum: RunStats::new(n),
            last_index: None,
            intervals: 0,
            totals: None,
            ended: false,
            ahead: None,
        })
    }

    /// The file as given.
    pub fn path(&self) -> &str {
        &self.path
    }

    fn fail(&self, problem: String) -> ReadError {
        ReadError {
            path: self.path.clone(),
            problem,
        }
    }

    /// The next interval, `None` at the end of the intervals. Lines of the
    /// same interval (the engine may report an interval's last part after
    /// it when the run ends on its boundary) are merged into one.
    ///
    /// # Errors
    /// When a complete line is not valid, or reading fails.
    pub fn next_interval(&mut self) -> Result<Option<(u64, RunStats)>, ReadError> {
        let Some((index, mut stats)) = (match self.ahead.take() {
            Some(a) => Some(a),
            None => self.read_interval()?,
        }) else {
            return Ok(None);
        };
        loop {
            match self.read_interval()? {
                Some((i, s)) if i == index => stats.merge(&s),
                Some(next) => {
                    self.ahead = Some(next);
                    break;
                }
                None => break,
            }
        }
        Ok(Some((index, stats)))
    }

    fn read_interval(&mut self) -> Result<Option<(u64, RunStats)>, ReadError> {
        while !self.ended {
            self.buf.clear();
            let n = self
                .input
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| self.fail(format!("cannot read: {e}")))?;
            if n == 0 {
                self.ended = true;
                break;
            }
            self.line_no += 1;
            let whole = self.buf.ends_with(b"\n");
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let value: serde_json::Value = match serde_json::from_slice(&self.buf) {
                Ok(v) => v,
                Err(_) if !whole => {
                    self.warnings.push(format!(
                        "{}: line {} is cut off (the run was killed or is still being written); it is ignored",
                        self.path, self.line_no
                    ));
                    self.ended = true;
                    break;
                }
                Err(e) => {
                    return Err(self.fail(format!("line {}: not valid JSON: {e}", self.line_no)))
                }
            };
            match value.get("type").and_then(|t| t.as_str()) {
                Some("interval") => {
                    let line: IntervalLine = serde_json::from_value(value)
                        .map_err(|e| self.fail(format!("line {}: {e}", self.line_no)))?;
                    let stats = self.checked(&line.endpoints, &line.verdicts)?;
                    if self.last_index.is_some_and(|last| line.index < last) {
                        return Err(self.fail(format!(
                            "line {}: interval {} comes after interval {}",
                            self.line_no,
                            line.index,
                            self.last_index.unwrap_or_default()
                        )));
                    }
                    if self.last_index != Some(line.index) {
                        self.intervals += 1;
                    }
                    self.last_index = Some(line.index);
                    self.sum.merge(&stats);
                    return Ok(Some((line.index, stats)));
                }
                Some("totals") => {
                    let line: TotalsLine = serde_json::from_value(value)
                        .map_err(|e| self.fail(format!("line {}: {e}", self.line_no)))?;
                    self.checked(&line.endpoints, &line.verdicts)?;
                    self.totals = Some(line);
                    self.ended = true;
                }
                // Lines of kinds added later (within version 1) are skipped.
                Some(_) => {}
                None => {
                    return Err(
                        self.fail(format!("line {}: a line without a \"type\"", self.line_no))
                    )
                }
            }
        }
        Ok(None)
    }

    fn checked(
        &self,
        endpoints: &[super::format::EndpointRecord],
        verdicts: &super::format::VerdictRecord,
    ) -> Result<RunStats, ReadError> {
        if endpoints.len() != self.header.endpoints.len() {
            return Err(self.fail(format!(
                "line {}: {} endpoints where the header names {}",
                self.line_no,
                endpoints.len(),
                self.header.endpoints.len()
            )));
        }
        stats_of(endpoints, &self.header.endpoints, verdicts)
            .map_err(|e| self.fail(format!("line {}: {e}", self.line_no)))
    }

    /// Read to the end and return the whole run: the totals line, or when
    /// it is missing the sum of the intervals (with a warning, and rates
    /// over the intervals' time).
    ///
    /// # Errors
    /// As [`RunReader::next_interval`].
    pub fn finish(mut self) -> Result<Finished, ReadError> {
        while self.next_interval()?.is_some() {}
        let interval = Duration::from_millis(self.header.interval_ms);
        match self.totals.take() {
            Some(t) => Ok(Finished {
                stats: stats_of(&t.endpoints, &self.header.endpoints, &t.verdicts)
                    .map_err(|e| self.fail(e))?,
                input: t.input.to_stats(),
                input_error: t.input_error,
                elapsed: Duration::from_nanos(t.elapsed_ns),
                interrupted: t.interrupted,
                complete: true,
                logged: t.logged,
                recorded: t.recorded,
                header: self.header,
                warnings: self.warnings,
            }),
            None => {
                let elapsed = interval
                    * u32::try_from(self.last_index.map_or(0, |i| i + 1)).unwrap_or(u32::MAX);
                self.warnings.push(format!(
                    "{}: no totals line: the run did not finish (killed?); reporting its {} complete intervals ({})",
                    self.path,
                    self.intervals,
                    crate::display::duration(elapsed)
                ));
                let mut stats = std::mem::take(&mut self.sum);
                for s in &mut stats.endpoints {
                    if s.active.is_zero() {
                        s.active = elapsed;
                    }
                    if s.sending.is_zero() {
                        s.sending = elapsed;
                    }
                }
                let input = InputStats {
                    requests: stats.endpoints.iter().map(|s| s.sent).max().unwrap_or(0),
                    ..InputStats::default()
                };
                Ok(Finished {
                    stats,
                    input,
                    input_error: None,
                    elapsed,
                    interrupted: true,
                    complete: false,
                    logged: None,
                    recorded: None,
                    header: self.header,
                    warnings: self.warnings,
                })
            }
        }
    }
}

/// Recognise and parse the header line.
fn parse_header(first: &[u8]) -> Result<Header, String> {
    if first.is_empty() {
        return Err("empty file: not a saved versus run".into());
    }
    let head = String::from_utf8_lossy(&first[..first.len().min(40)]).into_owned();
    if !first.starts_with(b"{") {
        return Err(format!(
            "not a saved versus run (written with --output): it starts with {:?}",
            crate::display::escape_terminal(&head)
        ));
    }
    if first.trim_ascii() == b"{" {
        return Err(
            "a JSON report (--format json), not a saved run: save a run with -o FILE to report it again"
                .into(),
        );
    }
    let value: serde_json::Value = serde_json::from_slice(first).map_err(|e| {
        if first.ends_with(b"\n") {
            format!("not a saved versus run: the first line is not JSON ({e})")
        } else {
            "the file is cut off inside its header line: nothing to report".to_string()
        }
    })?;
    match value.get("format").and_then(|f| f.as_str()) {
        Some(FORMAT) => {}
        Some(other) => {
            return Err(format!(
                "not a saved versus run: its format is {other:?}, not {FORMAT:?}"
            ))
        }
        None => return Err("not a saved versus run: the first line has no \"format\"".into()),
    }
    match value.get("version").and_then(serde_json::Value::as_u64) {
        Some(v) if v == u64::from(VERSION) => {}
        Some(v) if v > u64::from(VERSION) => {
            return Err(format!(
                "format version {v} is newer than this versus ({}) reads (version {VERSION}); use a newer versus",
                env!("CARGO_PKG_VERSION")
            ))
        }
        Some(v) => {
            return Err(format!(
                "format version {v} is not one this versus reads (version {VERSION})"
            ))
        }
        None => return Err("the header has no format version".into()),
    }
    serde_json::from_value(value).map_err(|e| format!("bad header: {e}"))
}
