//! Locations inside a JSON document: the concrete [`Segment`]s of a compared value, their
//! rendering (`$.result.transactions[3].nonce`, or grouped as `...[*].nonce`), and the
//! JSONPath-like [`PathPattern`]s that rules use to select locations.
//!
//! Pattern syntax: `$` (the root) followed by any of
//! - `.key` or `['key']` / `["key"]` (quoted, for keys with odd characters; `\` escapes),
//! - `[N]` (array index N),
//! - `.*` or `[*]` (any single key or index),
//! - `..key`, `..*`, `..[N]`, `..['key']` (recursive descent: that step at any depth below).

use std::fmt::{self, Write as _};
use std::str::FromStr;

/// One step of the concrete location being compared.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    /// An object member.
    Key(String),
    /// An array element, by position.
    Index(usize),
    /// An array element matched across both sides by the value of one of its fields
    /// (JSON-RPC batch responses by `id`, or an `array_keys` rule). `value` is the
    /// field's compact JSON text. Rendered `[?(@.id==3)]`; patterns select it with
    /// `[*]`, `.*` or `..`, never with `[N]`.
    Keyed {
        /// The field the elements are matched by.
        field: String,
        /// That field's value, as compact JSON.
        value: String,
    },
}

/// A segment as patterns see it (borrowed, so the comparator need not allocate).
pub(crate) enum SegmentRef<'s> {
    Key(&'s str),
    Index(usize),
    Keyed,
}

/// Anything a [`PathPattern`] can be matched against, step by step.
pub(crate) trait AsSegment {
    fn as_segment(&self) -> SegmentRef<'_>;
}

impl AsSegment for Segment {
    fn as_segment(&self) -> SegmentRef<'_> {
        match self {
            Segment::Key(key) => SegmentRef::Key(key),
            Segment::Index(index) => SegmentRef::Index(*index),
            Segment::Keyed { .. } => SegmentRef::Keyed,
        }
    }
}

/// The path as `$.result.transactions[3].nonce`.
pub fn render(path: &[Segment]) -> String {
    render_with(path, false)
}

/// The path with every array position as `[*]` (`$.result.transactions[*].nonce`), to
/// group differences by field.
pub fn render_grouped(path: &[Segment]) -> String {
    render_with(path, true)
}

fn render_with(path: &[Segment], grouped: bool) -> String {
    let mut out = String::from("$");
    for segment in path {
        match segment {
            Segment::Key(key) => {
                if is_plain(key) {
                    out.push('.');
                    out.push_str(key);
                } else {
                    push_quoted(&mut out, key);
                }
            }
            Segment::Index(_) | Segment::Keyed { .. } if grouped => out.push_str("[*]"),
            Segment::Index(index) => {
                let _ = write!(out, "[{index}]");
            }
            Segment::Keyed { field, value } => {
                out.push_str("[?(@");
                if is_plain(field) {
                    out.push('.');
                    out.push_str(field);
                } else {
                    push_quoted(&mut out, field);
                }
                let _ = write!(out, "=={value})]");
            }
        }
    }
    out
}

/// Keys that can be written after a `.` and read back unchanged.
fn is_plain(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '$')
}

fn push_quoted(out: &mut String, key: &str) {
    out.push_str("['");
    for c in key.chars() {
        if c == '\'' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push_str("']");
}

/// A pattern over paths, such as `$.result.timestamp`, `$..blockHash`,
/// `$.result[*].nonce`, `$.items[0]` or `$['odd key']`. See the module docs for the
/// syntax. Displays as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathPattern {
    text: String,
    tokens: Vec<Glob<Selector>>,
}

/// What one pattern step accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Selector {
    Key(String),
    Index(usize),
    Any,
}

impl Selector {
    fn accepts(&self, segment: SegmentRef<'_>) -> bool {
        match (self, segment) {
            (Selector::Any, _) => true,
            (Selector::Key(want), SegmentRef::Key(key)) => want == key,
            (Selector::Index(want), SegmentRef::Index(index)) => *want == index,
            _ => false,
        }
    }
}

