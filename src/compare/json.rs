//! Structural comparison of two JSON bodies under a [`RuleSet`]: every differing
//! location is reported, with its kind. Also extracts the value at a location, to show
//! samples of a difference.
//!
//! Bodies are parsed into a borrowed tree (strings point into the body; object members
//! are sorted by key once, so comparing objects is a merge), which is several times
//! cheaper than building `serde_json::Value`s with ordered maps. Nesting is bounded by
//! serde_json's recursion limit (128), and the comparison recurses no deeper than the
//! parsed tree.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use super::number::Num;
use super::path::{AsSegment, Segment, SegmentRef};
use super::rules::RuleSet;

/// One differing location.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Difference {
    /// Where. For [`DiffKind::Missing`] the location exists in the reference, for
    /// [`DiffKind::Added`] in the candidate, otherwise in both.
    pub path: Vec<Segment>,
    /// How the two sides differ there.
    pub kind: DiffKind,
}

/// How the two sides differ at a location.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DiffKind {
    /// Same type, different value.
    Changed,
    /// Only in the reference.
    Missing,
    /// Only in the candidate.
    Added,
    /// Different JSON types (e.g. number vs string, null vs object).
    TypeChanged,
    /// JSON-RPC: one side answered with `result`, the other with `error`.
    ResultVsError,
    /// JSON-RPC: both answered with an error, with different `error.code`s.
    ErrorCode,
}

impl fmt::Display for DiffKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DiffKind::Changed => "changed",
            DiffKind::Missing => "missing",
            DiffKind::Added => "added",
            DiffKind::TypeChanged => "type changed",
            DiffKind::ResultVsError => "result vs error",
            DiffKind::ErrorCode => "error code",
        })
    }
}

/// A body that is not JSON (the caller falls back to comparing bytes): which side, and
/// the parser's reason (truncated, invalid UTF-8, nested too deep, ...).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotJson {
    /// The reference body did not parse.
    #[error("reference body is not JSON: {0}")]
    Reference(String),
    /// The candidate body did not parse.
    #[error("candidate body is not JSON: {0}")]
    Candidate(String),
}

/// Compares two bodies under `rules`; an empty list means equal under the rules.
/// Differences come in document order, object members by key.
pub fn compare(
    rules: &RuleSet,
    reference: &[u8],
    candidate: &[u8],
) -> Result<Vec<Difference>, NotJson> {
    let reference = parse(reference).map_err(|e| NotJson::Reference(e.to_string()))?;
    let candidate = parse(candidate).map_err(|e| NotJson::Candidate(e.to_string()))?;
    let mut walker = Walker::new(rules);
    walker.value(&reference, &candidate);
    Ok(walker.diffs)
}

/// The compact JSON text of the value at `path` in `body` (object members sorted by
/// key, so samples from both sides line up), or `None` if the body is not JSON or has
/// nothing there.
pub fn value_at(body: &[u8], path: &[Segment]) -> Option<String> {
    let root = parse(body).ok()?;
    let mut node = &root;
    for segment in path {
        node = match (segment, node) {
            (Segment::Key(key), Node::Object(_)) => node.get(key)?,
            (Segment::Index(index), Node::Array(items)) => items.get(*index)?,
            (Segment::Keyed { field, value }, Node::Array(items)) => {
                let want = parse(value.as_bytes()).ok()?;
                items
                    .iter()
                    .find(|item| item.get(field).is_some_and(|key| same_json(key, &want)))?
            }
            _ => return None,
        };
    }
    serde_json::to_string(node).ok()
}

fn parse(body: &[u8]) -> Result<Node<'_>, serde_json::Error> {
    serde_json::from_slice(body)
}

/// A parsed JSON value borrowing its strings from the body where it can.
#[derive(Debug)]
enum Node<'a> {
    Null,
    Bool(bool),
    Number(Num),
    String(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    /// Sorted by key, keys unique (the last duplicate wins, as in serde_json).
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

impl<'a> Node<'a> {
    fn object(mut members: Vec<(Cow<'a, str>, Node<'a>)>) -> Self {
        // After reversing, a stable sort puts the last duplicate first; dedup keeps it.
        members.reverse();
        members.sort_by(|a, b| a.0.cmp(&b.0));
        members.dedup_by(|a, b| a.0 == b.0);
        Node::Object(members)
    }

    fn get(&self, key: &str) -> Option<&Node<'a>> {
        match self {
            Node::Object(members) => members
                .binary_search_by(|(k, _)| k.as_ref().cmp(key))
                .ok()
                .map(|at| &members[at].1),
            _ => None,
        }
    }
}

