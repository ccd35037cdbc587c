//! Templates of scenario files (and of a stream's lines, `line.rs`): text
//! with `{{ expr }}` holes, compiled once and rendered per request, each
//! hole escaped for where it stands. An expression is a variable
//! (`{{ token }}`; a name may hold a JSON path's steps, `params[0].to`)
//! or a function call (`{{ urlencode(user) }}`, `{{ random_int(1, 100) }}`)
//! whose arguments are expressions, `"strings"` or integers. Functions:
//! `uuid()`, `random_int(lo, hi)`, `random_string(n)`, `timestamp()`
//! (Unix seconds), `timestamp_ms()`, `urlencode(x)`, `base64(x)`,
//! `json(x)` (x as a JSON string literal).

use std::fmt::Write as _;

use base64::Engine as _;

/// How a hole's value is written into the surrounding text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Escape {
    /// As it is.
    None,
    /// Inside a JSON string literal: quotes, backslashes and control
    /// characters escaped.
    JsonString,
    /// In a URL's path or query: percent-encoded but for unreserved
    /// characters (RFC 3986), so a value is one path segment or one
    /// query value whatever it holds.
    Url,
}

/// A compiled template.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Template {
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(String),
    Hole(Expr, Escape),
}

/// An expression inside `{{ }}`.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Expr {
    Var(String),
    Str(String),
    Int(i64),
    Call(Func, Vec<Expr>),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Func {
    Uuid,
    RandomInt,
    RandomString,
    Timestamp,
    TimestampMs,
    UrlEncode,
    Base64,
    Json,
}

impl Func {
    fn parse(name: &str) -> Option<(Func, usize)> {
        Some(match name {
            "uuid" => (Func::Uuid, 0),
            "random_int" => (Func::RandomInt, 2),
            "random_string" => (Func::RandomString, 1),
            "timestamp" => (Func::Timestamp, 0),
            "timestamp_ms" => (Func::TimestampMs, 0),
            "urlencode" => (Func::UrlEncode, 1),
            "base64" => (Func::Base64, 1),
            "json" => (Func::Json, 1),
            _ => return None,
        })
    }
}

/// The functions a template may call, for error messages.
const FUNCTIONS: &str = "uuid(), random_int(lo, hi), random_string(n), timestamp(), timestamp_ms(), urlencode(x), base64(x), json(x)";

impl Template {
    /// Compile `text`, whose holes are written with `escape`.
    ///
    /// # Errors
    /// An unclosed `{{`, an empty or malformed expression, an unknown
    /// function or a wrong number of arguments, as a message naming it.
    pub(crate) fn parse(text: &str, escape: Escape) -> Result<Template, String> {
        Template::parse_with(text, |_| escape)
    }

    /// Compile `text`, each hole written as `escape_after` says given the
    /// literal text between the hole before it (or the start) and it: how
    /// a JSON body's holes inside its strings are told from those outside.
    ///
    /// # Errors
    /// As [`Template::parse`].
    pub(crate) fn parse_with(
        text: &str,
        mut escape_after: impl FnMut(&str) -> Escape,
    ) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            let escape = escape_after(&rest[..open]);
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_string()));
            }
            let after = &rest[open + 2..];
            let close = after
                .find("}}")
                .ok_or_else(|| format!("`{{{{` without `}}}}` in {text:?}"))?;
            let expr = parse_expr(after[..close].trim())
                .map_err(|e| format!("{e} in `{{{{{}}}}}`", &after[..close]))?;
            parts.push(Part::Hole(expr, escape));
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_string()));
        }
        Ok(Template { parts })
    }

    /// A template of literal text (no holes).
    pub(crate) fn literal(text: &str) -> Template {
        Template {
            parts: vec![Part::Text(text.to_string())],
        }
    }

    /// Append another template.
    pub(crate) fn push(&mut self, other: Template) {
        self.parts.extend(other.parts);
    }

    /// The variables the template reads.
    pub(crate) fn vars(&self) -> Vec<&str> {
        fn walk<'a>(e: &'a Expr, out: &mut Vec<&'a str>) {
            match e {
                Expr::Var(v) => out.push(v),
                Expr::Call(_, args) => args.iter().for_each(|a| walk(a, out)),
                Expr::Str(_) | Expr::Int(_) => {}
            }
        }
        let mut out = Vec::new();
        for p in &self.parts {
            if let Part::Hole(e, _) = p {
                walk(e, &mut out);
            }
        }
        out
    }

    /// Render with `lookup` for variables (every variable was checked to
    /// exist before the run; one that is missing renders empty). The
    /// random functions draw from `rng`: seeded by the instance and step,
    /// every endpoint gets the same values for the same instance, so the
    /// endpoints are asked the same question.
    pub(crate) fn render(
        &self,
        lookup: &dyn Fn(&str) -> Option<String>,
        rng: &mut fastrand::Rng,
    ) -> String {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Hole(e, Escape::None) => out.push_str(&eval(e, lookup, rng)),
                Part::Hole(e, Escape::JsonString) => {
                    let v = serde_json::Value::String(eval(e, lookup, rng)).to_string();
                    out.push_str(&v[1..v.len() - 1]);
                }
                Part::Hole(e, Escape::Url) => out.push_str(&urlencode(&eval(e, lookup, rng))),
            }
        }
        out
    }
}

