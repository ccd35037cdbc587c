//! Request sources: turn a stream of bytes (stdin, a file, a generator) into
//! [`Request`] values. This module owns reading and validating input; it
//! knows nothing about endpoints, timing or comparison.

pub use crate::model::{Malformed, Request};

/// Headers a recorded request must not carry because the engine sets them
/// per endpoint: framing, connection management (none of which HTTP/2
/// allows) and the host.
const ENGINE_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "proxy-connection",
    "upgrade",
    "te",
    "trailer",
];

/// Whether a recorded header is one the engine sets itself (dropped by
/// every input format), or an HTTP/2 pseudo-header.
pub(crate) fn is_engine_header(name: &[u8]) -> bool {
    name.first() == Some(&b':')
        || ENGINE_HEADERS
            .iter()
            .any(|d| d.as_bytes().eq_ignore_ascii_case(name))
}

/// What a [`Source`] yields next.
#[derive(Debug)]
pub enum Next {
    /// A request; its `seq` is assigned by the reader, the source leaves it 0.
    Request(Request),
    /// A record that was skipped.
    Malformed(Malformed),
    /// The input has ended.
    End,
}

/// A source of requests in one input format. Sources are blocking and run
/// on the input thread, never on an engine core.
pub trait Source: Send {
    /// Read the next record.
    ///
    /// # Errors
    /// Only for I/O failures of the underlying reader; bad records are
    /// reported as [`Next::Malformed`].
    fn next(&mut self) -> std::io::Result<Next>;

    /// True when the next record is already in memory, so [`Source::next`]
    /// will not wait for input. The reader sends a partial batch to the
    /// cores whenever this is false, so that a request is never held back
    /// while the source waits (a live pipe). The default is false.
    fn buffered(&self) -> bool {
        false
    }

    /// A line for the report about what the input held beyond requests
    /// and malformed records (a capture's streams, say), once it ended.
    fn summary(&self) -> Option<String> {
        None
    }

    /// Where the record [`Source::next`] returned last was (`line 7`),
    /// for a check after reading that finds it malformed (a gRPC
    /// request that does not fit its message type). The default is none.
    fn location(&self) -> Option<String> {
        None
    }

    /// The source a wrapper has become once its own work is done (the
    /// format found, the output files created): the one it wraps, taken
    /// out, so that records no longer pass through it (each a copy of the
    /// record and a call; 100 instructions a line for two such layers).
    /// The reader takes it between batches ([`peel_spent`]). `None` while the
    /// wrapper still has work (one with lasting work, recording or
    /// checking each record, peels what it wraps instead), and for any
    /// other source (the default).
    fn spent(&mut self) -> Option<Box<dyn Source>> {
        None
    }
}

/// Take every spent wrapper out of `source`'s chain, the outer ones
/// here and the inner ones through the wrappers that stay
/// ([`Source::spent`]).
pub fn peel_spent(source: &mut Box<dyn Source>) {
    while let Some(inner) = source.spent() {
        *source = inner;
    }
}

/// A wrapper's [`Source`] methods other than `next`, for one with lasting
/// work (it filters, checks or records each record) around `self.$inner`:
/// whether the next record is in memory, the summary and the location are
/// the inner source's, and the spent wrappers inside it are peeled.
macro_rules! wrapped_source {
    ($inner:ident) => {
        fn buffered(&self) -> bool {
            self.$inner.buffered()
        }

        fn summary(&self) -> Option<String> {
            self.$inner.summary()
        }

        fn location(&self) -> Option<String> {
            self.$inner.location()
        }

        fn spent(&mut self) -> Option<Box<dyn $crate::input::Source>> {
            $crate::input::peel_spent(&mut self.$inner);
            None
        }
    };
}
pub(crate) use wrapped_source;

pub mod curl;
pub mod detect;
pub mod ethereum;
pub mod har;
pub mod jsonl;
pub mod lines;
pub mod pcap;
pub mod reader;
pub mod saved;
pub mod vegeta;

use std::io::{BufRead, BufReader, Read};
use std::path::Path;

pub use self::detect::Format;

/// A buffered reader that shows what it has read ahead: the input of a
/// record format, so that its source can tell whether the next record is
/// already in memory ([`Source::buffered`]).
pub trait ReadAhead: BufRead + Send {
    /// The bytes read but not consumed yet.
    fn ahead(&self) -> &[u8];
}

impl<R: Read + Send> ReadAhead for BufReader<R> {
    fn ahead(&self) -> &[u8] {
        self.buffer()
    }
}

#[cfg(test)]
impl ReadAhead for std::io::Cursor<Vec<u8>> {
    fn ahead(&self) -> &[u8] {
        let data = self.get_ref();
        let at = usize::try_from(self.position()).map_or(data.len(), |p| p.min(data.len()));
        &data[at..]
    }
}

/// The whole lines (those with their newline) of `ahead`, without it: what
/// the line-based formats' [`Source::buffered`] looks through for a record.
pub(crate) fn whole_lines(ahead: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0;
    memchr::memchr_iter(b'\n', ahead).map(move |end| {
        let line = &ahead[start..end];
        start = end + 1;
        line
    })
}

