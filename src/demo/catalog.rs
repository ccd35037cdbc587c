//! `versus demo pages`: one catalog of items served in the ways APIs page
//! through records, in one process on one port, for the pagination
//! comparison of `examples/pages.toml` (the three implementations of the
//! API benchmark script versus takes over) and for the tests:
//!
//! - `/hateoas/items?page=N&size=S`: offset pagination with HATEOAS links
//!   (`_links.next.href`, a `_links.self` in every item), slower with depth
//!   as an SQL OFFSET is;
//! - `/stream/items?limit=S&after=K`: keyset, `next_cursor`, flat cost;
//! - `POST /rpc/ListItems` `{"page_size","page_token"}`: the shape of a
//!   gRPC list method (`next_page_token`, empty on the last page);
//! - `/link/items?page=N&per_page=S`: an RFC 8288 `Link: rel="next"`;
//! - `/jsonapi/items?cursor=K`: JSON:API `links.next`, relative;
//! - `/offset/items?offset=O&limit=L` and `/pages/items?page=N&size=S`:
//!   plain offset and page numbers, a short page last.
//!
//! [`Plants`] make one implementation wrong on purpose: an item skipped or
//! repeated, a next page that loops back, leads to another host, or is
//! not JSON.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use serde_json::{json, Value};

pub use super::serve::Running;

/// What the catalog serves.
#[derive(Clone, Debug)]
pub struct Catalog {
    /// Items, with ids 1..=items.
    pub items: u64,
    /// What the offset styles (`hateoas`, `offset`, `pages`) add to a
    /// page's time per page before it (an OFFSET scans what it skips).
    pub depth_cost: Duration,
    /// Deliberate faults.
    pub plants: Plants,
}

/// Deliberate faults of a catalog, in every style it serves.
#[derive(Clone, Debug, Default)]
pub struct Plants {
    /// This item is never served.
    pub skip: Option<u64>,
    /// This item is served again at the start of the page after its own.
    pub repeat: Option<u64>,
    /// After this many pages, the next page is the first again.
    pub cycle_after: Option<u64>,
    /// After this many pages, the next link is on another host.
    pub foreign_after: Option<u64>,
    /// After this many pages, the next page's body is not JSON.
    pub garbage_after: Option<u64>,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog {
            items: 2000,
            depth_cost: Duration::from_micros(200),
            plants: Plants::default(),
        }
    }
}

/// Start a catalog on 127.0.0.1 on a thread of its own.
///
/// # Errors
/// When the socket, runtime or thread cannot be made.
pub fn start(catalog: Catalog) -> std::io::Result<Running> {
    let catalog = std::sync::Arc::new(catalog);
    super::serve::serve("versus-catalog", move |parts, body| {
        let catalog = catalog.clone();
        async move { catalog.answer(parts, body).await }
    })
}

/// One item as every style serves it.
fn item(id: u64) -> Value {
    json!({ "id": id, "name": format!("item {id}"), "price": (id * 37) % 1000, "tags": ["demo", if id % 2 == 0 { "even" } else { "odd" }] })
}

/// A page: its items, and where the next one starts (a position in the
/// served list), if there is one.
struct Page {
    items: Vec<Value>,
    next: Option<u64>,
    /// The page's number, from 0.
    number: u64,
}