fn eval(e: &Expr, lookup: &dyn Fn(&str) -> Option<String>, rng: &mut fastrand::Rng) -> String {
    match e {
        Expr::Var(v) => lookup(v).unwrap_or_default(),
        Expr::Str(s) => s.clone(),
        Expr::Int(n) => n.to_string(),
        Expr::Call(f, args) => {
            let mut arg = |i: usize| eval(&args[i], lookup, rng);
            let values: Vec<String> = (0..args.len()).map(&mut arg).collect();
            let int = |i: usize| values[i].trim().parse::<i64>().unwrap_or(0);
            match f {
                Func::Uuid => uuid(rng),
                Func::RandomInt => {
                    let (lo, hi) = (int(0), int(1));
                    rng.i64(lo.min(hi)..=hi.max(lo)).to_string()
                }
                Func::RandomString => {
                    let n = usize::try_from(int(0)).unwrap_or(0).min(1 << 20);
                    (0..n).map(|_| rng.alphanumeric()).collect()
                }
                Func::Timestamp => unix().as_secs().to_string(),
                Func::TimestampMs => unix().as_millis().to_string(),
                Func::UrlEncode => urlencode(&values[0]),
                Func::Base64 => base64::engine::general_purpose::STANDARD.encode(&values[0]),
                Func::Json => serde_json::Value::String(values[0].clone()).to_string(),
            }
        }
    }
}

fn unix() -> std::time::Duration {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
}

/// A random (version 4) UUID.
fn uuid(rng: &mut fastrand::Rng) -> String {
    let mut b: [u8; 16] = std::array::from_fn(|_| rng.u8(..));
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let mut s = String::with_capacity(36);
    for (i, byte) in b.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            s.push('-');
        }
        let _ = write!(s, "{byte:02x}");
    }
    s
}

/// Percent-encode everything but unreserved characters (RFC 3986).
fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// Parse one expression (the whole of `s`).
fn parse_expr(s: &str) -> Result<Expr, String> {
    let mut p = Parser { s, at: 0 };
    let e = p.expr()?;
    p.skip_space();
    if p.at < s.len() {
        return Err(format!("unexpected {:?}", &s[p.at..]));
    }
    Ok(e)
}

