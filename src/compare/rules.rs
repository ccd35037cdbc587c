//! Comparison rules: what a structural comparison ignores or relaxes ([`RuleSet`]), and
//! the rule file that selects extra rules per JSON-RPC method or HTTP route ([`Rules`]).
//!
//! # Rule file (TOML)
//!
//! Top-level keys add to the base rules (usually from the command line); each
//! `[method."GLOB"]` section applies to JSON-RPC calls whose method matches the glob
//! (`*` matches any run of characters), each `[http."METHOD /PATH-GLOB"]` section to
//! HTTP requests (`METHOD` may be `*`), each `[step."GLOB"]` section to the flow
//! steps of that name (and only to them). Every section takes the same keys as the top
//! level:
//!
//! ```toml
//! ignore = ["$..timestamp"]            # paths never compared (with everything below)
//! subset = false                       # candidate may have object fields the reference lacks
//! unordered = ["$.result.uncles"]      # arrays compared as multisets
//! array_keys = { "$.result.logs" = "logIndex" }   # array elements matched by a field
//! tolerance = { "$.result.baseFee" = "0.5" }      # absolute, or relative as "1%"
//! hex_case_insensitive = true          # "0xAB" equals "0xab"
//! jsonrpc = true                       # batches by id, result vs error, error codes
//! ignore_error_message = true          # with jsonrpc: skip error.message when codes match
//!
//! [method.eth_getBlockByNumber]
//! ignore = ["$.result.size"]
//! unordered = ["$.result.transactions"]
//! tolerance = { "$.result.gasUsed" = "1%" }
//!
//! [method."eth_get*"]
//! ignore = ["$.result.blockHash"]
//!
//! [http."GET /users/*"]
//! subset = true
//! ```
//!
//! Lists (`ignore`, `unordered`, `array_keys`, `tolerance`) of every matching section
//! are added to the default's; a flag set in a matching section overrides the default's
//! value. Sections apply in file order, and where several `tolerance` or `array_keys`
//! entries select the same path the last one applies. Unknown keys are errors.

use std::borrow::Cow;
use std::fmt;
use std::str::FromStr;

use super::path::{byte_glob, byte_glob_match, Glob, PathPattern};

/// Rules for one comparison. The default is a strict structural comparison (key order,
/// whitespace and number notation never count).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleSet {
    /// Locations (with everything below them) left out of the comparison.
    pub ignore: Vec<PathPattern>,
    /// The candidate may have object fields that the reference lacks (extra array
    /// elements still count).
    pub subset: bool,
    /// Arrays compared as multisets (element order ignored): each reference element is
    /// paired with an equal candidate element; the unpaired are reported as missing (at
    /// their reference index) or added (at their candidate index).
    pub unordered: Vec<PathPattern>,
    /// Arrays whose elements are matched by the value of a field (`PATH=FIELD`), reported
    /// at [`Segment::Keyed`](super::path::Segment::Keyed) locations. Applies only when
    /// every element on both sides is an object with that field; otherwise the array is
    /// compared as it would be without the rule. Takes precedence over `unordered`.
    pub array_keys: Vec<(PathPattern, String)>,
    /// Numeric tolerance at locations (the last matching entry applies).
    pub tolerances: Vec<(PathPattern, Tolerance)>,
    /// `0x`-prefixed hex strings compare case-insensitively.
    pub hex_case_insensitive: bool,
    /// JSON-RPC awareness: batch elements matched by `id`, `result` vs `error` reported
    /// as [`DiffKind::ResultVsError`](super::json::DiffKind::ResultVsError), differing
    /// `error.code` as [`DiffKind::ErrorCode`](super::json::DiffKind::ErrorCode).
    pub jsonrpc: bool,
    /// With `jsonrpc`: `error.message` is not compared when the error codes match.
    pub ignore_error_message: bool,
}

/// How far apart two numbers may be and still count as equal.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Tolerance {
    /// At most this absolute difference (`"0.5"`).
    Absolute(f64),
    /// At most this fraction of the larger magnitude (`"1%"` is `Relative(0.01)`).
    Relative(f64),
}

