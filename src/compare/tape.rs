//! A JSON body as a flat tape of tokens, each pointing at its bytes: the
//! comparer's parse. Nothing is copied or decoded (a string's escapes, a
//! number's value) until a comparison needs it, and every value keeps its
//! span, so two subtrees whose bytes are equal are known equal without
//! walking them.
//!
//! Written here rather than taken from serde_json (which builds values) or
//! a SIMD crate (which builds a tape without spans, or a DOM): the spans are
//! what lets the comparer skip equal parts. The parser accepts a subset of
//! what serde_json accepts (it refuses a `\u` surrogate escape, a body over
//! 4 GB, nesting past 128), so whatever it refuses the caller hands to
//! serde_json, which then decides.

/// What a token is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Null,
    True,
    False,
    Number,
    /// A string: its span is inside the quotes.
    String,
    Array,
    Object,
}

/// One value (or object key) of the tape.
#[derive(Clone, Copy, Debug)]
pub struct Tok {
    pub kind: Kind,
    /// A string with a backslash escape in it.
    pub escaped: bool,
    /// The value's first byte (a string's after its quote).
    pub start: u32,
    /// One past its last byte (a string's before its quote).
    pub end: u32,
    /// The token after this value and everything in it.
    pub next: u32,
}

/// A parsed body: its tokens in document order, an object's members as
/// key then value.
pub struct Tape<'a> {
    /// The body, checked to be UTF-8.
    pub body: &'a str,
    pub toks: Vec<Tok>,
}

thread_local! {
    /// Token buffers kept for the next bodies this thread compares: a
    /// judge thread compares one pair after another, and a fresh buffer
    /// the size of a body each time cost more in page faults than the
    /// parse.
    static SPARE: std::cell::RefCell<Vec<Vec<Tok>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The most tokens a kept buffer holds (16 MB); larger ones are freed.
const SPARE_TOKENS: usize = 1 << 20;

impl Drop for Tape<'_> {
    fn drop(&mut self) {
        let mut toks = std::mem::take(&mut self.toks);
        if toks.capacity() <= SPARE_TOKENS {
            toks.clear();
            SPARE.with_borrow_mut(|spare| {
                if spare.len() < 2 {
                    spare.push(toks);
                }
            });
        }
    }
}

/// serde_json's nesting limit; deeper bodies go to serde_json for its
/// error.
const MAX_DEPTH: usize = 128;

/// Why the tape parser gave up (serde_json says what exactly).
#[derive(Debug)]
pub struct Refused;

impl<'a> Tape<'a> {
    /// Parse `body`: one JSON value, with whitespace around it.
    ///
    /// # Errors
    /// When the body is not JSON, or is JSON this parser leaves to
    /// serde_json.
    pub fn parse(body: &'a [u8]) -> Result<Tape<'a>, Refused> {
        let Ok(text) = std::str::from_utf8(body) else {
            return Err(Refused);
        };
        if u32::try_from(body.len()).is_err() {
            return Err(Refused);
        }
        let mut p = Parser {
            body,
            at: 0,
            toks: SPARE.with_borrow_mut(Vec::pop).unwrap_or_default(),
            depth: 0,
        };
        p.toks.reserve(body.len() / 16 + 4);
        let parsed = p.value().and_then(|()| {
            p.space();
            (p.at == body.len()).then_some(()).ok_or(Refused)
        });
        let tape = Tape {
            body: text,
            toks: p.toks,
        };
        parsed.map(|()| tape)
    }

    /// The bytes of the value at `i`, a string's with its quotes.
    pub fn raw(&self, i: u32) -> &'a [u8] {
        let t = self.toks[i as usize];
        let body = self.body.as_bytes();
        match t.kind {
            Kind::String => &body[t.start as usize - 1..t.end as usize + 1],
            _ => &body[t.start as usize..t.end as usize],
        }
    }

