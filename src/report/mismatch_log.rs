//! `--mismatches FILE`: every mismatched request as one JSON line (the
//! request, each endpoint's status, compared headers and body, and the
//! differing fields), up to `--mismatch-limit` lines. Each line is written
//! whole and flushed, so a killed run leaves a readable file. Cores write
//! only on a mismatch, never per request.

use std::fs::File;
use std::io::{LineWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::compare::Finding;
use crate::engine::Settings;
use crate::model::secret;
use crate::model::Outcome;
use crate::model::Request;

/// The mismatch file.
#[derive(Debug)]
pub struct MismatchLog {
    path: PathBuf,
    /// Set once [`MismatchLog::open`] has created the file.
    out: Mutex<Option<LineWriter<File>>>,
    limit: u64,
    seen: AtomicU64,
    written: AtomicU64,
    /// Write credential headers as they are (`--show-secrets`).
    show_secrets: bool,
}

impl MismatchLog {
    /// A log to `path`, not created yet, with credentials masked unless
    /// `show_secrets`.
    pub fn new(path: &Path, limit: u64, show_secrets: bool) -> MismatchLog {
        MismatchLog {
            path: path.to_path_buf(),
            out: Mutex::new(None),
            limit,
            seen: AtomicU64::new(0),
            written: AtomicU64::new(0),
            show_secrets,
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Create (truncate) the file. Done just before the run starts, after
    /// every check that can fail, so a run that never starts leaves an
    /// earlier file alone.
    ///
    /// # Errors
    /// When the file cannot be created, as a message naming the flag.
    pub fn open(&self) -> Result<(), String> {
        let file = File::create(&self.path)
            .map_err(|e| format!("--mismatches {}: {e}", self.path.display()))?;
        if let Ok(mut out) = self.out.lock() {
            *out = Some(LineWriter::new(file));
        }
        Ok(())
    }

    /// Mismatches seen, lines written, and the limit.
    pub fn counts(&self) -> (u64, u64, u64) {
        (
            self.seen.load(Ordering::Relaxed),
            self.written.load(Ordering::Relaxed),
            self.limit,
        )
    }
}

/// The log is an engine tap: each mismatch becomes a line, unless the
/// limit is reached.
impl crate::engine::Tap for MismatchLog {
    fn mismatch(
        &self,
        settings: &Settings,
        req: &Request,
        method: &str,
        outcomes: &[Option<&Outcome>],
        findings: &[Finding],
    ) {
        if self.seen.fetch_add(1, Ordering::Relaxed) >= self.limit {
            return;
        }
        let line = line(settings, self.show_secrets, req, method, outcomes, findings);
        if let Ok(mut out) = self.out.lock() {
            let Some(out) = out.as_mut() else { return };
            // A failed write loses this line only (and is not counted as
            // written); the run goes on.
            if writeln!(out, "{line}").is_ok() {
                self.written.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

fn line(
    settings: &Settings,
    show_secrets: bool,
    req: &Request,
    method: &str,
    outcomes: &[Option<&Outcome>],
    findings: &[Finding],
) -> Value {
    let headers: Map<String, Value> = req
        .headers
        .iter()
        .map(|(n, v)| {
            let v = String::from_utf8_lossy(v.as_bytes());
            (
                n.to_string(),
                Value::from(secret::show_header(n.as_str(), &v, show_secrets)),
            )
        })
        .collect();
    let endpoints: Vec<Value> = settings
        .endpoints
        .iter()
        .zip(outcomes)
        .map(|(spec, o)| {
            let mut e = json!({ "label": spec.label });
            match o.as_ref().map(|o| &o.result) {
                Some(Ok(r)) => {
                    e["status"] = r.status.into();
                    let h: Map<String, Value> = r
                        .headers
                        .iter()
                        .map(|(n, v)| {
                            (
                                n.to_string(),
                                Value::from(String::from_utf8_lossy(v.as_bytes())),
                            )
                        })
                        .collect();
                    e["headers"] = Value::Object(h);
                    e["body"] = body(&r.body);
                }
                Some(Err(f)) => e["error"] = f.name().into(),
                None => e["error"] = "no outcome".into(),
            }
            e
        })
        .collect();
    let differences: Vec<Value> = findings
        .iter()
        .map(|f| json!({ "endpoint": settings.endpoints[f.endpoint].label, "field": f.field, "at": f.at, "kind": f.kind }))
        .collect();
    json!({
        "seq": req.seq,
        "method": method,
        "request": {
            "method": req.method.as_ref().map(|m| m.as_str()),
            "target": req.target,
            "headers": headers,
            "body": body(&req.body),
        },
        "endpoints": endpoints,
        "differences": differences,
    })
}

/// A body as a JSON string when it is UTF-8, else `{"base64": ...}`.
fn body(b: &[u8]) -> Value {
    match std::str::from_utf8(b) {
        Ok(s) => Value::from(s),
        Err(_) => json!({ "base64": base64::engine::general_purpose::STANDARD.encode(b) }),
    }
}
