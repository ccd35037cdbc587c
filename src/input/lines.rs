//! The default input format: one request per line, the line being the
//! body (or, for `+get` endpoints, the path suffix). Blank lines are
//! skipped; CRLF is accepted; a line over the limit is skipped whole and
//! reported with its number, never truncated; a line that is not UTF-8 is
//! skipped and reported.

use std::io::{self, BufRead, BufReader, Read};

use super::{Malformed, Next, Request, Source};
use crate::slab::Slab;

/// Reads one request per line.
pub struct LinesSource<R> {
    reader: BufReader<R>,
    max_line: usize,
    line_no: u64,
    buf: Vec<u8>,
    /// Where the bodies are copied: one allocation per chunk of lines.
    slab: Slab,
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
        }
    }

    /// Read one physical line into `buf`, keeping at most `max_line + 1`
    /// bytes of it. Returns (saw any byte, too long).
    fn read_line(&mut self) -> io::Result<(bool, bool)> {
        self.buf.clear();
        let mut any = false;
        let mut too_long = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
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

impl<R: Read + Send> Source for LinesSource<R> {
    fn location(&self) -> Option<String> {
        Some(format!("line {}", self.line_no))
    }

    fn buffered(&self) -> bool {
        // A whole non-blank line is in the buffer (blank ones are skipped):
        // reading the next record will not wait.
        super::whole_lines(self.reader.buffer()).any(|l| !l.trim_ascii().is_empty())
    }

    fn next(&mut self) -> io::Result<Next> {
        loop {
            let (any, too_long) = self.read_line()?;
            if !any {
                return Ok(Next::End);
            }
            self.line_no += 1;
            let location = || format!("line {}", self.line_no);
            if too_long {
                return Ok(Next::Malformed(Malformed {
                    location: location(),
                    reason: format!("longer than --max-line ({} bytes)", self.max_line),
                }));
            }
            if self.buf.last() == Some(&b'\r') {
                self.buf.pop();
            }
            if self.buf.len() > self.max_line {
                return Ok(Next::Malformed(Malformed {
                    location: location(),
                    reason: format!("longer than --max-line ({} bytes)", self.max_line),
                }));
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if let Err(e) = std::str::from_utf8(&self.buf) {
                return Ok(Next::Malformed(Malformed {
                    location: location(),
                    reason: format!("not valid UTF-8 (at byte {})", e.valid_up_to()),
                }));
            }
            return Ok(Next::Request(Request::line(0, self.slab.copy(&self.buf))));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], max: usize) -> Vec<Result<String, String>> {
        // A tiny buffer so that lines span many reads.
        let mut src = LinesSource::with_capacity(4, input, max);
        let mut out = Vec::new();
        loop {
            match src.next().unwrap() {
                Next::Request(r) => out.push(Ok(String::from_utf8(r.body.to_vec()).unwrap())),
                Next::Malformed(m) => out.push(Err(format!("{}: {}", m.location, m.reason))),
                Next::End => return out,
            }
        }
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
