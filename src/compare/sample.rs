//! Samples of a mismatch, for `-v` and saved runs: the request, each
//! endpoint's value at the differing field, and a unified diff of the
//! pretty-printed bodies. Built only for the first few requests of a group.

use super::json::value_at;
use super::path::Segment;
use super::verdict::{describe, Finding};
use crate::model::Outcome;
use crate::model::Request;
use crate::stats::MismatchSample;

/// Longest request text kept in a sample.
const REQUEST_LIMIT: usize = 500;
/// Longest value kept per endpoint.
const VALUE_LIMIT: usize = 300;
/// Most diff lines kept.
const DIFF_LINES: usize = 40;

/// A sample of `finding` in this request; `labels` name the diff's two
/// sides (the reference's and the differing endpoint's labels).
pub fn sample(
    req: &Request,
    outcomes: &[Option<&Outcome>],
    finding: &Finding,
    labels: (&str, &str),
) -> MismatchSample {
    // A paged step's finding: the path names the item by its key, `at`
    // renders it keyed (`paginate::regroup`).
    let paged = matches!(
        finding.path.as_deref(),
        Some([Segment::Key(_), Segment::Key(_), ..])
    ) && finding.at.starts_with("$.items[?");
    if paged {
        return item_sample(req, outcomes, finding, labels);
    }
    let values = outcomes
        .iter()
        .map(|o| match o {
            None => "-".to_string(),
            Some(o) => cut(&value(o, finding), VALUE_LIMIT),
        })
        .collect();
    let diff = match (outcomes.first(), outcomes.get(finding.endpoint)) {
        (Some(Some(a)), Some(Some(b))) => diff(a, b, finding, labels),
        _ => String::new(),
    };
    MismatchSample {
        seq: req.seq,
        request: shown_request(req),
        values,
        diff,
    }
}

/// How a sample shows its request: a stream line by its body; a request
/// with a method and target of its own (a flow step's, a HAR entry's) as
/// `METHOD target body`, the target's credentials masked.
pub fn shown_request(req: &Request) -> String {
    let body = String::from_utf8_lossy(&req.body);
    let text = match &req.target {
        None => body.into_owned(),
        Some(target) => format!(
            "{} {} {body}",
            req.method.as_ref().map_or("GET", |m| m.as_str()),
            crate::model::secret::mask_url(target)
        )
        .trim_end()
        .to_string(),
    };
    cut(&text, REQUEST_LIMIT)
}

/// A sample of a paged step's finding: the item at each endpoint (the
/// answers hold every item of a traversal: the diff is of the two items).
fn item_sample(
    req: &Request,
    outcomes: &[Option<&Outcome>],
    finding: &Finding,
    labels: (&str, &str),
) -> MismatchSample {
    let item = |o: &Option<&Outcome>| -> Option<String> {
        let path = finding.path.as_deref()?;
        match &o.as_ref()?.result {
            Ok(r) => value_at(&r.body, &path[..path.len().min(2)]),
            Err(_) => None,
        }
    };
    let values: Vec<String> = outcomes
        .iter()
        .map(|o| item(o).unwrap_or_else(|| "(absent)".into()))
        .collect();
    let pretty_item = |v: &str| pretty(v.as_bytes()) + "\n";
    let diff = match (values.first(), values.get(finding.endpoint)) {
        (Some(a), Some(b)) => diff_texts(&pretty_item(a), &pretty_item(b), labels),
        _ => String::new(),
    };
    MismatchSample {
        seq: req.seq,
        request: cut(
            &format!(
                "{} {} (first page; item {})",
                req.method.as_ref().map_or("GET", |m| m.as_str()),
                req.target.as_deref().unwrap_or("/"),
                finding.at
            ),
            REQUEST_LIMIT,
        ),
        values: values.iter().map(|v| cut(v, VALUE_LIMIT)).collect(),
        diff,
    }
}