impl Tolerance {
    /// Whether a difference `diff` between numbers whose larger magnitude is
    /// `magnitude` is tolerated.
    pub(crate) fn allows(self, diff: f64, magnitude: f64) -> bool {
        match self {
            Tolerance::Absolute(limit) => diff <= limit,
            Tolerance::Relative(fraction) => diff <= fraction * magnitude,
        }
    }
}

/// A tolerance that could not be parsed; names the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("tolerance `{value}`: expected a non-negative number like `0.5` or a percentage like `1%`")]
pub struct ToleranceError {
    /// The value as given.
    pub value: String,
}

impl FromStr for Tolerance {
    type Err = ToleranceError;

    fn from_str(text: &str) -> Result<Self, ToleranceError> {
        let trimmed = text.trim();
        let (number, relative) = match trimmed.strip_suffix('%') {
            Some(number) => (number.trim_end(), true),
            None => (trimmed, false),
        };
        let value = number
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| ToleranceError {
                value: text.to_string(),
            })?;
        Ok(if relative {
            Tolerance::Relative(value / 100.0)
        } else {
            Tolerance::Absolute(value)
        })
    }
}

/// A rule file or rule argument that could not be used: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{context}: {message}")]
pub struct RuleError {
    /// Where: the section and key, or the argument.
    pub context: String,
    /// What is wrong.
    pub message: String,
}

/// Parses a `PATH=FIELD` array-key rule (as given on a command line).
pub fn parse_array_key(arg: &str) -> Result<(PathPattern, String), RuleError> {
    let (path, field) = split_assignment(arg, "PATH=FIELD")?;
    let pattern = path.parse().map_err(|e| arg_error(arg, e))?;
    if field.is_empty() {
        return Err(arg_error(arg, "the field name is empty"));
    }
    Ok((pattern, field.to_string()))
}

/// Parses a `PATH=TOLERANCE` rule (as given on a command line), e.g. `$.result.gas=1%`.
pub fn parse_tolerance(arg: &str) -> Result<(PathPattern, Tolerance), RuleError> {
    let (path, value) = split_assignment(arg, "PATH=TOLERANCE")?;
    let pattern = path.parse().map_err(|e| arg_error(arg, e))?;
    let tolerance = value.parse().map_err(|e| arg_error(arg, e))?;
    Ok((pattern, tolerance))
}

/// Splits at the last `=` (paths may contain `=` inside quotes; values never do).
fn split_assignment<'a>(arg: &'a str, form: &str) -> Result<(&'a str, &'a str), RuleError> {
    arg.rsplit_once('=')
        .map(|(path, value)| (path.trim(), value.trim()))
        .ok_or_else(|| arg_error(arg, format!("expected {form}")))
}

fn arg_error(arg: &str, message: impl fmt::Display) -> RuleError {
    RuleError {
        context: format!("`{arg}`"),
        message: message.to_string(),
    }
}

/// A default [`RuleSet`] plus sections selected by JSON-RPC method or HTTP route.
#[derive(Debug, Clone)]
pub struct Rules {
    default: RuleSet,
    sections: Vec<(Selector, Overlay)>,
}

/// What a section applies to.
#[derive(Debug, Clone)]
enum Selector {
    /// A glob of the name requests are counted under: a JSON-RPC or gRPC
    /// method, or an HTTP method and route (`GET /items/{id}`).
    Method(Vec<Glob<u8>>),
    /// HTTP method (`None` for any) and request-target glob.
    Http {
        method: Option<String>,
        path: Vec<Glob<u8>>,
    },
    /// Flow step name glob.
    Step(Vec<Glob<u8>>),
}

impl Selector {
    /// Whether a request counted under `name`, to `target` (by
    /// `http_method` when it is an HTTP request), is selected.
    fn accepts(&self, name: &str, http_method: Option<&str>, target: &str) -> bool {
        match (self, http_method) {
            (Selector::Method(glob), _) => byte_glob_match(glob, name),
            (Selector::Http { method, path }, Some(actual)) => {
                method
                    .as_deref()
                    .is_none_or(|want| want.eq_ignore_ascii_case(actual))
                    && byte_glob_match(path, target)
            }
            _ => false,
        }
    }
}

