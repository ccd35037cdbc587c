//! HPACK (RFC 7541) for versus's HTTP/2 client: a decoder for response
//! header blocks that hands over only the fields the caller wants (the rest
//! are skipped without Huffman decoding, unless the dynamic table needs
//! them), and the few encoding primitives request blocks are built from.
//!
//! Requests never use the dynamic table (every field is a literal "without
//! indexing" and no string is Huffman coded), so the encoder has no state
//! and a block can be prepared once per endpoint and copied per request.

use std::collections::VecDeque;

/// A header block that could not be decoded: a connection error
/// (COMPRESSION_ERROR).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Error;

/// The static table (RFC 7541 Appendix A); index 1 is the first entry.
const STATIC: [(&[u8], &[u8]); 61] = [
    (b":authority", b""),
    (b":method", b"GET"),
    (b":method", b"POST"),
    (b":path", b"/"),
    (b":path", b"/index.html"),
    (b":scheme", b"http"),
    (b":scheme", b"https"),
    (b":status", b"200"),
    (b":status", b"204"),
    (b":status", b"206"),
    (b":status", b"304"),
    (b":status", b"400"),
    (b":status", b"404"),
    (b":status", b"500"),
    (b"accept-charset", b""),
    (b"accept-encoding", b"gzip, deflate"),
    (b"accept-language", b""),
    (b"accept-ranges", b""),
    (b"accept", b""),
    (b"access-control-allow-origin", b""),
    (b"age", b""),
    (b"allow", b""),
    (b"authorization", b""),
    (b"cache-control", b""),
    (b"content-disposition", b""),
    (b"content-encoding", b""),
    (b"content-language", b""),
    (b"content-length", b""),
    (b"content-location", b""),
    (b"content-range", b""),
    (b"content-type", b""),
    (b"cookie", b""),
    (b"date", b""),
    (b"etag", b""),
    (b"expect", b""),
    (b"expires", b""),
    (b"from", b""),
    (b"host", b""),
    (b"if-match", b""),
    (b"if-modified-since", b""),
    (b"if-none-match", b""),
    (b"if-range", b""),
    (b"if-unmodified-since", b""),
    (b"last-modified", b""),
    (b"link", b""),
    (b"location", b""),
    (b"max-forwards", b""),
    (b"proxy-authenticate", b""),
    (b"proxy-authorization", b""),
    (b"range", b""),
    (b"referer", b""),
    (b"refresh", b""),
    (b"retry-after", b""),
    (b"server", b""),
    (b"set-cookie", b""),
    (b"strict-transport-security", b""),
    (b"transfer-encoding", b""),
    (b"user-agent", b""),
    (b"vary", b""),
    (b"via", b""),
    (b"www-authenticate", b""),
];

/// Static table indices the request encoder uses.
pub(crate) mod index {
    pub const AUTHORITY: usize = 1;
    pub const METHOD: usize = 2;
    pub const METHOD_GET: usize = 2;
    pub const METHOD_POST: usize = 3;
    pub const PATH: usize = 4;
    pub const PATH_ROOT: usize = 4;
    pub const SCHEME_HTTP: usize = 6;
    pub const SCHEME_HTTPS: usize = 7;
    pub const CONTENT_LENGTH: usize = 28;
}

/// The Huffman code's length in bits for each symbol, 256 being EOS (RFC
/// 7541 Appendix B). The code is canonical, so the lengths define it.
const LENGTHS: [u8; 257] = [
    13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 30, 28,
    28, 28, 28, 28, 28, 28, 28, 28, 6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6, 5, 5,
    5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10, 13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
    7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6, 15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6,
    6, 5, 6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28, 20, 22, 20, 20, 22, 22, 22, 23, 22,
    23, 23, 23, 23, 23, 24, 23, 24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, 22,
    21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, 21, 21, 22, 21, 23, 22, 23, 23, 20,
    22, 22, 22, 23, 22, 22, 23, 26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, 19,
    21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, 20, 24, 20, 21, 22, 21, 21, 23, 22,
    22, 25, 25, 24, 24, 26, 23, 26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, 30,
];

/// The canonical code, per length: the first code of that length, how
/// many codes have it, and where their symbols start in `sorted`.
struct Canonical {
    first: [u32; 31],
    count: [u32; 31],
    offset: [u16; 31],
    /// Symbols by (length, value): the order canonical codes are given in.
    sorted: [u16; 257],
}

const CODE: Canonical = canonical();

