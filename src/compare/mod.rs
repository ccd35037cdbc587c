//! Comparison: whether the outcomes of one request at several endpoints
//! agree. Byte equality first (cheap); only when bytes differ, a structural
//! JSON comparison. This module owns the verdict; it knows nothing about
//! sockets or timing.

pub mod json;
pub mod jsonrpc;
pub mod number;
pub mod path;
pub mod rules;

use std::str::FromStr;

use self::rules::RuleSet;
use crate::endpoint::Outcome;

/// What counts as the same answer (`--compare`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CompareMode {
    /// Status, then bytes; when bytes differ and both bodies are JSON, the
    /// JSON structure (key order and whitespace do not count).
    #[default]
    Auto,
    /// Status and exact bytes.
    Bytes,
    /// Status and JSON structure; bodies that are not JSON by bytes.
    Json,
    /// Status only.
    Status,
    /// No comparison (pure load).
    None,
}

impl FromStr for CompareMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "auto" => CompareMode::Auto,
            "bytes" => CompareMode::Bytes,
            "json" => CompareMode::Json,
            "status" => CompareMode::Status,
            "none" => CompareMode::None,
            _ => {
                return Err(format!(
                    "unknown mode {s:?}: use auto, bytes, json, status or none"
                ))
            }
        })
    }
}

/// Decides verdicts under one comparison mode.
#[derive(Clone, Debug, Default)]
pub struct Comparer {
    mode: CompareMode,
    rules: RuleSet,
}

impl Comparer {
    /// A comparer for `mode` with strict structural rules.
    pub fn new(mode: CompareMode) -> Comparer {
        Comparer {
            mode,
            rules: RuleSet::default(),
        }
    }

    /// True when verdicts need response bodies.
    pub fn needs_body(&self) -> bool {
        matches!(
            self.mode,
            CompareMode::Auto | CompareMode::Bytes | CompareMode::Json
        )
    }

    /// True when comparison is on at all.
    pub fn enabled(&self) -> bool {
        self.mode != CompareMode::None
    }

    /// Do two outcomes of the same request agree? Two failures of the same
    /// kind agree (both timed out); a failure never agrees with a response.
    pub fn agree(&self, reference: &Outcome, candidate: &Outcome) -> bool {
        match (&reference.result, &candidate.result) {
            (Err(a), Err(b)) => a == b,
            (Ok(a), Ok(b)) => {
                if a.status != b.status {
                    return false;
                }
                match self.mode {
                    CompareMode::Status | CompareMode::None => true,
                    CompareMode::Bytes => a.body == b.body,
                    CompareMode::Auto | CompareMode::Json => {
                        a.body == b.body
                            || json::compare(&self.rules, &a.body, &b.body)
                                .is_ok_and(|d| d.is_empty())
                    }
                }
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::endpoint::{Failure, Response};
    use std::time::Duration;

    fn resp(status: u16, body: &str) -> Outcome {
        Outcome {
            result: Ok(Response {
                status,
                body: bytes::Bytes::copy_from_slice(body.as_bytes()),
                body_len: body.len() as u64,
                ttfb: Duration::ZERO,
            }),
            latency: Duration::ZERO,
            connect: None,
            bytes_out: 0,
        }
    }

    fn fail(f: Failure) -> Outcome {
        Outcome {
            result: Err(f),
            latency: Duration::ZERO,
            connect: None,
            bytes_out: 0,
        }
    }

    #[test]
    fn verdicts() {
        let auto = Comparer::new(CompareMode::Auto);
        let bytes = Comparer::new(CompareMode::Bytes);
        let status = Comparer::new(CompareMode::Status);
        let a = resp(200, r#"{"a":1,"b":[1,2]}"#);
        let reordered = resp(200, "{ \"b\": [1, 2],\n \"a\": 1 }");
        assert!(auto.agree(&a, &reordered));
        assert!(!bytes.agree(&a, &reordered));
        assert!(!auto.agree(&a, &resp(200, r#"{"a":2,"b":[1,2]}"#)));
        assert!(!auto.agree(&a, &resp(500, r#"{"a":1,"b":[1,2]}"#)));
        assert!(status.agree(&a, &resp(200, "other")));
        assert!(!auto.agree(&resp(200, "x"), &resp(200, "y")));
        assert!(auto.agree(&fail(Failure::Timeout), &fail(Failure::Timeout)));
        assert!(!auto.agree(&fail(Failure::Timeout), &fail(Failure::Refused)));
        assert!(!auto.agree(&a, &fail(Failure::Timeout)));
    }
}
