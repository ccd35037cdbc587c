//! Pagination: a flow step that follows an API's pages to the last one at
//! every endpoint, each endpoint in its own way, and compares the items
//! they returned rather than the pages (page boundaries may differ).
//!
//! How the next page is found ([`NextPage`]): an RFC 8288 `Link` header with
//! `rel="next"`; a URL in the answer (HAL `_links.next.href`, JSON:API
//! `links.next`); a cursor fed back as a query parameter (`next_cursor`,
//! optionally until `has_more` is false) or as a field of the JSON body
//! (gRPC-style `page_token` / `next_page_token`, empty when done); offset
//! and limit, or a page number, until a page is empty or short.
//!
//! A traversal stops early, with the reason counted, on a page that is not
//! JSON or has no item array, a next link to another host, a next page
//! seen before (a cycle), or more pages than the step's limit; an answer
//! that is an error (or over `--max-body`) stops it as a failed step.
//!
//! The items of a whole traversal become one answer for the comparison:
//! `{"items": {KEY: item, ...}, "repeated": {KEY: times, ...}}`, keyed by
//! each item's key, so the ordinary comparer finds missing, extra,
//! duplicated and changed items (named by key, grouped by field through
//! [`regroup`]), under the step's rules (items sit at `$.items.*`). Pages
//! are not kept; the items are, as compact JSON, until every endpoint has
//! finished the traversal (bounded by `max_pages` × `--max-body`).
//!
//! ```no_run
//! use versus::flow::{Call, Flow};
//! use versus::json_path::JsonPath;
//! use versus::flow::paginate::{NextPage, Pages, Paging};
//!
//! // Endpoint 0 pages with HATEOAS links, endpoint 1 with a keyset cursor.
//! let paging = Paging::per_endpoint(
//!     "id",
//!     vec![
//!         Pages::new("$.content", NextPage::Url(JsonPath::parse("$._links.next.href")?))?,
//!         Pages::new(
//!             "$.items",
//!             NextPage::Cursor { at: JsonPath::parse("$.next_cursor")?, param: "after".into(), more: None },
//!         )?
//!         .max_pages(500),
//!     ],
//! )?;
//! let flow = Flow::new("catalog")
//!     .step("all items", |ctx| async move {
//!         Ok(Call::get(if ctx.endpoint == 0 { "/items?page=0&size=100" } else { "/items?limit=100" }))
//!     })
//!     .paginate(paging);
//! # let _ = flow;
//! # Ok::<(), String>(())
//! ```

use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use bytes::Bytes;
use serde_json::Value;

use super::{Call, Reply};
use crate::compare::path::{render, render_grouped, Segment};
use crate::compare::verdict::Finding;
use crate::json_path::JsonPath;

/// Pages a traversal follows at most, unless the step says otherwise.
pub const DEFAULT_MAX_PAGES: u32 = 1000;

/// How a step pages: the items' key (the same at every endpoint) and each
/// endpoint's own way through its pages.
#[derive(Clone, Debug)]
pub struct Paging {
    key: JsonPath,
    key_name: String,
    pages: Vec<Pages>,
}

impl Paging {
    /// Every endpoint pages the same way; items are matched by the value
    /// at `key` in each item (`id` or a path such as `$.meta.id`).
    ///
    /// # Errors
    /// A key that is not a field name or a JSON path.
    pub fn new(key: &str, pages: Pages) -> Result<Paging, String> {
        Paging::per_endpoint(key, vec![pages])
    }

    /// Each endpoint (by position) pages its own way; `pages` has one entry
    /// per endpoint (or one for all).
    ///
    /// # Errors
    /// A key that is not a field name or a JSON path, or no pages.
    pub fn per_endpoint(key: &str, pages: Vec<Pages>) -> Result<Paging, String> {
        if pages.is_empty() {
            return Err("pagination without any page style".into());
        }
        let path = if key.starts_with('$') {
            key.to_string()
        } else {
            format!("$.{key}")
        };
        Ok(Paging {
            key: JsonPath::parse(&path).map_err(|e| format!("key: {e}"))?,
            key_name: key.trim_start_matches("$.").to_string(),
            pages,
        })
    }

