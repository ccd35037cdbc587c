//! What a request is, for grouping and per-method rules: its JSON-RPC
//! method, or its HTTP method and path. Cheap: a JSON-RPC method is read by
//! a byte scan, not a parse.

use super::jsonrpc::{find_method_key, has_jsonrpc_key};
use crate::model::{Request, Style};

/// Requests whose kind could not be named (beyond the method cap).
pub use crate::model::OTHER;

/// The JSON-RPC method of a request body, read by a byte scan: `batch` for
/// a batch, `None` when the body is not a JSON-RPC call (or the name is
/// not UTF-8).
pub fn quick_jsonrpc_method(body: &[u8]) -> Option<&str> {
    std::str::from_utf8(quick_jsonrpc_name(body)?).ok()
}

/// [`quick_jsonrpc_method`]'s name as the body has it, not checked to be
/// UTF-8: what a name is looked up by among names that are.
pub fn quick_jsonrpc_name(body: &[u8]) -> Option<&[u8]> {
    let start = body.iter().position(|b| !b.is_ascii_whitespace())?;
    let batch = match body[start] {
        b'[' => true,
        b'{' => false,
        _ => return None,
    };
    if !has_jsonrpc_key(body, start) {
        return None;
    }
    if batch {
        return Some(b"batch");
    }
    let at = find_method_key(body)? + 8;
    let rest = &body[at..];
    let colon = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    if rest[colon] != b':' {
        return None;
    }
    let rest = &rest[colon + 1..];
    let quote = rest.iter().position(|b| !b.is_ascii_whitespace())?;
    if rest[quote] != b'"' {
        return None;
    }
    let name = &rest[quote + 1..];
    let end = memchr::memchr2(b'"', b'\\', name)?;
    if name[end] == b'\\' {
        return None;
    }
    Some(&name[..end])
}

/// How a request is named in groups, and the selector its per-method rules
/// are chosen by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MethodName {
    /// The group name: `eth_getBalance`, `batch`, or `GET /users/{id}`.
    pub group: String,
    /// The rules selector: the JSON-RPC method, or `GET /users/42`.
    pub selector: String,
    /// True for JSON-RPC requests.
    pub jsonrpc: bool,
    /// True for a flow step: `selector` is the step's name, and the rules
    /// file's `[step.NAME]` sections apply.
    pub step: bool,
}

impl MethodName {
    /// The kind of a flow step named `name`.
    pub fn step(name: &str) -> MethodName {
        MethodName {
            group: name.to_string(),
            selector: name.to_string(),
            jsonrpc: false,
            step: true,
        }
    }
}

/// Name a request as the reference endpoint would receive it: the
/// endpoint's `style` and the path of its URL (`base_path`).
pub fn kind(req: &Request, style: Style, base_path: &str) -> MethodName {
    if req.target.is_none() && style == Style::Grpc {
        // A gRPC method by its name: `items.Items/GetItem`.
        let name = base_path.trim_start_matches('/').to_string();
        return MethodName {
            group: name.clone(),
            selector: name,
            jsonrpc: false,
            step: false,
        };
    }
    if req.target.is_none() {
        if let Some(m) = quick_jsonrpc_method(&req.body) {
            return MethodName {
                group: m.to_string(),
                selector: m.to_string(),
                jsonrpc: true,
                step: false,
            };
        }
    }
    let (method, path) = match (&req.target, style) {
        (Some(t), _) => (
            req.method.as_ref().map_or("GET", |m| m.as_str()),
            path_of(t).to_string(),
        ),
        (None, Style::Get) => (
            req.method.as_ref().map_or("GET", |m| m.as_str()),
            format!(
                "{}{}",
                base_path.split('?').next().unwrap_or("/"),
                String::from_utf8_lossy(&req.body)
            ),
        ),
        (None, Style::Post | Style::WebSocket | Style::Grpc) => (
            req.method.as_ref().map_or("POST", |m| m.as_str()),
            base_path.to_string(),
        ),
    };
    let path = path.split('?').next().unwrap_or("/").to_string();
    MethodName {
        group: format!("{method} {}", normalize(&path)),
        selector: format!("{method} {path}"),
        jsonrpc: false,
        step: false,
    }
}

/// The path of a target that may be an absolute URL.
fn path_of(target: &str) -> &str {
    match target.find("://") {
        Some(i) => {
            let after = &target[i + 3..];
            after.find('/').map_or("/", |j| &after[j..])
        }
        None => target,
    }
}

/// Replace path segments that look like identifiers (numbers, hex, UUIDs,
/// long tokens) with `{id}`, so `/users/42` and `/users/43` group together.
pub fn normalize(path: &str) -> String {
    path.split('/')
        .map(|seg| {
            let digits = !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit());
            let hexish = seg.len() >= 8
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() || b == b'-' || b == b'x');
            let token = seg.len() >= 20 && seg.bytes().any(|b| b.is_ascii_digit());
            if digits || hexish || token {
                "{id}"
            } else {
                seg
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonrpc_methods_by_scan() {
        assert_eq!(
            quick_jsonrpc_method(br#"{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[]}"#),
            Some("eth_call")
        );
        assert_eq!(
            quick_jsonrpc_method(br#" { "method" : "a_b", "jsonrpc": "2.0" }"#),
            Some("a_b")
        );
        assert_eq!(
            quick_jsonrpc_method(br#"[{"jsonrpc":"2.0","method":"x"}]"#),
            Some("batch")
        );
        assert_eq!(quick_jsonrpc_method(br#"{"method":"x"}"#), None);
        assert_eq!(
            quick_jsonrpc_method(br#"{"jsonrpc":"2.0","method":"a\"b"}"#),
            None
        );
        assert_eq!(quick_jsonrpc_method(b"hello"), None);
        // A name that is not UTF-8 is no name; its bytes are found.
        let body = b"{\"jsonrpc\":\"2.0\",\"method\":\"a\xff\"}";
        assert_eq!(quick_jsonrpc_method(body), None);
        assert_eq!(quick_jsonrpc_name(body), Some(&b"a\xff"[..]));
    }

    #[test]
    fn http_paths_group_by_shape() {
        assert_eq!(
            normalize("/users/42/orders/0xdeadbeef01"),
            "/users/{id}/orders/{id}"
        );
        assert_eq!(normalize("/api/v1/items"), "/api/v1/items");
        let spec = (Style::Post, "/v1/");
        let mut r = Request::line(0, bytes::Bytes::new());
        r.target = Some("https://old.example/users/7?x=1".into());
        r.method = Some(http::Method::DELETE);
        let k = kind(&r, spec.0, spec.1);
        assert_eq!(
            (k.group.as_str(), k.selector.as_str(), k.jsonrpc),
            ("DELETE /users/{id}", "DELETE /users/7", false)
        );
        let line = Request::line(
            0,
            bytes::Bytes::from_static(br#"{"jsonrpc":"2.0","method":"eth_chainId"}"#),
        );
        assert_eq!(kind(&line, spec.0, spec.1).group, "eth_chainId");
        assert_eq!(
            kind(&Request::line(0, "plain".into()), spec.0, spec.1).group,
            "POST /v1/"
        );
    }
}