/// What an outcome holds at the finding's field.
fn value(o: &Outcome, finding: &Finding) -> String {
    match (&o.result, &finding.path) {
        (Ok(r), Some(path)) => value_at(&r.body, path).unwrap_or_else(|| "(absent)".to_string()),
        (Ok(r), None) if finding.field == "body" => String::from_utf8_lossy(&r.body).into_owned(),
        (Ok(r), None) if finding.field.starts_with("header ") => {
            let name = &finding.field["header ".len()..];
            let v: Vec<&str> = r
                .headers
                .iter()
                .filter(|(n, _)| n == name)
                .filter_map(|(_, v)| v.to_str().ok())
                .collect();
            if v.is_empty() {
                "(absent)".to_string()
            } else {
                v.join(", ")
            }
        }
        _ => describe(o),
    }
}

/// Bodies up to this size together are diffed whole, pretty-printed.
/// Larger ones are diffed around the finding only: two 60 MB answers
/// pretty-printed and diffed by line held 1.6 GB.
const WHOLE_DIFF: usize = 256 * 1024;

/// Bytes of text either side of the first difference, when larger bodies
/// are not JSON or the finding has no place in them to show.
const WINDOW: usize = 2048;

/// A unified diff of the two bodies, pretty-printed when they are JSON,
/// its headers the endpoints' labels: of the whole bodies when they are
/// small, else of the value around the finding (its parent, or itself),
/// else of a window around the first differing byte.
fn diff(a: &Outcome, b: &Outcome, finding: &Finding, labels: (&str, &str)) -> String {
    let (Ok(a), Ok(b)) = (&a.result, &b.result) else {
        return String::new();
    };
    if a.body.len() + b.body.len() <= WHOLE_DIFF {
        return diff_texts(&pretty(&a.body), &pretty(&b.body), labels);
    }
    let near = |body: &[u8]| -> Option<String> {
        let path = finding.path.as_deref()?;
        (path.len().saturating_sub(1)..=path.len())
            .filter_map(|k| value_at(body, &path[..k]))
            .find(|v| v.len() <= WHOLE_DIFF / 2)
    };
    match (near(&a.body), near(&b.body)) {
        (Some(x), Some(y)) => diff_texts(&pretty(x.as_bytes()), &pretty(y.as_bytes()), labels),
        _ => {
            let (x, y) = window(&a.body, &b.body);
            diff_texts(&x, &y, labels)
        }
    }
}

/// Each body's text from [`WINDOW`] bytes before their first difference to
/// as many after it.
fn window(a: &[u8], b: &[u8]) -> (String, String) {
    let first = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    let start = first.saturating_sub(WINDOW);
    let part = |body: &[u8]| {
        let end = (first + WINDOW).min(body.len());
        String::from_utf8_lossy(&body[start.min(end)..end]).into_owned() + "\n"
    };
    (part(a), part(b))
}

/// A unified diff of two texts, headed by `labels`, cut to the first lines.
pub fn diff_texts(pa: &str, pb: &str, labels: (&str, &str)) -> String {
    let text = similar::TextDiff::from_lines(pa, pb)
        .unified_diff()
        .context_radius(2)
        .header(labels.0, labels.1)
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    let mut s = lines[..lines.len().min(DIFF_LINES)].join("\n");
    if lines.len() > DIFF_LINES {
        s.push_str(&format!(
            "\n... ({} more diff lines)",
            lines.len() - DIFF_LINES
        ));
    }
    s
}

/// Pretty JSON, or the text as it is; a body larger than [`WHOLE_DIFF`]
/// as it is, never built into a tree.
pub fn pretty(body: &[u8]) -> String {
    if body.len() > WHOLE_DIFF {
        return String::from_utf8_lossy(body).into_owned();
    }
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(v) => serde_json::to_string_pretty(&v).unwrap_or_default(),
        Err(_) => String::from_utf8_lossy(body).into_owned(),
    }
}