    /// The item key as reports name it (`id`).
    pub fn key(&self) -> &str {
        &self.key_name
    }

    /// How endpoint `e` pages.
    pub(crate) fn at(&self, e: usize) -> &Pages {
        self.pages.get(e).unwrap_or(&self.pages[0])
    }
}

/// One endpoint's pages: where its items are, how to get the next page,
/// and how many pages to follow at most.
#[derive(Clone, Debug)]
pub struct Pages {
    items: JsonPath,
    next: NextPage,
    max_pages: u32,
}

impl Pages {
    /// Items in the array at `items` (`$.data`, `$._embedded.items`) of each
    /// page; the next page found by `next`.
    ///
    /// # Errors
    /// A path that does not parse.
    pub fn new(items: &str, next: NextPage) -> Result<Pages, String> {
        Ok(Pages {
            items: JsonPath::parse(items).map_err(|e| format!("items: {e}"))?,
            next,
            max_pages: DEFAULT_MAX_PAGES,
        })
    }

    /// Follow at most `n` pages (at least 1); a traversal with more is
    /// stopped and counted.
    pub fn max_pages(mut self, n: u32) -> Pages {
        self.max_pages = n.max(1);
        self
    }
}

/// How the next page is found.
#[derive(Clone, Debug)]
pub enum NextPage {
    /// The `Link` header's `rel="next"` URL (RFC 8288).
    Link,
    /// A URL (or path) at this place in the answer (HAL
    /// `$._links.next.href`, JSON:API `$.links.next`); null, absent or
    /// empty on the last page.
    Url(JsonPath),
    /// A cursor at `at`, sent back as query parameter `param`; the last
    /// page has none (null, absent or empty), or `false` at `more`.
    Cursor {
        /// Where the cursor is.
        at: JsonPath,
        /// The query parameter that carries it.
        param: String,
        /// A boolean that is false on the last page (`$.has_more`).
        more: Option<JsonPath>,
    },
    /// A token at `at`, sent back in the JSON request body's top-level
    /// `field` (`next_page_token` → `page_token`); empty when done.
    Token {
        /// Where the token is.
        at: JsonPath,
        /// The request body's field that carries it.
        field: String,
    },
    /// Query parameter `param` counts items skipped (from 0, or the first
    /// request's value) and grows by `limit` a page; a page with fewer
    /// than `limit` items is the last.
    Offset {
        /// The query parameter.
        param: String,
        /// Items a full page has.
        limit: u64,
    },
    /// Query parameter `param` numbers pages (from 1, or the first
    /// request's value); a page with fewer than `size` items is the last.
    Page {
        /// The query parameter.
        param: String,
        /// Items a full page has.
        size: u64,
    },
}