impl PathPattern {
    /// Whether the pattern selects exactly this location (rules apply to the whole
    /// subtree below a selected location).
    pub fn matches(&self, path: &[Segment]) -> bool {
        self.matches_path(path)
    }

    /// [`PathPattern::matches`] over any segment representation.
    pub(crate) fn matches_path<S: AsSegment>(&self, path: &[S]) -> bool {
        glob_match(&self.tokens, path, |selector, segment| {
            selector.accepts(segment.as_segment())
        })
    }
}

impl fmt::Display for PathPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// A path pattern that could not be parsed: the pattern and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{path}` : {message}")]
pub struct PathError {
    /// The pattern as given.
    pub path: String,
    /// What is wrong with it.
    pub message: String,
}

impl FromStr for PathPattern {
    type Err = PathError;

    fn from_str(text: &str) -> Result<Self, PathError> {
        let fail = |message: String| PathError {
            path: text.to_string(),
            message,
        };
        let mut rest = text
            .strip_prefix('$')
            .ok_or_else(|| fail("must start with `$`".to_string()))?;
        let mut tokens = Vec::new();
        while let Some(first) = rest.chars().next() {
            let (deep, after) = if let Some(after) = rest.strip_prefix("..") {
                (true, after)
            } else if let Some(after) = rest.strip_prefix('.') {
                (false, after)
            } else if first == '[' {
                (false, rest)
            } else {
                return Err(fail(format!(
                    "unexpected `{first}`; expected `.`, `..` or `[`"
                )));
            };
            let (selector, remaining) = match after.strip_prefix('[') {
                Some(inside) if deep || first == '[' => parse_bracket(inside).map_err(fail)?,
                _ => parse_name(after, deep).map_err(fail)?,
            };
            if deep {
                tokens.push(Glob::Star);
            }
            tokens.push(Glob::One(selector));
            rest = remaining;
        }
        Ok(PathPattern {
            text: text.to_string(),
            tokens,
        })
    }
}

/// A key after `.` or `..`: everything up to the next `.` or `[`.
fn parse_name(text: &str, deep: bool) -> Result<(Selector, &str), String> {
    let end = text.find(['.', '[']).unwrap_or(text.len());
    let (name, rest) = text.split_at(end);
    let dots = if deep { ".." } else { "." };
    if name.is_empty() {
        return Err(format!("expected a key or `*` after `{dots}`"));
    }
    if name.contains([']', '\'', '"']) {
        return Err(format!(
            "unexpected character in key `{name}`; quote it as ['...']"
        ));
    }
    let selector = if name == "*" {
        Selector::Any
    } else {
        Selector::Key(name.to_string())
    };
    Ok((selector, rest))
}

/// The inside of `[...]`, `text` starting just after the `[`.
fn parse_bracket(text: &str) -> Result<(Selector, &str), String> {
    if let Some(quote) = text.chars().next().filter(|&c| c == '\'' || c == '"') {
        let mut key = String::new();
        let mut chars = text.char_indices().skip(1);
        while let Some((at, c)) = chars.next() {
            if c == quote {
                let rest = &text[at + c.len_utf8()..];
                return match rest.strip_prefix(']') {
                    Some(rest) => Ok((Selector::Key(key), rest)),
                    None => Err("expected `]` after the quoted key".to_string()),
                };
            }
            if c == '\\' {
                match chars.next() {
                    Some((_, escaped)) => key.push(escaped),
                    None => break,
                }
            } else {
                key.push(c);
            }
        }
        return Err("unterminated quoted key".to_string());
    }
    let end = text.find(']').ok_or("unclosed bracket")?;
    let (inside, rest) = (text[..end].trim(), &text[end + 1..]);
    let selector = if inside == "*" {
        Selector::Any
    } else if inside.starts_with('?') {
        return Err("filter expressions are not supported".to_string());
    } else if inside.is_empty() {
        return Err("empty brackets".to_string());
    } else if inside.bytes().all(|b| b.is_ascii_digit()) {
        Selector::Index(
            inside
                .parse()
                .map_err(|_| format!("index `{inside}` is too large"))?,
        )
    } else {
        return Err(format!(
            "invalid index `{inside}`; expected a number, `*` or a quoted key"
        ));
    };
    Ok((selector, rest))
}