/// The rules of one file section: lists to add, flags to override.
#[derive(Debug, Clone, Default)]
struct Overlay {
    lists: RuleSet,
    subset: Option<bool>,
    hex_case_insensitive: Option<bool>,
    jsonrpc: Option<bool>,
    ignore_error_message: Option<bool>,
}

impl Overlay {
    fn apply(&self, to: &mut RuleSet) {
        to.ignore.extend_from_slice(&self.lists.ignore);
        to.unordered.extend_from_slice(&self.lists.unordered);
        to.array_keys.extend_from_slice(&self.lists.array_keys);
        to.tolerances.extend_from_slice(&self.lists.tolerances);
        for (flag, value) in [
            (&mut to.subset, self.subset),
            (&mut to.hex_case_insensitive, self.hex_case_insensitive),
            (&mut to.jsonrpc, self.jsonrpc),
            (&mut to.ignore_error_message, self.ignore_error_message),
        ] {
            if let Some(value) = value {
                *flag = value;
            }
        }
    }
}

impl Rules {
    /// Rules without sections: `default` for every request.
    pub fn new(default: RuleSet) -> Self {
        Rules {
            default,
            sections: Vec::new(),
        }
    }

    /// Reads a rule file (format in the module docs); its top-level keys are applied on
    /// top of `base`. Errors name the section, key and value at fault.
    pub fn from_toml(text: &str, base: RuleSet) -> Result<Rules, RuleError> {
        let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| RuleError {
            context: "rules file".to_string(),
            message: e.to_string().trim_end().to_string(),
        })?;
        let mut sections = Vec::new();
        for kind in ["method", "http", "step"] {
            let Some(value) = table.remove(kind) else {
                continue;
            };
            let toml::Value::Table(entries) = value else {
                return Err(file_error(
                    kind,
                    "expected sections like [method.NAME], [http.\"GET /path\"] or [step.NAME]",
                ));
            };
            for (name, body) in entries {
                let context = format!("[{kind}.{}]", toml_key(&name));
                let selector = parse_selector(kind, &name).map_err(|m| file_error(&context, m))?;
                let toml::Value::Table(body) = body else {
                    return Err(file_error(&context, "expected a table of rules"));
                };
                sections.push((selector, parse_overlay(&context, &body)?));
            }
        }
        let mut default = base;
        parse_overlay("top level", &table)?.apply(&mut default);
        Ok(Rules { default, sections })
    }

    /// Add a `[step.NAME]` section (a scenario step's own rules) from its
    /// TOML table.
    ///
    /// # Errors
    /// Unknown keys or bad paths, naming them.
    pub fn add_step(&mut self, name: &str, table: &toml::Table) -> Result<(), RuleError> {
        let context = format!("[step.{}]", toml_key(name));
        let overlay = parse_overlay(&context, table)?;
        self.sections
            .push((Selector::Step(byte_glob(name)), overlay));
        Ok(())
    }

    /// The rules for one flow step: the default merged with every
    /// `[step.NAME]` section whose glob matches `name`.
    pub fn for_step(&self, name: &str) -> Cow<'_, RuleSet> {
        let mut merged: Option<RuleSet> = None;
        for (section, overlay) in &self.sections {
            if let Selector::Step(glob) = section {
                if byte_glob_match(glob, name) {
                    overlay.apply(merged.get_or_insert_with(|| self.default.clone()));
                }
            }
        }
        merged.map_or(Cow::Borrowed(&self.default), Cow::Owned)
    }

    /// The rules for one request: the default merged with every matching section.
    /// `selector` is a JSON-RPC method name (`eth_getBlockByNumber`) or an HTTP method
    /// and request target (`GET /users/42`), which `[http]` sections select;
    /// `name` is the name the request is counted under (the same, or
    /// `GET /users/{id}`), which `[method]` sections select.
    pub fn for_method(&self, selector: &str, name: &str, jsonrpc: bool) -> Cow<'_, RuleSet> {
        let (http_method, target) = match selector.split_once(' ') {
            Some((method, target)) => (Some(method), target.trim()),
            None => (None, selector),
        };
        // JSON-RPC awareness found in the request is a default like the
        // others: a section that sets `jsonrpc` overrides it.
        let base = || {
            let mut rules = self.default.clone();
            rules.jsonrpc |= jsonrpc;
            rules
        };
        let mut merged: Option<RuleSet> = None;
        for (section, overlay) in &self.sections {
            if section.accepts(name, http_method, target) {
                overlay.apply(merged.get_or_insert_with(base));
            }
        }
        match merged {
            Some(rules) => Cow::Owned(rules),
            None if jsonrpc && !self.default.jsonrpc => Cow::Owned(base()),
            None => Cow::Borrowed(&self.default),
        }
    }
}

