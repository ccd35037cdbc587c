//! The default input format: one request per line, the line being the
//! body (or, for `+get` endpoints, the path suffix). Blank lines are
//! skipped; CRLF is accepted; a line over the limit is skipped whole and
//! reported with its number, never truncated; a line that is not UTF-8 is
//! skipped and reported.

use std::cell::Cell;
use std::io::{self, BufRead, BufReader, Read};

use super::{Malformed, Next, Request, Source};
use crate::slab::Slab;

/// Reads one request per line.
pub struct LinesSource<R> {
    reader: BufReader<R>,
    max_line: usize,
    line_no: u64,
    /// A line that does not lie whole in the read buffer, gathered.
    buf: Vec<u8>,
    /// Where the bodies are copied: one allocation per chunk of lines.
    slab: Slab,
    /// The end of the next line in the read buffer, where [`Source::buffered`]
    /// found it: the search `next` would otherwise make again.
    next_end: Cell<Option<usize>>,
}

impl<R: Read + Send> LinesSource<R> {
    /// Read lines from `reader`; lines longer than `max_line` bytes
    /// (without the line ending) are skipped.
    pub fn new(reader: R, max_line: usize) -> Self {
        Self::with_capacity(1 << 16, reader, max_line)
    }

    /// The same with a read buffer of `capacity` bytes.
    pub fn with_capacity(capacity: usize, reader: R, max_line: usize) -> Self {
        LinesSource {
            reader: BufReader::with_capacity(capacity, reader),
            max_line,
            line_no: 0,
            buf: Vec::new(),
            slab: Slab::new(),
            next_end: Cell::new(None),
        }
    }

    /// Gather one physical line that spans reads into `buf`, keeping at
    /// most `max_line + 1` bytes of it. Returns (saw any byte, too long).
    fn gather_line(&mut self) -> io::Result<(bool, bool)> {
        self.buf.clear();
        let mut any = false;
        let mut too_long = false;
        loop {
            let available = fill(&mut self.reader)?;
            if available.is_empty() {
                return Ok((any, too_long));
            }
            any = true;
            let (chunk, used, end) = match memchr::memchr(b'\n', available) {
                Some(i) => (&available[..i], i + 1, true),
                None => (available, available.len(), false),
            };
            if !too_long {
                if self.buf.len() + chunk.len() > self.max_line + 1 {
                    too_long = true;
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(chunk);
                }
            }
            self.reader.consume(used);
            if end {
                return Ok((true, too_long));
            }
        }
    }
}

