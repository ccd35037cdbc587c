//! The HTTP-level faults (status, abort, rate-limit): the requests flowing
//! up a plain HTTP/1.1 connection are framed (head by `httparse`, body by
//! Content-Length), and for each one the faults decide whether it goes on
//! to the endpoint, is answered by the proxy, or ends the connection.
//! Requests are assumed not pipelined (versus sends the next request on a
//! connection after the last answer); a chunked request body ends the
//! framing and the rest of the connection passes untouched.

use bytes::{Bytes, BytesMut};

use super::conn::Conn;
use super::spec::Action;

/// What happens to one request.
#[derive(Debug, PartialEq, Eq)]
pub enum Decision {
    /// Send it to the endpoint.
    Pass,
    /// Answer it with these bytes.
    Answer(Bytes),
    /// Reset the connection.
    Abort,
}

/// A piece of the up stream, in order.
#[derive(Debug, PartialEq, Eq)]
pub enum UpstreamPiece {
    /// Bytes for the endpoint.
    Forward(Bytes),
    /// An answer for versus (the request is not sent on).
    Answer(Bytes),
    /// End the connection with a reset.
    Abort,
}

enum State {
    /// Reading a request head.
    Head,
    /// Inside a body: bytes left, and whether they are sent on.
    Body { left: u64, forward: bool },
    /// Framing given up (a chunked body): everything passes.
    Raw,
}

/// The framing of one connection's requests.
pub struct Requests {
    buf: BytesMut,
    state: State,
}

/// Longest request head framed; a longer one ends the framing.
const MAX_HEAD: usize = 64 * 1024;

impl Requests {
    /// A new connection's framing.
    pub fn new() -> Requests {
        Requests {
            buf: BytesMut::new(),
            state: State::Head,
        }
    }

    /// Take `data` from the up stream; append what to do with it to `out`,
    /// asking `decide` once per request.
    pub fn feed(
        &mut self,
        data: &[u8],
        decide: &mut dyn FnMut() -> Decision,
        out: &mut Vec<UpstreamPiece>,
    ) {
        self.buf.extend_from_slice(data);
        while !self.buf.is_empty() {
            match self.state {
                State::Raw => {
                    out.push(UpstreamPiece::Forward(self.buf.split().freeze()));
                }
                State::Body { left, forward } => {
                    let n = (self.buf.len() as u64).min(left) as usize;
                    let piece = self.buf.split_to(n).freeze();
                    if forward {
                        out.push(UpstreamPiece::Forward(piece));
                    }
                    self.state = match left - n as u64 {
                        0 => State::Head,
                        left => State::Body { left, forward },
                    };
                }
                State::Head => {
                    let mut headers = [httparse::EMPTY_HEADER; 64];
                    let mut req = httparse::Request::new(&mut headers);
                    let (len, body) = match req.parse(&self.buf) {
                        Ok(httparse::Status::Complete(len)) => (len, body_length(req.headers)),
                        Ok(httparse::Status::Partial) if self.buf.len() < MAX_HEAD => return,
                        _ => {
                            self.state = State::Raw;
                            continue;
                        }
                    };
                    let head = self.buf.split_to(len).freeze();
                    let (left, raw) = match body {
                        Some(n) => (n, false),
                        None => (0, true),
                    };
                    let forward = match decide() {
                        Decision::Pass => {
                            out.push(UpstreamPiece::Forward(head));
                            true
                        }
                        Decision::Answer(answer) => {
                            out.push(UpstreamPiece::Answer(answer));
                            false
                        }
                        Decision::Abort => {
                            out.push(UpstreamPiece::Abort);
                            self.buf.clear();
                            return;
                        }
                    };
                    self.state = if raw {
                        State::Raw
                    } else if left == 0 {
                        State::Head
                    } else {
                        State::Body { left, forward }
                    };
                }
            }
        }
    }
}

/// The body length of a request: its Content-Length, 0 without one,
/// `None` when chunked (not framed).
fn body_length(headers: &[httparse::Header<'_>]) -> Option<u64> {
    let mut length = 0;
    for h in headers {
        if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return None;
        }
        if h.name.eq_ignore_ascii_case("content-length") {
            length = std::str::from_utf8(h.value).ok()?.trim().parse().ok()?;
        }
    }
    Some(length)
}

