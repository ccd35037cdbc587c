//! HTTP/1.1 request extraction from one reassembled client→server byte
//! stream: request heads (httparse), Content-Length and chunked bodies
//! (de-chunked, trailers ignored), pipelined requests, and the header
//! filtering the engine expects (framing and hop-by-hop headers dropped).

use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderName, HeaderValue, Method};

use crate::input::Request;

/// Most headers a request head may have.
const MAX_HEADERS: usize = 128;

/// Incremental parser of the requests in one client→server stream. Append
/// reassembled bytes to [`RequestParser::buffer`], then call
/// [`RequestParser::parse`].
#[derive(Debug, Default)]
pub(super) struct RequestParser {
    buf: BytesMut,
    state: State,
    /// Request heads parsed so far.
    heads: u64,
}

#[derive(Debug, Default)]
enum State {
    /// Waiting for a request head.
    #[default]
    Head,
    /// Head parsed; waiting for `len` body bytes.
    Body { request: Request, len: usize },
    /// Head parsed; de-chunking the body.
    Chunked {
        request: Request,
        body: Vec<u8>,
        chunk: Chunk,
    },
}

/// Position inside a chunked body.
#[derive(Debug)]
enum Chunk {
    /// Expecting a chunk-size line.
    Size,
    /// Inside chunk data, with this many bytes left.
    Data(u64),
    /// Expecting the CRLF that ends chunk data.
    DataEnd,
    /// After the last chunk: skipping trailer lines up to the empty line.
    Trailer,
}

/// How the body of a request is delimited.
enum Framing {
    None,
    Length(usize),
    Chunked,
}

impl RequestParser {
    /// The buffer reassembled bytes are appended to.
    pub fn buffer(&mut self) -> &mut BytesMut {
        &mut self.buf
    }

    /// Bytes held for requests not yet complete.
    pub fn buffered(&self) -> usize {
        let body = match &self.state {
            State::Chunked { body, .. } => body.len(),
            State::Head | State::Body { .. } => 0,
        };
        self.buf.len() + body
    }

    /// Whether a request head has been recognised in this stream.
    pub fn recognized(&self) -> bool {
        self.heads > 0
    }

    /// Whether no request is partly received.
    pub fn is_idle(&self) -> bool {
        matches!(self.state, State::Head) && self.buf.is_empty()
    }

    /// Moves every complete request out of the buffer into `out`, in stream
    /// order. An error says why the stream is not (or no longer) HTTP/1.x;
    /// the stream cannot be parsed further after it.
    pub fn parse(&mut self, out: &mut Vec<Request>) -> Result<(), String> {
        loop {
            match std::mem::take(&mut self.state) {
                State::Head => {
                    let Some((request, framing, len)) = parse_head(&self.buf)? else {
                        return Ok(());
                    };
                    self.buf.advance(len);
                    self.heads += 1;
                    match framing {
                        Framing::None => out.push(request),
                        Framing::Length(len) => self.state = State::Body { request, len },
                        Framing::Chunked => {
                            self.state = State::Chunked {
                                request,
                                body: Vec::new(),
                                chunk: Chunk::Size,
                            }
                        }
                    }
                }
                State::Body { mut request, len } => {
                    if self.buf.len() < len {
                        self.state = State::Body { request, len };
                        return Ok(());
                    }
                    // A copy, so the request does not pin the stream buffer.
                    request.body = Bytes::copy_from_slice(&self.buf[..len]);
                    self.buf.advance(len);
                    out.push(request);
                }
                State::Chunked {
                    mut request,
                    mut body,
                    mut chunk,
                } => {
                    if !dechunk(&mut self.buf, &mut body, &mut chunk)? {
                        self.state = State::Chunked {
                            request,
                            body,
                            chunk,
                        };
                        return Ok(());
                    }
                    request.body = Bytes::from(body);
                    out.push(request);
                }
            }
        }
    }
}

/// Parses a request head at the start of `buf`: the request without its
/// body, how the body is framed, and the head's length. `None` when the
/// head is not complete yet.
fn parse_head(buf: &[u8]) -> Result<Option<(Request, Framing, usize)>, String> {
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut head = httparse::Request::new(&mut headers);
    let len = match head.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let method = head.method.unwrap_or_default();
    let method =
        Method::from_bytes(method.as_bytes()).map_err(|_| format!("invalid method {method:?}"))?;
    let mut kept = Vec::with_capacity(head.headers.len());
    let mut length: Option<u64> = None;
    let mut codings = Vec::new();
    for header in head.headers.iter() {
        let name = header.name;
        if name.eq_ignore_ascii_case("content-length") {
            for value in header.value.split(|&b| b == b',') {
                let value = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.trim().parse::<u64>().ok())
                    .filter(|v| length.is_none_or(|l| l == *v))
                    .ok_or("invalid Content-Length")?;
                length = Some(value);
            }
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            let value = String::from_utf8_lossy(header.value);
            codings.extend(
                value
                    .split(',')
                    .map(|c| c.trim().to_ascii_lowercase())
                    .filter(|c| !c.is_empty()),
            );
        }
        if crate::input::is_engine_header(name.as_bytes()) {
            continue;
        }
        let value = HeaderValue::from_bytes(header.value)
            .map_err(|_| format!("invalid value of header {name}"))?;
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("invalid header name {name:?}"))?;
        kept.push((name, value));
    }
    let framing = if !codings.is_empty() {
        if codings != ["chunked"] {
            return Err(format!(
                "unsupported Transfer-Encoding {}",
                codings.join(", ")
            ));
        }
        Framing::Chunked
    } else {
        match length.map(usize::try_from) {
            None | Some(Ok(0)) => Framing::None,
            Some(Ok(len)) => Framing::Length(len),
            Some(Err(_)) => return Err("invalid Content-Length".into()),
        }
    };
    let request = Request {
        seq: 0,
        method: Some(method),
        target: head.path.map(str::to_owned),
        headers: kept,
        body: Bytes::new(),
    };
    Ok(Some((request, framing, len)))
}