/// serde_json's marker key for a number kept as text (`arbitrary_precision`).
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

impl<'de> Deserialize<'de> for Node<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Node<'de>, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Node<'de>, E> {
        Ok(Node::Bool(b))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Node<'de>, E> {
        Ok(Node::Number(Num::U64(n)))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Node<'de>, E> {
        Ok(Node::Number(Num::I64(n)))
    }

    fn visit_f64<E: de::Error>(self, x: f64) -> Result<Node<'de>, E> {
        Ok(Node::Number(Num::Text(x.to_string())))
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Borrowed(s)))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Owned(s.to_string())))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Node<'de>, E> {
        Ok(Node::String(Cow::Owned(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        let mut members = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed)? {
            members.push((key, map.next_value()?));
        }
        match members.as_mut_slice() {
            [(key, Node::String(text))] if key == NUMBER_TOKEN => {
                Ok(Node::Number(Num::Text(std::mem::take(text).into_owned())))
            }
            _ => Ok(Node::object(members)),
        }
    }
}

/// Object keys, borrowed from the body unless they contain escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(s))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s.to_string()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(s))
    }
}

impl Serialize for Node<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Node::Null => serializer.serialize_unit(),
            Node::Bool(b) => serializer.serialize_bool(*b),
            Node::Number(n) => n.serialize(serializer),
            Node::String(s) => serializer.serialize_str(s),
            Node::Array(items) => serializer.collect_seq(items),
            Node::Object(members) => serializer.collect_map(members.iter().map(|(k, v)| (k, v))),
        }
    }
}

/// Whether two values are equal with no rules (numbers by value, key order ignored).
fn same_json(a: &Node<'_>, b: &Node<'_>) -> bool {
    !Walker::new(&RuleSet::default()).differs(a, b)
}

/// A step of the location being compared, borrowed from the trees.
#[derive(Clone, Copy)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
    Keyed { field: &'a str, value: &'a Node<'a> },
}

impl AsSegment for Step<'_> {
    fn as_segment(&self) -> SegmentRef<'_> {
        match self {
            Step::Key(key) => SegmentRef::Key(key),
            Step::Index(index) => SegmentRef::Index(*index),
            Step::Keyed { .. } => SegmentRef::Keyed,
        }
    }
}

impl Step<'_> {
    fn to_segment(self) -> Segment {
        match self {
            Step::Key(key) => Segment::Key(key.to_string()),
            Step::Index(index) => Segment::Index(index),
            Step::Keyed { field, value } => Segment::Keyed {
                field: field.to_string(),
                value: serde_json::to_string(value).unwrap_or_default(),
            },
        }
    }
}

/// Walks both trees in step, recording differences (or, while probing, only whether
/// there is any).
struct Walker<'a> {
    rules: &'a RuleSet,
    path: Vec<Step<'a>>,
    diffs: Vec<Difference>,
    probing: bool,
    found: bool,
}

type Members<'a> = [(Cow<'a, str>, Node<'a>)];

impl<'a> Walker<'a> {
    fn new(rules: &'a RuleSet) -> Self {
        Walker {
            rules,
            path: Vec::new(),
            diffs: Vec::new(),
            probing: false,
            found: false,
        }
    }

    /// A probe has found its answer: no need to look further.
    fn done(&self) -> bool {
        self.probing && self.found
    }

    fn ignored(&self) -> bool {
        self.rules.ignore.iter().any(|p| p.matches_path(&self.path))
    }

    fn report(&mut self, kind: DiffKind) {
        if self.probing {
            self.found = true;
        } else {
            let path = self.path.iter().map(|step| step.to_segment()).collect();
            self.diffs.push(Difference { path, kind });
        }
    }

    /// Reports `kind` one step below the current location, unless that is ignored.
    fn report_at(&mut self, step: Step<'a>, kind: DiffKind) {
        self.path.push(step);
        if !self.ignored() {
            self.report(kind);
        }
        self.path.pop();
    }

    /// Compares two values one step below the current location.
    fn child(&mut self, step: Step<'a>, r: &'a Node<'a>, c: &'a Node<'a>) {
        self.path.push(step);
        self.value(r, c);
        self.path.pop();
    }

    /// Whether two values differ (at the current location) under the rules.
    fn differs(&mut self, r: &'a Node<'a>, c: &'a Node<'a>) -> bool {
        let saved = (self.probing, self.found);
        (self.probing, self.found) = (true, false);
        self.value(r, c);
        let differs = self.found;
        (self.probing, self.found) = saved;
        differs
    }

