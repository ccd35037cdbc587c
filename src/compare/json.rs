//! Structural comparison of two JSON bodies under a [`RuleSet`]: every differing
//! location is reported, with its kind. Also extracts the value at a location, to show
//! samples of a difference.
//!
//! Both bodies are parsed into tapes (`super::tape`): tokens that point at their
//! bytes, nothing decoded. The walk goes through both at once and skips every pair of
//! values whose bytes are equal, so an answer that differs in one field costs its
//! parse and a walk down to that field; strings are decoded and numbers read only
//! where their bytes differ. Objects whose keys come in the same order are compared
//! member by member; others are merged by sorted key. Nesting is bounded at 128, as
//! serde_json bounds it, and the walk recurses no deeper than the tape.

use std::borrow::Cow;
use std::fmt;

use super::node;
use super::number::Num;
use super::pairing::{pair_by_hash, pair_up, strict_hash};
use super::path::{AsSegment, Segment, SegmentRef};
use super::rules::RuleSet;
use super::tape::{Kind, Tape};

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
    let (mut owned_a, mut owned_b) = (Vec::new(), Vec::new());
    let a = tape(reference, &mut owned_a).map_err(NotJson::Reference)?;
    let b = tape(candidate, &mut owned_b).map_err(NotJson::Candidate)?;
    let mut walker = Walker::new(rules, &a, &b);
    walker.value(0, 0);
    Ok(walker.diffs)
}

/// The tape of `body`. What the tape parser leaves to serde_json (a
/// surrogate pair's escape, nesting past 128) serde_json parses: its error,
/// or the same value written again, into `owned`, and that on a tape.
fn tape<'a>(body: &'a [u8], owned: &'a mut Vec<u8>) -> Result<Tape<'a>, String> {
    if let Ok(tape) = Tape::parse(body) {
        return Ok(tape);
    }
    let node = node::parse(body).map_err(|e| e.to_string())?;
    *owned = serde_json::to_vec(&node).map_err(|e| e.to_string())?;
    Tape::parse(owned).map_err(|_| "a body over 4 GB".to_string())
}

/// The compact JSON text of the value at `path` in `body` (object members sorted by
/// key, so samples from both sides line up), or `None` if the body is not JSON or has
/// nothing there. Only that value is decoded: the body is walked on its tape.
pub fn value_at(body: &[u8], path: &[Segment]) -> Option<String> {
    let mut owned = Vec::new();
    let doc = tape(body, &mut owned).ok()?;
    let mut at = 0;
    for segment in path {
        at = match (segment, doc.kind(at)) {
            (Segment::Key(key), Kind::Object) => get(&doc, at, key)?,
            (Segment::Index(index), Kind::Array) => doc.items(at).nth(*index)?,
            (Segment::Keyed { field, value }, Kind::Array) => {
                let mut owned = Vec::new();
                let want = tape(value.as_bytes(), &mut owned).ok()?;
                let strict = RuleSet::default();
                let mut keys = Walker::new(&strict, &doc, &want);
                doc.items(at).find(|&item| {
                    doc.kind(item) == Kind::Object
                        && get(&doc, item, field).is_some_and(|key| !keys.differs(key, 0))
                })?
            }
            _ => return None,
        };
    }
    let node = node::parse(doc.raw(at)).ok()?;
    serde_json::to_string(&node).ok()
}

/// Which body a token is of.
#[derive(Clone, Copy)]
enum Side {
    Reference,
    Candidate,
}

/// A step of the location being compared, borrowed from the bodies.
#[derive(Clone)]
enum Step<'a> {
    Key(Cow<'a, str>),
    Index(usize),
    /// An element of an array matched by `field`, whose value is token `at`.
    Keyed {
        field: &'a str,
        side: Side,
        at: u32,
    },
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

/// Walks both tapes in step, recording differences (or, while probing, only whether
/// there is any).
struct Walker<'a> {
    rules: &'a RuleSet,
    a: &'a Tape<'a>,
    b: &'a Tape<'a>,
    path: Vec<Step<'a>>,
    diffs: Vec<Difference>,
    probing: bool,
    found: bool,
}

/// An object's members as (key, value token), sorted by key, the last of
/// duplicates kept.
type Members<'a> = Vec<(Cow<'a, str>, u32)>;

impl<'a> Walker<'a> {
    fn new(rules: &'a RuleSet, a: &'a Tape<'a>, b: &'a Tape<'a>) -> Self {
        Walker {
            rules,
            a,
            b,
            path: Vec::new(),
            diffs: Vec::new(),
            probing: false,
            found: false,
        }
    }

    fn tape(&self, side: Side) -> &'a Tape<'a> {
        match side {
            Side::Reference => self.a,
            Side::Candidate => self.b,
        }
    }