/// A glob token: `Star` matches any run of subject items (none included), `One` exactly
/// one item that it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Glob<P> {
    Star,
    One(P),
}

/// Glob matching in O(pattern × subject) time (single backtrack point, as every `One`
/// consumes exactly one item).
pub(crate) fn glob_match<P, T>(
    pattern: &[Glob<P>],
    subject: &[T],
    accepts: impl Fn(&P, &T) -> bool,
) -> bool {
    let (mut p, mut s) = (0, 0);
    let mut retry: Option<(usize, usize)> = None;
    while let Some(item) = subject.get(s) {
        match pattern.get(p) {
            Some(Glob::Star) => {
                p += 1;
                retry = Some((p, s));
                continue;
            }
            Some(Glob::One(want)) if accepts(want, item) => {
                p += 1;
                s += 1;
                continue;
            }
            _ => {}
        }
        match retry {
            Some((after_star, from)) => {
                p = after_star;
                s = from + 1;
                retry = Some((after_star, from + 1));
            }
            None => return false,
        }
    }
    pattern
        .iter()
        .skip(p)
        .all(|token| matches!(token, Glob::Star))
}

/// Compiles a string glob where `*` matches any run of bytes.
pub(crate) fn byte_glob(pattern: &str) -> Vec<Glob<u8>> {
    pattern
        .bytes()
        .map(|b| if b == b'*' { Glob::Star } else { Glob::One(b) })
        .collect()
}

