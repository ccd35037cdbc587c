//! The HTTP/1.1 response head's parse (status line and header fields), for
//! `h1.rs`: a scan eight bytes at a time (SWAR, in a `u64`) for the common
//! head, and `httparse` for every other. The scan accepts a strict subset
//! of what `httparse` accepts (`HTTP/1.0` or `HTTP/1.1`, three digits and a
//! space, CRLF line ends, token names, values without control bytes or
//! DEL, at most [`MAX_FIELDS`] fields) and gives the same result on it;
//! anything else, a partial head included, goes to `httparse`, so the
//! answer is `httparse`'s on every input (the tests below check both on
//! many heads, cut at every byte and mutated). It does not own what the
//! fields mean (framing, keep-alive: `h1.rs`).

/// Header fields parsed per response head (`httparse` fails a head with
/// more).
pub(super) const MAX_FIELDS: usize = 64;

/// One header field, as positions in the parsed buffer: the name is
/// `name..colon`, the value (without the whitespace around it) `value..end`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Field {
    name: usize,
    colon: usize,
    value: usize,
    end: usize,
}

impl Field {
    pub fn name<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        &buf[self.name..self.colon]
    }

    pub fn value<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        &buf[self.value..self.end]
    }
}

/// A whole response head: its length in bytes, version and status code
/// (any three digits, as `httparse` reads them); the fields are in the
/// vector handed to [`parse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Head {
    pub len: usize,
    pub http11: bool,
    pub code: u16,
}

/// The head is malformed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Malformed;

/// Parse the response head at the start of `buf`, its fields into `fields`
/// (emptied first): `Ok(None)` while it is incomplete.
pub(super) fn parse(buf: &[u8], fields: &mut Vec<Field>) -> Result<Option<Head>, Malformed> {
    fields.clear();
    if buf.is_empty() {
        // As `httparse` has it, without the call.
        return Ok(None);
    }
    if let Some(head) = scan(buf, fields) {
        return Ok(Some(head));
    }
    fields.clear();
    parse_httparse(buf, fields)
}

/// `httparse`'s parse of the head, in the same terms.
fn parse_httparse(buf: &[u8], fields: &mut Vec<Field>) -> Result<Option<Head>, Malformed> {
    // Uninitialized: the parser writes only the headers it finds.
    let mut slots = [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_FIELDS];
    let mut resp = httparse::Response::new(&mut []);
    let len = match httparse::ParserConfig::default()
        .parse_response_with_uninit_headers(&mut resp, buf, &mut slots)
    {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(_) => return Err(Malformed),
    };
    let at = |s: &[u8]| s.as_ptr() as usize - buf.as_ptr() as usize;
    for h in resp.headers.iter() {
        let name = at(h.name.as_bytes());
        let value = at(h.value);
        fields.push(Field {
            name,
            colon: name + h.name.len(),
            value,
            end: value + h.value.len(),
        });
    }
    Ok(Some(Head {
        len,
        http11: resp.version == Some(1),
        code: resp.code.ok_or(Malformed)?,
    }))
}

/// The common head, or `None` for `httparse` to decide.
fn scan(buf: &[u8], fields: &mut Vec<Field>) -> Option<Head> {
    let line: &[u8; 13] = buf.get(..13)?.try_into().ok()?;
    let http11 = match &line[..9] {
        b"HTTP/1.1 " => true,
        b"HTTP/1.0 " => false,
        _ => return None,
    };
    let mut code = 0;
    for &d in &line[9..12] {
        if !d.is_ascii_digit() {
            return None;
        }
        code = code * 10 + u16::from(d - b'0');
    }
    if line[12] != b' ' {
        return None;
    }
    // The reason phrase takes the bytes a field value takes.
    let mut at = crlf(buf, text_end(buf, 13)?)?;
    loop {
        if buf.get(at)? == &b'\r' {
            return Some(Head {
                len: crlf(buf, at)?,
                http11,
                code,
            });
        }
        let colon = name_end(buf, at)?;
        if colon == at || buf[colon] != b':' || fields.len() == MAX_FIELDS {
            return None;
        }
        // A value of text (no HTAB: `httparse` decides those) between SPs.
        let mut value = colon + 1;
        while buf.get(value)? == &b' ' {
            value += 1;
        }
        let stop = text_end(buf, value)?;
        let next = crlf(buf, stop)?;
        let mut end = stop;
        while end > value && buf[end - 1] == b' ' {
            end -= 1;
        }
        fields.push(Field {
            name: at,
            colon,
            value,
            end,
        });
        at = next;
    }
}

