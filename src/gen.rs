//! `versus gen`: built-in request generators written to a stream, so that
//! `versus gen ethereum | versus URL...` needs no other program. Owns the
//! output pacing (`--rate`) and following a real chain head (`--rpc`); the
//! generator itself is [`crate::input::ethereum`].

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::endpoint::{
    self, EndpointSpec, HttpVersion, Link, Prepared, Slot, TlsOptions, TransportOptions,
};
use crate::input::ethereum::{EthereumConfig, EthereumGenerator};
use crate::input::Request;

/// How often `--rpc` asks the node for its head.
const HEAD_POLL: Duration = Duration::from_secs(4);

/// Settings of `versus gen ethereum`.
#[derive(Clone, Debug, Default)]
pub struct GenOptions {
    /// `METHOD:WEIGHT` specs; when given they replace the default mix.
    pub methods: Vec<String>,
    /// Lines per second; `None` is as fast as the reader takes them.
    pub rate: Option<f64>,
    /// Stop after this many lines.
    pub count: Option<u64>,
    /// Seed of the stream.
    pub seed: u64,
    /// A node whose chain head the stream follows.
    pub rpc: Option<String>,
}

/// Build the generator's configuration from the options.
///
/// # Errors
/// A message naming the bad `--method` spec or rate.
pub fn ethereum_config(opts: &GenOptions) -> Result<EthereumConfig, String> {
    let mut config = EthereumConfig {
        seed: opts.seed,
        rate: opts.rate,
        ..EthereumConfig::default()
    };
    if let Some(r) = opts.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(format!(
                "--rate must be a positive number of lines per second, got {r}"
            ));
        }
    }
    if !opts.methods.is_empty() {
        config.weights.clear();
        for spec in &opts.methods {
            let (name, weight) =
                EthereumConfig::parse_weight(spec).map_err(|e| format!("--method: {e}"))?;
            if config.weights.iter().any(|(n, _)| *n == name) {
                return Err(format!("--method: {name} is given twice"));
            }
            config.weights.push((name, weight));
        }
    }
    Ok(config)
}

/// Write Ethereum JSON-RPC lines of `config` (from [`ethereum_config`]) to
/// `out` until `count` lines, a closed pipe, or forever. Warnings (an
/// unreachable `--rpc`) go to `warn`.
///
/// # Errors
/// A bad option, or a write error other than a closed pipe.
pub fn ethereum(
    opts: &GenOptions,
    config: EthereumConfig,
    out: &mut dyn Write,
    warn: Arc<dyn Fn(String) + Send + Sync>,
) -> Result<(), String> {
    let mut generator = EthereumGenerator::new(config)?;
    let head = Arc::new(AtomicU64::new(0));
    if let Some(url) = &opts.rpc {
        follow_head(url, head.clone(), warn)?;
    }
    let start = Instant::now();
    let mut line = Vec::with_capacity(512);
    let mut n: u64 = 0;
    let mut seen_head = 0;
    let result = (|| -> io::Result<()> {
        while opts.count.is_none_or(|c| n < c) {
            let h = head.load(Ordering::Relaxed);
            if h != seen_head {
                seen_head = h;
                generator.set_head(h);
            }
            if let Some(rate) = opts.rate {
                let due = start + Duration::from_secs_f64(n as f64 / rate);
                let now = Instant::now();
                if due > now {
                    out.flush()?;
                    std::thread::sleep(due - now);
                }
            }
            line.clear();
            generator.next_line(&mut line);
            line.push(b'\n');
            out.write_all(&line)?;
            n += 1;
        }
        out.flush()
    })();
    match result {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(format!("cannot write: {e}")),
        _ => Ok(()),
    }
}