const fn canonical() -> Canonical {
    let mut c = Canonical {
        first: [0; 31],
        count: [0; 31],
        offset: [0; 31],
        sorted: [0; 257],
    };
    let mut s = 0;
    while s < 257 {
        c.count[LENGTHS[s] as usize] += 1;
        s += 1;
    }
    let mut l = 1;
    let mut at = 0u16;
    while l <= 30 {
        c.first[l] = (c.first[l - 1] + c.count[l - 1]) << 1;
        c.offset[l] = at;
        at += c.count[l] as u16;
        l += 1;
    }
    let mut next = c.offset;
    let mut s = 0;
    while s < 257 {
        let l = LENGTHS[s] as usize;
        c.sorted[next[l] as usize] = s as u16;
        next[l] += 1;
        s += 1;
    }
    c
}

/// Codes of at most `FAST_BITS` bits (the common characters of header
/// values), looked up by the next `FAST_BITS` bits: symbol and length (0:
/// a longer code).
const FAST_BITS: usize = 9;
const FAST: [(u8, u8); 1 << FAST_BITS] = fast_table();

const fn fast_table() -> [(u8, u8); 1 << FAST_BITS] {
    let mut t = [(0u8, 0u8); 1 << FAST_BITS];
    let mut v = 0;
    while v < 1 << FAST_BITS {
        let mut l = 1;
        while l <= FAST_BITS {
            let code = (v >> (FAST_BITS - l)) as u32;
            let rank = code.wrapping_sub(CODE.first[l]);
            if rank < CODE.count[l] {
                let symbol = CODE.sorted[CODE.offset[l] as usize + rank as usize];
                t[v] = (symbol as u8, l as u8);
                break;
            }
            l += 1;
        }
        v += 1;
    }
    t
}

/// Decode a Huffman-coded string, appending to `out`.
fn huffman(src: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
    let mut acc = 0u64;
    let mut bits = 0usize;
    let mut input = src.iter();
    loop {
        // Keep at least 30 bits (the longest code) while input lasts.
        while bits <= 56 {
            let Some(&b) = input.next() else { break };
            acc = (acc << 8) | u64::from(b);
            bits += 8;
        }
        if bits == 0 {
            return Ok(());
        }
        // The next FAST_BITS bits, padded with ones past the end.
        let peek = if bits >= FAST_BITS {
            (acc >> (bits - FAST_BITS)) as usize
        } else {
            ((acc << (FAST_BITS - bits)) as usize) | ((1 << (FAST_BITS - bits)) - 1)
        } & ((1 << FAST_BITS) - 1);
        let (symbol, len) = FAST[peek];
        if len != 0 && usize::from(len) <= bits {
            out.push(symbol);
            bits -= usize::from(len);
            continue;
        }
        // A longer code: canonical, so a prefix that is no code of its
        // length is past the last one, and one comparison tells.
        let mut found = false;
        for l in FAST_BITS + 1..=bits.min(30) {
            let code = ((acc >> (bits - l)) & ((1 << l) - 1)) as u32;
            let rank = code.wrapping_sub(CODE.first[l]);
            if rank < CODE.count[l] {
                let symbol = CODE.sorted[CODE.offset[l] as usize + rank as usize];
                if symbol == 256 {
                    return Err(Error);
                }
                out.push(symbol as u8);
                bits -= l;
                found = true;
                break;
            }
        }
        if !found {
            // The end: padding, fewer than 8 bits, the ones of EOS.
            if bits >= 8 {
                return Err(Error);
            }
            let mask = (1u64 << bits) - 1;
            return if acc & mask == mask {
                Ok(())
            } else {
                Err(Error)
            };
        }
    }
}

/// Read an integer with an `n`-bit prefix (RFC 7541 5.1).
fn read_int(input: &mut &[u8], n: u8) -> Result<usize, Error> {
    let (&first, rest) = input.split_first().ok_or(Error)?;
    *input = rest;
    let max = (1usize << n) - 1;
    let mut v = usize::from(first) & max;
    if v < max {
        return Ok(v);
    }
    let mut shift = 0;
    loop {
        let (&b, rest) = input.split_first().ok_or(Error)?;
        *input = rest;
        v += usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
        if shift > 28 {
            return Err(Error);
        }
    }
}

/// Read a string literal: the raw bytes, or (Huffman coded) decoded into
/// `scratch`. With `need` false a Huffman string is only skipped.
fn read_str<'a, 'b: 'a>(
    input: &mut &'b [u8],
    scratch: &'a mut Vec<u8>,
    memo: &mut Memo,
    need: bool,
) -> Result<&'a [u8], Error> {
    let huff = input.first().ok_or(Error)? & 0x80 != 0;
    let len = read_int(input, 7)?;
    if len > input.len() {
        return Err(Error);
    }
    let (raw, rest) = input.split_at(len);
    *input = rest;
    if !huff {
        return Ok(raw);
    }
    scratch.clear();
    if need {
        memo.huffman(raw, scratch)?;
    }
    Ok(scratch)
}