/// The position after the CRLF at `at`.
fn crlf(buf: &[u8], at: usize) -> Option<usize> {
    (buf.get(at..at + 2)? == b"\r\n").then_some(at + 2)
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The position of the first byte from `at` that is not field-value text
/// (a control byte, HTAB included, or DEL); `None` at the buffer's end.
fn text_end(buf: &[u8], mut at: usize) -> Option<usize> {
    while let Some(w) = buf.get(at..at + 8) {
        let x = u64::from_le_bytes(w.try_into().ok()?);
        // The high bit of each byte below 0x20, and of each DEL; exact in
        // the lowest flagged byte (a borrow runs up from a flagged one only).
        let ctl = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        let del = x ^ (ONES * 0x7f);
        let del = del.wrapping_sub(ONES) & !del & HIGH;
        let stops = ctl | del;
        if stops != 0 {
            return Some(at + (stops.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    Some(at + buf.get(at..)?.iter().position(|&b| b < 0x20 || b == 0x7f)?)
}

/// The position of the first byte from `at` that is not a header name's
/// byte; `None` at the buffer's end.
fn name_end(buf: &[u8], mut at: usize) -> Option<usize> {
    loop {
        let b = match buf.get(at..at + 8) {
            Some(w) => {
                let odd = odd_name_bytes(u64::from_le_bytes(w.try_into().ok()?));
                if odd == 0 {
                    at += 8;
                    continue;
                }
                at += (odd.trailing_zeros() / 8) as usize;
                buf[at]
            }
            None => *buf.get(at)?,
        };
        if b == b':' || !TOKEN[usize::from(b)] {
            return Some(at);
        }
        at += 1;
    }
}

/// The high bit of each byte that is not a letter or `-` (the usual bytes
/// of a name), each byte on its own (no sum leaves its byte).
fn odd_name_bytes(x: u64) -> u64 {
    // Folded to lower case; CR folds to `-`, so the dash is looked for
    // unfolded.
    let folded = (x | (ONES * 0x20)) & !HIGH;
    let letter = (folded + ONES * (0x80 - 0x61)) & !(folded + ONES * (0x80 - 0x7b));
    let dash = (x & !HIGH) ^ (ONES * 0x2d);
    let dash = !(dash + ONES * 0x7f);
    (!(letter | dash) | x) & HIGH
}

/// A header name's bytes (RFC 9110 `tchar`, as `httparse` has them).
static TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'!' | b'#'
                    | b'$'
                    | b'%'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        b += 1;
    }
    t
};

#[cfg(test)]
mod tests {
    use super::*;

    /// `httparse`'s result and the head's fields as bytes.
    type Parsed = Result<Option<(Head, Vec<(Vec<u8>, Vec<u8>)>)>, Malformed>;

    fn owned(buf: &[u8], r: Result<Option<Head>, Malformed>, fields: &[Field]) -> Parsed {
        r.map(|h| {
            h.map(|h| {
                let f = fields
                    .iter()
                    .map(|f| (f.name(buf).to_vec(), f.value(buf).to_vec()))
                    .collect();
                (h, f)
            })
        })
    }

    /// The parse of `buf` as `httparse` gives it, and whether the scan
    /// took it.
    fn check(buf: &[u8]) -> bool {
        let mut fields = Vec::new();
        let ours = owned(buf, parse(buf, &mut fields), &fields);
        fields.clear();
        let theirs = owned(buf, parse_httparse(buf, &mut fields), &fields);
        assert_eq!(ours, theirs, "{:?}", String::from_utf8_lossy(buf));
        fields.clear();
        let scanned = scan(buf, &mut fields).is_some();
        assert!(!scanned || matches!(theirs, Ok(Some(_))));
        scanned
    }

    const NGINX: &[u8] = b"HTTP/1.1 200 OK\r\nServer: nginx\r\nDate: Tue, 24 Nov 2026 06:38:19 GMT\r\nContent-Type: application/octet-stream\r\nContent-Length: 39\r\nConnection: keep-alive\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"0x1\"}";

    /// Heads of every kind the scan takes or leaves to `httparse`.
    fn heads() -> Vec<Vec<u8>> {
        let mut heads: Vec<Vec<u8>> = [
            NGINX,
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nbody",
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\na",
            b"HTTP/1.1 204 No Content\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
            b"HTTP/1.1 200 \r\nX: \r\nY:\r\nZ:  a b  \r\n\r\n",
            b"HTTP/1.1 200\r\nA: b\r\n\r\n",
            b"HTTP/1.1 099 Low\r\n\r\n",
            b"HTTP/1.1 OK 200\r\n\r\n",
            b"HTTP/2.0 200 OK\r\n\r\n",
            b"http/1.1 200 OK\r\n\r\n",
            b"\r\nHTTP/1.1 200 OK\r\n\r\n",
            b"HTTP/1.1 200 OK\nA: b\nC: d\n\n",
            b"HTTP/1.1 200 OK\r\nA: b\nC: d\r\n\n",
            b"HTTP/1.1 200 OK\r\nA: b\r\n folded\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nA: b\r\n\tfolded\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nA : b\r\n\r\n",
            b"HTTP/1.1 200 OK\r\n: b\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nA:\tb\tc\t\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nA: b\x7fc\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nA: b\x00c\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nA: caf\xc3\xa9 \xff\r\n\r\n",
            b"HTTP/1.1 200 \xe9t\xe9\r\n\r\n",
            b"HTTP/1.1 200 O\tK\r\n\r\n",
            b"HTTP/1.1 200 O\x01K\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX_Y.z~!#$%&'*+^`|: v\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX/Y: v\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nX\xc3Y: v\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nA: b\r\r\n\r\n",
            b"HTTP/1.1 200 OK\r\nA: b\r\n\r",
            b"HTTP/1.1 200 OK\r\nA: b\r\n\rx",
            b"HTTP/1.1  200 OK\r\n\r\n",
            b"HTTP/1.1 2000 OK\r\n\r\n",
        ]
        .iter()
        .map(|h| h.to_vec())
        .collect();
        // At the field limit, and one over it.
        for n in [MAX_FIELDS, MAX_FIELDS + 1] {
            let mut h = b"HTTP/1.1 200 OK\r\n".to_vec();
            for i in 0..n {
                h.extend_from_slice(format!("Field-{i}: value {i}\r\n").as_bytes());
            }
            h.extend_from_slice(b"\r\n");
            heads.push(h);
        }
        // Long names and values (more than a word at a time).
        let long = "x".repeat(5000);
        heads.push(format!("HTTP/1.1 200 OK\r\n{long}: {long}\r\n\r\n").into_bytes());
        heads
    }

    #[test]
    fn the_scan_takes_the_common_heads_and_leaves_the_rest() {
        let heads = heads();
        let scanned: Vec<bool> = heads.iter().map(|h| check(h)).collect();
        // nginx's answer, chunked, close, HTTP/1.0, 204, 100 then 200,
        // empty values and reason, no reason (not taken), ...
        let expect = [true, true, true, true, true, true, true, false];
        assert_eq!(scanned[..expect.len()], expect);
        // Obs-text in a value and in the reason, every token byte.
        assert!(scanned[22] && scanned[23] && scanned[26]);
        // A full set of fields, but not one more; long names and values.
        assert_eq!(scanned[heads.len() - 3..], [true, false, true]);
    }

    #[test]
    fn every_head_cut_at_every_byte_parses_as_httparse_parses_it() {
        for head in heads() {
            for at in 0..=head.len() {
                check(&head[..at]);
            }
        }
    }

    /// A small deterministic generator (xorshift64*), for mutations.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Bytes a mutation writes: the ones the parsers tell apart, and any.
    const PICKS: &[u8] = b"\r\n \t:\x00\x7f\x80\xff/-.Aa0_";

    #[test]
    fn mutated_heads_parse_as_httparse_parses_them() {
        let heads = heads();
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut scanned = 0;
        for round in 0..40_000 {
            let mut h = heads[round % heads.len()].clone();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(h.len());
                let byte = if rng.below(2) == 0 {
                    PICKS[rng.below(PICKS.len())]
                } else {
                    rng.next() as u8
                };
                match rng.below(3) {
                    0 => h[at] = byte,
                    1 => h.insert(at, byte),
                    _ => {
                        h.remove(at);
                    }
                }
                if h.is_empty() {
                    h.push(byte);
                }
            }
            let cut = h.len() - rng.below(h.len().min(8) + 1);
            scanned += usize::from(check(&h[..cut]));
        }
        // The mutations reach both paths.
        assert!(scanned > 1_000, "{scanned}");
    }
}