    /// The text between a string's quotes, escapes as written.
    pub fn text(&self, i: u32) -> &'a str {
        let t = self.toks[i as usize];
        // Quotes and numbers are ASCII: their ends are characters' ends.
        self.body
            .get(t.start as usize..t.end as usize)
            .unwrap_or_default()
    }

    /// A string's value, decoded when it has escapes.
    pub fn string(&self, i: u32) -> std::borrow::Cow<'a, str> {
        match self.toks[i as usize].escaped {
            false => self.text(i).into(),
            // The escapes were checked while parsing.
            true => serde_json::from_slice::<String>(self.raw(i))
                .unwrap_or_default()
                .into(),
        }
    }

    pub fn kind(&self, i: u32) -> Kind {
        self.toks[i as usize].kind
    }

    pub fn next(&self, i: u32) -> u32 {
        self.toks[i as usize].next
    }

    /// The items of the array at `i`.
    pub fn items(&self, i: u32) -> Items<'_> {
        Items {
            tape: self,
            at: i + 1,
            end: self.next(i),
        }
    }
}

/// The values of an array, or the keys of an object's members (each
/// member's value follows its key).
pub struct Items<'t> {
    tape: &'t Tape<'t>,
    at: u32,
    end: u32,
}

impl Iterator for Items<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        (self.at < self.end).then(|| {
            let i = self.at;
            self.at = self.tape.next(i);
            i
        })
    }
}

impl Tape<'_> {
    /// The members of the object at `i`: (key, value) token pairs.
    pub fn members(&self, i: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        let mut at = i + 1;
        let end = self.next(i);
        std::iter::from_fn(move || {
            (at < end).then(|| {
                let key = at;
                at = self.next(key + 1);
                (key, key + 1)
            })
        })
    }
}

struct Parser<'a> {
    body: &'a [u8],
    at: usize,
    toks: Vec<Tok>,
    depth: usize,
}

impl Parser<'_> {
    fn space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.body.get(self.at) {
            self.at += 1;
        }
    }

    fn push(&mut self, kind: Kind, start: usize, end: usize, escaped: bool) -> usize {
        let i = self.toks.len();
        self.toks.push(Tok {
            kind,
            escaped,
            start: start as u32,
            end: end as u32,
            next: i as u32 + 1,
        });
        i
    }

    fn value(&mut self) -> Result<(), Refused> {
        self.space();
        let start = self.at;
        match self.body.get(start).ok_or(Refused)? {
            b'{' => self.container(Kind::Object),
            b'[' => self.container(Kind::Array),
            b'"' => self.string(),
            b't' => self.literal(b"true", Kind::True),
            b'f' => self.literal(b"false", Kind::False),
            b'n' => self.literal(b"null", Kind::Null),
            _ => self.number(),
        }
    }

    fn literal(&mut self, word: &[u8], kind: Kind) -> Result<(), Refused> {
        let start = self.at;
        if !self.body[start..].starts_with(word) {
            return Err(Refused);
        }
        self.at += word.len();
        self.push(kind, start, self.at, false);
        Ok(())
    }

    /// An object or an array, its members or items, and its closing
    /// bracket.
    fn container(&mut self, kind: Kind) -> Result<(), Refused> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Refused);
        }
        let start = self.at;
        self.at += 1;
        let i = self.push(kind, start, start, false);
        let close = match kind {
            Kind::Object => b'}',
            _ => b']',
        };
        self.space();
        if self.body.get(self.at) == Some(&close) {
            self.at += 1;
        } else {
            loop {
                if kind == Kind::Object {
                    self.space();
                    if self.body.get(self.at) != Some(&b'"') {
                        return Err(Refused);
                    }
                    self.string()?;
                    self.space();
                    if self.body.get(self.at) != Some(&b':') {
                        return Err(Refused);
                    }
                    self.at += 1;
                }
                self.value()?;
                self.space();
                match self.body.get(self.at) {
                    Some(b',') => self.at += 1,
                    Some(&b) if b == close => {
                        self.at += 1;
                        break;
                    }
                    _ => return Err(Refused),
                }
            }
        }
        self.depth -= 1;
        let next = self.toks.len() as u32;
        let t = &mut self.toks[i];
        t.end = self.at as u32;
        t.next = next;
        Ok(())
    }

    /// A string: to its closing quote, escapes checked, no control
    /// characters.
    fn string(&mut self) -> Result<(), Refused> {
        let start = self.at + 1;
        let mut at = start;
        let mut escaped = false;
        loop {
            let rest = &self.body[at..];
            let stop = memchr::memchr2(b'"', b'\\', rest).ok_or(Refused)?;
            if rest[..stop].iter().fold(false, |bad, &b| bad | (b < 0x20)) {
                return Err(Refused);
            }
            at += stop;
            if self.body[at] == b'"' {
                break;
            }
            escaped = true;
            at += escape_len(&self.body[at..])?;
        }
        self.push(Kind::String, start, at, escaped);
        self.at = at + 1;
        Ok(())
    }

    /// A number as JSON writes it: `-? (0 | [1-9][0-9]*) (. [0-9]+)?
    /// ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Result<(), Refused> {
        let b = self.body;
        let start = self.at;
        let mut at = start;
        let digits = |at: &mut usize| {
            let from = *at;
            while b.get(*at).is_some_and(u8::is_ascii_digit) {
                *at += 1;
            }
            *at > from
        };
        if b.get(at) == Some(&b'-') {
            at += 1;
        }
        match b.get(at) {
            Some(b'0') => at += 1,
            Some(b'1'..=b'9') => {
                digits(&mut at);
            }
            _ => return Err(Refused),
        }
        if b.get(at) == Some(&b'.') {
            at += 1;
            if !digits(&mut at) {
                return Err(Refused);
            }
        }
        if let Some(b'e' | b'E') = b.get(at) {
            at += 1;
            if let Some(b'+' | b'-') = b.get(at) {
                at += 1;
            }
            if !digits(&mut at) {
                return Err(Refused);
            }
        }
        self.push(Kind::Number, start, at, false);
        self.at = at;
        Ok(())
    }
}