    fn value(&mut self, r: &'a Node<'a>, c: &'a Node<'a>) {
        if self.ignored() {
            return;
        }
        let same = match (r, c) {
            (Node::Object(a), Node::Object(b)) => {
                if self.rules.jsonrpc && self.at_response_level() {
                    self.response(a, b);
                } else {
                    self.object(a, b, &[]);
                }
                return;
            }
            (Node::Array(a), Node::Array(b)) => {
                self.array(a, b);
                return;
            }
            (Node::String(a), Node::String(b)) => {
                a == b || self.rules.hex_case_insensitive && hex_eq_ignore_case(a, b)
            }
            (Node::Number(a), Node::Number(b)) => a.same_value(b) || self.tolerated(a, b),
            (Node::Bool(a), Node::Bool(b)) => a == b,
            (Node::Null, Node::Null) => true,
            _ => {
                self.report(DiffKind::TypeChanged);
                return;
            }
        };
        if !same {
            self.report(DiffKind::Changed);
        }
    }

    fn tolerated(&self, a: &Num, b: &Num) -> bool {
        self.rules
            .tolerances
            .iter()
            .rev()
            .find(|(p, _)| p.matches_path(&self.path))
            .is_some_and(|(_, tolerance)| a.within(b, *tolerance))
    }

    /// Merges two key-sorted member lists; `skip` keys are left out.
    fn object(&mut self, a: &'a Members<'a>, b: &'a Members<'a>, skip: &[&str]) {
        let (mut i, mut j) = (0, 0);
        while !self.done() {
            match (a.get(i), b.get(j)) {
                (Some((ka, va)), Some((kb, vb))) if ka == kb => {
                    i += 1;
                    j += 1;
                    if !skip.contains(&&**ka) {
                        self.child(Step::Key(ka), va, vb);
                    }
                }
                (Some((ka, _)), kb) if kb.is_none_or(|(kb, _)| ka < kb) => {
                    i += 1;
                    if !skip.contains(&&**ka) {
                        self.report_at(Step::Key(ka), DiffKind::Missing);
                    }
                }
                (_, Some((kb, _))) => {
                    j += 1;
                    if !self.rules.subset && !skip.contains(&&**kb) {
                        self.report_at(Step::Key(kb), DiffKind::Added);
                    }
                }
                (_, None) => break,
            }
        }
    }

    /// The root, or an element of a root array (a JSON-RPC batch).
    fn at_response_level(&self) -> bool {
        matches!(
            self.path.as_slice(),
            [] | [Step::Index(_) | Step::Keyed { .. }]
        )
    }

    /// Two JSON-RPC response objects.
    fn response(&mut self, a: &'a Members<'a>, b: &'a Members<'a>) {
        match (outcome(a), outcome(b)) {
            (Some(Outcome::Error(ea)), Some(Outcome::Error(eb))) => {
                self.object(a, b, &["error"]);
                self.path.push(Step::Key("error"));
                self.error(ea, eb);
                self.path.pop();
            }
            (Some(x), Some(y)) if x.is_error() != y.is_error() => {
                self.report(DiffKind::ResultVsError);
                self.object(a, b, &["result", "error"]);
            }
            _ => self.object(a, b, &[]),
        }
    }

    /// Two JSON-RPC `error` members.
    fn error(&mut self, ea: &'a Node<'a>, eb: &'a Node<'a>) {
        if self.ignored() || self.done() {
            return;
        }
        let (Node::Object(a), Node::Object(b)) = (ea, eb) else {
            self.value(ea, eb);
            return;
        };
        let code_differs = match (ea.get("code"), eb.get("code")) {
            (Some(ca), Some(cb)) => {
                self.path.push(Step::Key("code"));
                let differs = self.differs(ca, cb);
                self.path.pop();
                differs
            }
            _ => false,
        };
        let skip: &[&str] = if code_differs {
            self.report_at(Step::Key("code"), DiffKind::ErrorCode);
            &["code"]
        } else if self.rules.ignore_error_message {
            &["message"]
        } else {
            &[]
        };
        self.object(a, b, skip);
    }

