//! The comparer as it was before the tape, over serde trees: kept as the
//! reference the tape comparer (`super::json`) is checked against, pair by
//! pair, on generated documents, edits and rules.

use std::borrow::Cow;

use super::json::{hex_eq_ignore_case, DiffKind, Difference, NotJson};
use super::node::{parse, Node};
use super::number::Num;
use super::pairing::pair_up;
use super::path::{AsSegment, Segment, SegmentRef};
use super::rules::RuleSet;

/// Compares two bodies under `rules`, as `super::json::compare` does.
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

/// The tape comparer against this one on generated pairs: a document, the
/// same after random edits, each written its own way (indentation, key
/// order, number notation, escapes), under random rules. Both must give
/// the same differences in the same order. `VERSUS_COMPARE_CASES=N` runs
/// more than the default 3,000.
#[cfg(test)]
mod agreement {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    use super::super::json;
    use super::super::rules::{RuleSet, Tolerance};

    /// A document, as the generator builds it.
    #[derive(Clone, Debug)]
    enum J {
        Null,
        Bool(bool),
        /// An integer, and the notation it is written in.
        Int(i64, u8),
        Str(String),
        Arr(Vec<J>),
        Obj(Vec<(String, J)>),
    }

    const KEYS: [&str; 10] = [
        "a", "b", "id", "n", "result", "error", "code", "message", "items", "é",
    ];

    fn doc() -> impl Strategy<Value = J> {
        let leaf = prop_oneof![
            Just(J::Null),
            any::<bool>().prop_map(J::Bool),
            (-3i64..300, 0u8..4).prop_map(|(n, f)| J::Int(n, f)),
            prop_oneof![
                Just("0xAbCd".to_string()),
                Just("0xabcd".to_string()),
                Just("x\"y\\z".to_string()),
                Just("é€".to_string()),
                "[a-c]{0,3}",
            ]
            .prop_map(J::Str),
        ];
        leaf.prop_recursive(4, 48, 5, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(J::Arr),
                proptest::collection::vec((proptest::sample::select(&KEYS[..]), inner), 0..5)
                    .prop_map(|m| J::Obj(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
            ]
        })
    }

    /// One change to a document, at the `at`-th place a walk meets.
    #[derive(Clone, Debug)]
    enum Edit {
        Replace(usize, J),
        Remove(usize),
        Insert(usize, &'static str, J),
        Swap(usize),
        Upper(usize),
    }

    fn edit() -> impl Strategy<Value = Edit> {
        prop_oneof![
            (any::<usize>(), doc()).prop_map(|(at, j)| Edit::Replace(at, j)),
            any::<usize>().prop_map(Edit::Remove),
            (any::<usize>(), proptest::sample::select(&KEYS[..]), doc())
                .prop_map(|(at, k, j)| Edit::Insert(at, k, j)),
            any::<usize>().prop_map(Edit::Swap),
            any::<usize>().prop_map(Edit::Upper),
        ]
    }

    /// Apply `e` at the `*at`-th node of `j` in document order.
    fn apply(j: &mut J, e: &Edit, at: &mut usize) {
        if *at == 0 {
            match (e, &mut *j) {
                (Edit::Replace(_, new), _) => *j = new.clone(),
                (Edit::Remove(_), J::Arr(items)) if !items.is_empty() => {
                    items.remove(0);
                }
                (Edit::Remove(_), J::Obj(m)) if !m.is_empty() => {
                    m.remove(m.len() / 2);
                }
                (Edit::Insert(_, _, new), J::Arr(items)) => items.push(new.clone()),
                (Edit::Insert(_, k, new), J::Obj(m)) => m.push(((*k).to_string(), new.clone())),
                (Edit::Swap(_), J::Arr(items)) if items.len() > 1 => items.swap(0, 1),
                (Edit::Upper(_), J::Str(s)) => *s = s.to_uppercase().replace("0X", "0x"),
                (Edit::Upper(_), J::Int(n, _)) => *n += 1,
                _ => {}
            }
        }
        *at = at.wrapping_sub(1);
        match j {
            J::Arr(items) => items.iter_mut().for_each(|i| apply(i, e, at)),
            J::Obj(m) => m.iter_mut().for_each(|(_, v)| apply(v, e, at)),
            _ => {}
        }
    }

    /// How a document is written: indented or not, members reversed or
    /// not, numbers in another notation, strings with `\u` escapes.
    #[derive(Clone, Copy, Debug)]
    struct Style {
        indent: bool,
        reverse: bool,
        notation: bool,
        escape: bool,
    }