fn file_error(context: &str, message: impl fmt::Display) -> RuleError {
    RuleError {
        context: format!("rules file, {context}"),
        message: message.to_string(),
    }
}

/// A section name as written in TOML: bare when it can be, quoted otherwise.
fn toml_key(name: &str) -> String {
    if !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        name.to_string()
    } else {
        format!("{name:?}")
    }
}

fn parse_selector(kind: &str, name: &str) -> Result<Selector, String> {
    if kind == "step" {
        if name.is_empty() {
            return Err("a step name must be non-empty".into());
        }
        return Ok(Selector::Step(byte_glob(name)));
    }
    if kind == "method" {
        if name.is_empty() {
            return Err("a method name must be non-empty".into());
        }
        return Ok(Selector::Method(byte_glob(name)));
    }
    http_selector(name)
        .ok_or_else(|| "expected \"METHOD /path\", e.g. \"GET /users/*\" or \"* /health\"".into())
}

/// `METHOD /path` (`*` for any method or path) as a selector of HTTP
/// requests.
fn http_selector(name: &str) -> Option<Selector> {
    match name.split_once(' ') {
        Some((method, path))
            if (method == "*" || method.bytes().all(|b| b.is_ascii_alphabetic()))
                && !method.is_empty()
                && (path.starts_with('/') || path == "*") =>
        {
            Some(Selector::Http {
                method: (method != "*").then(|| method.to_string()),
                path: byte_glob(path),
            })
        }
        _ => None,
    }
}

const KEYS: &str = "`ignore`, `subset`, `unordered`, `array_keys`, `tolerance`, \
                    `hex_case_insensitive`, `jsonrpc`, `ignore_error_message`";

fn parse_overlay(context: &str, table: &toml::Table) -> Result<Overlay, RuleError> {
    let mut overlay = Overlay::default();
    for (key, value) in table {
        let at = |message: String| file_error(&format!("{context}, `{key}`"), message);
        let lists = &mut overlay.lists;
        match key.as_str() {
            "ignore" => lists.ignore = patterns(value).map_err(at)?,
            "unordered" => lists.unordered = patterns(value).map_err(at)?,
            "array_keys" => {
                for (path, field) in entries(value).map_err(&at)? {
                    let field = match field {
                        toml::Value::String(field) if !field.is_empty() => field.clone(),
                        _ => return Err(at(format!("`{path}`: expected a field name string"))),
                    };
                    lists.array_keys.push((pattern(path).map_err(&at)?, field));
                }
            }
            "tolerance" => {
                for (path, value) in entries(value).map_err(&at)? {
                    let text = match value {
                        toml::Value::String(text) => text.clone(),
                        toml::Value::Integer(n) => n.to_string(),
                        toml::Value::Float(x) => x.to_string(),
                        _ => return Err(at(format!("`{path}`: expected \"0.5\" or \"1%\""))),
                    };
                    let tolerance = text.parse().map_err(|e| at(format!("`{path}`: {e}")))?;
                    lists
                        .tolerances
                        .push((pattern(path).map_err(&at)?, tolerance));
                }
            }
            "subset" => overlay.subset = Some(boolean(value).map_err(at)?),
            "hex_case_insensitive" => {
                overlay.hex_case_insensitive = Some(boolean(value).map_err(at)?);
            }
            "jsonrpc" => overlay.jsonrpc = Some(boolean(value).map_err(at)?),
            "ignore_error_message" => {
                overlay.ignore_error_message = Some(boolean(value).map_err(at)?);
            }
            _ => {
                return Err(file_error(
                    context,
                    format!("unknown key `{key}`; expected one of {KEYS}"),
                ))
            }
        }
    }
    Ok(overlay)
}

