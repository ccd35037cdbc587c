//! JSON paths as scenario files and pagination write them: `$`, then
//! `.name`, `["name"]` or `[index]` steps (`$.data[0].id`). Compiled once;
//! looked up in a parsed `serde_json::Value`, or found in a JSON text
//! without building the rest of it ([`JsonPath::find`]).

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

/// A JSON path: `$`, then `.name`, `["name"]` or `[index]` steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JsonPath {
    text: String,
    steps: Vec<PathStep>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum PathStep {
    Key(String),
    Index(usize),
    /// A JSON pointer's token: a name in an object, an index (if it is
    /// one) in an array.
    Token(String, Option<usize>),
}

impl JsonPath {
    /// Parse a path.
    ///
    /// # Errors
    /// A path that does not start with `$` or has a malformed step.
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let bad = |why: &str| format!("JSON path {text:?}: {why} (write e.g. $.data[0].id)");
        let mut rest = text
            .strip_prefix('$')
            .ok_or_else(|| bad("it must start with $"))?;
        let mut steps = Vec::new();
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('.') {
                let len = r.find(['.', '[']).unwrap_or(r.len());
                if len == 0 {
                    return Err(bad("an empty name after `.`"));
                }
                steps.push(PathStep::Key(r[..len].to_string()));
                rest = &r[len..];
            } else if let Some(r) = rest.strip_prefix('[') {
                let end = r.find(']').ok_or_else(|| bad("`[` without `]`"))?;
                let inner = &r[..end];
                let quoted = inner
                    .strip_prefix('"')
                    .and_then(|s| s.strip_suffix('"'))
                    .or_else(|| inner.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')));
                match (quoted, inner.parse::<usize>()) {
                    (Some(key), _) => steps.push(PathStep::Key(key.to_string())),
                    (None, Ok(i)) => steps.push(PathStep::Index(i)),
                    (None, Err(_)) => {
                        return Err(bad("an index must be a number or a quoted name"))
                    }
                }
                rest = &r[end + 1..];
            } else {
                return Err(bad(&format!("unexpected {rest:?}")));
            }
        }
        Ok(JsonPath {
            text: text.to_string(),
            steps,
        })
    }

    /// The path a JSON pointer (RFC 6901: `/data/0/id`, `~1` for `/`,
    /// `~0` for `~`) names, as `serde_json::Value::pointer` reads it; `None`
    /// for text that is not a pointer (and names nothing).
    pub fn pointer(text: &str) -> Option<JsonPath> {
        if !text.is_empty() && !text.starts_with('/') {
            return None;
        }
        let steps = text
            .split('/')
            .skip(1)
            .map(|t| {
                let token = t.replace("~1", "/").replace("~0", "~");
                let index = (!token.starts_with('+') && (token == "0" || !token.starts_with('0')))
                    .then(|| token.parse().ok())
                    .flatten();
                PathStep::Token(token, index)
            })
            .collect();
        Some(JsonPath {
            text: text.to_string(),
            steps,
        })
    }

    /// The value at this path of `v`, if any.
    pub fn get<'a>(&self, v: &'a Value) -> Option<&'a Value> {
        self.steps.iter().try_fold(v, |v, s| match (s, v) {
            (PathStep::Key(k), _) => v.get(k),
            (PathStep::Index(i), _) => v.get(i),
            (PathStep::Token(k, _), Value::Object(map)) => map.get(k),
            (PathStep::Token(_, i), Value::Array(list)) => i.and_then(|i| list.get(i)),
            (PathStep::Token(..), _) => None,
        })
    }

    /// The value at this path of the JSON text `text`, if any: what
    /// [`JsonPath::get`] finds in `text` parsed, without building the
    /// values off the path (a scenario's `extract` of one field from a
    /// large answer costs a scan, not a tree). Where a name repeats, the
    /// last one counts, as in a parsed object. (Off the path it does not
    /// refuse what only serde_json's `Value` does: nesting deeper than 128,
    /// its private number name.)
    ///
    /// # Errors
    /// When `text` is not JSON: the error `serde_json::from_slice` gives.
    pub fn find(&self, text: &[u8]) -> Result<Option<Value>, serde_json::Error> {
        let whole = |text| serde_json::from_slice::<Value>(text).map(|v| self.get(&v).cloned());
        // The scan skips strings without checking their UTF-8, which a
        // parse rejects; and its errors may be worded differently.
        if std::str::from_utf8(text).is_err() {
            return whole(text);
        }
        let mut de = serde_json::Deserializer::from_slice(text);
        match Seek(&self.steps)
            .deserialize(&mut de)
            .and_then(|found| de.end().map(|()| found))
        {
            Ok(found) => Ok(found),
            Err(_) => whole(text),
        }
    }
}

/// Finds the value at the steps left, ignoring everything else.
struct Seek<'p>(&'p [PathStep]);

