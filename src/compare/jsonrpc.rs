//! Cheap JSON-RPC inspection of raw bodies: the method(s) a request calls (to pick
//! per-method rules) and what kind of answer a response is. Neither builds a tree:
//! everything but the few fields read is skipped by the parser without allocating.

use std::sync::LazyLock;

use memchr::memmem::Finder;
use serde::de::{Deserializer, IgnoredAny};
use serde::Deserialize;

/// Searchers for the keys the byte scans look for, built once: building one
/// per search cost more than the search of a short body.
static ERROR_KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"error\""));
static JSONRPC_KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"jsonrpc\""));

/// Whether a body holds the key `"error"` anywhere: the byte search that
/// lets an answer without it skip [`classify_response`].
pub fn mentions_error(body: &[u8]) -> bool {
    ERROR_KEY.find(body).is_some()
}

/// Whether a body holds the key `"jsonrpc"` anywhere, looked for first
/// where a request has it (`{"jsonrpc"`, or `[{"jsonrpc"` in a batch, at
/// `start`, the first byte that is not white space), so that the common
/// body is not searched whole.
pub(crate) fn has_jsonrpc_key(body: &[u8], start: usize) -> bool {
    let at = &body[start..];
    let first = at.strip_prefix(b"[").unwrap_or(at);
    first.starts_with(b"{\"jsonrpc\"") || JSONRPC_KEY.find(body).is_some()
}

/// Where the key `"method"` first occurs in a body, found from its
/// `m`s (in a JSON-RPC request the first is the key's, as hex digits have
/// none): a `memmem` search's set-up cost more than this on a short body
/// (a request's method named in 354 instructions against 484, callgrind).
pub(crate) fn find_method_key(body: &[u8]) -> Option<usize> {
    memchr::memchr_iter(b'm', body)
        .find(|&i| i > 0 && body[i - 1] == b'"' && body[i..].starts_with(b"method\""))
        .map(|i| i - 1)
}

/// The method of a JSON-RPC request, or of each call in a batch (in order); `None` if
/// the body is not a JSON-RPC request (not JSON, or some call lacks a string `method`).
pub fn request_methods(body: &[u8]) -> Option<Vec<String>> {
    match first_byte(body)? {
        b'{' => serde_json::from_slice::<JsonRpcCall>(body)
            .ok()
            .map(|call| vec![call.method]),
        b'[' => serde_json::from_slice::<Vec<JsonRpcCall>>(body)
            .ok()
            .filter(|calls| !calls.is_empty())
            .map(|calls| calls.into_iter().map(|call| call.method).collect()),
        _ => None,
    }
}

/// What kind of answer a JSON-RPC response body is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResponseClass {
    /// A response with a `result` (which may be `null`).
    Result,
    /// A response with an `error` object.
    Error {
        /// `error.code` (0 if absent).
        code: i64,
        /// `error.message` (empty if absent).
        message: String,
    },
    /// A batch: how many of its responses are errors and how many results.
    Batch {
        /// Responses with an `error`.
        errors: usize,
        /// Responses with a `result`.
        results: usize,
    },
    /// Not JSON, or not a JSON-RPC response (an object with an `id` and a `result` or
    /// an `error` object; every element of a non-empty array for a batch).
    NotJsonRpc,
}

/// Classifies a response body.
pub fn classify_response(body: &[u8]) -> ResponseClass {
    let classified = match first_byte(body) {
        Some(b'{') => serde_json::from_slice::<JsonRpcResponse>(body)
            .ok()
            .and_then(JsonRpcResponse::class),
        Some(b'[') => serde_json::from_slice::<Vec<JsonRpcResponse>>(body)
            .ok()
            .filter(|batch| !batch.is_empty())
            .and_then(|batch| {
                batch
                    .into_iter()
                    .try_fold((0, 0), |(errors, results), response| {
                        match response.class()? {
                            ResponseClass::Error { .. } => Some((errors + 1, results)),
                            _ => Some((errors, results + 1)),
                        }
                    })
            })
            .map(|(errors, results)| ResponseClass::Batch { errors, results }),
        _ => None,
    };
    classified.unwrap_or(ResponseClass::NotJsonRpc)
}

fn first_byte(body: &[u8]) -> Option<u8> {
    body.iter().copied().find(|b| !b.is_ascii_whitespace())
}

/// A request call: only `method` is kept.
#[derive(Deserialize)]
struct JsonRpcCall {
    method: String,
}

/// A response: which members are present, and the error if any.
#[derive(Deserialize)]
struct JsonRpcResponse {
    #[serde(default)]
    id: Present,
    #[serde(default)]
    result: Present,
    #[serde(default)]
    error: Option<ErrorObject>,
}

#[derive(Deserialize)]
struct ErrorObject {
    #[serde(default)]
    code: i64,
    #[serde(default)]
    message: String,
}