    fn array(&mut self, a: &'a [Node<'a>], b: &'a [Node<'a>]) {
        let rules = self.rules;
        // A JSON-RPC batch is matched by `id`; otherwise the last matching key rule
        // applies. Either needs every element on both sides to have the field.
        let batch_id = (rules.jsonrpc && self.path.is_empty()).then_some("id");
        let key_rule = rules
            .array_keys
            .iter()
            .rev()
            .find(|(p, _)| p.matches_path(&self.path))
            .map(|(_, field)| field.as_str());
        for field in batch_id.into_iter().chain(key_rule) {
            if let (Some(ka), Some(kb)) = (keys_of(a, field), keys_of(b, field)) {
                return self.keyed(a, b, field, &ka, &kb);
            }
        }
        if rules.unordered.iter().any(|p| p.matches_path(&self.path)) {
            return self.unordered(a, b);
        }
        for i in 0..a.len().max(b.len()) {
            if self.done() {
                return;
            }
            match (a.get(i), b.get(i)) {
                (Some(x), Some(y)) => self.child(Step::Index(i), x, y),
                (Some(_), None) => self.report_at(Step::Index(i), DiffKind::Missing),
                _ => self.report_at(Step::Index(i), DiffKind::Added),
            }
        }
    }

    /// Elements matched by the value of `field` (`ka`, `kb`: each element's value).
    fn keyed(
        &mut self,
        a: &'a [Node<'a>],
        b: &'a [Node<'a>],
        field: &'a str,
        ka: &[&'a Node<'a>],
        kb: &[&'a Node<'a>],
    ) {
        let strict = RuleSet::default();
        let mut keys = Walker::new(&strict);
        let pairs = pair_up(a.len(), b.len(), |i, j| !keys.differs(ka[i], kb[j]));
        for (i, matched) in pairs.of_reference.iter().enumerate() {
            if self.done() {
                return;
            }
            let step = Step::Keyed {
                field,
                value: ka[i],
            };
            match matched {
                Some(j) => self.child(step, &a[i], &b[*j]),
                None => self.report_at(step, DiffKind::Missing),
            }
        }
        for (j, _) in pairs
            .candidate_used
            .iter()
            .enumerate()
            .filter(|(_, u)| !**u)
        {
            let step = Step::Keyed {
                field,
                value: kb[j],
            };
            self.report_at(step, DiffKind::Added);
        }
    }

    /// Elements compared as a multiset: each reference element is paired with an equal
    /// (under the rules) unused candidate element; the rest are missing or added.
    fn unordered(&mut self, a: &'a [Node<'a>], b: &'a [Node<'a>]) {
        let pairs = pair_up(a.len(), b.len(), |i, j| {
            self.path.push(Step::Index(i));
            let differs = self.differs(&a[i], &b[j]);
            self.path.pop();
            !differs
        });
        for (i, matched) in pairs.of_reference.iter().enumerate() {
            if matched.is_none() {
                self.report_at(Step::Index(i), DiffKind::Missing);
            }
        }
        for (j, used) in pairs.candidate_used.iter().enumerate() {
            if !used {
                self.report_at(Step::Index(j), DiffKind::Added);
            }
        }
    }
}

/// What a JSON-RPC response object carries.
enum Outcome<'a> {
    Result,
    Error(&'a Node<'a>),
}

impl Outcome<'_> {
    fn is_error(&self) -> bool {
        matches!(self, Outcome::Error(_))
    }
}

fn outcome<'a>(members: &'a Members<'a>) -> Option<Outcome<'a>> {
    let get = |key: &str| {
        members
            .binary_search_by(|(k, _)| k.as_ref().cmp(key))
            .ok()
            .map(|at| &members[at].1)
    };
    match (get("error"), get("result")) {
        (Some(error), _) if !matches!(error, Node::Null) => Some(Outcome::Error(error)),
        (_, Some(_)) => Some(Outcome::Result),
        _ => None,
    }
}

/// Each element's `field` value, if every element is an object that has one.
fn keys_of<'a>(items: &'a [Node<'a>], field: &str) -> Option<Vec<&'a Node<'a>>> {
    items.iter().map(|item| item.get(field)).collect()
}

/// The outcome of pairing two sequences' elements.
struct Pairing {
    /// For each reference element, the candidate element paired with it.
    of_reference: Vec<Option<usize>>,
    /// Whether each candidate element was paired.
    candidate_used: Vec<bool>,
}