/// What follows a page.
pub(crate) enum AfterPage {
    /// The next page's request.
    Next(Call),
    /// That was the last page.
    Last,
    /// The traversal cannot go on: why, as reports group it, and the
    /// details.
    Stop(&'static str, String),
}

/// A traversal at one endpoint, as far as it went.
#[derive(Clone, Debug, Default)]
pub(crate) struct Traversal {
    /// Pages answered.
    pub pages: u32,
    /// Items with a key, once each.
    pub items: u64,
    /// Bytes of the pages' bodies as received (a gRPC answer's messages,
    /// not their JSON).
    pub bytes: u64,
    /// Items whose key an earlier item had.
    pub duplicates: u64,
    /// Items without a key (not compared).
    pub unkeyed: u64,
    /// Why it stopped before the last page, if it did: the reason as
    /// reports group it, and the details.
    pub stop: Option<(&'static str, String)>,
    /// From the first page's request to the last page's answer.
    pub time: std::time::Duration,
}

/// Why a traversal stops: the reason as reports group it, and the
/// details.
type Why = (&'static str, String);

const NOT_A_VALUE: &str = "the next page's cursor or link is not a value";
const NO_BODY: &str = "the request body cannot carry the page token";

/// A traversal in progress at one endpoint.
pub(crate) struct Walk<'a> {
    pages: &'a Pages,
    key: &'a JsonPath,
    /// The endpoint's authority and base path (next links are resolved
    /// against them).
    authority: &'a str,
    base_path: &'a str,
    seen: HashSet<u64>,
    counts: HashMap<Box<str>, u32>,
    /// `{"items":{` and the items so far.
    body: Vec<u8>,
    /// Where the page-numbering styles are.
    number: Option<u64>,
    pub done: Traversal,
}

impl<'a> Walk<'a> {
    /// A traversal of `paging` at endpoint `e` (with that authority and
    /// base path).
    pub(crate) fn new(paging: &'a Paging, e: usize, authority: &'a str, base: &'a str) -> Walk<'a> {
        Walk {
            pages: paging.at(e),
            key: &paging.key,
            authority,
            base_path: base,
            seen: HashSet::new(),
            counts: HashMap::new(),
            body: b"{\"items\":{".to_vec(),
            number: None,
            done: Traversal::default(),
        }
    }

    /// Take in the answer to `call` (a page, `wire` bytes as received: a
    /// gRPC answer's body is its messages as JSON) and say what follows.
    pub(crate) fn page(&mut self, call: &Call, reply: &Reply, wire: u64) -> AfterPage {
        self.done.pages += 1;
        self.done.bytes += wire;
        let depth = self.done.pages;
        if depth == 1 {
            self.seen.insert(fingerprint(call));
        }
        let json: Value = match serde_json::from_slice(&reply.body) {
            Ok(v) => v,
            Err(e) => return AfterPage::Stop("a page is not JSON", format!("page {depth}: {e}")),
        };
        let Some(Value::Array(items)) = self.pages.items.get(&json) else {
            return AfterPage::Stop(
                "a page has no item array",
                format!("page {depth}: nothing or no array at {}", self.pages.items),
            );
        };
        for item in items {
            self.item(item);
        }
        let n = items.len() as u64;
        let next = match self.next(call, reply, &json, n) {
            Ok(Some(next)) => next,
            Ok(None) => return AfterPage::Last,
            Err((kind, why)) => return AfterPage::Stop(kind, format!("page {depth}: {why}")),
        };
        if !self.seen.insert(fingerprint(&next)) {
            return AfterPage::Stop(
                "the next page is one seen before (a cycle)",
                format!("page {depth}: next {}", next.target()),
            );
        }
        if depth >= self.pages.max_pages {
            return AfterPage::Stop(
                "more pages than max_pages",
                format!("{} pages and more to come", self.pages.max_pages),
            );
        }
        AfterPage::Next(next)
    }

    fn item(&mut self, item: &Value) {
        let key = match self.key.get(item) {
            None | Some(Value::Null) => {
                self.done.unkeyed += 1;
                return;
            }
            Some(Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
        };
        let count = self.counts.entry(key.clone().into_boxed_str()).or_insert(0);
        *count += 1;
        if *count > 1 {
            self.done.duplicates += 1;
            return;
        }
        if self.done.items > 0 {
            self.body.push(b',');
        }
        self.done.items += 1;
        // Writing to a Vec cannot fail.
        let _ = serde_json::to_writer(&mut self.body, &key);
        self.body.push(b':');
        let _ = serde_json::to_writer(&mut self.body, item);
    }

    /// The request of the page after the one `call` asked for, or `None`
    /// after the last.
    fn next(
        &mut self,
        call: &Call,
        reply: &Reply,
        json: &Value,
        n: u64,
    ) -> Result<Option<Call>, Why> {
        let text = |at: &JsonPath| -> Result<Option<String>, Why> {
            match at.get(json) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) if s.is_empty() => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(v @ Value::Number(_)) => Ok(Some(v.to_string())),
                Some(_) => Err((NOT_A_VALUE, format!("the value at {at} is not a string"))),
            }
        };
        match &self.pages.next {
            NextPage::Link => match reply.header("link").and_then(next_link) {
                Some(url) => self.follow(call, &url).map(Some),
                None => Ok(None),
            },
            NextPage::Url(at) => match text(at)? {
                Some(url) => self.follow(call, &url).map(Some),
                None => Ok(None),
            },
            NextPage::Cursor { at, param, more } => {
                if let Some(more) = more {
                    if more.get(json) == Some(&Value::Bool(false)) {
                        return Ok(None);
                    }
                }
                Ok(text(at)?.map(|c| {
                    call.clone()
                        .with_target(with_param(call.target(), param, &c))
                }))
            }
            NextPage::Token { at, field } => match text(at)? {
                None => Ok(None),
                Some(token) => {
                    let mut body: Value = if call.body_bytes().is_empty() {
                        Value::Object(serde_json::Map::new())
                    } else {
                        serde_json::from_slice(call.body_bytes())
                            .map_err(|_| (NO_BODY, "the request body is not JSON".to_string()))?
                    };
                    let Some(object) = body.as_object_mut() else {
                        return Err((NO_BODY, "the request body is not a JSON object".into()));
                    };
                    object.insert(field.clone(), Value::String(token));
                    Ok(Some(call.clone().with_body(Bytes::from(body.to_string()))))
                }
            },
            NextPage::Offset { param, limit } => {
                if n == 0 || n < *limit {
                    return Ok(None);
                }
                let at = self.counter(call, param, 0) + limit;
                self.number = Some(at);
                Ok(Some(call.clone().with_target(with_param(
                    call.target(),
                    param,
                    &at.to_string(),
                ))))
            }
            NextPage::Page { param, size } => {
                if n == 0 || n < *size {
                    return Ok(None);
                }
                let at = self.counter(call, param, 1);
                self.number = Some(at + 1);
                Ok(Some(call.clone().with_target(with_param(
                    call.target(),
                    param,
                    &(at + 1).to_string(),
                ))))
            }
        }
    }