/// Open a request source: `path` (`-` or `None` is stdin) in `format`;
/// `None` finds the format from the stream's first read ([`Detected`]).
/// `max_record` bounds a line or record of the line-based formats.
///
/// # Errors
/// When the file cannot be opened.
pub fn open(
    format: Option<Format>,
    path: Option<&Path>,
    max_record: usize,
) -> std::io::Result<Box<dyn Source>> {
    let reader: Box<dyn Read + Send> = match path {
        Some(p) if p != Path::new("-") => Box::new(std::fs::File::open(p)?),
        _ => Box::new(std::io::stdin()),
    };
    Ok(match format {
        Some(format) => source(
            format,
            BufReader::with_capacity(1 << 16, reader),
            max_record,
        ),
        None => Box::new(Detected::new(reader, max_record)),
    })
}

/// A source of `format` reading `reader` (which may hold bytes read
/// ahead already).
fn source(
    format: Format,
    reader: BufReader<Box<dyn Read + Send>>,
    max_record: usize,
) -> Box<dyn Source> {
    let buffered = |r| -> Box<dyn ReadAhead> { Box::new(r) };
    match format {
        // Lines keep their own buffer (to know whether the next line waits).
        Format::Lines => Box::new(lines::LinesSource::new(reader, max_record)),
        Format::Jsonl => Box::new(jsonl::JsonlSource::new(buffered(reader), max_record)),
        Format::Har => Box::new(har::HarSource::new(buffered(reader))),
        Format::Curl => Box::new(curl::CurlSource::new(buffered(reader), max_record)),
        Format::Vegeta => Box::new(vegeta::VegetaSource::new(buffered(reader), max_record)),
        Format::Pcap => Box::new(pcap::PcapSource::new(Box::new(buffered(reader)))),
        Format::Run => Box::new(saved::SavedRunSource::new(buffered(reader))),
    }
}

/// A stream read without `--input` (stdin): plain lines, unless its first
/// read shows a HAR file or a packet capture, which sent line by line
/// would be nonsense; then that format, said once on stderr. The format
/// is found at the first [`Source::next`], on the input thread, from what
/// one read returned: a live pipe (`tail -f`) is never waited on for more.
struct Detected {
    state: DetectState,
    max_record: usize,
}

enum DetectState {
    Unread(Box<dyn Read + Send>),
    Reading(Box<dyn Source>),
    /// Only while the first read is under way.
    Taken,
}

impl Detected {
    /// Detect the format of `reader` at its first record.
    fn new(reader: Box<dyn Read + Send>, max_record: usize) -> Detected {
        Detected {
            state: DetectState::Unread(reader),
            max_record,
        }
    }

    /// The source, its format found by one read.
    fn detect(&mut self) -> std::io::Result<&mut Box<dyn Source>> {
        self.state = match std::mem::replace(&mut self.state, DetectState::Taken) {
            DetectState::Unread(reader) => {
                DetectState::Reading(first_read(reader, self.max_record)?)
            }
            other => other,
        };
        match &mut self.state {
            DetectState::Reading(s) => Ok(s),
            _ => Err(std::io::Error::other("the input's first read failed")),
        }
    }
}

/// The source for `reader`, its format found by one read of it: a HAR
/// file or a capture in theirs (said on stderr), else lines.
fn first_read(reader: Box<dyn Read + Send>, max_record: usize) -> std::io::Result<Box<dyn Source>> {
    let mut reader = BufReader::with_capacity(1 << 16, reader);
    let head = loop {
        match reader.fill_buf() {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            other => break other?,
        }
    };
    let (format, what) = match detect::detect(head, None) {
        Some(Format::Har) => (Format::Har, "a HAR file"),
        Some(Format::Pcap) => (Format::Pcap, "a packet capture"),
        _ => return Ok(source(Format::Lines, reader, max_record)),
    };
    eprintln!(
        "versus: stdin is {what}: reading it as --input {format} (--input lines sends it line by line)"
    );
    Ok(source(format, reader, max_record))
}

impl Source for Detected {
    fn next(&mut self) -> std::io::Result<Next> {
        self.detect()?.next()
    }

    fn buffered(&self) -> bool {
        match &self.state {
            DetectState::Reading(s) => s.buffered(),
            _ => false,
        }
    }

    fn summary(&self) -> Option<String> {
        match &self.state {
            DetectState::Reading(s) => s.summary(),
            _ => None,
        }
    }

    fn location(&self) -> Option<String> {
        match &self.state {
            DetectState::Reading(s) => s.location(),
            _ => None,
        }
    }

    fn spent(&mut self) -> Option<Box<dyn Source>> {
        match std::mem::replace(&mut self.state, DetectState::Taken) {
            DetectState::Reading(s) => Some(s),
            other => {
                self.state = other;
                None
            }
        }
    }
}

/// The format of a file: from its name or its first bytes; plain lines
/// when nothing else fits.
///
/// # Errors
/// When the file cannot be read.
pub fn detect_file(path: &Path) -> std::io::Result<Format> {
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path)?
        .take(4096)
        .read_to_end(&mut head)?;
    Ok(detect::detect(&head, Some(path)).unwrap_or(Format::Lines))
}