/// Cut `s` to at most `limit` bytes on a character boundary, with a note.
pub fn cut(s: &str, limit: usize) -> String {
    if s.len() <= limit {
        return s.to_string();
    }
    let mut end = limit;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} more bytes)", &s[..end], s.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(body: &str) -> Option<Outcome> {
        Some(Outcome::test_response(200, body))
    }

    #[test]
    fn a_sample_has_each_value_at_the_path_and_a_diff() {
        let c = crate::compare::Comparer::new(crate::compare::CompareMode::Auto);
        let outcomes = [
            resp(r#"{"result":{"balance":"0x10","n":1}}"#),
            resp(r#"{"result":{"n":1,"balance":"0x11"}}"#),
        ];
        let kind = || crate::compare::method::MethodName {
            group: "m".into(),
            selector: "m".into(),
            jsonrpc: false,
            step: false,
        };
        let outcomes = [outcomes[0].as_ref(), outcomes[1].as_ref()];
        let j = c.judge(&kind, &outcomes);
        let s = sample(
            &Request::line(7, "{\"q\":1}".into()),
            &outcomes,
            &j.findings[0],
            ("old", "new"),
        );
        assert_eq!(s.seq, 7);
        assert_eq!(s.request, "{\"q\":1}");
        assert_eq!(s.values, ["\"0x10\"", "\"0x11\""]);
        assert!(s.diff.contains("-    \"balance\": \"0x10\""), "{}", s.diff);
        assert!(s.diff.contains("+    \"balance\": \"0x11\""), "{}", s.diff);
        // The diff's headers are the endpoints' labels, not roles.
        assert!(s.diff.starts_with("--- old\n+++ new"), "{}", s.diff);
        assert_eq!(cut("héllo", 2), "h... (5 more bytes)");
    }

    /// Large answers are diffed around the finding: the object that holds
    /// the differing field, or for bodies that are not JSON a window
    /// around the first differing byte; never the whole bodies.
    #[test]
    fn a_large_answers_diff_shows_the_finding_and_stays_small() {
        let items = |changed: u32| {
            let items: Vec<String> = (0..5000)
                .map(|i| {
                    format!(
                        r#"{{"i":{i},"gas":{},"pad":"{}"}}"#,
                        if i == 4000 { changed } else { 1 },
                        "x".repeat(40)
                    )
                })
                .collect();
            format!(r#"{{"items":[{}]}}"#, items.join(","))
        };
        assert!(items(1).len() > WHOLE_DIFF);
        let s = first_sample(&items(1), &items(2));
        assert_eq!(s.values, ["1", "2"]);
        assert!(
            s.diff.contains("-  \"gas\": 1,") && s.diff.contains("+  \"gas\": 2,"),
            "{}",
            s.diff
        );
        assert!(
            s.diff.contains("\"i\": 4000") && s.diff.len() < 1000,
            "{}",
            s.diff
        );
        // Not JSON: the bytes around the first difference.
        let plain = |c: char| format!("{}{c}{}", "a".repeat(300_000), "b".repeat(300_000));
        let s = first_sample(&plain('1'), &plain('2'));
        let window = format!("-{}1{}", "a".repeat(WINDOW), "b".repeat(WINDOW - 1));
        assert!(s.diff.contains(&window), "{}", &s.diff[..200]);
    }

    /// The sample of the first finding between answers `a` and `b`.
    fn first_sample(a: &str, b: &str) -> MismatchSample {
        let c = crate::compare::Comparer::new(crate::compare::CompareMode::Auto);
        let kind = || crate::compare::method::MethodName {
            group: "m".into(),
            selector: "m".into(),
            jsonrpc: false,
            step: false,
        };
        let (a, b) = (resp(a), resp(b));
        let outcomes = [a.as_ref(), b.as_ref()];
        let j = c.judge(&kind, &outcomes);
        let req = Request::line(1, "{}".into());
        sample(&req, &outcomes, &j.findings[0], ("a", "b"))
    }

    /// A compared header's sample shows that header's values, not the
    /// others an answer carries.
    #[test]
    fn a_header_finding_shows_that_headers_values() {
        let with = |etag: &str| {
            let mut o = Outcome::test_response(200, "{}");
            if let Ok(r) = &mut o.result {
                for (n, v) in [
                    ("content-type", "application/json"),
                    ("etag", etag),
                    ("etag", "w"),
                ] {
                    r.headers.push((n.parse().unwrap(), v.parse().unwrap()));
                }
            }
            o
        };
        let finding = Finding {
            endpoint: 1,
            field: "header etag".into(),
            at: "header etag".into(),
            path: None,
            kind: "changed".into(),
        };
        assert_eq!(value(&with("a"), &finding), "a, w");
        let none = Outcome::test_response(200, "{}");
        assert_eq!(value(&none, &finding), "(absent)");
    }
}