/// Whether `subject` matches a glob compiled by [`byte_glob`].
pub(crate) fn byte_glob_match(pattern: &[Glob<u8>], subject: &str) -> bool {
    glob_match(pattern, subject.as_bytes(), |want, b| want == b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(steps: &[&str]) -> Vec<Segment> {
        steps
            .iter()
            .map(|s| match s.parse() {
                Ok(i) => Segment::Index(i),
                Err(_) => Segment::Key(s.to_string()),
            })
            .collect()
    }

    fn pattern(text: &str) -> PathPattern {
        match text.parse() {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn matching_table() {
        let cases: &[(&str, &[&str], bool)] = &[
            ("$", &[], true),
            ("$", &["a"], false),
            ("$.result.timestamp", &["result", "timestamp"], true),
            ("$.result.timestamp", &["result"], false),
            ("$.result.timestamp", &["result", "timestamp", "x"], false),
            ("$..blockHash", &["blockHash"], true),
            ("$..blockHash", &["result", "txs", "3", "blockHash"], true),
            ("$..blockHash", &["result", "blockHash", "x"], false),
            ("$.result[*].nonce", &["result", "0", "nonce"], true),
            ("$.result[*].nonce", &["result", "17", "nonce"], true),
            ("$.result[*].nonce", &["result", "nonce"], false),
            ("$.result.*", &["result", "x"], true),
            ("$.items[0]", &["items", "0"], true),
            ("$.items[0]", &["items", "1"], false),
            ("$['odd key']", &["odd key"], true),
            ("$[\"it's\"].x", &["it's", "x"], true),
            ("$['a\\'b']", &["a'b"], true),
            ("$..[*].id", &["a", "3", "id"], true),
            ("$..a..b", &["x", "a", "y", "z", "b"], true),
            ("$..a..b", &["x", "b", "y", "a"], false),
            ("$..a.b", &["a", "a", "b"], true),
            ("$..*", &["anything", "1"], true),
        ];
        for (text, steps, expected) in cases {
            assert_eq!(
                pattern(text).matches(&path(steps)),
                *expected,
                "{text} against {steps:?}"
            );
        }
    }

    #[test]
    fn wildcards_match_keyed_elements_but_indices_do_not() {
        let keyed = vec![
            Segment::Keyed {
                field: "id".into(),
                value: "3".into(),
            },
            Segment::Key("result".into()),
        ];
        assert!(pattern("$[*].result").matches(&keyed));
        assert!(pattern("$..result").matches(&keyed));
        assert!(!pattern("$[0].result").matches(&keyed));
    }

    #[test]
    fn parse_errors_name_the_path_and_problem() {
        let cases = [
            ("$.a[", "`$.a[` : unclosed bracket"),
            ("a.b", "`a.b` : must start with `$`"),
            ("$.", "`$.` : expected a key or `*` after `.`"),
            ("$..", "`$..` : expected a key or `*` after `..`"),
            (
                "$.a[x]",
                "`$.a[x]` : invalid index `x`; expected a number, `*` or a quoted key",
            ),
            ("$['a", "`$['a` : unterminated quoted key"),
            ("$['a'x", "`$['a'x` : expected `]` after the quoted key"),
            (
                "$[?(@.a)]",
                "`$[?(@.a)]` : filter expressions are not supported",
            ),
            ("$[]", "`$[]` : empty brackets"),
            ("$x", "`$x` : unexpected `x`; expected `.`, `..` or `[`"),
            (
                "$.a]",
                "`$.a]` : unexpected character in key `a]`; quote it as ['...']",
            ),
            (
                "$[99999999999999999999999]",
                "`$[99999999999999999999999]` : index `99999999999999999999999` is too large",
            ),
        ];
        for (text, message) in cases {
            match text.parse::<PathPattern>() {
                Ok(_) => panic!("{text} should not parse"),
                Err(e) => assert_eq!(e.to_string(), message),
            }
        }
    }

    #[test]
    fn display_is_the_source_text() {
        assert_eq!(pattern("$..blockHash").to_string(), "$..blockHash");
    }

    #[test]
    fn render_and_group() {
        let p = vec![
            Segment::Key("result".into()),
            Segment::Key("transactions".into()),
            Segment::Index(3),
            Segment::Key("nonce".into()),
        ];
        assert_eq!(render(&p), "$.result.transactions[3].nonce");
        assert_eq!(render_grouped(&p), "$.result.transactions[*].nonce");
        let odd = vec![
            Segment::Key("odd key".into()),
            Segment::Key("it's\\".into()),
            Segment::Keyed {
                field: "id".into(),
                value: "\"a\"".into(),
            },
        ];
        assert_eq!(render(&odd), r#"$['odd key']['it\'s\\'][?(@.id=="a")]"#);
        assert_eq!(render_grouped(&odd), r"$['odd key']['it\'s\\'][*]");
        // Rendered paths read back as patterns selecting the same location.
        let odd_positional = &odd[..2];
        assert!(pattern(&render(odd_positional)).matches(odd_positional));
        assert!(pattern(&render(&p)).matches(&p));
    }

    #[test]
    fn byte_globs() {
        let g = byte_glob("eth_get*");
        assert!(byte_glob_match(&g, "eth_getBlockByNumber"));
        assert!(byte_glob_match(&g, "eth_get"));
        assert!(!byte_glob_match(&g, "eth_call"));
        assert!(byte_glob_match(
            &byte_glob("/users/*/posts"),
            "/users/42/posts"
        ));
        assert!(!byte_glob_match(&byte_glob("/users/*/posts"), "/users/42"));
        assert!(byte_glob_match(&byte_glob("*"), ""));
        // A star that must give way more than once: `b` matches at 2 but
        // `c` does not follow until 4.
        assert!(byte_glob_match(&byte_glob("a*bc"), "axbxbc"));
        assert!(!byte_glob_match(&byte_glob("a*bc"), "axbxbx"));
    }
}
