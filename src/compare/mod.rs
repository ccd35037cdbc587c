//! Comparison: whether the outcomes of one request at several endpoints
//! agree, and where they differ. Byte equality first (cheap); only when
//! bytes differ, a structural JSON comparison under the user's rules. This
//! module owns the verdict; it knows nothing about sockets or timing.

pub mod json;
pub mod jsonrpc;
pub mod method;
mod node;
pub mod number;
mod pairing;
pub mod path;
#[cfg(test)]
mod reference;
pub mod rules;
pub mod sample;
mod tape;
pub mod verdict;

use std::str::FromStr;

pub use self::verdict::{Comparer, Finding, Verdict};

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