    fn write(j: &J, s: Style, depth: usize, out: &mut String) {
        let (nl, pad) = match s.indent {
            true => ("\n", "  ".repeat(depth + 1)),
            false => ("", String::new()),
        };
        match j {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Int(n, f) => out.push_str(&match (s.notation, f) {
                (true, 1) => format!("{n}.0"),
                (true, 2) => format!("{n}0e-1"),
                (true, 3) => format!("{n}e0"),
                _ => n.to_string(),
            }),
            J::Str(text) => out.push_str(&string(text, s.escape)),
            J::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    out.push_str(if i > 0 { "," } else { "" });
                    out.push_str(nl);
                    out.push_str(&pad);
                    write(item, s, depth + 1, out);
                }
                out.push(']');
            }
            J::Obj(members) => {
                out.push('{');
                let mut order: Vec<&(String, J)> = members.iter().collect();
                if s.reverse {
                    order.reverse();
                }
                for (i, (k, v)) in order.into_iter().enumerate() {
                    out.push_str(if i > 0 { "," } else { "" });
                    out.push_str(nl);
                    out.push_str(&pad);
                    out.push_str(&string(k, s.escape));
                    out.push_str(": ");
                    write(v, s, depth + 1, out);
                }
                out.push('}');
            }
        }
    }

    fn string(text: &str, escape: bool) -> String {
        let plain = serde_json::to_string(text).unwrap_or_default();
        match escape {
            true => plain.replace('a', "\\u0061").replace('é', "\\u00e9"),
            false => plain,
        }
    }

    fn style() -> impl Strategy<Value = Style> {
        (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
            |(indent, reverse, notation, escape)| Style {
                indent,
                reverse,
                notation,
                escape,
            },
        )
    }

    const PATHS: [&str; 8] = [
        "$",
        "$.a",
        "$..b",
        "$.items",
        "$..items",
        "$.result[*].n",
        "$[0]",
        "$..id",
    ];

    fn rules() -> impl Strategy<Value = RuleSet> {
        let paths = || proptest::collection::vec(proptest::sample::select(&PATHS[..]), 0..2);
        (
            any::<[bool; 4]>(),
            paths(),
            paths(),
            paths(),
            paths(),
            proptest::sample::select(&["id", "n", "a"][..]),
        )
            .prop_map(|(flags, ignore, unordered, keyed, tolerant, field)| {
                let p = |t: &&str| t.parse().unwrap();
                RuleSet {
                    subset: flags[0],
                    hex_case_insensitive: flags[1],
                    jsonrpc: flags[2],
                    ignore_error_message: flags[3],
                    ignore: ignore.iter().map(p).collect(),
                    unordered: unordered.iter().map(p).collect(),
                    array_keys: keyed.iter().map(|t| (p(t), field.to_string())).collect(),
                    tolerances: tolerant
                        .iter()
                        .map(|t| (p(t), Tolerance::Absolute(1.0)))
                        .collect(),
                }
            })
    }

    fn cases() -> u32 {
        std::env::var("VERSUS_COMPARE_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3000)
    }

    #[test]
    fn the_tape_comparer_agrees_with_the_tree_comparer() {
        let pair = (
            doc(),
            proptest::collection::vec(edit(), 0..3),
            style(),
            style(),
            rules(),
        );
        let mut runner = TestRunner::new(Config::with_cases(cases()));
        runner
            .run(&pair, |(d, edits, sa, sb, rules)| {
                let mut changed = d.clone();
                for e in &edits {
                    let at = match e {
                        Edit::Replace(at, _)
                        | Edit::Remove(at)
                        | Edit::Insert(at, ..)
                        | Edit::Swap(at)
                        | Edit::Upper(at) => *at % 16,
                    };
                    apply(&mut changed, e, &mut { at });
                }
                let (mut a, mut b) = (String::new(), String::new());
                write(&d, sa, 0, &mut a);
                write(&changed, sb, 0, &mut b);
                let want = super::compare(&rules, a.as_bytes(), b.as_bytes());
                let got = json::compare(&rules, a.as_bytes(), b.as_bytes());
                prop_assert_eq!(got, want, "{}\n{}\n{:?}", a, b, rules);
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn bodies_that_are_not_json_fail_alike() {
        for (a, b) in [
            ("{\"a\":1", "{}"),
            ("{}", "[1,]"),
            ("\"\\ud800\"", "1"),
            (&("[".repeat(200) + &"]".repeat(200)), "1"),
        ] {
            let rules = RuleSet::default();
            assert_eq!(
                json::compare(&rules, a.as_bytes(), b.as_bytes()),
                super::compare(&rules, a.as_bytes(), b.as_bytes()),
                "{a} / {b}"
            );
        }
        // A surrogate pair escaped is the character it stands for.
        let rules = RuleSet::default();
        let diffs = json::compare(&rules, "\"\\ud83d\\ude00\"".as_bytes(), "\"😀\"".as_bytes());
        assert_eq!(diffs, Ok(vec![]));
    }
}