    /// A probe has found its answer: no need to look further.
    fn done(&self) -> bool {
        self.probing && self.found
    }

    fn ignored(&self) -> bool {
        self.rules.ignore.iter().any(|p| p.matches_path(&self.path))
    }

    fn segment(&self, step: &Step<'a>) -> Segment {
        match step {
            Step::Key(key) => Segment::Key(key.to_string()),
            Step::Index(index) => Segment::Index(*index),
            Step::Keyed { field, side, at } => Segment::Keyed {
                field: field.to_string(),
                // As samples show it: compact, members sorted by key.
                value: node::parse(self.tape(*side).raw(*at))
                    .ok()
                    .and_then(|n| serde_json::to_string(&n).ok())
                    .unwrap_or_default(),
            },
        }
    }

    fn report(&mut self, kind: DiffKind) {
        if self.probing {
            self.found = true;
        } else {
            let path = self.path.iter().map(|step| self.segment(step)).collect();
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
    fn child(&mut self, step: Step<'a>, r: u32, c: u32) {
        self.path.push(step);
        self.value(r, c);
        self.path.pop();
    }

    /// Whether two values differ (at the current location) under the rules.
    fn differs(&mut self, r: u32, c: u32) -> bool {
        let saved = (self.probing, self.found);
        (self.probing, self.found) = (true, false);
        self.value(r, c);
        let differs = self.found;
        (self.probing, self.found) = saved;
        differs
    }

    fn value(&mut self, r: u32, c: u32) {
        // Equal bytes are equal under every rule.
        if self.a.raw(r) == self.b.raw(c) || self.ignored() {
            return;
        }
        let same = match (self.a.kind(r), self.b.kind(c)) {
            (Kind::Object, Kind::Object) => {
                if self.rules.jsonrpc && self.at_response_level() {
                    self.response(r, c);
                } else {
                    self.object(r, c, &[]);
                }
                return;
            }
            (Kind::Array, Kind::Array) => {
                self.array(r, c);
                return;
            }
            (Kind::String, Kind::String) => self.same_string(r, c),
            (Kind::Number, Kind::Number) => {
                let (x, y) = (number(self.a, r), number(self.b, c));
                x.same_value(&y) || self.tolerated(&x, &y)
            }
            // Unequal bytes: `true` and `false`.
            (Kind::True | Kind::False, Kind::True | Kind::False) => false,
            _ => {
                self.report(DiffKind::TypeChanged);
                return;
            }
        };
        if !same {
            self.report(DiffKind::Changed);
        }
    }

    /// Two strings whose bytes differ: the same text written with other
    /// escapes, or hex in another case where the rules allow it.
    fn same_string(&self, r: u32, c: u32) -> bool {
        let (x, y) = (self.a.string(r), self.b.string(c));
        x == y || self.rules.hex_case_insensitive && hex_eq_ignore_case(&x, &y)
    }

    fn tolerated(&self, a: &Num, b: &Num) -> bool {
        self.rules
            .tolerances
            .iter()
            .rev()
            .find(|(p, _)| p.matches_path(&self.path))
            .is_some_and(|(_, tolerance)| a.within(b, *tolerance))
    }

    /// Two objects, `skip` keys left out: member by member while both
    /// have the same keys in the same order, else merged by sorted key.
    fn object(&mut self, r: u32, c: u32, skip: &[&str]) {
        let saved = (self.diffs.len(), self.found);
        if !self.in_order(r, c, skip) {
            // Keys in another order: what was found so far is found again.
            self.diffs.truncate(saved.0);
            self.found = saved.1;
            self.merged(&sorted(self.a, r), &sorted(self.b, c), skip);
        }
    }

    /// Two objects member by member, while their keys are the same in the
    /// same order (false when they are not); differences put in key
    /// order, as a merge gives them.
    fn in_order(&mut self, r: u32, c: u32, skip: &[&str]) -> bool {
        let (a, b) = (self.a, self.b);
        let (from, depth) = (self.diffs.len(), self.path.len());
        let (mut ma, mut mb) = (a.members(r), b.members(c));
        loop {
            let ((ka, va), (kb, vb)) = match (ma.next(), mb.next()) {
                (Some(x), Some(y)) if a.raw(x.0) == b.raw(y.0) => (x, y),
                (None, None) => break,
                _ => return false,
            };
            if self.done() {
                return true;
            }
            let key = a.string(ka);
            if skip.contains(&&*key) {
                continue;
            }
            let before = (self.diffs.len(), self.found);
            self.child(Step::Key(key), va, vb);
            // Of a key written twice the last counts: an earlier one's
            // difference is none.
            let found = self.diffs.len() > before.0 || self.found && !before.1;
            if found && (again(a, a.next(va), a.next(r), ka) || again(b, b.next(vb), b.next(c), kb))
            {
                self.diffs.truncate(before.0);
                self.found = before.1;
            }
        }
        if self.diffs.len() > from + 1 {
            let key = |d: &Difference| match &d.path[depth] {
                Segment::Key(k) => k.clone(),
                _ => String::new(),
            };
            self.diffs[from..].sort_by_cached_key(key);
        }
        true
    }

    /// Merges two key-sorted member lists; `skip` keys are left out.
    fn merged(&mut self, a: &Members<'a>, b: &Members<'a>, skip: &[&str]) {
        let (mut i, mut j) = (0, 0);
        while !self.done() {
            match (a.get(i), b.get(j)) {
                (Some((ka, va)), Some((kb, vb))) if ka == kb => {
                    i += 1;
                    j += 1;
                    if !skip.contains(&&**ka) {
                        self.child(Step::Key(ka.clone()), *va, *vb);
                    }
                }
                (Some((ka, _)), kb) if kb.is_none_or(|(kb, _)| ka < kb) => {
                    i += 1;
                    if !skip.contains(&&**ka) {
                        self.report_at(Step::Key(ka.clone()), DiffKind::Missing);
                    }
                }
                (_, Some((kb, _))) => {
                    j += 1;
                    if !self.rules.subset && !skip.contains(&&**kb) {
                        self.report_at(Step::Key(kb.clone()), DiffKind::Added);
                    }
                }
                (_, None) => break,
            }
        }
    }

    /// Whether the rules leave two values below here the same only when
    /// they are equal with no rules, but for the order of array items
    /// (`unordered`, key rules): what [`strict_hash`] assumes. Ignored
    /// paths, tolerances, hex case, `subset` and a JSON-RPC batch's
    /// responses make values the same that are not.
    fn strict_below(&self) -> bool {
        let r = self.rules;
        r.ignore.is_empty()
            && r.tolerances.is_empty()
            && !r.subset
            && !r.hex_case_insensitive
            && !(r.jsonrpc && self.path.is_empty())
    }

    /// The root, or an element of a root array (a JSON-RPC batch).
    fn at_response_level(&self) -> bool {
        matches!(
            self.path.as_slice(),
            [] | [Step::Index(_) | Step::Keyed { .. }]
        )
    }

    /// Two JSON-RPC response objects.
    fn response(&mut self, r: u32, c: u32) {
        match (outcome(self.a, r), outcome(self.b, c)) {
            (Some(Outcome::Error(ea)), Some(Outcome::Error(eb))) => {
                self.object(r, c, &["error"]);
                self.path.push(Step::Key("error".into()));
                self.error(ea, eb);
                self.path.pop();
            }
            (Some(x), Some(y)) if x.is_error() != y.is_error() => {
                self.report(DiffKind::ResultVsError);
                self.object(r, c, &["result", "error"]);
            }
            _ => self.object(r, c, &[]),
        }
    }

    /// Two JSON-RPC `error` members.
    fn error(&mut self, ea: u32, eb: u32) {
        if self.ignored() || self.done() {
            return;
        }
        let (Kind::Object, Kind::Object) = (self.a.kind(ea), self.b.kind(eb)) else {
            self.value(ea, eb);
            return;
        };
        let code_differs = match (get(self.a, ea, "code"), get(self.b, eb, "code")) {
            (Some(ca), Some(cb)) => {
                self.path.push(Step::Key("code".into()));
                let differs = self.differs(ca, cb);
                self.path.pop();
                differs
            }
            _ => false,
        };
        let skip: &[&str] = if code_differs {
            self.report_at(Step::Key("code".into()), DiffKind::ErrorCode);
            &["code"]
        } else if self.rules.ignore_error_message {
            &["message"]
        } else {
            &[]
        };
        // Equal bytes were skipped for the whole object; its members are
        // compared one by one.
        self.object(ea, eb, skip);
    }

    fn array(&mut self, r: u32, c: u32) {
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
        let (a, b): (Vec<u32>, Vec<u32>) = (self.a.items(r).collect(), self.b.items(c).collect());
        for field in batch_id.into_iter().chain(key_rule) {
            if let (Some(ka), Some(kb)) = (keys_of(self.a, &a, field), keys_of(self.b, &b, field)) {
                return self.keyed(&a, &b, field, &ka, &kb);
            }
        }
        if rules.unordered.iter().any(|p| p.matches_path(&self.path)) {
            return self.unordered(&a, &b);
        }
        for i in 0..a.len().max(b.len()) {
            if self.done() {
                return;
            }
            match (a.get(i), b.get(i)) {
                (Some(x), Some(y)) => self.child(Step::Index(i), *x, *y),
                (Some(_), None) => self.report_at(Step::Index(i), DiffKind::Missing),
                _ => self.report_at(Step::Index(i), DiffKind::Added),
            }
        }
    }

    /// Elements matched by the value of `field` (`ka`, `kb`: each element's value).
    fn keyed(&mut self, a: &[u32], b: &[u32], field: &'a str, ka: &[u32], kb: &[u32]) {
        let strict = RuleSet::default();
        let mut keys = Walker::new(&strict, self.a, self.b);
        let hashes = (hashes(self.a, ka), hashes(self.b, kb));
        let pairs = pair_by_hash((&hashes.0, &hashes.1), |i, j| !keys.differs(ka[i], kb[j]));
        for (i, matched) in pairs.of_reference.iter().enumerate() {
            if self.done() {
                return;
            }
            let step = Step::Keyed {
                field,
                side: Side::Reference,
                at: ka[i],
            };
            match matched {
                Some(j) => self.child(step, a[i], b[*j]),
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
                side: Side::Candidate,
                at: kb[j],
            };
            self.report_at(step, DiffKind::Added);
        }
    }

    /// Elements compared as a multiset: each reference element is paired with an equal
    /// (under the rules) unused candidate element; the rest are missing or added.
    fn unordered(&mut self, a: &[u32], b: &[u32]) {
        let hashed = self
            .strict_below()
            .then(|| (hashes(self.a, a), hashes(self.b, b)));
        let same = |i: usize, j: usize| {
            self.path.push(Step::Index(i));
            let differs = self.differs(a[i], b[j]);
            self.path.pop();
            !differs
        };
        let pairs = match &hashed {
            Some((ha, hb)) => pair_by_hash((ha, hb), same),
            None => pair_up(a.len(), b.len(), same),
        };
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

/// A number token's value, as its text.
fn number(tape: &Tape<'_>, i: u32) -> Num {
    Num::Text(tape.text(i).to_string())
}

/// Each value's [`strict_hash`].
fn hashes(tape: &Tape<'_>, values: &[u32]) -> Vec<u64> {
    values.iter().map(|&v| strict_hash(tape, v)).collect()
}

/// Whether the key token `key` is written again among the keys from token
/// `at` to `end`.
fn again(tape: &Tape<'_>, mut at: u32, end: u32, key: u32) -> bool {
    while at < end {
        let escaped = tape.toks[at as usize].escaped || tape.toks[key as usize].escaped;
        if tape.raw(at) == tape.raw(key) || escaped && tape.string(at) == tape.string(key) {
            return true;
        }
        at = tape.next(at + 1);
    }
    false
}

/// The members of the object at `i`, sorted by key, the last of duplicates
/// kept (as serde_json keeps it).
fn sorted<'a>(tape: &Tape<'a>, i: u32) -> Members<'a> {
    let mut members: Members<'a> = tape.members(i).map(|(k, v)| (tape.string(k), v)).collect();
    // After reversing, a stable sort puts the last duplicate first; dedup keeps it.
    members.reverse();
    members.sort_by(|a, b| a.0.cmp(&b.0));
    members.dedup_by(|a, b| a.0 == b.0);
    members
}

/// The value of member `key` of the object at `i` (the last, if the key
/// is there twice).
fn get(tape: &Tape<'_>, i: u32, key: &str) -> Option<u32> {
    tape.members(i)
        .filter(|(k, _)| tape.string(*k) == key)
        .last()
        .map(|(_, v)| v)
}

/// What a JSON-RPC response object carries.
enum Outcome {
    Result,
    Error(u32),
}

impl Outcome {
    fn is_error(&self) -> bool {
        matches!(self, Outcome::Error(_))
    }
}

fn outcome(tape: &Tape<'_>, i: u32) -> Option<Outcome> {
    match (get(tape, i, "error"), get(tape, i, "result")) {
        (Some(error), _) if tape.kind(error) != Kind::Null => Some(Outcome::Error(error)),
        (_, Some(_)) => Some(Outcome::Result),
        _ => None,
    }
}

/// Each element's `field` value, if every element is an object that has one.
fn keys_of(tape: &Tape<'_>, items: &[u32], field: &str) -> Option<Vec<u32>> {
    items
        .iter()
        .map(|&i| match tape.kind(i) {
            Kind::Object => get(tape, i, field),
            _ => None,
        })
        .collect()
}

/// Whether both strings are `0x`-prefixed hex that differ only in letter case.
pub(super) fn hex_eq_ignore_case(a: &str, b: &str) -> bool {
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