impl JsonRpcResponse {
    fn class(self) -> Option<ResponseClass> {
        if !self.id.0 {
            return None;
        }
        match (self.error, self.result.0) {
            (Some(error), _) => Some(ResponseClass::Error {
                code: error.code,
                message: error.message,
            }),
            (None, true) => Some(ResponseClass::Result),
            (None, false) => None,
        }
    }
}

/// Whether a member is present (even as `null`); its value is skipped.
#[derive(Default)]
struct Present(bool);

impl<'de> Deserialize<'de> for Present {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IgnoredAny::deserialize(deserializer).map(|_| Present(true))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_method_key_is_found_where_a_search_for_it_finds_it() {
        let bodies: [&[u8]; 7] = [
            br#"{"jsonrpc":"2.0","id":1,"method":"eth_call","params":[]}"#,
            br#"{"params":["mm","\"method\""],"method":"m"}"#,
            br#"method":"x","method":"y""#,
            br#"{"methods":1,"amethod":2,"method":3}"#,
            br#""method""#,
            b"mmmm",
            b"",
        ];
        for body in bodies {
            // Every prefix too: a key cut short is no key.
            for end in 0..=body.len() {
                let b = &body[..end];
                let want = memchr::memmem::find(b, b"\"method\"");
                assert_eq!(find_method_key(b), want, "{}", String::from_utf8_lossy(b));
            }
        }
    }

    #[test]
    fn the_jsonrpc_key_is_found_wherever_it_is() {
        let bodies: [(&[u8], bool); 8] = [
            (br#"{"jsonrpc":"2.0","id":1,"method":"eth_call"}"#, true),
            (br#"[{"jsonrpc":"2.0","method":"a"}]"#, true),
            (br#"{"method":"m","jsonrpc":"2.0"}"#, true),
            (br#"[{"id":1,"jsonrpc":"2.0"}]"#, true),
            (br#"{"jsonrpcx":1}"#, false),
            (br#"{"jsonrpc:1}"#, false),
            (br#"{"method":"m"}"#, false),
            (br#"["#, false),
        ];
        for (body, has) in bodies {
            assert_eq!(
                has_jsonrpc_key(body, 0),
                has,
                "{}",
                String::from_utf8_lossy(body)
            );
            let spaced = [b"  ".as_slice(), body].concat();
            assert_eq!(has_jsonrpc_key(&spaced, 2), has);
        }
    }

    #[test]
    fn methods_of_single_and_batch_requests() {
        assert_eq!(
            request_methods(br#" {"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#),
            Some(vec!["eth_blockNumber".to_string()])
        );
        assert_eq!(
            request_methods(
                br#"[{"id":1,"method":"eth_call","params":[{"to":"0x1"},"latest"]},
                     {"id":2,"method":"eth_get\u0042alance"}]"#
            ),
            Some(vec!["eth_call".to_string(), "eth_getBalance".to_string()])
        );
    }

    #[test]
    fn non_requests_have_no_methods() {
        for body in [
            &b""[..],
            b"GET / HTTP/1.1",
            b"[]",
            br#"{"id":1}"#,
            br#"{"method":5}"#,
            br#"[{"method":"a"},{"id":2}]"#,
            br#"{"method":"a""#,
            b"\"eth_call\"",
        ] {
            assert_eq!(
                request_methods(body),
                None,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }

    #[test]
    fn classifies_responses() {
        let cases: &[(&[u8], ResponseClass)] = &[
            (br#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#, ResponseClass::Result),
            (br#"{"jsonrpc":"2.0","id":1,"result":null}"#, ResponseClass::Result),
            (
                br#"{"jsonrpc":"2.0","id":1,"result":null,"error":{"code":-32601,"message":"no such method"}}"#,
                ResponseClass::Error { code: -32601, message: "no such method".into() },
            ),
            (br#"{"id":1,"result":7,"error":null}"#, ResponseClass::Result),
            (
                br#"[{"id":1,"result":1},{"id":2,"error":{"code":3,"message":"x"}},{"id":3,"result":[]}]"#,
                ResponseClass::Batch { errors: 1, results: 2 },
            ),
            (br#"{"result":1}"#, ResponseClass::NotJsonRpc),
            (br#"{"id":1}"#, ResponseClass::NotJsonRpc),
            (br#"[{"id":1,"result":1},{"id":2}]"#, ResponseClass::NotJsonRpc),
            (b"[]", ResponseClass::NotJsonRpc),
            (br#"{"id":1,"error":{"code":"bad"}}"#, ResponseClass::NotJsonRpc),
            (b"<html>", ResponseClass::NotJsonRpc),
            (br#"{"id":1,"result":"#, ResponseClass::NotJsonRpc),
        ];
        for (body, expected) in cases {
            assert_eq!(
                &classify_response(body),
                expected,
                "{}",
                String::from_utf8_lossy(body)
            );
        }
    }
}