struct Parser<'a> {
    s: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self.s[self.at..].starts_with(char::is_whitespace) {
            self.at += 1;
        }
    }

    fn expr(&mut self) -> Result<Expr, String> {
        self.skip_space();
        let rest = &self.s[self.at..];
        if let Some(body) = rest.strip_prefix('"') {
            let end = body
                .find('"')
                .ok_or_else(|| "a string without its closing quote".to_string())?;
            self.at += end + 2;
            return Ok(Expr::Str(body[..end].to_string()));
        }
        // A name may be a JSON path's steps (`params[0].to`), for the
        // fields of a stream's line (`--template`).
        let len = rest
            .find(|c: char| {
                !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '[' | ']'))
            })
            .unwrap_or(rest.len());
        if len == 0 {
            return Err(if rest.is_empty() {
                "an empty expression".to_string()
            } else {
                format!("unexpected {rest:?}")
            });
        }
        let word = &rest[..len];
        self.at += len;
        if let Ok(n) = word.parse::<i64>() {
            return Ok(Expr::Int(n));
        }
        self.skip_space();
        if !self.s[self.at..].starts_with('(') {
            return Ok(Expr::Var(word.to_string()));
        }
        self.at += 1;
        let (func, arity) = Func::parse(word)
            .ok_or_else(|| format!("unknown function {word}(); there are {FUNCTIONS}"))?;
        let mut args = Vec::new();
        loop {
            self.skip_space();
            if self.s[self.at..].starts_with(')') {
                self.at += 1;
                break;
            }
            if !args.is_empty() {
                if !self.s[self.at..].starts_with(',') {
                    return Err(format!("expected `,` or `)` in the arguments of {word}()"));
                }
                self.at += 1;
            }
            args.push(self.expr()?);
        }
        if args.len() != arity {
            return Err(format!(
                "{word}() takes {arity} argument{}, not {}",
                if arity == 1 { "" } else { "s" },
                args.len()
            ));
        }
        Ok(Expr::Call(func, args))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(name: &str) -> Option<String> {
        match name {
            "user" => Some("ann lee".into()),
            "quote" => Some("say \"hi\"".into()),
            "n" => Some("7".into()),
            _ => None,
        }
    }

    #[test]
    fn renders_variables_and_functions() {
        let t = Template::parse(
            "/u/{{ urlencode(user) }}?n={{n}}&b={{ base64(\"ab\") }}",
            Escape::None,
        )
        .unwrap();
        assert_eq!(
            t.render(&vars, &mut fastrand::Rng::with_seed(1)),
            "/u/ann%20lee?n=7&b=YWI="
        );
        assert_eq!(t.vars(), ["user", "n"]);
        let t = Template::parse("{\"q\":\"{{ quote }}\"}", Escape::JsonString).unwrap();
        assert_eq!(
            t.render(&vars, &mut fastrand::Rng::with_seed(1)),
            r#"{"q":"say \"hi\""}"#
        );
        let t = Template::parse("{{ json(quote) }}", Escape::None).unwrap();
        assert_eq!(
            t.render(&vars, &mut fastrand::Rng::with_seed(1)),
            r#""say \"hi\"""#
        );
        let r: i64 = Template::parse("{{ random_int(3, 5) }}", Escape::None)
            .unwrap()
            .render(&vars, &mut fastrand::Rng::with_seed(1))
            .parse()
            .unwrap();
        assert!((3..=5).contains(&r));
        let u = Template::parse("{{uuid()}}", Escape::None)
            .unwrap()
            .render(&vars, &mut fastrand::Rng::with_seed(1));
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        let s = Template::parse("{{ random_string(12) }}", Escape::None)
            .unwrap()
            .render(&vars, &mut fastrand::Rng::with_seed(1));
        assert_eq!(s.len(), 12);
    }

    #[test]
    fn each_hole_is_escaped_as_the_text_before_it_says() {
        let t = Template::parse("/u/{{ user }}?q={{ quote }}", Escape::Url).unwrap();
        assert_eq!(
            t.render(&vars, &mut fastrand::Rng::with_seed(1)),
            "/u/ann%20lee?q=say%20%22hi%22"
        );
        // Inside a quoted string or not, as the caller tells from the text.
        let t =
            Template::parse_with(
                "{\"q\": \"{{ quote }}\", \"n\": {{ n }}}",
                |before| match before.ends_with('"') {
                    true => Escape::JsonString,
                    false => Escape::None,
                },
            )
            .unwrap();
        assert_eq!(
            t.render(&vars, &mut fastrand::Rng::with_seed(1)),
            r#"{"q": "say \"hi\"", "n": 7}"#
        );
        assert_eq!(
            Template::parse("{{ params[0].to }}", Escape::None)
                .unwrap()
                .vars(),
            ["params[0].to"]
        );
    }

    #[test]
    fn bad_templates_say_what_is_wrong() {
        let err = |t: &str| Template::parse(t, Escape::None).unwrap_err();
        assert!(err("a {{ b").contains("without"));
        assert!(err("{{ }}").contains("empty"));
        assert!(err("{{ nope(1) }}").contains("unknown function nope()"));
        assert!(err("{{ uuid(1) }}").contains("takes 0 arguments, not 1"));
        assert!(err("{{ random_int(1) }}").contains("takes 2 arguments"));
        assert!(err("{{ a b }}").contains("unexpected"));
        assert!(err("{{ \"open }}").contains("closing quote"));
    }
}