/// The last few Huffman strings decoded, by their coded bytes. A server
/// that inserts every response's fields into the table (nginx) sends the
/// same few coded values over and over (server, content type, the date
/// of this second): comparing their bytes costs less than decoding them.
#[derive(Default)]
struct Memo {
    /// Coded, decoded.
    seen: [(Vec<u8>, Vec<u8>); 8],
    next: usize,
}

impl Memo {
    /// Strings longer than this are decoded every time.
    const LONGEST: usize = 64;

    fn huffman(&mut self, raw: &[u8], out: &mut Vec<u8>) -> Result<(), Error> {
        if raw.len() > Self::LONGEST {
            return huffman(raw, out);
        }
        if let Some((_, decoded)) = self.seen.iter().find(|(coded, _)| coded == raw) {
            out.extend_from_slice(decoded);
            return Ok(());
        }
        huffman(raw, out)?;
        let slot = self.next;
        self.next = (slot + 1) % self.seen.len();
        let (coded, decoded) = &mut self.seen[slot];
        coded.clear();
        coded.extend_from_slice(raw);
        decoded.clear();
        decoded.extend_from_slice(out);
        Ok(())
    }
}

/// A response header block decoder: one per connection, holding the
/// dynamic table the server's encoder fills.
pub(crate) struct Decoder {
    table: Table,
    /// The most the server may set the table's size to: our
    /// SETTINGS_HEADER_TABLE_SIZE.
    limit: usize,
    name: Vec<u8>,
    value: Vec<u8>,
    memo: Memo,
    repeat: Repeat,
}

/// The last header block decoded, if it can be replayed: the same bytes
/// again are then not parsed, their fields handed over and their entries
/// inserted from here. A server sends the same block for every answer
/// (nginx: status, server, date, type, length) until the date changes.
///
/// Exactly equivalent to decoding: only a block that refers to no entry of
/// the dynamic table and changes no table size is kept, so its fields are a
/// function of its bytes alone (not of the table), and what it does to the
/// table is the same insertions, made again in the same order.
#[derive(Default)]
struct Repeat {
    /// The block's bytes; empty: nothing to replay.
    block: Vec<u8>,
    /// Name and value bytes of its fields, one after the other.
    bytes: Vec<u8>,
    /// Each field in order: its name's length, its value's (`None`: a
    /// Huffman value skipped undecoded, the field unwanted) and whether it
    /// entered the table.
    fields: Vec<(usize, Option<usize>, bool)>,
    /// Some value was skipped: a replay for a caller who wants that field
    /// decodes the block instead.
    partial: bool,
    /// The table is a fixed point of the block's insertions: making them
    /// again left it as it was (the same entries, newest first, and size),
    /// so a replay makes none. Once the table is full of the block's
    /// entries, as with nginx's answers, it stays so.
    stable: bool,
    /// The table before and after a replay's insertions, until stable
    /// (kept for their memory).
    before: Vec<u8>,
    after: Vec<u8>,
}

impl Repeat {
    fn clear(&mut self) {
        self.block.clear();
        self.bytes.clear();
        self.fields.clear();
        self.partial = false;
        self.stable = false;
    }

    /// Note a field of the block being decoded.
    fn note(&mut self, name: &[u8], value: Option<&[u8]>, indexed: bool) {
        self.bytes.extend_from_slice(name);
        if let Some(v) = value {
            self.bytes.extend_from_slice(v);
        }
        self.partial |= value.is_none();
        self.fields
            .push((name.len(), value.map(<[u8]>::len), indexed));
    }