/// The read buffer of `reader`, read into when empty (empty at the end of
/// input).
fn fill<R: Read>(reader: &mut BufReader<R>) -> io::Result<&[u8]> {
    if reader.buffer().is_empty() {
        loop {
            match reader.fill_buf() {
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
    Ok(reader.buffer())
}

/// Whether `bytes` are all ASCII, read a word at a time, the last word
/// overlapping the one before: `<[u8]>::is_ascii` goes through what its
/// 64-byte blocks leave byte by byte, and `from_utf8` short runs too (190
/// and 280 instructions a 160-byte line; callgrind).
fn is_ascii(bytes: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A word that cannot be read counts as not ASCII: the full check
    // follows.
    let word = |w: &[u8]| w.try_into().map_or(HIGH, u64::from_ne_bytes);
    let Some(tail) = bytes.len().checked_sub(8) else {
        return bytes.is_ascii();
    };
    let words = bytes.chunks_exact(8).fold(0, |any, w| any | word(w));
    (words | word(&bytes[tail..])) & HIGH == 0
}

/// The record line `line_no` makes (`None` for a blank line, which is
/// skipped): its body copied into `slab`, or why it is malformed.
fn record(
    slab: &mut Slab,
    line_no: u64,
    max_line: usize,
    line: &[u8],
    too_long: bool,
) -> Option<Next> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let malformed = |reason| {
        Some(Next::Malformed(Malformed {
            location: format!("line {line_no}"),
            reason,
        }))
    };
    if too_long || line.len() > max_line {
        return malformed(format!("longer than --max-line ({max_line} bytes)"));
    }
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    // UTF-8 is checked byte by byte only where a line is not ASCII.
    if !is_ascii(line) {
        if let Err(e) = std::str::from_utf8(line) {
            return malformed(format!("not valid UTF-8 (at byte {})", e.valid_up_to()));
        }
    }
    Some(Next::Request(Request::line(0, slab.copy(line))))
}

impl<R: Read + Send> Source for LinesSource<R> {
    fn location(&self) -> Option<String> {
        Some(format!("line {}", self.line_no))
    }

    fn buffered(&self) -> bool {
        // A whole non-blank line is in the buffer (blank ones are skipped):
        // reading the next record will not wait.
        let ahead = self.reader.buffer();
        let Some(end) = memchr::memchr(b'\n', ahead) else {
            return false;
        };
        self.next_end.set(Some(end));
        let blank = |l: &[u8]| l.trim_ascii().is_empty();
        !blank(&ahead[..end]) || super::whole_lines(&ahead[end + 1..]).any(|l| !blank(l))
    }

    fn next(&mut self) -> io::Result<Next> {
        loop {
            // The common case: the line lies whole in the read buffer, and
            // is copied once, from there into the slab.
            let end = match self.next_end.take() {
                Some(end) => Some(end),
                None => {
                    let available = fill(&mut self.reader)?;
                    if available.is_empty() {
                        return Ok(Next::End);
                    }
                    memchr::memchr(b'\n', available)
                }
            };
            let next = match end {
                Some(end) => {
                    self.line_no += 1;
                    let line = &self.reader.buffer()[..end];
                    let next = record(&mut self.slab, self.line_no, self.max_line, line, false);
                    self.reader.consume(end + 1);
                    next
                }
                None => {
                    let (any, too_long) = self.gather_line()?;
                    if !any {
                        return Ok(Next::End);
                    }
                    self.line_no += 1;
                    record(
                        &mut self.slab,
                        self.line_no,
                        self.max_line,
                        &self.buf,
                        too_long,
                    )
                }
            };
            if let Some(next) = next {
                return Ok(next);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every record of `input`, read three ways that must agree: through a
    /// tiny buffer (lines span many reads and are gathered), through a
    /// large one (lines lie whole in it), and with `buffered` asked before
    /// each record (its search handed to `next`).
    fn all(input: &[u8], max: usize) -> Vec<Result<String, String>> {
        let read = |capacity, ask: bool| {
            let mut src = LinesSource::with_capacity(capacity, input, max);
            let mut out = Vec::new();
            loop {
                if ask {
                    src.buffered();
                }
                match src.next().unwrap() {
                    Next::Request(r) => out.push(Ok(String::from_utf8(r.body.to_vec()).unwrap())),
                    Next::Malformed(m) => out.push(Err(format!("{}: {}", m.location, m.reason))),
                    Next::End => return out,
                }
            }
        };
        let gathered = read(4, false);
        assert_eq!(read(1 << 16, false), gathered, "whole in the buffer");
        assert_eq!(read(1 << 16, true), gathered, "with buffered asked");
        assert_eq!(read(4, true), gathered, "tiny, with buffered asked");
        gathered
    }

    #[test]
    fn blank_lines_crlf_and_a_last_line_without_newline() {
        let got = all(b"a\r\n\n  \r\nbb\n\nccc", 100);
        assert_eq!(got, [Ok("a".into()), Ok("bb".into()), Ok("ccc".into())]);
    }

    #[test]
    fn oversized_and_invalid_lines_are_reported_with_their_number() {
        let got = all(b"ok\n0123456789ab\nfine\n\xff\xfe\nlast\n", 10);
        assert_eq!(got.len(), 5);
        assert_eq!(got[0], Ok("ok".into()));
        assert!(
            matches!(&got[1], Err(m) if m.starts_with("line 2: longer than --max-line (10 bytes)"))
        );
        assert_eq!(got[2], Ok("fine".into()));
        assert!(matches!(&got[3], Err(m) if m.starts_with("line 4: not valid UTF-8")));
        assert_eq!(got[4], Ok("last".into()));
    }

    #[test]
    fn a_line_of_utf8_beyond_ascii_is_kept_whole() {
        let got = all("grüße\n{\"a\":\"日本\"}\n".as_bytes(), 100);
        assert_eq!(got, [Ok("grüße".into()), Ok("{\"a\":\"日本\"}".into())]);
        // Cut inside a character: not UTF-8, and said where.
        let got = all(b"ok\n\xe6\x97\n", 100);
        assert!(
            matches!(&got[1], Err(m) if m == "line 2: not valid UTF-8 (at byte 0)"),
            "{got:?}"
        );
    }

    #[test]
    fn ascii_is_told_from_anything_else_at_every_length_and_place() {
        for len in 0..40 {
            let line = vec![b'a'; len];
            assert!(is_ascii(&line), "{len}");
            for at in 0..len {
                let mut high = line.clone();
                high[at] = 0x80;
                assert!(!is_ascii(&high), "{len} {at}");
            }
        }
    }

    #[test]
    fn a_line_exactly_at_the_limit_is_kept_and_crlf_does_not_count() {
        assert_eq!(all(b"0123456789\r\n", 10), [Ok("0123456789".into())]);
        assert!(all(b"01234567890\n", 10)[0].is_err());
    }

    #[test]
    fn buffered_says_whether_the_next_line_is_in_memory() {
        let mut src = LinesSource::new(&b"a\nb\nc"[..], 10);
        assert!(matches!(src.next().unwrap(), Next::Request(_)));
        assert!(src.buffered(), "b\n is buffered");
        assert!(matches!(src.next().unwrap(), Next::Request(_)));
        assert!(
            !src.buffered(),
            "c has no newline yet: the next read may wait"
        );
        // Blank lines are skipped, so they are no record in memory.
        let mut src = LinesSource::new(&b"a\n\n\r\n"[..], 10);
        assert!(matches!(src.next().unwrap(), Next::Request(_)));
        assert!(!src.buffered(), "only blank lines follow");
    }

    #[test]
    fn empty_input_ends_at_once() {
        assert!(all(b"", 10).is_empty());
        assert!(all(b"\n\n\r\n", 10).is_empty());
    }
}