impl<'de> DeserializeSeed<'de> for Seek<'_> {
    type Value = Option<Value>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Value>, D::Error> {
        if self.0.is_empty() {
            Value::deserialize(d).map(Some)
        } else {
            d.deserialize_any(self)
        }
    }
}

impl<'de> Visitor<'de> for Seek<'_> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Option<Value>, A::Error> {
        let (key, rest) = match self.0.split_first() {
            Some((PathStep::Key(k) | PathStep::Token(k, _), rest)) => (Some(k.as_str()), rest),
            _ => (None, &[][..]),
        };
        let mut found = None;
        while let Some(hit) = map.next_key_seed(KeyIs(key))? {
            if hit {
                found = map.next_value_seed(Seek(rest))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<Value>, A::Error> {
        let mut found = None;
        if let Some((PathStep::Index(i) | PathStep::Token(_, Some(i)), rest)) = self.0.split_first()
        {
            for _ in 0..*i {
                if seq.next_element::<IgnoredAny>()?.is_none() {
                    return Ok(None);
                }
            }
            found = seq.next_element_seed(Seek(rest))?.flatten();
        }
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(found)
    }

    // A scalar has nothing under it.
    fn visit_bool<E>(self, _: bool) -> Result<Option<Value>, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Option<Value>, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Option<Value>, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Option<Value>, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Option<Value>, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Option<Value>, E> {
        Ok(None)
    }
}

/// Whether an object's name is the one looked for (never, for `None`).
struct KeyIs<'p>(Option<&'p str>);

impl<'de> DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a name")
    }

    fn visit_str<E>(self, v: &str) -> Result<bool, E> {
        Ok(self.0 == Some(v))
    }
}

impl std::fmt::Display for JsonPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `find` on the text agrees with `get` on the parsed value, errors
    /// included, for every path over every document.
    #[test]
    fn find_in_text_is_get_in_the_parsed_value() {
        let docs: &[&[u8]] = &[
            br#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#,
            br#"{"a":{"b":[10,{"c":null},[true,false]],"d":1.5e300},"e":"x"}"#,
            br#"{"a":1,"a":{"b":2}}"#,
            br#"{"a":{"b":2},"a":3}"#,
            br#"{"a\u0062":"escaped name","ab":"plain"}"#,
            br#"{"n":123456789012345678901234567890.000001,"m":-0.0}"#,
            br#"[{"id":"x"},{"id":"y","tags":["p","q"]},3]"#,
            br#"  {"data":[{"id":7}]}  "#,
            br#""just a string""#,
            b"null",
            b"42",
            br#"{"a":[1,2,]}"#,
            br#"{"a":1} trailing"#,
            br#"{"a":"#,
            b"",
            b"{\"a\":\"\xff\",\"b\":1}",
            br#"{"a/b":1,"a~b":2,"":3,"0":4}"#,
        ];
        let paths = [
            "$",
            "$.a",
            "$.a.b",
            "$.a.b[0]",
            "$.a.b[1].c",
            "$.a.b[2][1]",
            "$.a.b[9]",
            "$.a.d",
            "$.e",
            "$.ab",
            "$.n",
            "$.m",
            "$[0]",
            "$[1].id",
            "$[1].tags[1]",
            "$[2]",
            "$[2].x",
            "$[5]",
            "$.data[0].id",
            "$.result",
            "$.id",
            "$.e.x",
            "$.a[0]",
            "$[0].id.x",
            "$[\"ab\"]",
            "$.b",
            "$.n.x",
        ];
        for doc in docs {
            let parsed = serde_json::from_slice::<Value>(doc);
            for p in paths {
                let path = JsonPath::parse(p).unwrap();
                let want = parsed
                    .as_ref()
                    .map(|v| path.get(v).cloned())
                    .map_err(ToString::to_string);
                let got = path.find(doc).map_err(|e| e.to_string());
                assert_eq!(got, want, "{p} in {}", String::from_utf8_lossy(doc));
            }
            let pointers = [
                "",
                "/a",
                "/a/b/0",
                "/a/b/1/c",
                "/a/b/01",
                "/a/b/+1",
                "/0/id",
                "/1/tags/1",
                "/e",
                "/a~1b",
                "/a~0b",
                "/result",
                "/n",
                "/a/d",
                "a",
                "/",
                "/data/0/id",
            ];
            for p in pointers {
                let want = parsed
                    .as_ref()
                    .map(|v| v.pointer(p).cloned())
                    .map_err(ToString::to_string);
                let got = match JsonPath::pointer(p) {
                    Some(path) => path.find(doc).map_err(|e| e.to_string()),
                    None => Ok(None),
                };
                // A text that is not a pointer names nothing, JSON or not.
                if JsonPath::pointer(p).is_none() {
                    assert_eq!(got, Ok(None));
                    continue;
                }
                assert_eq!(
                    got,
                    want,
                    "pointer {p:?} in {}",
                    String::from_utf8_lossy(doc)
                );
            }
        }
    }
}