fn pattern(text: &str) -> Result<PathPattern, String> {
    text.parse()
        .map_err(|e: super::path::PathError| e.to_string())
}

fn patterns(value: &toml::Value) -> Result<Vec<PathPattern>, String> {
    match value {
        toml::Value::Array(items) => items
            .iter()
            .map(|item| match item {
                toml::Value::String(text) => pattern(text),
                other => Err(format!("expected path strings, found {}", other.type_str())),
            })
            .collect(),
        other => Err(format!(
            "expected a list of paths like [\"$.a\"], found {}",
            other.type_str()
        )),
    }
}

fn entries(value: &toml::Value) -> Result<&toml::Table, String> {
    match value {
        toml::Value::Table(table) => Ok(table),
        other => Err(format!(
            "expected a table like {{ \"$.a\" = ... }}, found {}",
            other.type_str()
        )),
    }
}

fn boolean(value: &toml::Value) -> Result<bool, String> {
    value
        .as_bool()
        .ok_or_else(|| format!("expected true or false, found {}", value.type_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(text: &str) -> PathPattern {
        match text.parse() {
            Ok(p) => p,
            Err(e) => panic!("{e}"),
        }
    }

    const FILE: &str = r#"
        ignore = ["$..timestamp"]
        jsonrpc = true

        [method.eth_getBlockByNumber]
        ignore = ["$.result.size"]
        unordered = ["$.result.transactions"]
        tolerance = { "$.result.gasUsed" = "1%", "$.result.baseFee" = 2 }
        array_keys = { "$.result.logs" = "logIndex" }

        [method."eth_get*"]
        ignore = ["$.result.blockHash"]
        jsonrpc = false

        [http."GET /users/*"]
        subset = true
    "#;

    fn rules() -> Rules {
        let base = RuleSet {
            hex_case_insensitive: true,
            ..RuleSet::default()
        };
        match Rules::from_toml(FILE, base) {
            Ok(rules) => rules,
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn default_rules_apply_to_unmatched_selectors() {
        let rules = rules();
        let chosen = rules.for_method("eth_call", "eth_call", false);
        assert!(matches!(chosen, Cow::Borrowed(_)));
        assert_eq!(chosen.ignore, vec![p("$..timestamp")]);
        assert!(chosen.jsonrpc && chosen.hex_case_insensitive && !chosen.subset);
    }

    #[test]
    fn matching_sections_add_lists_and_override_flags_in_file_order() {
        let rules = rules();
        let block = rules.for_method("eth_getBlockByNumber", "eth_getBlockByNumber", false);
        assert_eq!(
            block.ignore,
            vec![
                p("$..timestamp"),
                p("$.result.size"),
                p("$.result.blockHash")
            ]
        );
        assert_eq!(block.unordered, vec![p("$.result.transactions")]);
        assert_eq!(
            block.tolerances,
            vec![
                (p("$.result.gasUsed"), Tolerance::Relative(0.01)),
                (p("$.result.baseFee"), Tolerance::Absolute(2.0)),
            ]
        );
        assert_eq!(
            block.array_keys,
            vec![(p("$.result.logs"), "logIndex".into())]
        );
        assert!(!block.jsonrpc, "the glob section turns jsonrpc off");
        // Also when the request itself is JSON-RPC (awareness on by default).
        assert!(
            !rules
                .for_method("eth_getBlockByNumber", "eth_getBlockByNumber", true)
                .jsonrpc
        );
        assert!(rules.for_method("eth_call", "eth_call", true).jsonrpc);

        let balance = rules.for_method("eth_getBalance", "eth_getBalance", false);
        assert_eq!(
            balance.ignore,
            vec![p("$..timestamp"), p("$.result.blockHash")]
        );
        assert!(balance.unordered.is_empty());
    }

    #[test]
    fn http_sections_match_method_and_path() {
        let rules = rules();
        assert!(
            rules
                .for_method("GET /users/42", "GET /users/42", false)
                .subset
        );
        assert!(
            rules
                .for_method("get /users/42", "get /users/42", false)
                .subset
        );
        assert!(
            !rules
                .for_method("POST /users/42", "POST /users/42", false)
                .subset
        );
        assert!(
            !rules
                .for_method("GET /orders/1", "GET /orders/1", false)
                .subset
        );
        // A method name never selects an HTTP section and vice versa.
        assert!(!rules.for_method("/users/42", "/users/42", false).subset);
        assert!(rules
            .for_method("GET eth_getBalance", "GET eth_getBalance", false)
            .unordered
            .is_empty());
    }

    #[test]
    fn rule_file_errors_name_the_place() {
        let cases = [
            (
                "ignor = []",
                "rules file, top level: unknown key `ignor`; expected one of ",
            ),
            (
                "[method.eth_call]\nignore = [\"$.a[\"]",
                "rules file, [method.eth_call], `ignore`: `$.a[` : unclosed bracket",
            ),
            (
                "[method.\"eth_*\"]\ntolerance = { \"$.a\" = \"lots\" }",
                "rules file, [method.\"eth_*\"], `tolerance`: `$.a`: tolerance `lots`: expected",
            ),
            (
                "[http.\"/users\"]\nsubset = true",
                "rules file, [http.\"/users\"]: expected \"METHOD /path\"",
            ),
            (
                "[http.\"GET /x\"]\nsubset = \"yes\"",
                "rules file, [http.\"GET /x\"], `subset`: expected true or false, found string",
            ),
            (
                "unordered = \"$.a\"",
                "rules file, top level, `unordered`: expected a list of paths",
            ),
            (
                "array_keys = { \"$.a\" = 1 }",
                "rules file, top level, `array_keys`: `$.a`: expected a field name string",
            ),
            ("method = 1", "rules file, method: expected sections like"),
            ("ignore = [", "rules file: TOML parse error"),
        ];
        for (text, prefix) in cases {
            match Rules::from_toml(text, RuleSet::default()) {
                Ok(_) => panic!("{text:?} should be rejected"),
                Err(e) => assert!(
                    e.to_string().starts_with(prefix),
                    "{text:?}: got {e}, expected {prefix}…"
                ),
            }
        }
    }

    #[test]
    fn tolerances_parse() {
        assert_eq!("0.5".parse(), Ok(Tolerance::Absolute(0.5)));
        assert_eq!(" 1% ".parse(), Ok(Tolerance::Relative(0.01)));
        for bad in ["", "%", "-1", "abc", "1%%", "inf", "NaN"] {
            match bad.parse::<Tolerance>() {
                Ok(t) => panic!("{bad:?} parsed as {t:?}"),
                Err(e) => assert!(e.to_string().starts_with(&format!("tolerance `{bad}`"))),
            }
        }
    }

    #[test]
    fn command_line_assignments() {
        assert_eq!(
            parse_array_key("$.result.logs=logIndex"),
            Ok((p("$.result.logs"), "logIndex".to_string()))
        );
        assert_eq!(
            parse_tolerance("$['a=b']=1%"),
            Ok((p("$['a=b']"), Tolerance::Relative(0.01)))
        );
        assert_eq!(
            parse_array_key("$.a").map_err(|e| e.to_string()),
            Err("`$.a`: expected PATH=FIELD".to_string())
        );
        assert_eq!(
            parse_tolerance("$.a[=1").map_err(|e| e.to_string()),
            Err("`$.a[=1`: `$.a[` : unclosed bracket".to_string())
        );
    }
}