impl Catalog {
    /// The ids served, in order.
    fn served(&self) -> impl Iterator<Item = u64> + '_ {
        (1..=self.items).filter(move |id| Some(*id) != self.plants.skip)
    }

    fn count(&self) -> u64 {
        self.items - u64::from(self.plants.skip.is_some_and(|s| s <= self.items))
    }

    /// The page of `size` items from position `start`.
    fn page(&self, start: u64, size: u64) -> Page {
        let size = size.clamp(1, 1000);
        let number = start / size;
        let mut ids: Vec<u64> = self
            .served()
            .skip(start as usize)
            .take(size as usize)
            .collect();
        if let Some(r) = self.plants.repeat {
            let at = self.served().position(|id| id == r).map(|p| p as u64);
            if at.is_some_and(|p| p / size + 1 == number) {
                ids.insert(0, r);
            }
        }
        let end = start + size;
        let mut next = (end < self.count()).then_some(end);
        if self.plants.cycle_after.is_some_and(|c| number + 1 >= c) && next.is_some() {
            next = Some(0);
        }
        Page {
            items: ids.into_iter().map(item).collect(),
            next,
            number,
        }
    }

    /// Answer a request: the page its route serves, after the time an
    /// offset style's depth costs, or not JSON past `garbage_after`; 404
    /// for a route the catalog does not have.
    async fn answer(
        &self,
        parts: http::request::Parts,
        body: Bytes,
    ) -> hyper::Response<Full<Bytes>> {
        let q = Query(parts.uri.query().unwrap_or(""));
        let path = parts.uri.path().to_string();
        let Some(Served {
            page,
            body: mut reply,
            link,
        }) = self.route(parts.method.as_str(), &path, &q, &body)
        else {
            return respond(404, json!({ "error": "no such route" }).to_string(), None);
        };
        let offset_cost = ["/hateoas/", "/offset/", "/pages/"]
            .iter()
            .any(|p| path.starts_with(p));
        if offset_cost && !self.depth_cost.is_zero() {
            tokio::time::sleep(self.depth_cost * u32::try_from(page.number).unwrap_or(u32::MAX))
                .await;
        }
        if self.plants.garbage_after.is_some_and(|g| page.number >= g) {
            return respond(200, "<html>not json</html>".into(), None);
        }
        if reply.is_null() {
            reply = json!({});
        }
        respond(200, reply.to_string(), link)
    }

    /// The page a route serves, in its style; `None` for a route the
    /// catalog does not have.
    fn route(&self, method: &str, path: &str, q: &Query<'_>, body: &[u8]) -> Option<Served> {
        Some(match (method, path) {
            ("GET", "/hateoas/items") => self.hateoas(q),
            ("GET", "/stream/items") => self.stream(q),
            ("POST", "/rpc/ListItems") => self.rpc(body),
            ("GET", "/link/items") => self.link(q),
            ("GET", "/jsonapi/items") => self.jsonapi(q),
            ("GET", "/offset/items") => {
                let page = self.page(q.get("offset").unwrap_or(0), q.get("limit").unwrap_or(20));
                let body = json!({ "items": page.items });
                Served::body(page, body)
            }
            ("GET", "/pages/items") => {
                let size = q.get("size").unwrap_or(20);
                let page = self.page(q.get("page").unwrap_or(1).saturating_sub(1) * size, size);
                let body = json!({ "items": page.items });
                Served::body(page, body)
            }
            _ => return None,
        })
    }

    /// `/hateoas/items?page=N&size=S`: offset pages with HATEOAS links,
    /// a `_links.self` in every item and `_links.next` (on another host
    /// after `foreign_after` pages).
    fn hateoas(&self, q: &Query<'_>) -> Served {
        let size = q.get("size").unwrap_or(20);
        let page = self.page(q.get("page").unwrap_or(0) * size, size);
        let next = page.next.map(|n| {
            let href = format!("/hateoas/items?page={}&size={size}", n / size.max(1));
            match self.plants.foreign_after {
                Some(f) if page.number + 1 >= f => {
                    format!("http://elsewhere.invalid{href}")
                }
                _ => href,
            }
        });
        let items: Vec<Value> = page
            .items
            .iter()
            .map(|i| {
                let mut i = i.clone();
                i["_links"] = json!({ "self": { "href": format!("/hateoas/items/{}", i["id"]) } });
                i
            })
            .collect();
        let mut links = json!({ "self": { "href": format!("/hateoas/items?page={}&size={size}", page.number) } });
        if let Some(n) = next {
            links["next"] = json!({ "href": n });
        }
        let total = self.count();
        let body = json!({
            "content": items,
            "page": { "number": page.number, "size": size, "totalElements": total, "totalPages": total.div_ceil(size.max(1)) },
            "_links": links,
        });
        Served::body(page, body)
    }

    /// `/stream/items?limit=S&after=K`: keyset pages, `next_cursor` the
    /// last id served.
    fn stream(&self, q: &Query<'_>) -> Served {
        let size = q.get("limit").unwrap_or(20);
        let start = q.get("after").map_or(0, |k| {
            self.served().take_while(|id| *id <= k).count() as u64
        });
        let page = self.page(start, size);
        let cursor = page.next.map(|n| match n {
            0 => 0,
            n => self.served().nth(n as usize - 1).unwrap_or(0),
        });
        let body = json!({ "items": page.items, "next_cursor": cursor });
        Served::body(page, body)
    }

    /// `POST /rpc/ListItems` `{"page_size","page_token"}`: a gRPC list
    /// method's shape, `next_page_token` empty on the last page.
    fn rpc(&self, body: &[u8]) -> Served {
        let input: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let size = input["page_size"].as_u64().unwrap_or(20);
        let start = input["page_token"]
            .as_str()
            .and_then(|t| t.parse().ok())
            .unwrap_or(0);
        let page = self.page(start, size);
        let token = page.next.map_or(String::new(), |n| n.to_string());
        let body = json!({ "items": page.items, "next_page_token": token });
        Served::body(page, body)
    }

    /// `/link/items?page=N&per_page=S`: the next page in an RFC 8288
    /// `Link` header.
    fn link(&self, q: &Query<'_>) -> Served {
        let size = q.get("per_page").unwrap_or(20);
        let page = self.page(q.get("page").unwrap_or(1).saturating_sub(1) * size, size);
        let link = page.next.map(|n| {
            format!(
                "</link/items?page=1&per_page={size}>; rel=\"first\", </link/items?page={}&per_page={size}>; rel=\"next\"",
                n / size.max(1) + 1
            )
        });
        let body = json!({ "results": page.items });
        Served { page, body, link }
    }

    /// `/jsonapi/items?cursor=K`: pages of 25, JSON:API's relative
    /// `links.next`.
    fn jsonapi(&self, q: &Query<'_>) -> Served {
        let start = q.get("cursor").unwrap_or(0);
        let page = self.page(start, 25);
        let mut links = json!({ "self": format!("items?cursor={start}") });
        if let Some(n) = page.next {
            links["next"] = json!(format!("items?cursor={n}"));
        }
        let body = json!({ "data": page.items, "links": links });
        Served::body(page, body)
    }
}

/// A request's query string.
struct Query<'a>(&'a str);

impl Query<'_> {
    /// The first value of `name` that is a number.
    fn get(&self, name: &str) -> Option<u64> {
        self.0.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k == name).then(|| v.parse().ok()).flatten()
        })
    }
}

/// A page as a route serves it: the page, the body in the route's style,
/// and a `Link` header for the style that has one.
struct Served {
    page: Page,
    body: Value,
    link: Option<String>,
}

impl Served {
    /// A page served in its body alone.
    fn body(page: Page, body: Value) -> Served {
        Served {
            page,
            body,
            link: None,
        }
    }
}

fn respond(status: u16, body: String, link: Option<String>) -> hyper::Response<Full<Bytes>> {
    let mut response = super::serve::json(status, body);
    if let Some(l) = link.and_then(|l| http::HeaderValue::from_str(&l).ok()) {
        response.headers_mut().insert(http::header::LINK, l);
    }
    response
}