/// Decide one request against the connection's HTTP faults, in the order
/// given: the first that is on, draws its probability and (for
/// rate-limit) is over its limit, acts.
pub fn decide(conn: &Conn<'_>) -> Decision {
    let shared = conn.shared();
    for (i, f) in shared.faults().iter().enumerate() {
        if !f.action.is_http() || !shared.on(i) || !shared.roll(i) {
            continue;
        }
        let verdict = match &f.action {
            Action::Status { code, body } => Decision::Answer(answer(*code, body, &f.to_string())),
            Action::Abort => Decision::Abort,
            Action::RateLimit { .. } if shared.over_limit(i) => {
                Decision::Answer(answer(429, "rate limit (versus fault)\n", &f.to_string()))
            }
            _ => continue,
        };
        conn.answered(Some(i));
        return verdict;
    }
    conn.answered(None);
    Decision::Pass
}

/// An HTTP/1.1 answer that names the fault that made it
/// (`x-versus-fault`).
fn answer(code: u16, body: &str, fault: &str) -> Bytes {
    let reason = http::StatusCode::from_u16(code)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Fault");
    let retry = if code == 429 {
        "retry-after: 1\r\n"
    } else {
        ""
    };
    let fault: String = fault.chars().filter(|c| !c.is_control()).collect();
    Bytes::from(format!(
        "HTTP/1.1 {code} {reason}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n{retry}x-versus-fault: {fault}\r\n\r\n{body}",
        body.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(r: &mut Requests, data: &[u8], verdicts: &mut Vec<Decision>) -> Vec<UpstreamPiece> {
        let mut out = Vec::new();
        r.feed(data, &mut || verdicts.remove(0), &mut out);
        out
    }

    fn fwd(s: &str) -> UpstreamPiece {
        UpstreamPiece::Forward(Bytes::copy_from_slice(s.as_bytes()))
    }

    #[test]
    fn requests_are_framed_across_reads_and_answered_ones_are_not_sent_on() {
        let mut r = Requests::new();
        let mut v = vec![
            Decision::Pass,
            Decision::Answer(Bytes::from_static(b"A")),
            Decision::Pass,
        ];
        // A head cut in two, then its body with the next request's head.
        assert_eq!(
            run(&mut r, b"POST / HTTP/1.1\r\nContent-Le", &mut v),
            vec![]
        );
        assert_eq!(
            run(&mut r, b"ngth: 3\r\n\r\nab", &mut v),
            vec![
                fwd("POST / HTTP/1.1\r\nContent-Length: 3\r\n\r\n"),
                fwd("ab")
            ]
        );
        assert_eq!(
            run(
                &mut r,
                b"cPOST /x HTTP/1.1\r\nContent-Length: 2\r\n\r\nzz",
                &mut v
            ),
            vec![fwd("c"), UpstreamPiece::Answer(Bytes::from_static(b"A"))]
        );
        assert_eq!(
            run(&mut r, b"GET /y HTTP/1.1\r\n\r\n", &mut v),
            vec![fwd("GET /y HTTP/1.1\r\n\r\n")]
        );
    }

    #[test]
    fn an_abort_stops_the_stream_and_chunked_bodies_pass_unframed() {
        let mut r = Requests::new();
        let mut v = vec![Decision::Abort];
        assert_eq!(
            run(
                &mut r,
                b"GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\n\r\n",
                &mut v
            ),
            vec![UpstreamPiece::Abort]
        );
        let mut r = Requests::new();
        let mut v = vec![Decision::Pass];
        let head = "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n";
        assert_eq!(
            run(&mut r, format!("{head}3\r\nabc\r\n").as_bytes(), &mut v),
            vec![fwd(head), fwd("3\r\nabc\r\n")]
        );
    }

    #[test]
    fn an_injected_answer_is_well_formed_and_names_its_fault() {
        let a = answer(503, "busy", "status 503 body \"busy\"");
        let mut headers = [httparse::EMPTY_HEADER; 8];
        let mut resp = httparse::Response::new(&mut headers);
        let len = match resp.parse(&a).unwrap() {
            httparse::Status::Complete(n) => n,
            httparse::Status::Partial => panic!("partial"),
        };
        assert_eq!(resp.code, Some(503));
        assert_eq!(&a[len..], b"busy");
        assert!(resp.headers.iter().any(|h| h.name == "x-versus-fault"));
    }
}