/// Decodes chunked body bytes from `buf` into `body`. True once the last
/// chunk and the trailer section are consumed.
fn dechunk(buf: &mut BytesMut, body: &mut Vec<u8>, chunk: &mut Chunk) -> Result<bool, String> {
    loop {
        match *chunk {
            Chunk::Size => match httparse::parse_chunk_size(buf) {
                Ok(httparse::Status::Complete((len, size))) => {
                    buf.advance(len);
                    *chunk = if size == 0 {
                        Chunk::Trailer
                    } else {
                        Chunk::Data(size)
                    };
                }
                Ok(httparse::Status::Partial) => return Ok(false),
                Err(_) => return Err("invalid chunk size".into()),
            },
            Chunk::Data(left) => {
                let take = usize::try_from(left).map_or(buf.len(), |left| left.min(buf.len()));
                if take == 0 {
                    return Ok(false);
                }
                body.extend_from_slice(&buf[..take]);
                buf.advance(take);
                let left = left - take as u64;
                *chunk = if left == 0 {
                    Chunk::DataEnd
                } else {
                    Chunk::Data(left)
                };
            }
            Chunk::DataEnd => match buf.get(..2) {
                None => return Ok(false),
                Some(b"\r\n") => {
                    buf.advance(2);
                    *chunk = Chunk::Size;
                }
                Some(_) => return Err("chunk data not followed by CRLF".into()),
            },
            Chunk::Trailer => match buf.windows(2).position(|w| w == b"\r\n") {
                None => return Ok(false),
                Some(0) => {
                    buf.advance(2);
                    return Ok(true);
                }
                Some(line) => buf.advance(line + 2),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `input` in pieces of `step` bytes; returns requests and error.
    fn feed(input: &[u8], step: usize) -> (Vec<Request>, Result<(), String>) {
        let mut parser = RequestParser::default();
        let mut out = Vec::new();
        for piece in input.chunks(step) {
            parser.buffer().extend_from_slice(piece);
            if let Err(e) = parser.parse(&mut out) {
                return (out, Err(e));
            }
        }
        (out, Ok(()))
    }

    #[test]
    fn pipelined_lengths_chunks_and_trailers_in_any_split() {
        let input = b"POST /a?b=c HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nX-A: 1\r\n\r\nabc\
GET /b HTTP/1.1\r\nConnection: keep-alive\r\n\r\n\
PUT /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nX-Trailer: t\r\n\r\n";
        for step in [1, 2, 5, 7, input.len()] {
            let (requests, result) = feed(input, step);
            assert_eq!(result, Ok(()));
            let summary: Vec<_> = requests
                .iter()
                .map(|r| {
                    (
                        r.method.clone().unwrap(),
                        r.target.clone().unwrap(),
                        r.body.clone(),
                    )
                })
                .collect();
            assert_eq!(
                summary,
                [
                    (Method::POST, "/a?b=c".into(), Bytes::from_static(b"abc")),
                    (Method::GET, "/b".into(), Bytes::new()),
                    (
                        Method::PUT,
                        "/c".into(),
                        Bytes::from_static(b"abc0123456789abcdef")
                    ),
                ]
            );
            assert_eq!(
                requests[0].headers.len(),
                1,
                "Host and Content-Length dropped"
            );
            assert_eq!(requests[0].headers[0].0, "x-a");
            assert!(requests[1].headers.is_empty() && requests[2].headers.is_empty());
        }
    }

    #[test]
    fn rejects_what_cannot_be_framed() {
        for (input, reason) in [
            (&b"\x16\x03\x01\x02\x00"[..], "invalid token"),
            (
                b"POST / HTTP/1.1\r\nContent-Length: 1, 2\r\n\r\n",
                "invalid Content-Length",
            ),
            (
                b"POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
                "unsupported Transfer-Encoding gzip",
            ),
            (
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                "invalid chunk size",
            ),
        ] {
            assert_eq!(feed(input, input.len()).1, Err(reason.to_owned()));
        }
    }

    #[test]
    fn partial_request_is_not_idle() {
        let mut parser = RequestParser::default();
        parser
            .buffer()
            .extend_from_slice(b"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nab");
        parser.parse(&mut Vec::new()).unwrap();
        assert!(parser.recognized() && !parser.is_idle());
        assert_eq!(parser.buffered(), 2);
    }
}