    /// The page counter: the last one set, else the first request's
    /// parameter, else `start`.
    fn counter(&self, call: &Call, param: &str, start: u64) -> u64 {
        self.number
            .or_else(|| param_value(call.target(), param).and_then(|v| v.parse().ok()))
            .unwrap_or(start)
    }

    /// The request for a next link: the same call at the link's target
    /// (under the endpoint's base path), if it stays on the endpoint.
    fn follow(&self, call: &Call, url: &str) -> Result<Call, Why> {
        let target = match url.split_once("://") {
            Some((_, rest)) => {
                let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
                if !authority.eq_ignore_ascii_case(self.authority) {
                    return Err((
                        "the next link leads to another host",
                        format!("{url} is not on {}", self.authority),
                    ));
                }
                if path.is_empty() { "/" } else { path }.to_string()
            }
            None if url.starts_with('/') => url.to_string(),
            None if url.starts_with('?') => {
                let path = call.target().split('?').next().unwrap_or("/");
                format!("{path}{url}")
            }
            None => {
                let path = call.target().split('?').next().unwrap_or("/");
                let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
                format!("{dir}{url}")
            }
        };
        // Targets are sent under the endpoint's base path: a link that
        // already starts with it loses it here.
        let base = self.base_path.split('?').next().unwrap_or("/");
        let target = match target.strip_prefix(base.trim_end_matches('/')) {
            Some(rest) if base != "/" && (rest.starts_with('/') || rest.starts_with('?')) => {
                rest.to_string()
            }
            _ => target,
        };
        Ok(call.clone().with_target(target))
    }