/// The length of the escape at the start of `s` (a backslash and what
/// follows); a `\u` surrogate is left to serde_json.
fn escape_len(s: &[u8]) -> Result<usize, Refused> {
    match s.get(1).ok_or(Refused)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Ok(2),
        b'u' => {
            let hex = s.get(2..6).ok_or(Refused)?;
            let text = std::str::from_utf8(hex).map_err(|_| Refused)?;
            let code = u16::from_str_radix(text, 16).map_err(|_| Refused)?;
            match (0xD800..=0xDFFF).contains(&code) || !hex.iter().all(u8::is_ascii_hexdigit) {
                true => Err(Refused),
                false => Ok(6),
            }
        }
        _ => Err(Refused),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_their_spans_and_subtrees_their_ends() {
        let body = br#" {"a": [1, "x\n", true], "b": null} "#;
        let t = Tape::parse(body).unwrap();
        let kinds: Vec<Kind> = t.toks.iter().map(|t| t.kind).collect();
        use Kind::*;
        assert_eq!(
            kinds,
            [Object, String, Array, Number, String, True, String, Null]
        );
        assert_eq!(t.raw(0), br#"{"a": [1, "x\n", true], "b": null}"#);
        assert_eq!(t.raw(2), br#"[1, "x\n", true]"#);
        assert_eq!(t.next(2), 6);
        assert_eq!(t.string(4), "x\n");
        assert_eq!(t.text(4), "x\\n");
        let members: Vec<(u32, u32)> = t.members(0).collect();
        assert_eq!(members, [(1, 2), (6, 7)]);
        assert_eq!(t.items(2).collect::<Vec<_>>(), [3, 4, 5]);
    }

    #[test]
    fn what_is_not_json_is_refused() {
        for bad in [
            "",
            " ",
            "{",
            "[1,]",
            "{\"a\" 1}",
            "01",
            "1.",
            "-",
            "1e",
            "tru",
            "\"a",
            "\"\t\"",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\ud800\"",
            "1 2",
            "{\"a\":1,}",
            "[1 2]",
            "{1:2}",
        ] {
            assert!(Tape::parse(bad.as_bytes()).is_err(), "{bad:?}");
        }
        let deep = "[".repeat(129) + &"]".repeat(129);
        assert!(Tape::parse(deep.as_bytes()).is_err());
        for good in ["0", "-0.5e+3", "\"\\u00e9\\/\"", "[[]]", "{}", " true "] {
            assert!(Tape::parse(good.as_bytes()).is_ok(), "{good:?}");
        }
    }
}