    /// Hand over the fields `want` accepts and make the insertions into
    /// `table` (none once it is stable); `false` (and nothing done) when a
    /// wanted value was skipped.
    fn replay(
        &mut self,
        table: &mut Table,
        want: impl Fn(&[u8]) -> bool,
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> bool {
        if self.partial {
            let mut at = 0;
            for &(n, v, _) in &self.fields {
                if v.is_none() && want(&self.bytes[at..at + n]) {
                    return false;
                }
                at += n + v.unwrap_or(0);
            }
        }
        if !self.stable {
            table.snapshot(&mut self.before);
        }
        let mut at = 0;
        for &(n, v, indexed) in &self.fields {
            let name = &self.bytes[at..at + n];
            at += n;
            let Some(v) = v else { continue };
            let value = &self.bytes[at..at + v];
            at += v;
            if want(name) {
                field(name, value);
            }
            if indexed && !self.stable {
                table.insert(name, value);
            }
        }
        if !self.stable {
            table.snapshot(&mut self.after);
            self.stable = self.after == self.before;
        }
        true
    }
}

/// The dynamic table. Servers such as nginx insert every response's
/// fields (and never refer to them), so entries come and go at the rate of
/// responses: their bytes live in one buffer, appended at the end and
/// dropped from the front, compacted when the buffer is full, so a table
/// costs no allocation per entry.
struct Table {
    /// Name and value bytes of the entries, oldest first from `head`.
    bytes: Vec<u8>,
    head: usize,
    /// Newest first (index 62 is `entries[0]`): offset into `bytes`, name
    /// length, value length.
    entries: VecDeque<(usize, usize, usize)>,
    /// The size as RFC 7541 counts it (32 bytes an entry more).
    size: usize,
    max: usize,
}

impl Decoder {
    /// A decoder for a connection whose SETTINGS_HEADER_TABLE_SIZE is `limit`.
    pub(crate) fn new(limit: usize) -> Decoder {
        Decoder {
            table: Table {
                bytes: Vec::new(),
                head: 0,
                entries: VecDeque::new(),
                size: 0,
                max: limit,
            },
            limit,
            name: Vec::new(),
            value: Vec::new(),
            memo: Memo::default(),
            repeat: Repeat::default(),
        }
    }

    /// Decode one whole header block, calling `field` with each field
    /// whose name `want` accepts, in order.
    pub(crate) fn decode(
        &mut self,
        block: &[u8],
        want: impl Fn(&[u8]) -> bool,
        mut field: impl FnMut(&[u8], &[u8]),
    ) -> Result<(), Error> {
        if !self.repeat.block.is_empty()
            && self.repeat.block == block
            && self.repeat.replay(&mut self.table, &want, &mut field)
        {
            return Ok(());
        }
        self.repeat.clear();
        let mut replayable = true;
        let r = self.parse(block, want, field, &mut replayable);
        if r.is_ok() && replayable {
            self.repeat.block.extend_from_slice(block);
        }
        r
    }

    /// [`Decoder::decode`] from the bytes, noting the fields in
    /// `self.repeat`; `replayable` turns false when the block refers to the
    /// dynamic table or changes its size.
    fn parse(
        &mut self,
        mut block: &[u8],
        want: impl Fn(&[u8]) -> bool,
        mut field: impl FnMut(&[u8], &[u8]),
        replayable: &mut bool,
    ) -> Result<(), Error> {
        while let Some(&b) = block.first() {
            if b & 0x80 != 0 {
                let i = read_int(&mut block, 7)?;
                let (name, value) = self.table.get(i)?;
                if want(name) {
                    field(name, value);
                }
                if i > STATIC.len() {
                    *replayable = false;
                } else if *replayable {
                    self.repeat.note(name, Some(value), false);
                }
                continue;
            }
            if b & 0xe0 == 0x20 {
                let max = read_int(&mut block, 5)?;
                if max > self.limit {
                    return Err(Error);
                }
                self.table.max = max;
                self.table.evict(0);
                *replayable = false;
                continue;
            }
            // A literal: with incremental indexing (01), or without / never
            // indexed (0000 / 0001).
            let indexing = b & 0xc0 == 0x40;
            let i = read_int(&mut block, if indexing { 6 } else { 4 })?;
            let name: &[u8] = match i {
                0 => read_str(&mut block, &mut self.name, &mut self.memo, true)?,
                1..=61 => STATIC[i - 1].0,
                _ => {
                    *replayable = false;
                    // Copied: inserting may evict the entry it names.
                    self.name.clear();
                    self.name.extend_from_slice(self.table.get(i)?.0);
                    &self.name
                }
            };
            let wanted = want(name);
            let need = wanted || indexing;
            let skipped = !need && block.first().is_some_and(|&b| b & 0x80 != 0);
            let value = read_str(&mut block, &mut self.value, &mut self.memo, need)?;
            if wanted {
                field(name, value);
            }
            if *replayable {
                self.repeat
                    .note(name, (!skipped).then_some(value), indexing);
            }
            if indexing {
                self.table.insert(name, value);
            }
        }
        Ok(())
    }
}

impl Table {
    /// Entry `i` of the static table followed by this one.
    fn get(&self, i: usize) -> Result<(&[u8], &[u8]), Error> {
        match i {
            0 => Err(Error),
            1..=61 => Ok(STATIC[i - 1]),
            _ => {
                let &(at, n, v) = self.entries.get(i - 62).ok_or(Error)?;
                Ok((&self.bytes[at..at + n], &self.bytes[at + n..at + n + v]))
            }
        }
    }