/// Ask the node at `url` for its head once now (so the first lines use
/// it), then every few seconds on a thread, storing it in `head`. An
/// unreachable node is a warning, never an error.
///
/// # Errors
/// Only when `url` is not an endpoint URL.
fn follow_head(
    url: &str,
    head: Arc<AtomicU64>,
    warn: Arc<dyn Fn(String) + Send + Sync>,
) -> Result<(), String> {
    let spec = Arc::new(EndpointSpec::parse(url, false).map_err(|e| format!("--rpc: {e}"))?);
    let opts = TransportOptions {
        timeout: Duration::from_secs(5),
        max_body: 1 << 20,
        keepalive: true,
        version: HttpVersion::Http1,
        keep_headers: Vec::new(),
        max_connections: None,
        io: endpoint::IoDriver::Epoll,
    };
    let tls = match spec.scheme {
        endpoint::Scheme::Https => Some(endpoint::tls_config(
            &TlsOptions::default(),
            HttpVersion::Http1,
        )?),
        endpoint::Scheme::Http => None,
    };
    let label = spec.display_url.clone();
    let poll =
        move |first: &mut bool, tx: &std::sync::mpsc::Sender<String>| -> Result<(), String> {
            let addrs = match endpoint::resolve(&spec.host, spec.port) {
                Ok(a) => a,
                Err(e) => return Err(format!("cannot resolve {}: {e}", spec.host)),
            };
            let link = Link::new(Prepared::new(
                spec.clone(),
                addrs,
                tls.clone(),
                opts.clone(),
            )?);
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            let local = tokio::task::LocalSet::new();
            let mut slot = Slot::new(std::rc::Rc::new(link));
            let request = Request::line(
                0,
                r#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}"#.into(),
            );
            local.block_on(&rt, async {
                loop {
                    let outcome = slot.send(&request, true, None).await;
                    let block = match &outcome.result {
                        Ok(r) => parse_block_number(&r.body).ok_or_else(|| {
                            format!("unexpected answer to eth_blockNumber (HTTP {})", r.status)
                        }),
                        Err(f) => Err(f.to_string()),
                    };
                    // An empty message: an answer (or, after a first failure,
                    // the end of the wait for one).
                    match block {
                        Ok(b) => {
                            head.store(b, Ordering::Relaxed);
                            let _ = tx.send(String::new());
                        }
                        Err(e) => {
                            let _ = tx.send(e);
                            if *first {
                                let _ = tx.send(String::new());
                            }
                        }
                    }
                    *first = false;
                    tokio::time::sleep(HEAD_POLL).await;
                }
            })
        };
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::Builder::new()
        .name("versus-gen-rpc".into())
        .spawn(move || {
            let mut first = true;
            if let Err(e) = poll(&mut first, &tx) {
                let _ = tx.send(e);
                let _ = tx.send(String::new());
            }
        })
        .map_err(|e| e.to_string())?;
    // Wait for the first answer (or failure); later failures are warned as
    // they come, on a thread of their own: once each in a row, again after
    // an answer.
    let mut last = String::new();
    let mut note = move |msg: String| {
        if !msg.is_empty() && msg != last {
            warn(format!(
                "--rpc {label}: {msg}; generating from the last known head"
            ));
        }
        last = msg;
    };
    for msg in rx.iter() {
        if msg.is_empty() {
            break;
        }
        note(msg);
    }
    std::thread::Builder::new()
        .name("versus-gen-rpc-warn".into())
        .spawn(move || rx.iter().for_each(note))
        .map_err(|e| e.to_string())?;
    Ok(())
}

fn parse_block_number(body: &[u8]) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_slice(body).ok()?;
    let hex = v.get("result")?.as_str()?.strip_prefix("0x")?;
    u64::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_replace_the_mix_and_bad_specs_are_named() {
        let c = ethereum_config(&GenOptions {
            methods: vec!["eth_call:40".into(), "eth_getLogs:5".into()],
            ..GenOptions::default()
        })
        .unwrap();
        assert_eq!(
            c.weights,
            [("eth_call".to_string(), 40), ("eth_getLogs".to_string(), 5)]
        );
        for (spec, want) in [
            ("eth_nope:1", "eth_nope"),
            ("eth_call", "METHOD:WEIGHT"),
            ("eth_call:x", "whole number"),
        ] {
            let err = ethereum_config(&GenOptions {
                methods: vec![spec.into()],
                ..GenOptions::default()
            })
            .unwrap_err();
            assert!(err.contains(want), "{spec}: {err}");
        }
        assert!(ethereum_config(&GenOptions {
            rate: Some(-1.0),
            ..GenOptions::default()
        })
        .is_err());
    }

    #[test]
    fn count_lines_are_written_and_a_closed_pipe_is_not_an_error() {
        let mut out = Vec::new();
        let opts = GenOptions {
            count: Some(100),
            ..GenOptions::default()
        };
        ethereum(
            &opts,
            ethereum_config(&opts).unwrap(),
            &mut out,
            Arc::new(|_| {}),
        )
        .unwrap();
        assert_eq!(out.iter().filter(|b| **b == b'\n').count(), 100);

        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let opts = GenOptions::default();
        let config = ethereum_config(&opts).unwrap();
        assert!(ethereum(&opts, config, &mut Closed, Arc::new(|_| {})).is_ok());
    }

    #[test]
    fn block_numbers_parse() {
        assert_eq!(
            parse_block_number(br#"{"jsonrpc":"2.0","id":1,"result":"0x10"}"#),
            Some(16)
        );
        assert_eq!(parse_block_number(br#"{"error":{}}"#), None);
    }
}