    /// The traversal's items as one answer to compare:
    /// `{"items":{KEY:item,...},"repeated":{KEY:times,...}}`.
    pub(crate) fn into_answer(mut self) -> (Traversal, Bytes) {
        self.body.extend_from_slice(b"},\"repeated\":{");
        let mut first = true;
        let mut repeated: Vec<_> = self.counts.iter().filter(|(_, &n)| n > 1).collect();
        repeated.sort();
        for (key, n) in repeated {
            if !first {
                self.body.push(b',');
            }
            first = false;
            let _ = serde_json::to_writer(&mut self.body, key);
            self.body.push(b':');
            self.body
                .extend_from_slice(itoa::Buffer::new().format(*n).as_bytes());
        }
        self.body.extend_from_slice(b"}}");
        (self.done, Bytes::from(self.body))
    }
}

/// What identifies a page request (its target and body), for cycles.
fn fingerprint(call: &Call) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    call.target().hash(&mut h);
    call.body_bytes().hash(&mut h);
    h.finish()
}

/// The `rel="next"` URL of a `Link` header value (RFC 8288).
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|link| {
        let (url, params) = link.trim().split_once(';')?;
        let url = url.trim().strip_prefix('<')?.strip_suffix('>')?;
        params
            .split(';')
            .filter_map(|p| p.trim().split_once('='))
            .any(|(k, v)| {
                k.trim().eq_ignore_ascii_case("rel")
                    && v.trim()
                        .trim_matches('"')
                        .split_ascii_whitespace()
                        .any(|r| r.eq_ignore_ascii_case("next"))
            })
            .then(|| url.to_string())
    })
}

/// The value of query parameter `name` in `target`, decoded.
fn param_value(target: &str, name: &str) -> Option<String> {
    let query = target.split_once('?')?.1;
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (k == name).then(|| decode(v))
    })
}

/// `target` with query parameter `name` set to `value` (replaced where it
/// is, else appended).
fn with_param(target: &str, name: &str, value: &str) -> String {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let set = format!("{name}={}", encode(value));
    let mut found = false;
    let mut parts: Vec<String> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            if p.split('=').next() == Some(name) {
                found = true;
                set.clone()
            } else {
                p.to_string()
            }
        })
        .collect();
    if !found {
        parts.push(set);
    }
    format!("{path}?{}", parts.join("&"))
}