    /// What the table holds, as decoding sees it, into `out`: its size and
    /// each entry's name and value, newest first.
    fn snapshot(&self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.size.to_le_bytes());
        for &(at, n, v) in &self.entries {
            out.extend_from_slice(&n.to_le_bytes());
            out.extend_from_slice(&v.to_le_bytes());
            out.extend_from_slice(&self.bytes[at..at + n + v]);
        }
    }

    fn insert(&mut self, name: &[u8], value: &[u8]) {
        let size = 32 + name.len() + value.len();
        self.evict(size);
        if size > self.max {
            return;
        }
        let len = name.len() + value.len();
        if self.bytes.len() + len > self.bytes.capacity() && self.head > 0 {
            self.bytes.drain(..self.head);
            for e in &mut self.entries {
                e.0 -= self.head;
            }
            self.head = 0;
        }
        let at = self.bytes.len();
        self.bytes.extend_from_slice(name);
        self.bytes.extend_from_slice(value);
        self.entries.push_front((at, name.len(), value.len()));
        self.size += size;
    }

    /// Drop the oldest entries until `room` more bytes fit (all of them
    /// when it cannot).
    fn evict(&mut self, room: usize) {
        while self.size + room > self.max {
            let Some((at, n, v)) = self.entries.pop_back() else {
                break;
            };
            self.size -= 32 + n + v;
            self.head = at + n + v;
        }
        if self.entries.is_empty() {
            self.bytes.clear();
            self.head = 0;
        }
    }
}

/// Append an integer with an `n`-bit prefix; `flags` holds the bits above
/// the prefix in the first byte.
pub(crate) fn put_int(out: &mut Vec<u8>, flags: u8, n: u8, v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(flags | v as u8);
        return;
    }
    out.push(flags | max as u8);
    let mut rest = v - max;
    while rest >= 0x80 {
        out.push(0x80 | (rest & 0x7f) as u8);
        rest >>= 7;
    }
    out.push(rest as u8);
}

/// Append a string literal, not Huffman coded.
fn put_str(out: &mut Vec<u8>, s: &[u8]) {
    put_int(out, 0, 7, s.len());
    out.extend_from_slice(s);
}

/// Append a field from the static table, name and value.
pub(crate) fn put_indexed(out: &mut Vec<u8>, i: usize) {
    put_int(out, 0x80, 7, i);
}

/// Append a literal field without indexing whose name is static entry `i`.
pub(crate) fn put_named(out: &mut Vec<u8>, i: usize, value: &[u8]) {
    put_int(out, 0, 4, i);
    put_str(out, value);
}