/// Pairs each reference element with the first unused candidate element that `same`
/// accepts, searching from just after the previous pairing so that elements in
/// (nearly) the same order cost one test each.
fn pair_up(n: usize, m: usize, mut same: impl FnMut(usize, usize) -> bool) -> Pairing {
    let mut candidate_used = vec![false; m];
    let mut of_reference = Vec::with_capacity(n);
    let mut next = 0;
    for i in 0..n {
        let found = (0..m)
            .map(|k| (next + k) % m)
            .find(|&j| !candidate_used[j] && same(i, j));
        if let Some(j) = found {
            candidate_used[j] = true;
            next = j + 1;
        }
        of_reference.push(found);
    }
    Pairing {
        of_reference,
        candidate_used,
    }
}

/// Whether both strings are `0x`-prefixed hex that differ only in letter case.
fn hex_eq_ignore_case(a: &str, b: &str) -> bool {
    fn is_hex(s: &str) -> bool {
        s.len() > 2
            && s.as_bytes()[..2].eq_ignore_ascii_case(b"0x")
            && s.as_bytes()[2..].iter().all(u8::is_ascii_hexdigit)
    }
    is_hex(a) && is_hex(b) && a.eq_ignore_ascii_case(b)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::super::path::{render, render_grouped, PathPattern};
    use super::super::rules::Tolerance;
    use super::*;

    fn p(text: &str) -> PathPattern {
        match text.parse() {
            Ok(pattern) => pattern,
            Err(e) => panic!("{e}"),
        }
    }

    fn with(edit: impl FnOnce(&mut RuleSet)) -> RuleSet {
        let mut rules = RuleSet::default();
        edit(&mut rules);
        rules
    }

    fn verdict(rules: &RuleSet, reference: &str, candidate: &str) -> Vec<(String, DiffKind)> {
        match compare(rules, reference.as_bytes(), candidate.as_bytes()) {
            Ok(diffs) => diffs.iter().map(|d| (render(&d.path), d.kind)).collect(),
            Err(e) => panic!("{reference} / {candidate}: {e}"),
        }
    }

    use DiffKind::*;

    /// A table of cases, long on purpose: a row per case, read side by side.
    #[test]
    #[expect(clippy::too_many_lines, reason = "a table of cases, a row each")]
    fn verdict_table() {
        let strict = RuleSet::default();
        let subset = with(|r| r.subset = true);
        let unordered = with(|r| r.unordered = vec![p("$"), p("$.txs")]);
        let keyed = with(|r| r.array_keys = vec![(p("$.items"), "id".into())]);
        let ignore = with(|r| {
            r.ignore = vec![
                p("$.result.timestamp"),
                p("$..blockHash"),
                p("$.result[*].nonce"),
                p("$.items[0]"),
                p("$['odd key']"),
            ]
        });
        let tolerance = with(|r| {
            r.tolerances = vec![
                (p("$.x"), Tolerance::Absolute(0.5)),
                (p("$.y"), Tolerance::Absolute(0.5)),
                (p("$..gas"), Tolerance::Relative(0.01)),
            ]
        });
        let hex = with(|r| r.hex_case_insensitive = true);
        let rpc = with(|r| r.jsonrpc = true);
        let rpc_quiet = with(|r| {
            r.jsonrpc = true;
            r.ignore_error_message = true;
        });
        let rpc_keyed_root = with(|r| {
            r.jsonrpc = true;
            r.array_keys = vec![(p("$"), "name".into())];
        });
        let unordered_ignoring_nonce = with(|r| {
            r.unordered = vec![p("$.txs")];
            r.ignore = vec![p("$.txs[*].nonce")];
        });

        type Expected = &'static [(&'static str, DiffKind)];
        let table: &[(&str, &RuleSet, &str, &str, Expected)] = &[
            (
                "key order",
                &strict,
                r#"{"a":1,"b":[1,2]}"#,
                r#"{"b":[1,2],"a":1}"#,
                &[],
            ),
            (
                "whitespace",
                &strict,
                "{ \"a\" :\n[ 1 , 2 ] }",
                r#"{"a":[1,2]}"#,
                &[],
            ),
            (
                "number notation",
                &strict,
                r#"{"a":1,"b":10e-1,"c":1e0,"d":-0,"e":0.50}"#,
                r#"{"a":1.0,"b":1,"c":1,"d":0,"e":5E-1}"#,
                &[],
            ),
            (
                "big integers differ by one",
                &strict,
                r#"{"n":1180591620717411303424}"#,
                r#"{"n":1180591620717411303425}"#,
                &[("$.n", Changed)],
            ),
            (
                "big integer in another notation",
                &strict,
                r#"{"n":1180591620717411303424}"#,
                r#"{"n":1.180591620717411303424e21}"#,
                &[],
            ),
            (
                "number changed",
                &strict,
                r#"{"a":1}"#,
                r#"{"a":1.5}"#,
                &[("$.a", Changed)],
            ),
            (
                "extra field",
                &strict,
                r#"{"a":1}"#,
                r#"{"a":1,"b":2}"#,
                &[("$.b", Added)],
            ),
            (
                "extra field, subset",
                &subset,
                r#"{"a":1}"#,
                r#"{"a":1,"b":{"c":2}}"#,
                &[],
            ),
            (
                "missing field, subset",
                &subset,
                r#"{"a":1,"c":3}"#,
                r#"{"a":1,"b":2}"#,
                &[("$.c", Missing)],
            ),
            (
                "array order",
                &strict,
                "[1,2,3]",
                "[3,1,2]",
                &[("$[0]", Changed), ("$[1]", Changed), ("$[2]", Changed)],
            ),
            (
                "array order, unordered",
                &unordered,
                "[1,2,3]",
                "[3,1,2]",
                &[],
            ),
            (
                "unordered counts duplicates",
                &unordered,
                "[1,1,2]",
                "[1,2,2]",
                &[("$[1]", Missing), ("$[2]", Added)],
            ),
            (
                "unordered elements compared under the rules",
                &unordered_ignoring_nonce,
                r#"{"txs":[{"h":"0x1","nonce":1},{"h":"0x2","nonce":2}]}"#,
                r#"{"txs":[{"h":"0x2","nonce":7},{"h":"0x1","nonce":8}]}"#,
                &[],
            ),
            (
                "array grows",
                &strict,
                "[1,2]",
                "[1,2,3]",
                &[("$[2]", Added)],
            ),
            (
                "array shrinks",
                &strict,
                "[1,2,3]",
                "[1]",
                &[("$[1]", Missing), ("$[2]", Missing)],
            ),
            (
                "keyed array",
                &keyed,
                r#"{"items":[{"id":1,"v":"a"},{"id":2,"v":"b"},{"id":3,"v":"c"}]}"#,
                r#"{"items":[{"id":2,"v":"b"},{"id":1.0,"v":"A"},{"id":4,"v":"d"}]}"#,
                &[
                    ("$.items[?(@.id==1)].v", Changed),
                    ("$.items[?(@.id==3)]", Missing),
                    ("$.items[?(@.id==4)]", Added),
                ],
            ),
            (
                "keyed array with a keyless element is positional",
                &keyed,
                r#"{"items":[{"id":1},{"x":2}]}"#,
                r#"{"items":[{"x":2},{"id":1}]}"#,
                &[
                    ("$.items[0].id", Missing),
                    ("$.items[0].x", Added),
                    ("$.items[1].id", Added),
                    ("$.items[1].x", Missing),
                ],
            ),
            (
                "ignored paths, each wildcard form",
                &ignore,
                r#"{"result":[{"timestamp":1,"nonce":1,"blockHash":"0x1","v":1}],
                    "deep":{"x":[{"blockHash":"0xa"}]},"items":[1,2],"odd key":1}"#,
                r#"{"result":[{"timestamp":2,"nonce":2,"blockHash":"0x2","v":2}],
                    "deep":{"x":[{"blockHash":"0xb"}]},"items":[9,8],"odd key":2}"#,
                &[
                    ("$.items[1]", Changed),
                    ("$.result[0].timestamp", Changed),
                    ("$.result[0].v", Changed),
                ],
            ),
            (
                "ignored object path",
                &ignore,
                r#"{"result":{"timestamp":1,"a":1}}"#,
                r#"{"result":{"timestamp":"late","a":1}}"#,
                &[],
            ),
            (
                "ignored paths may be missing or added",
                &ignore,
                r#"{"result":{"timestamp":1},"blockHash":"0x1"}"#,
                r#"{"result":{},"x":{"blockHash":"0x1"}}"#,
                &[("$.x", Added)],
            ),
            (
                "absolute tolerance",
                &tolerance,
                r#"{"x":10,"y":10,"z":10}"#,
                r#"{"x":10.4,"y":10.6,"z":10.1}"#,
                &[("$.y", Changed), ("$.z", Changed)],
            ),
            (
                "relative tolerance",
                &tolerance,
                r#"{"gas":100,"b":{"gas":200}}"#,
                r#"{"gas":101,"b":{"gas":203}}"#,
                &[("$.b.gas", Changed)],
            ),
            (
                "hex case, rule on",
                &hex,
                r#"{"h":"0xAB","s":"Hi","x":"0xZZ","n":"0XaB"}"#,
                r#"{"h":"0xab","s":"hi","x":"0xzz","n":"0xAb"}"#,
                &[("$.s", Changed), ("$.x", Changed)],
            ),
            (
                "hex case, rule off",
                &strict,
                r#"{"h":"0xAB"}"#,
                r#"{"h":"0xab"}"#,
                &[("$.h", Changed)],
            ),
            (
                "type changed",
                &strict,
                r#"{"a":1,"b":null,"c":[],"d":true}"#,
                r#"{"a":"1","b":{},"c":{},"d":1}"#,
                &[
                    ("$.a", TypeChanged),
                    ("$.b", TypeChanged),
                    ("$.c", TypeChanged),
                    ("$.d", TypeChanged),
                ],
            ),
            (
                "duplicate keys: the last wins",
                &strict,
                r#"{"a":1,"a":2}"#,
                r#"{"a":2}"#,
                &[],
            ),
            (
                "escaped keys",
                &strict,
                r#"{"\u0061":"\u00e9"}"#,
                r#"{"a":"é"}"#,
                &[],
            ),
            (
                "result vs error",
                &rpc,
                r#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#,
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"x"}}"#,
                &[("$", ResultVsError)],
            ),
            (
                "result vs error without jsonrpc",
                &strict,
                r#"{"id":1,"result":"0x1"}"#,
                r#"{"id":1,"error":{"code":-32000,"message":"x"}}"#,
                &[("$.error", Added), ("$.result", Missing)],
            ),
            (
                "error codes differ",
                &rpc_quiet,
                r#"{"id":1,"error":{"code":-32000,"message":"a"}}"#,
                r#"{"id":1,"error":{"code":-32601,"message":"b"}}"#,
                &[("$.error.code", ErrorCode), ("$.error.message", Changed)],
            ),
            (
                "error message ignored when codes match",
                &rpc_quiet,
                r#"{"id":1,"error":{"code":-32000,"message":"a","data":1}}"#,
                r#"{"id":1,"error":{"code":-32000.0,"message":"b","data":1}}"#,
                &[],
            ),
            (
                "error message compared without the option",
                &rpc,
                r#"{"id":1,"error":{"code":-32000,"message":"a"}}"#,
                r#"{"id":1,"error":{"code":-32000,"message":"b"}}"#,
                &[("$.error.message", Changed)],
            ),
            (
                "batch order by id",
                &rpc,
                r#"[{"id":1,"result":"a"},{"id":"x","result":"b"}]"#,
                r#"[{"id":"x","result":"b"},{"id":1,"result":"a"}]"#,
                &[],
            ),
            (
                "root array without ids falls back to a key rule",
                &rpc_keyed_root,
                r#"[{"name":"a","v":1},{"name":"b","v":2}]"#,
                r#"[{"name":"b","v":2},{"name":"a","v":3}]"#,
                &[(r#"$[?(@.name=="a")].v"#, Changed)],
            ),
            (
                "batch order without jsonrpc",
                &strict,
                r#"[{"id":1,"result":"a"},{"id":2,"result":"b"}]"#,
                r#"[{"id":2,"result":"b"},{"id":1,"result":"a"}]"#,
                &[
                    ("$[0].id", Changed),
                    ("$[0].result", Changed),
                    ("$[1].id", Changed),
                    ("$[1].result", Changed),
                ],
            ),
            (
                "batch element result vs error, missing and added ids",
                &rpc,
                r#"[{"id":1,"result":"a"},{"id":"two","result":"b"},{"id":3,"result":"c"}]"#,
                r#"[{"id":"two","error":{"code":1,"message":"m"}},{"id":1,"result":"A"},{"id":4,"result":"c"}]"#,
                &[
                    ("$[?(@.id==1)].result", Changed),
                    (r#"$[?(@.id=="two")]"#, ResultVsError),
                    ("$[?(@.id==3)]", Missing),
                    ("$[?(@.id==4)]", Added),
                ],
            ),
        ];
        for (name, rules, reference, candidate, expected) in table {
            let expected: Vec<(String, DiffKind)> = expected
                .iter()
                .map(|(path, kind)| (path.to_string(), *kind))
                .collect();
            assert_eq!(
                verdict(rules, reference, candidate),
                expected,
                "case: {name}"
            );
        }
    }

    #[test]
    fn grouped_paths_collapse_positions() {
        let diffs = match compare(
            &RuleSet::default(),
            br#"{"result":{"transactions":[{"nonce":"0x1"},{"nonce":"0x2"}]}}"#,
            br#"{"result":{"transactions":[{"nonce":"0x3"},{"nonce":"0x4"}]}}"#,
        ) {
            Ok(diffs) => diffs,
            Err(e) => panic!("{e}"),
        };
        let grouped: Vec<String> = diffs.iter().map(|d| render_grouped(&d.path)).collect();
        assert_eq!(grouped, ["$.result.transactions[*].nonce"; 2]);
    }

    #[test]
    fn samples_follow_the_reported_paths() {
        let rules = with(|r| r.jsonrpc = true);
        let reference = br#"[{"id":1,"result":{"b":2,"a":[1,"x"]}},{"id":2,"result":1.50}]"#;
        let candidate = br#"[{"id":2,"result":1.5},{"id":1,"result":{"a":[1,"y"], "b":2}}]"#;
        let diffs = match compare(&rules, reference, candidate) {
            Ok(diffs) => diffs,
            Err(e) => panic!("{e}"),
        };
        assert_eq!(diffs.len(), 1);
        let path = &diffs[0].path;
        assert_eq!(render(path), "$[?(@.id==1)].result.a[1]");
        assert_eq!(value_at(reference, path).as_deref(), Some("\"x\""));
        assert_eq!(value_at(candidate, path).as_deref(), Some("\"y\""));
        let parent = &path[..2];
        assert_eq!(
            value_at(candidate, parent).as_deref(),
            Some(r#"{"a":[1,"y"],"b":2}"#)
        );
        assert_eq!(
            value_at(reference, &[Segment::Index(1)]).as_deref(),
            Some(r#"{"id":2,"result":1.50}"#)
        );
        assert_eq!(value_at(reference, &[Segment::Index(2)]), None);
        assert_eq!(value_at(reference, &[Segment::Key("id".into())]), None);
        assert_eq!(value_at(b"{", &[]), None);
        assert_eq!(
            value_at(br#"{"n":1e400}"#, &[]).as_deref(),
            Some(r#"{"n":1e+400}"#)
        );
    }

    #[test]
    fn bad_input_is_an_error_of_the_right_side_and_quick() {
        let deep = "[".repeat(100_000) + &"]".repeat(100_000);
        let deep_objects = r#"{"a":"#.repeat(100_000);
        let cases: &[(&[u8], &str)] = &[
            (br#"{"a":[1,2"#, "EOF while parsing"),
            (deep.as_bytes(), "recursion limit exceeded"),
            (deep_objects.as_bytes(), "recursion limit exceeded"),
            (b"{\"a\":\"\xff\xfe\"}", "invalid unicode code point"),
            (b"<html>hello</html>", "expected value"),
            (b"", "EOF while parsing"),
            (b"{} {}", "trailing characters"),
        ];
        let good = br#"{"a":1}"#;
        for (bad, reason) in cases {
            let started = Instant::now();
            match compare(&RuleSet::default(), bad, good) {
                Err(NotJson::Reference(message)) => assert!(message.contains(reason), "{message}"),
                other => panic!("expected a reference error, got {other:?}"),
            }
            match compare(&RuleSet::default(), good, bad) {
                Err(NotJson::Candidate(message)) => assert!(message.contains(reason), "{message}"),
                other => panic!("expected a candidate error, got {other:?}"),
            }
            assert!(started.elapsed() < Duration::from_secs(1));
        }
    }

    #[test]
    fn deepest_accepted_nesting_compares() {
        let body = |leaf: &str| "[".repeat(127) + leaf + &"]".repeat(127);
        let diffs = verdict(&RuleSet::default(), &body("1"), &body("2"));
        assert_eq!(diffs, [(format!("${}", "[0]".repeat(127)), Changed)]);
    }

    #[test]
    fn huge_numbers() {
        let long = "9".repeat(10_000);
        let longer = format!("{long}0e-1");
        let rules = RuleSet::default();
        assert_eq!(verdict(&rules, &long, &longer), []);
        assert_eq!(
            verdict(&rules, &long, &format!("{long}1e-1")),
            [("$".into(), Changed)]
        );
        assert_eq!(
            verdict(
                &rules,
                "1e99999999999999999999999",
                "1e99999999999999999999999"
            ),
            []
        );
        assert_eq!(
            verdict(
                &rules,
                "1e99999999999999999999999",
                "10e99999999999999999999998"
            ),
            [("$".into(), Changed)]
        );
    }
}