/// Percent-encode all but RFC 3986's unreserved characters.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Decode `%XX` escapes and `+`.
fn decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Name a finding of a paged step by item: `$.items.KEY.price` becomes
/// the field `$.items[*].price` (at `$.items[?(@.id=="KEY")].price`), an
/// item only one side has is a `missing item` or an `extra item`, and a
/// difference in `$.repeated` is a `duplicated` item, named at the endpoint
/// that repeated it (the reference, when only it did).
pub(crate) fn regroup(f: &mut Finding, key: &str) {
    let Some(path) = &f.path else { return };
    let (Some(Segment::Key(top)), Some(Segment::Key(k))) = (path.first(), path.get(1)) else {
        return;
    };
    let keyed = Segment::Keyed {
        field: key.to_string(),
        value: serde_json::to_string(k).unwrap_or_default(),
    };
    let mut named = vec![Segment::Key("items".into()), keyed];
    match top.as_str() {
        "items" => {
            named.extend_from_slice(&path[2..]);
            if path.len() == 2 {
                match f.kind.as_str() {
                    "missing" => f.kind = "missing item".into(),
                    "added" => f.kind = "extra item".into(),
                    _ => {}
                }
            }
        }
        "repeated" => {
            // `$.repeated` counts each item's repeats: one the reference
            // has and the other endpoint lacks is the reference's own
            // duplicate, and is named there.
            if f.kind == "missing" {
                f.endpoint = 0;
            }
            f.kind = "duplicated".into();
        }
        _ => return,
    }
    f.field = render_grouped(&named);
    f.at = render(&named);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_next_link_among_others() {
        let h = r#"<https://api.example/items?page=1>; rel="first", <https://api.example/items?page=3>; rel="next prefetch""#;
        assert_eq!(
            next_link(h).as_deref(),
            Some("https://api.example/items?page=3")
        );
        assert_eq!(next_link(r#"</x>; rel="prev""#), None);
        assert_eq!(next_link("garbage"), None);
    }

    /// Fuzz: a traversal fed arbitrary pages (bodies, `Link` headers) in
    /// every style ends (the last page, or a stop with a reason) within
    /// `max_pages` pages, and never panics.
    #[test]
    fn fuzz_a_traversal_of_arbitrary_pages_always_ends() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        let fragments: &[&str] = &[
            r#"{"data":[{"id":1},{"id":"1"},{"id":null},{}],"next":"/p?x=1"}"#,
            r#"{"data":[{"id":2}],"next":"http://elsewhere/p","c":"abc","m":true}"#,
            r#"{"data":[],"next":null,"c":"","m":false,"t":""}"#,
            r#"{"data":{"id":1},"next":7,"c":{"x":1},"t":"tok"}"#,
            r#"{"data":[{"id":[1]},{"id":{"a":1}}],"next":"?q=%zz","c":"%41","t":"1"}"#,
            "not json",
            "",
            "[1,2,3]",
            r#"{"data":[1,2,3]}"#,
        ];
        let links: &[&str] = &[
            "",
            r#"</p?page=2>; rel="next""#,
            r#"<http://x:1/p>; rel=next"#,
            "<>; rel=\"next\"",
            "garbage, <; rel",
            r#"</p>; rel="prev", </q>; REL="NextPage Last""#,
        ];
        let styles = || {
            let p = |t: &str| JsonPath::parse(t).unwrap();
            vec![
                NextPage::Link,
                NextPage::Url(p("$.next")),
                NextPage::Cursor {
                    at: p("$.c"),
                    param: "c".into(),
                    more: Some(p("$.m")),
                },
                NextPage::Token {
                    at: p("$.t"),
                    field: "t".into(),
                },
                NextPage::Offset {
                    param: "o".into(),
                    limit: 1,
                },
                NextPage::Page {
                    param: "p".into(),
                    size: 1,
                },
            ]
        };
        let pages = proptest::collection::vec((0..fragments.len(), 0..links.len()), 1..40);
        let mut runner = TestRunner::new(Config {
            cases: 500,
            failure_persistence: None,
            ..Config::default()
        });
        let result = runner.run(&(0..6usize, pages), |(style, pages)| {
            let next = styles().swap_remove(style);
            let paging =
                Paging::new("id", Pages::new("$.data", next).unwrap().max_pages(12)).unwrap();
            let mut walk = Walk::new(&paging, 0, "127.0.0.1:1", "/");
            let mut call = Call::get("/p");
            for (n, (f, l)) in pages.iter().enumerate() {
                let reply = Reply {
                    status: 200,
                    headers: match links[*l] {
                        "" => Vec::new(),
                        v => vec![(http::header::LINK, http::HeaderValue::from_str(v).unwrap())],
                    },
                    body: Bytes::from(fragments[*f]),
                    grpc: None,
                };
                match walk.page(&call, &reply, reply.body.len() as u64) {
                    AfterPage::Next(c) => call = c,
                    AfterPage::Last | AfterPage::Stop(..) => {
                        prop_assert!(n < 12);
                        let _ = walk.into_answer();
                        return Ok(());
                    }
                }
                prop_assert!(n + 1 < 12, "past max_pages");
            }
            let (t, body) = walk.into_answer();
            prop_assert!(serde_json::from_slice::<Value>(&body).is_ok(), "{t:?}");
            Ok(())
        });
        if let Err(e) = result {
            panic!("{e}");
        }
    }

    #[test]
    fn sets_and_reads_query_parameters() {
        assert_eq!(
            with_param("/items", "cursor", "a b/c"),
            "/items?cursor=a%20b%2Fc"
        );
        assert_eq!(
            with_param("/items?limit=10&offset=0", "offset", "10"),
            "/items?limit=10&offset=10"
        );
        assert_eq!(
            param_value("/items?limit=10&cursor=a%20b", "cursor").as_deref(),
            Some("a b")
        );
        assert_eq!(param_value("/items?limit=10", "offset"), None);
    }
}