/// Append a literal field without indexing with a literal name.
pub(crate) fn put_field(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.push(0);
    put_str(out, name);
    put_str(out, value);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn all(d: &mut Decoder, block: &[u8]) -> Vec<(String, String)> {
        let mut out = Vec::new();
        d.decode(
            block,
            |_| true,
            |n, v| {
                out.push((
                    String::from_utf8(n.to_vec()).unwrap(),
                    String::from_utf8(v.to_vec()).unwrap(),
                ))
            },
        )
        .unwrap();
        out
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    }

    /// Encode with the canonical code the decoder derives (test only).
    fn huffman_encode(s: &[u8]) -> Vec<u8> {
        let code = |sym: usize| {
            let l = LENGTHS[sym] as usize;
            let rank = (CODE.offset[l] as usize..)
                .position(|k| CODE.sorted[k] as usize == sym)
                .unwrap();
            (CODE.first[l] + rank as u32, l)
        };
        let (mut acc, mut bits, mut out) = (0u64, 0, Vec::new());
        for &b in s {
            let (c, l) = code(b as usize);
            acc = (acc << l) | u64::from(c);
            bits += l;
            while bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
        if bits > 0 {
            out.push(((acc << (8 - bits)) as u8) | ((1u8 << (8 - bits)) - 1));
        }
        out
    }

    #[test]
    fn the_canonical_code_matches_the_rfc_examples() {
        // RFC 7541 C.4.1 and C.6.1.
        let mut out = Vec::new();
        huffman(&hex("f1e3 c2e5 f23a 6ba0 ab90 f4ff"), &mut out).unwrap();
        assert_eq!(out, b"www.example.com");
        out.clear();
        huffman(
            &hex("d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff"),
            &mut out,
        )
        .unwrap();
        assert_eq!(out, b"Mon, 21 Oct 2013 20:13:21 GMT");
        assert_eq!(
            huffman_encode(b"https://www.example.com"),
            hex("9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3")
        );
    }

    #[test]
    fn every_byte_round_trips_and_bad_padding_is_refused() {
        let all: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        huffman(&huffman_encode(&all), &mut out).unwrap();
        assert_eq!(out, all);
        // Padding must be the ones of EOS, and shorter than a byte.
        assert_eq!(huffman_encode(b"a"), [0x1f]);
        assert!(huffman(&[0x18], &mut Vec::new()).is_err());
        assert!(huffman(&[0x1f, 0xff], &mut Vec::new()).is_err());
        assert!(huffman(&[0xff], &mut Vec::new()).is_err());
        // Strings of random bytes, so long codes meet short ones at every
        // bit offset.
        let mut x = 0x2545_f491_4f6c_dd1du64;
        for len in 0..300 {
            let s: Vec<u8> = (0..len)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x >> 56) as u8
                })
                .collect();
            let mut out = Vec::new();
            huffman(&huffman_encode(&s), &mut out).unwrap();
            assert_eq!(out, s);
        }
        // EOS in the string.
        assert!(huffman(&[0xff, 0xff, 0xff, 0xff], &mut Vec::new()).is_err());
    }

    /// RFC 7541 C.6.1: a response with Huffman strings, all indexed.
    const C61: &str = "4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 \
                       66e0 82a6 2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3";

    fn c61_fields() -> Vec<(String, String)> {
        pairs(&[
            (":status", "302"),
            ("cache-control", "private"),
            ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
            ("location", "https://www.example.com"),
        ])
    }

    #[test]
    fn rfc_response_examples_with_huffman_and_eviction() {
        // RFC 7541 C.6: three responses, a 256-byte table, evictions.
        let mut d = Decoder::new(256);
        let first = hex(C61);
        assert_eq!(all(&mut d, &first), c61_fields());
        assert_eq!(d.table.size, 222);
        let second = hex("4883 640e ffc1 c0bf");
        assert_eq!(
            all(&mut d, &second),
            pairs(&[
                (":status", "307"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:21 GMT"),
                ("location", "https://www.example.com"),
            ])
        );
        assert_eq!(d.table.size, 222);
        let third = hex(
            "88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab \
             77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f \
             9587 3160 65c0 03ed 4ee5 b106 3d50 07",
        );
        assert_eq!(
            all(&mut d, &third),
            pairs(&[
                (":status", "200"),
                ("cache-control", "private"),
                ("date", "Mon, 21 Oct 2013 20:13:22 GMT"),
                ("location", "https://www.example.com"),
                ("content-encoding", "gzip"),
                (
                    "set-cookie",
                    "foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1"
                ),
            ])
        );
        assert_eq!(d.table.size, 215);
        assert_eq!(d.table.entries.len(), 3);
        // The first block again: its Huffman strings now come from the
        // memo of decoded strings, the same.
        assert_eq!(all(&mut d, &first), c61_fields());
    }

    #[test]
    fn rfc_request_examples_without_huffman() {
        // RFC 7541 C.3: literal strings, the table shared across blocks.
        let mut d = Decoder::new(4096);
        assert_eq!(
            all(
                &mut d,
                &hex("8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d")
            ),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
            ])
        );
        assert_eq!(
            all(&mut d, &hex("8286 84be 5808 6e6f 2d63 6163 6865")),
            pairs(&[
                (":method", "GET"),
                (":scheme", "http"),
                (":path", "/"),
                (":authority", "www.example.com"),
                ("cache-control", "no-cache"),
            ])
        );
        assert_eq!(
            all(
                &mut d,
                &hex("8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65")
            ),
            pairs(&[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/index.html"),
                (":authority", "www.example.com"),
                ("custom-key", "custom-value"),
            ])
        );
        assert_eq!(d.table.size, 164);
    }

    #[test]
    fn unwanted_fields_are_skipped_but_indexed_ones_still_enter_the_table() {
        let mut d = Decoder::new(4096);
        let mut seen = Vec::new();
        // C.6.1 again, asking only for :status.
        let first = hex(C61);
        d.decode(
            &first,
            |n| n == b":status",
            |n, v| seen.push((n.to_vec(), v.to_vec())),
        )
        .unwrap();
        assert_eq!(seen, vec![(b":status".to_vec(), b"302".to_vec())]);
        assert_eq!(d.table.size, 222);
        assert_eq!(d.table.get(63).unwrap().1, b"Mon, 21 Oct 2013 20:13:21 GMT");
    }

    #[test]
    fn a_table_churned_like_nginx_does_keeps_every_entry_right() {
        // Each "response" inserts four fields, as nginx's do; the buffer
        // behind the table is compacted many times over.
        let mut d = Decoder::new(4096);
        for n in 0..5000 {
            let mut block = Vec::new();
            for k in 0..4 {
                put_int(&mut block, 0x40, 6, 0);
                put_str(&mut block, format!("x-{k}").as_bytes());
                put_str(
                    &mut block,
                    format!("{n}-{k}-{}", "v".repeat(n % 50)).as_bytes(),
                );
            }
            // Then refer to all four, newest first, and to one from the
            // previous response.
            for i in 62..66 {
                put_indexed(&mut block, i);
            }
            let got = all(&mut d, &block);
            for k in 0..4 {
                assert_eq!(got[4 + k], got[3 - k], "{n}");
            }
            if n > 0 {
                let (name, _) = d.table.get(66).unwrap();
                assert_eq!(name, b"x-3");
            }
            assert!(d.table.size <= 4096);
            assert!(
                d.table.bytes.capacity() <= 2 * 4096,
                "{}",
                d.table.bytes.capacity()
            );
        }
    }

    /// A literal with incremental indexing, its value Huffman coded.
    fn put_inc_huffman(out: &mut Vec<u8>, name_index: usize, value: &[u8]) {
        put_int(out, 0x40, 6, name_index);
        let coded = huffman_encode(value);
        put_int(out, 0x80, 7, coded.len());
        out.extend_from_slice(&coded);
    }

    /// An answer's block as nginx sends it: status from the static table,
    /// the rest inserted into the dynamic table (Huffman coded), and one
    /// field without indexing whose Huffman value is skipped when unwanted.
    fn nginx_block(date: &str) -> Vec<u8> {
        let mut block = vec![0x88];
        put_inc_huffman(&mut block, 54, b"nginx");
        put_inc_huffman(&mut block, 33, date.as_bytes());
        put_inc_huffman(&mut block, 31, b"application/json");
        put_inc_huffman(&mut block, 28, b"39");
        put_int(&mut block, 0, 4, 0);
        put_str(&mut block, b"x-skip");
        let coded = huffman_encode(b"skipped");
        put_int(&mut block, 0x80, 7, coded.len());
        block.extend_from_slice(&coded);
        block
    }

    fn entries(d: &Decoder) -> Vec<(Vec<u8>, Vec<u8>)> {
        (62..62 + d.table.entries.len())
            .map(|i| {
                let (n, v) = d.table.get(i).unwrap();
                (n.to_vec(), v.to_vec())
            })
            .collect()
    }

    /// A block sent again is replayed: the same fields, and its
    /// insertions made again, exactly as a decoder that parses every block
    /// (its replay cleared before each) ends up.
    #[test]
    fn a_repeated_block_is_replayed_with_its_insertions() {
        let (mut cached, mut parsed) = (Decoder::new(4096), Decoder::new(4096));
        let want = |n: &[u8]| n == b":status" || n == b"date";
        for n in 0..300 {
            // The date changes now and then, as nginx's every second.
            let block = nginx_block(&format!("Tue, 24 Nov 2026 06:{:02}:00 GMT", n / 70));
            let (mut a, mut b) = (Vec::new(), Vec::new());
            cached
                .decode(&block, want, |n, v| a.push((n.to_vec(), v.to_vec())))
                .unwrap();
            parsed.repeat.clear();
            parsed
                .decode(&block, want, |n, v| b.push((n.to_vec(), v.to_vec())))
                .unwrap();
            assert_eq!(a, b, "{n}");
            assert_eq!(a.len(), 2);
            assert_eq!(entries(&cached), entries(&parsed), "{n}");
            assert_eq!(cached.table.size, parsed.table.size);
        }
        assert!(cached.table.size <= 4096 && cached.table.size > 4096 - 216);
        // The full table is a fixed point of the block: replays insert no
        // more (and the entries above stayed those of a parse).
        assert!(cached.repeat.stable);
        // The replay is what answered: a kept field altered shows.
        let block = nginx_block("Tue, 24 Nov 2026 06:04:00 GMT");
        let at = cached.repeat.bytes.len() - b"39".len() - b"x-skip".len();
        cached.repeat.bytes[at] = b'4';
        let mut got = Vec::new();
        cached
            .decode(
                &block,
                |n| n != b"x-skip",
                |n, v| got.push((n.to_vec(), v.to_vec())),
            )
            .unwrap();
        assert_eq!(got[4], (b"content-length".to_vec(), b"49".to_vec()));
    }

    /// A field skipped undecoded (unwanted, not indexed) is decoded when a
    /// later caller wants it: the block is parsed, not replayed.
    #[test]
    fn a_skipped_value_is_decoded_when_wanted_later() {
        let mut d = Decoder::new(4096);
        let block = nginx_block("Tue, 24 Nov 2026 06:00:00 GMT");
        d.decode(&block, |n| n == b":status", |_, _| ()).unwrap();
        assert!(d.repeat.partial);
        let got = all(&mut d, &block);
        assert_eq!(got[5], ("x-skip".into(), "skipped".into()));
        assert_eq!(d.table.entries.len(), 8);
    }

    /// A block that refers to the dynamic table is never replayed: the same
    /// bytes mean another field once the table has changed.
    #[test]
    fn a_block_that_refers_to_the_table_is_parsed_again_after_it_changes() {
        let mut d = Decoder::new(4096);
        let insert = |name: &[u8], value: &[u8]| {
            let mut b = Vec::new();
            put_int(&mut b, 0x40, 6, 0);
            put_str(&mut b, name);
            put_str(&mut b, value);
            b
        };
        let (one, two) = (insert(b"x-one", b"1"), insert(b"x-two", b"2"));
        let refer = [0xbe]; // index 62, the newest entry
        let named = [0x0f, 0x2f, 0x01, b'v']; // name of entry 62, value "v"
        all(&mut d, &one);
        assert_eq!(all(&mut d, &refer), pairs(&[("x-one", "1")]));
        assert_eq!(all(&mut d, &named), pairs(&[("x-one", "v")]));
        assert!(d.repeat.block.is_empty());
        all(&mut d, &two);
        assert_eq!(all(&mut d, &refer), pairs(&[("x-two", "2")]));
        assert_eq!(all(&mut d, &named), pairs(&[("x-two", "v")]));
        all(&mut d, &one);
        assert_eq!(all(&mut d, &refer), pairs(&[("x-one", "1")]));
        assert_eq!(all(&mut d, &named), pairs(&[("x-one", "v")]));
    }

    /// A block that changes the table's size is parsed each time: the size
    /// update is applied again after another block changed it back.
    #[test]
    fn a_size_update_is_applied_every_time() {
        let mut d = Decoder::new(4096);
        let mut small = Vec::new();
        put_int(&mut small, 0x20, 5, 40);
        put_int(&mut small, 0x40, 6, 0);
        put_str(&mut small, b"x-a");
        put_str(&mut small, b"1");
        let mut big = Vec::new();
        put_int(&mut big, 0x20, 5, 4096);
        put_int(&mut big, 0x40, 6, 0);
        put_str(&mut big, b"x-b");
        put_str(&mut big, b"2");
        all(&mut d, &small);
        assert_eq!((d.table.max, d.table.entries.len()), (40, 1));
        all(&mut d, &big);
        all(&mut d, &big);
        assert_eq!((d.table.max, d.table.entries.len()), (4096, 3));
        all(&mut d, &small);
        assert_eq!((d.table.max, d.table.entries.len()), (40, 1));
        assert_eq!(d.table.get(62).unwrap(), (&b"x-a"[..], &b"1"[..]));
    }

    #[test]
    fn malformed_blocks_are_errors() {
        let mut d = Decoder::new(4096);
        let mut check = |b: &[u8]| d.decode(b, |_| true, |_, _| ()).is_err();
        assert!(check(&[0x80])); // index 0
        assert!(check(&[0xbf])); // index 63, empty dynamic table
        assert!(check(&[0x3f, 0xe2, 0x1f])); // table size 4097, above the limit
        assert!(check(&[0x04, 0x05, b'/'])); // string past the end
        assert!(check(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff])); // integer overflow
        assert!(!check(&[0x20])); // table size 0 is fine
    }

    #[test]
    fn the_encoder_writes_what_the_decoder_reads() {
        let mut block = Vec::new();
        put_indexed(&mut block, index::METHOD_POST);
        put_indexed(&mut block, index::SCHEME_HTTPS);
        put_named(&mut block, index::AUTHORITY, b"example.com:8443");
        put_named(&mut block, index::PATH, &[b'a'; 300]);
        put_field(&mut block, b"x-trace", b"t1");
        put_named(&mut block, index::CONTENT_LENGTH, b"7");
        let mut d = Decoder::new(4096);
        let long = "a".repeat(300);
        assert_eq!(
            all(&mut d, &block),
            pairs(&[
                (":method", "POST"),
                (":scheme", "https"),
                (":authority", "example.com:8443"),
                (":path", &long),
                ("x-trace", "t1"),
                ("content-length", "7"),
            ])
        );
        assert_eq!(d.table.size, 0);
    }
}
