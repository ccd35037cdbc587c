//! An in-process Ethereum JSON-RPC 2.0 server for `versus demo`.
//!
//! [`DemoServer::start`] binds `127.0.0.1` on an ephemeral port and serves
//! HTTP/1.1 (keep-alive) on its own OS thread with its own single-threaded
//! tokio runtime, so it never competes with the client's runtime.
//!
//! Answers are plausible and deterministic: every result is derived from a
//! hash of the method and params (blocks from their number, transactions
//! and receipts from their hash), so any two servers give the same answer to
//! the same request. Every method [`crate::input::ethereum`] emits is
//! answered; batches are supported; malformed requests get JSON-RPC errors
//! (-32700, -32600, -32601, -32602), never a dropped connection.
//!
//! A "candidate" server can be made slower ([`DemoServerConfig::extra_latency`])
//! and slightly wrong ([`DemoServerConfig::mismatch_share`]): that share of
//! requests, chosen by a hash of the seed and the whole request, gets a
//! realistic difference (a balance off by a few wei, a receipt missing
//! `effectiveGasPrice`, logs in reverse order, `gasUsed` off by one, a
//! `header not found` error instead of a block). Two servers with the same
//! seed differ on exactly the same requests, in the same way.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use crate::input::ethereum::{
    mix64, ALLOWANCE, BALANCE_OF, DECIMALS, DEFAULT_HEAD, TOTAL_SUPPLY, TRANSFER_TOPIC,
};

/// Largest request body accepted.
const MAX_BODY: usize = 16 << 20;

/// Resolution of tokio's timer.
const TIMER_TICK_NS: i64 = 1_000_000;

/// Settings of a [`DemoServer`].
#[derive(Clone, Debug, PartialEq)]
pub struct DemoServerConfig {
    /// Label of the server (names its thread).
    pub name: String,
    /// Mean latency added to every response.
    ///
    /// tokio's timer ticks every millisecond, so delays are served in whole
    /// ticks with error diffusion: the server keeps a running account of the
    /// delay owed and sleeps whenever a tick or more is due, subtracting the
    /// time it actually slept. The mean added latency therefore equals
    /// `extra_latency` over many requests, but individual responses are
    /// delayed by 0 or by 1–2 ms (e.g. 300 µs means roughly one response
    /// in five waits about 1.5 ms).
    pub extra_latency: Duration,
    /// Each response's latency is drawn uniformly from
    /// `extra_latency ± jitter` (floored at zero) before the tick accounting.
    pub jitter: Duration,
    /// Share of requests, from 0.0 to 1.0, answered differently from a
    /// reference server.
    pub mismatch_share: f64,
    /// Seed choosing which requests differ, how, and the jitter.
    pub seed: u64,
    /// Block number of the chain head (`eth_blockNumber`, `"latest"`).
    /// The head does not move; blocks above it are answered all the same.
    pub head: u64,
}

impl Default for DemoServerConfig {
    /// A "reference" server: no added latency, no mismatches, head
    /// [`DEFAULT_HEAD`].
    fn default() -> Self {
        DemoServerConfig {
            name: "reference".to_owned(),
            extra_latency: Duration::ZERO,
            jitter: Duration::ZERO,
            mismatch_share: 0.0,
            seed: 0,
            head: DEFAULT_HEAD,
        }
    }
}

/// A running demo server; dropping it shuts the server down and joins its
/// thread.
#[derive(Debug)]
pub struct DemoServer {
    address: SocketAddr,
    state: Arc<State>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl DemoServer {
    /// Bind `127.0.0.1:0` and start serving on a new thread.
    ///
    /// # Errors
    /// If `mismatch_share` is outside 0.0..=1.0, or the socket, runtime or
    /// thread cannot be created.
    pub fn start(config: DemoServerConfig) -> std::io::Result<DemoServer> {
        if !(0.0..=1.0).contains(&config.mismatch_share) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "mismatch share must be between 0 and 1, got {}",
                    config.mismatch_share
                ),
            ));
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        listener.set_nonblocking(true)?;
        let address = listener.local_addr()?;
        let listener = {
            let _context = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let thread_name = format!("versus-demo-{}", config.name.replace('\0', ""));
        let state = Arc::new(State::new(config));
        let (shutdown, stopped) = oneshot::channel();
        let thread = std::thread::Builder::new().name(thread_name).spawn({
            let state = Arc::clone(&state);
            move || runtime.block_on(serve(listener, state, stopped))
        })?;
        Ok(DemoServer {
            address,
            state,
            shutdown: Some(shutdown),
            thread: Some(thread),
        })
    }

    /// The server's URL, `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.address)
    }

    /// HTTP requests received so far (a batch counts once).
    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::Relaxed)
    }
}

impl Drop for DemoServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            // The thread may already be gone; then there is nothing to stop.
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Accept connections until told to stop; dropping the runtime afterwards
/// closes the open connections.
async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<State>,
    mut stopped: oneshot::Receiver<()>,
) {
    loop {
        let accepted = tokio::select! {
            _ = &mut stopped => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            // Out of file descriptors or similar: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        // Only a latency optimisation; serving works without it.
        let _ = stream.set_nodelay(true);
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            let service = service_fn(move |request| handle(Arc::clone(&state), request));
            // A broken connection only ends itself.
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn handle(
    state: Arc<State>,
    request: http::Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    state.requests.fetch_add(1, Ordering::Relaxed);
    let (status, reply) = match Limited::new(request.into_body(), MAX_BODY).collect().await {
        Ok(body) => (StatusCode::OK, state.answer(&body.to_bytes())),
        Err(_) => (
            StatusCode::PAYLOAD_TOO_LARGE,
            Some(failure(Value::Null, TOO_LARGE)),
        ),
    };
    state.delay().await;
    let response = match reply {
        Some(reply) => Response::builder()
            .status(status)
            .header(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )
            .body(Full::new(Bytes::from(reply.to_string()))),
        // Only notifications: nothing to say.
        None => Response::builder()
            .status(StatusCode::NO_CONTENT)
            .body(Full::new(Bytes::new())),
    };
    // Building from a valid status and a static header cannot fail.
    Ok(response.unwrap_or_default())
}

/// A JSON-RPC error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct RpcError {
    code: i64,
    message: &'static str,
}

const PARSE_ERROR: RpcError = RpcError {
    code: -32700,
    message: "parse error",
};
const INVALID_REQUEST: RpcError = RpcError {
    code: -32600,
    message: "invalid request",
};
const TOO_LARGE: RpcError = RpcError {
    code: -32600,
    message: "request body too large or unreadable",
};
const METHOD_NOT_FOUND: RpcError = RpcError {
    code: -32601,
    message: "the method does not exist/is not available",
};
const INVALID_PARAMS: RpcError = RpcError {
    code: -32602,
    message: "invalid params: expected an array or an object",
};
const HEADER_NOT_FOUND: RpcError = RpcError {
    code: -32000,
    message: "header not found",
};
const INDEXING: RpcError = RpcError {
    code: -32000,
    message: "transaction indexing is in progress",
};
const TOO_MANY_LOGS: RpcError = RpcError {
    code: -32005,
    message: "query returned more than 10000 results",
};

fn failure(id: Value, error: RpcError) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": error.code, "message": error.message}})
}

/// State shared by the server's connections.
#[derive(Debug)]
struct State {
    config: DemoServerConfig,
    /// The config's seed, mixed.
    seed: u64,
    requests: AtomicU64,
    /// Latency draws so far (input of the jitter).
    draws: AtomicU64,
    /// Added latency owed but not yet slept, in nanoseconds (negative when
    /// the timer overshot).
    owed_ns: AtomicI64,
}

impl State {
    fn new(config: DemoServerConfig) -> Self {
        State {
            seed: mix64(config.seed ^ 0x5eed),
            config,
            requests: AtomicU64::new(0),
            draws: AtomicU64::new(0),
            owed_ns: AtomicI64::new(0),
        }
    }

    /// The reply to a request body, or `None` if it held only notifications.
    fn answer(&self, body: &[u8]) -> Option<Value> {
        match serde_json::from_slice::<Value>(body) {
            Err(_) => Some(failure(Value::Null, PARSE_ERROR)),
            Ok(Value::Array(calls)) if calls.is_empty() => {
                Some(failure(Value::Null, INVALID_REQUEST))
            }
            Ok(Value::Array(calls)) => {
                let replies: Vec<Value> = calls.iter().filter_map(|call| self.call(call)).collect();
                (!replies.is_empty()).then_some(Value::Array(replies))
            }
            Ok(call) => self.call(&call),
        }
    }

    /// The reply to one call, or `None` for a notification (no `id`).
    fn call(&self, call: &Value) -> Option<Value> {
        let Some(call) = call.as_object() else {
            return Some(failure(Value::Null, INVALID_REQUEST));
        };
        let id = call.get("id");
        let valid_id = !matches!(
            id,
            Some(Value::Array(_) | Value::Object(_) | Value::Bool(_))
        );
        let method = call.get("method").and_then(Value::as_str);
        let (Some(method), Some("2.0"), true) = (
            method,
            call.get("jsonrpc").and_then(Value::as_str),
            valid_id,
        ) else {
            let id = id.filter(|_| valid_id).cloned().unwrap_or(Value::Null);
            return Some(failure(id, INVALID_REQUEST));
        };
        let id = id?.clone();
        let params = call.get("params").unwrap_or(&Value::Null);
        if !(params.is_array() || params.is_object() || params.is_null()) {
            return Some(failure(id, INVALID_PARAMS));
        }
        let params_key = hash_json(params);
        let Some(result) = result(method, params, params_key, self.config.head) else {
            return Some(failure(id, METHOD_NOT_FOUND));
        };
        let request_key =
            mix64(self.seed ^ hash_bytes(method.as_bytes()) ^ params_key ^ mix64(hash_json(&id)));
        let outcome = if unit(request_key) < self.config.mismatch_share {
            perturb(method, result, mix64(request_key))
        } else {
            Ok(result)
        };
        Some(match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => failure(id, error),
        })
    }

    /// Wait out this response's share of the added latency (see
    /// [`DemoServerConfig::extra_latency`]).
    async fn delay(&self) {
        let base = nanos(self.config.extra_latency);
        let jitter = nanos(self.config.jitter);
        if base == 0 && jitter == 0 {
            return;
        }
        let draw = mix64(self.seed ^ self.draws.fetch_add(1, Ordering::Relaxed));
        let offset = (draw % (2 * jitter as u64 + 1)) as i64 - jitter;
        let target = (base + offset).max(0);
        let owed = self.owed_ns.fetch_add(target, Ordering::Relaxed) + target;
        if owed < TIMER_TICK_NS {
            return;
        }
        let planned = owed - owed % TIMER_TICK_NS;
        self.owed_ns.fetch_sub(planned, Ordering::Relaxed);
        let start = Instant::now();
        tokio::time::sleep(Duration::from_nanos(planned as u64)).await;
        let overshoot = nanos(start.elapsed()) - planned;
        self.owed_ns.fetch_sub(overshoot, Ordering::Relaxed);
    }
}

/// A duration in nanoseconds, capped far below overflow.
fn nanos(duration: Duration) -> i64 {
    duration.as_nanos().min(1 << 60) as i64
}

/// FNV-1a of `bytes`, mixed.
fn hash_bytes(bytes: &[u8]) -> u64 {
    let fnv = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    });
    mix64(fnv)
}

/// Hash of a JSON value's compact text (key order as received).
fn hash_json(value: &Value) -> u64 {
    hash_bytes(value.to_string().as_bytes())
}

/// A hash as a number in 0.0..1.0.
fn unit(hash: u64) -> f64 {
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

const CLIENT_VERSION: &str = "Geth/v1.15.11-stable-36b2371c/linux-amd64/go1.24.3";
/// `sha3Uncles` of a block without uncles.
const EMPTY_UNCLES: &str = "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347";
/// Start of a typical Solidity contract's bytecode.
const CODE_PREFIX: &str = "0x608060405234801561001057600080fd5b50";
/// Block builders' `extraData` (beaverbuild.org, Titan, rsync-builder.xyz).
const EXTRA_DATA: [&str; 3] = [
    "0x6265617665726275696c642e6f7267",
    "0x546974616e2028746974616e6275696c6465722e78797a29",
    "0x7273796e632d6275696c6465722e78797a",
];
/// Timestamp of block 0 if every block took 12 s (puts [`DEFAULT_HEAD`] in
/// mid 2025).
const FIRST_TIMESTAMP: u64 = 1_478_362_368;
/// Salts separating the hash spaces of blocks, block hashes and transactions.
const BLOCK_SALT: u64 = 0xb10c;
const BLOCK_HASH_SALT: u64 = 0xb10c_4a54;
const TX_SALT: u64 = 0x7e4;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The result of a method call, derived from `params_key` (a hash of the
/// params); `None` if the method is unknown.
fn result(method: &str, params: &Value, params_key: u64, head: u64) -> Option<Value> {
    let rng = &mut fastrand::Rng::with_seed(params_key ^ hash_bytes(method.as_bytes()));
    let param = |index: usize| params.get(index);
    Some(match method {
        "eth_chainId" => json!("0x1"),
        "net_version" => json!("1"),
        "web3_clientVersion" => json!(CLIENT_VERSION),
        "eth_syncing" => json!(false),
        "eth_blockNumber" => quantity(head),
        "eth_gasPrice" => quantity(rng.u64(300_000_000..30_000_000_000)),
        "eth_maxPriorityFeePerGas" => quantity(rng.u64(10_000_000..2_000_000_000)),
        "eth_feeHistory" => fee_history(rng, params, head),
        "eth_getBalance" if rng.u8(..100) < 15 => quantity(0),
        "eth_getBalance" => json!(format!("{:#x}", amount(rng, 9..23))),
        "eth_getTransactionCount" if rng.u8(..10) == 0 => quantity(0),
        "eth_getTransactionCount" => {
            let bits = rng.u32(1..20);
            quantity(rng.u64(1..1 << bits))
        }
        "eth_getCode" if rng.bool() => json!("0x"),
        "eth_getCode" => {
            let size = rng.usize(200..2000);
            json!(format!("{CODE_PREFIX}{}", hex_digits(rng, size)))
        }
        "eth_getStorageAt" if rng.u8(..10) < 3 => json!(word(0)),
        "eth_getStorageAt" => json!(word(rng.u128(..))),
        "eth_call" => call_result(rng, param(0)),
        "eth_estimateGas" => {
            let data = param(0)
                .and_then(|call| call.get("data"))
                .and_then(Value::as_str);
            match data {
                Some(data) if data.len() > 2 => quantity(rng.u64(30_000..250_000)),
                _ => quantity(21_000),
            }
        }
        "eth_getBlockByNumber" => block(block_number(param(0), head), None, is_true(param(1))),
        "eth_getBlockByHash" => {
            let hash = param(0).and_then(Value::as_str).unwrap_or_default();
            let number = head.saturating_sub(hash_bytes(hash.as_bytes()) % 256);
            block(number, Some(hash.to_owned()), is_true(param(1)))
        }
        "eth_getTransactionByHash" => mined(param(0), head, transaction),
        "eth_getTransactionReceipt" => mined(param(0), head, receipt),
        "eth_getLogs" => logs(rng, param(0).unwrap_or(&Value::Null), head),
        _ => return None,
    })
}

/// A realistic difference from `result` (see the module docs).
fn perturb(method: &str, mut result: Value, choice: u64) -> Result<Value, RpcError> {
    if method.starts_with("eth_getBlockBy") && choice % 2 == 0 {
        return Err(HEADER_NOT_FOUND);
    }
    match &mut result {
        Value::Object(object) => perturb_object(object, choice / 2),
        Value::Array(items) if items.len() >= 2 => items.reverse(),
        Value::Array(_) => return Err(TOO_MANY_LOGS),
        Value::String(text) => alter_text(text, choice),
        Value::Bool(flag) => *flag = !*flag,
        Value::Null | Value::Number(_) => return Err(INDEXING),
    }
    Ok(result)
}

/// A receipt loses `effectiveGasPrice` or gets its logs reversed; otherwise
/// `gasUsed` is off by one, or without one, the last field goes missing.
fn perturb_object(object: &mut Map<String, Value>, choice: u64) {
    match choice % 3 {
        0 if object.shift_remove("effectiveGasPrice").is_some() => return,
        1 => {
            if let Some(logs) = object
                .get_mut("logs")
                .and_then(Value::as_array_mut)
                .filter(|logs| logs.len() >= 2)
            {
                logs.reverse();
                return;
            }
        }
        _ => {}
    }
    if let Some(Value::String(gas)) = object.get_mut("gasUsed") {
        flip_last_digit(gas);
    } else if let Some(last) = object.keys().next_back().cloned() {
        object.shift_remove(&last);
    }
}

/// A quantity changes in its low bits; other text in its last hex digit.
fn alter_text(text: &mut String, choice: u64) {
    let quantity = text
        .strip_prefix("0x")
        .filter(|hex| hex.len() <= 32 && (*hex == "0" || !hex.starts_with('0')))
        .and_then(|hex| u128::from_str_radix(hex, 16).ok());
    match quantity {
        Some(value) => *text = format!("{:#x}", value ^ u128::from(1 + choice % 0xffff)),
        None => flip_last_digit(text),
    }
}

/// Off by one in the last hex digit (`"0x"` becomes `"0x00"`).
fn flip_last_digit(text: &mut String) {
    let last = text.pop();
    match last
        .and_then(|c| c.to_digit(16))
        .filter(|_| !text.is_empty())
    {
        Some(digit) => text.push(char::from(HEX[(digit ^ 1) as usize])),
        None => {
            text.extend(last);
            text.push_str("00");
        }
    }
}

/// `eth_call` result for an ERC-20 call, by selector.
fn call_result(rng: &mut fastrand::Rng, call: Option<&Value>) -> Value {
    let data = call
        .and_then(|call| call.get("data").or_else(|| call.get("input")))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let value = match data.get(2..10) {
        Some(DECIMALS) => [6, 8, 18][rng.usize(..3)],
        Some(BALANCE_OF) if rng.u8(..10) < 3 => 0,
        Some(BALANCE_OF) => amount(rng, 6..27),
        Some(ALLOWANCE) => match rng.u8(..10) {
            0..=4 => 0,
            5..=7 => return json!(format!("0x{}", "f".repeat(64))),
            _ => rng.u128(..10u128.pow(24)),
        },
        Some(TOTAL_SUPPLY) => rng.u128(10u128.pow(20)..10u128.pow(30)),
        _ => rng.u128(..),
    };
    json!(word(value))
}

fn fee_history(rng: &mut fastrand::Rng, params: &Value, head: u64) -> Value {
    let count = params
        .get(0)
        .and_then(|count| count.as_u64().or_else(|| parse_quantity(count)))
        .unwrap_or(1)
        .clamp(1, 1024);
    let newest = block_number(params.get(1), head);
    let percentiles = params.get(2).and_then(Value::as_array).map_or(0, Vec::len);
    let mut base_fee = rng.u64(300_000_000..10_000_000_000);
    let base_fees: Vec<Value> = (0..=count)
        .map(|_| {
            base_fee = base_fee * rng.u64(875..=1125) / 1000;
            quantity(base_fee)
        })
        .collect();
    let ratios: Vec<Value> = (0..count).map(|_| json!(rng.f64())).collect();
    let rewards: Vec<Value> = (0..count)
        .map(|_| {
            (0..percentiles)
                .map(|_| quantity(rng.u64(1_000_000..3_000_000_000)))
                .collect()
        })
        .collect();
    json!({
        "oldestBlock": quantity((newest + 1).saturating_sub(count)),
        "baseFeePerGas": base_fees,
        "gasUsedRatio": ratios,
        "reward": rewards,
    })
}

/// A block, derived from its number alone (so `"latest"` and the head's
/// number agree); about 3 KB with transaction hashes.
fn block(number: u64, hash: Option<String>, full_transactions: bool) -> Value {
    let rng = &mut fastrand::Rng::with_seed(mix64(number ^ BLOCK_SALT));
    let hash = hash.unwrap_or_else(|| block_hash(number));
    let transactions: Vec<Value> = (0..rng.u64(10..20))
        .map(|index| {
            let key = transaction_key(number, index);
            let tx_hash = hash32(key);
            if full_transactions {
                let tx_rng = &mut fastrand::Rng::with_seed(key);
                transaction(tx_rng, &tx_hash, number, &hash, index)
            } else {
                json!(tx_hash)
            }
        })
        .collect();
    let withdrawals: Vec<Value> = (0..4)
        .map(|index| {
            json!({
                "index": quantity(number * 16 + index),
                "validatorIndex": quantity(rng.u64(..1_900_000)),
                "address": address(rng),
                "amount": quantity(rng.u64(17_000_000..19_000_000)),
            })
        })
        .collect();
    json!({
        "baseFeePerGas": quantity(rng.u64(300_000_000..30_000_000_000)),
        "blobGasUsed": quantity(rng.u64(..7) * 131_072),
        "difficulty": "0x0",
        "excessBlobGas": quantity(rng.u64(..50_000_000)),
        "extraData": EXTRA_DATA[rng.usize(..EXTRA_DATA.len())],
        "gasLimit": quantity(36_000_000),
        "gasUsed": quantity(rng.u64(8_000_000..36_000_000)),
        "hash": hash,
        "logsBloom": hex(rng, 256),
        "miner": address(rng),
        "mixHash": hex(rng, 32),
        "nonce": "0x0000000000000000",
        "number": quantity(number),
        "parentBeaconBlockRoot": hex(rng, 32),
        "parentHash": block_hash(number.saturating_sub(1)),
        "receiptsRoot": hex(rng, 32),
        "sha3Uncles": EMPTY_UNCLES,
        "size": quantity(rng.u64(20_000..200_000)),
        "stateRoot": hex(rng, 32),
        "timestamp": quantity(FIRST_TIMESTAMP.saturating_add(number.saturating_mul(12))),
        "transactions": transactions,
        "transactionsRoot": hex(rng, 32),
        "uncles": [],
        "withdrawals": withdrawals,
        "withdrawalsRoot": hex(rng, 32),
    })
}

/// The answer about a transaction hash: where it was mined is derived from
/// the hash (one in twenty is unknown: `null`), the rest from a generator
/// seeded by it, so a transaction and its receipt agree.
fn mined(
    hash: Option<&Value>,
    head: u64,
    describe: fn(&mut fastrand::Rng, &str, u64, &str, u64) -> Value,
) -> Value {
    let text = hash.and_then(Value::as_str).unwrap_or_default();
    let key = hash_bytes(text.as_bytes());
    if key % 20 == 0 {
        return Value::Null;
    }
    let number = head.saturating_sub((key >> 8) % 5000);
    let rng = &mut fastrand::Rng::with_seed(key ^ TX_SALT);
    describe(rng, text, number, &block_hash(number), (key >> 32) % 150)
}

/// A type-2 transaction; draws its sender and recipient first, as
/// [`receipt`] does.
fn transaction(rng: &mut fastrand::Rng, hash: &str, number: u64, block: &str, index: u64) -> Value {
    let (from, to) = (address(rng), address(rng));
    let priority_fee = rng.u64(10_000_000..2_000_000_000);
    let input = if rng.u8(..10) < 4 {
        "0x".to_owned()
    } else {
        format!(
            "0xa9059cbb{}{}",
            &address_word(rng)[2..],
            &word(rng.u128(..1 << 80))[2..]
        )
    };
    let parity = quantity(rng.u64(..2));
    json!({
        "blockHash": block,
        "blockNumber": quantity(number),
        "from": from,
        "gas": quantity(rng.u64(21_000..500_000)),
        "gasPrice": quantity(rng.u64(300_000_000..30_000_000_000)),
        "maxFeePerGas": quantity(rng.u64(30_000_000_000..100_000_000_000)),
        "maxPriorityFeePerGas": quantity(priority_fee),
        "hash": hash,
        "input": input,
        "nonce": quantity(rng.u64(..100_000)),
        "to": to,
        "transactionIndex": quantity(index),
        "value": quantity(rng.u64(..1 << 60)),
        "type": "0x2",
        "accessList": [],
        "chainId": "0x1",
        "v": parity,
        "r": hex(rng, 32),
        "s": hex(rng, 32),
        "yParity": parity,
    })
}

/// A receipt with a few ERC-20 `Transfer` logs emitted by the recipient.
fn receipt(rng: &mut fastrand::Rng, hash: &str, number: u64, block: &str, index: u64) -> Value {
    let (from, to) = (address(rng), address(rng));
    let count = if rng.u8(..10) < 3 { 0 } else { rng.u64(1..6) };
    let first_log = rng.u64(..300);
    let logs: Vec<Value> = (0..count)
        .map(|i| {
            let topics = [
                json!(format!("0x{TRANSFER_TOPIC}")),
                json!(address_word(rng)),
                json!(address_word(rng)),
            ];
            let data = word(rng.u128(..1 << 90));
            log(
                &to,
                &topics,
                &data,
                number,
                block,
                hash,
                index,
                first_log + i,
            )
        })
        .collect();
    let gas_used = if count == 0 {
        21_000
    } else {
        rng.u64(40_000..300_000)
    };
    let bloom = if count == 0 {
        format!("0x{}", "0".repeat(512))
    } else {
        hex(rng, 256)
    };
    json!({
        "blockHash": block,
        "blockNumber": quantity(number),
        "contractAddress": null,
        "cumulativeGasUsed": quantity(gas_used + rng.u64(..20_000_000)),
        "effectiveGasPrice": quantity(rng.u64(300_000_000..30_000_000_000)),
        "from": from,
        "gasUsed": quantity(gas_used),
        "logs": logs,
        "logsBloom": bloom,
        "status": if rng.u8(..50) == 0 { "0x0" } else { "0x1" },
        "to": to,
        "transactionHash": hash,
        "transactionIndex": quantity(index),
        "type": "0x2",
    })
}

/// `eth_getLogs`: up to ten logs in the filter's block range matching its
/// address and topics, in chain order.
fn logs(rng: &mut fastrand::Rng, filter: &Value, head: u64) -> Value {
    let from = block_number(filter.get("fromBlock"), head);
    let to = block_number(filter.get("toBlock"), head);
    if from > to {
        return json!([]);
    }
    let address_filter = match filter.get("address") {
        Some(Value::Array(addresses)) => addresses.first(),
        other => other,
    }
    .and_then(Value::as_str);
    let topic_filter = filter.get("topics").and_then(Value::as_array);
    let count = rng.usize(..=(to - from + 1).min(10) as usize);
    let mut positions: Vec<(u64, u64)> = (0..count)
        .map(|_| (rng.u64(from..=to), rng.u64(..400)))
        .collect();
    positions.sort_unstable();
    let logs: Vec<Value> = positions
        .into_iter()
        .map(|(number, log_index)| {
            let topics: Vec<Value> = (0..3)
                .map(
                    |position| match topic_filter.and_then(|topics| topics.get(position)) {
                        Some(Value::String(topic)) => json!(topic),
                        _ if position == 0 => json!(format!("0x{TRANSFER_TOPIC}")),
                        _ => json!(address_word(rng)),
                    },
                )
                .collect();
            let emitter = address_filter.map_or_else(|| address(rng), str::to_owned);
            let tx_index = log_index / 3;
            let tx_hash = hash32(transaction_key(number, tx_index));
            let data = word(rng.u128(..1 << 90));
            log(
                &emitter,
                &topics,
                &data,
                number,
                &block_hash(number),
                &tx_hash,
                tx_index,
                log_index,
            )
        })
        .collect();
    Value::Array(logs)
}

#[allow(clippy::too_many_arguments)]
fn log(
    emitter: &str,
    topics: &[Value],
    data: &str,
    number: u64,
    block: &str,
    tx_hash: &str,
    tx_index: u64,
    log_index: u64,
) -> Value {
    json!({
        "address": emitter,
        "topics": topics,
        "data": data,
        "blockNumber": quantity(number),
        "transactionHash": tx_hash,
        "transactionIndex": quantity(tx_index),
        "blockHash": block,
        "logIndex": quantity(log_index),
        "removed": false,
    })
}

/// A block parameter as a number: tags other than `"earliest"`, and
/// anything unreadable, mean the head.
fn block_number(param: Option<&Value>, head: u64) -> u64 {
    match param {
        Some(Value::String(tag)) if tag == "earliest" => 0,
        Some(value) => parse_quantity(value).unwrap_or(head),
        None => head,
    }
}

fn parse_quantity(value: &Value) -> Option<u64> {
    let hex = value.as_str()?.strip_prefix("0x")?;
    u64::from_str_radix(hex, 16).ok()
}

fn is_true(value: Option<&Value>) -> bool {
    value.and_then(Value::as_bool).unwrap_or(false)
}

fn transaction_key(number: u64, index: u64) -> u64 {
    mix64(mix64(number ^ TX_SALT) ^ index)
}

fn block_hash(number: u64) -> String {
    hash32(mix64(number ^ BLOCK_HASH_SALT))
}

fn hash32(key: u64) -> String {
    hex(&mut fastrand::Rng::with_seed(key), 32)
}

fn quantity(value: u64) -> Value {
    json!(format!("{value:#x}"))
}

/// A 32-byte ABI word.
fn word(value: u128) -> String {
    format!("0x{value:064x}")
}

/// A random amount below `10^digits`, the digits drawn from `digits`.
fn amount(rng: &mut fastrand::Rng, digits: std::ops::Range<u32>) -> u128 {
    let digits = rng.u32(digits);
    rng.u128(..10u128.pow(digits))
}

fn address(rng: &mut fastrand::Rng) -> String {
    hex(rng, 20)
}

/// A random address as a 32-byte ABI word (a topic or an argument).
fn address_word(rng: &mut fastrand::Rng) -> String {
    format!("0x{}{}", "0".repeat(24), hex_digits(rng, 20))
}

fn hex(rng: &mut fastrand::Rng, bytes: usize) -> String {
    format!("0x{}", hex_digits(rng, bytes))
}

fn hex_digits(rng: &mut fastrand::Rng, bytes: usize) -> String {
    let mut text = String::with_capacity(bytes * 2);
    for _ in 0..bytes {
        let byte = rng.u8(..);
        text.push(char::from(HEX[usize::from(byte >> 4)]));
        text.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::ethereum::{known_methods, EthereumConfig, EthereumGenerator};
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;

    /// A minimal HTTP/1.1 keep-alive client.
    struct Client {
        reader: BufReader<TcpStream>,
        writer: TcpStream,
    }

    impl Client {
        fn connect(server: &DemoServer) -> Client {
            let writer = TcpStream::connect(server.address).unwrap();
            writer.set_nodelay(true).unwrap();
            Client {
                reader: BufReader::new(writer.try_clone().unwrap()),
                writer,
            }
        }

        /// Status and body of a POST.
        fn post(&mut self, body: &[u8]) -> (u16, Vec<u8>) {
            let mut request = format!(
                "POST / HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                body.len()
            )
            .into_bytes();
            request.extend_from_slice(body);
            self.writer.write_all(&request).unwrap();
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            let status = line.split(' ').nth(1).unwrap().parse().unwrap();
            let mut length = 0;
            loop {
                line.clear();
                self.reader.read_line(&mut line).unwrap();
                if line == "\r\n" {
                    break;
                }
                if let Some((name, value)) = line.split_once(':') {
                    if name.eq_ignore_ascii_case("content-length") {
                        length = value.trim().parse().unwrap();
                    }
                }
            }
            let mut body = vec![0; length];
            self.reader.read_exact(&mut body).unwrap();
            (status, body)
        }

        fn call(&mut self, body: &str) -> Value {
            let (status, reply) = self.post(body.as_bytes());
            assert_eq!(status, 200, "{}", String::from_utf8_lossy(&reply));
            serde_json::from_slice(&reply).unwrap()
        }
    }

    fn generated(weights: Vec<(String, u32)>, count: usize) -> Vec<String> {
        let mut generator = EthereumGenerator::new(EthereumConfig {
            weights,
            ..EthereumConfig::default()
        })
        .unwrap();
        (0..count)
            .map(|_| {
                let mut line = Vec::new();
                generator.next_line(&mut line);
                String::from_utf8(line).unwrap()
            })
            .collect()
    }

    fn default_lines(count: usize) -> Vec<String> {
        generated(EthereumConfig::default().weights, count)
    }

    fn is_hex(value: &Value, bytes: usize) -> bool {
        value
            .as_str()
            .and_then(|text| text.strip_prefix("0x"))
            .is_some_and(|hex| hex.len() == 2 * bytes && hex.bytes().all(|c| HEX.contains(&c)))
    }

    fn is_quantity(value: &Value) -> bool {
        value
            .as_str()
            .and_then(|text| text.strip_prefix("0x"))
            .is_some_and(|hex| {
                (hex == "0" || !hex.starts_with('0')) && u128::from_str_radix(hex, 16).is_ok()
            })
    }

    #[test]
    fn answers_every_generated_method() {
        let server = DemoServer::start(DemoServerConfig::default()).unwrap();
        let mut client = Client::connect(&server);
        for method in known_methods() {
            for line in generated(vec![(method.to_owned(), 1)], 40) {
                let request: Value = serde_json::from_str(&line).unwrap();
                let reply = client.call(&line);
                assert_eq!(reply["jsonrpc"], "2.0");
                assert_eq!(reply["id"], request["id"]);
                let result = &reply["result"];
                let ok = match method {
                    "eth_getBalance"
                    | "eth_getTransactionCount"
                    | "eth_blockNumber"
                    | "eth_gasPrice"
                    | "eth_maxPriorityFeePerGas"
                    | "eth_estimateGas"
                    | "eth_chainId" => is_quantity(result),
                    "eth_call" | "eth_getStorageAt" => is_hex(result, 32),
                    "eth_getCode" => result.as_str().is_some_and(|code| code.starts_with("0x")),
                    "eth_getBlockByNumber" | "eth_getBlockByHash" => {
                        let size = result.to_string().len();
                        let full = request["params"][1] == true;
                        result["transactions"].as_array().is_some_and(|txs| {
                            txs.iter().all(|tx| {
                                if full {
                                    tx["hash"].is_string()
                                } else {
                                    is_hex(tx, 32)
                                }
                            })
                        }) && is_hex(&result["hash"], 32)
                            && (full || (2_500..4_000).contains(&size))
                    }
                    "eth_getTransactionReceipt" => {
                        result.is_null()
                            || (result["transactionHash"] == request["params"][0]
                                && result["logs"].is_array()
                                && is_quantity(&result["gasUsed"]))
                    }
                    "eth_getTransactionByHash" => {
                        result.is_null() || result["hash"] == request["params"][0]
                    }
                    "eth_getLogs" => result.as_array().is_some_and(|logs| {
                        logs.iter().all(|log| {
                            log["topics"][0] == request["params"][0]["topics"][0]
                                && request["params"][0]
                                    .get("address")
                                    .is_none_or(|address| log["address"] == *address)
                        })
                    }),
                    "eth_feeHistory" => result["baseFeePerGas"].is_array(),
                    "net_version" | "web3_clientVersion" => result.is_string(),
                    "eth_syncing" => *result == false,
                    _ => false,
                };
                assert!(ok, "{line} -> {reply}");
            }
        }
        assert_eq!(server.requests(), 40 * known_methods().count() as u64);
        let latest = client.call(
            r#"{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["latest",false]}"#,
        );
        let head = client.call(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"eth_getBlockByNumber","params":["{DEFAULT_HEAD:#x}",false]}}"#
        ));
        assert_eq!(latest, head);
    }

    #[test]
    fn batches_and_errors() {
        let server = DemoServer::start(DemoServerConfig::default()).unwrap();
        let mut client = Client::connect(&server);
        let batch = client.call(
            r#"[{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]},
                {"jsonrpc":"2.0","id":"two","method":"eth_sendRawTransaction","params":["0x00"]},
                {"jsonrpc":"2.0","method":"eth_chainId"},
                {"jsonrpc":"2.0","id":3,"method":"eth_chainId"},
                7]"#,
        );
        assert_eq!(batch[0]["result"], format!("{DEFAULT_HEAD:#x}"));
        assert_eq!(batch[1]["id"], "two");
        assert_eq!(batch[1]["error"]["code"], -32601);
        assert_eq!(batch[2]["id"], 3);
        assert_eq!(batch[2]["result"], "0x1");
        assert_eq!(batch[3]["error"]["code"], -32600);
        assert_eq!(batch.as_array().unwrap().len(), 4);

        let error = |client: &mut Client, body: &str| {
            let reply = client.call(body);
            (
                reply["id"].clone(),
                reply["error"]["code"].as_i64().unwrap(),
            )
        };
        assert_eq!(
            error(&mut client, r#"{"jsonrpc":"2.0","id":1,"#),
            (Value::Null, -32700)
        );
        assert_eq!(error(&mut client, ""), (Value::Null, -32700));
        assert_eq!(error(&mut client, "[]"), (Value::Null, -32600));
        assert_eq!(error(&mut client, "42"), (Value::Null, -32600));
        assert_eq!(
            error(&mut client, r#"{"jsonrpc":"2.0","id":5}"#),
            (json!(5), -32600)
        );
        assert_eq!(
            error(&mut client, r#"{"id":5,"method":"eth_chainId"}"#),
            (json!(5), -32600)
        );
        assert_eq!(
            error(
                &mut client,
                r#"{"jsonrpc":"2.0","id":[1],"method":"eth_chainId"}"#
            ),
            (Value::Null, -32600)
        );
        assert_eq!(
            error(
                &mut client,
                r#"{"jsonrpc":"2.0","id":6,"method":"eth_chainId","params":7}"#
            ),
            (json!(6), -32602)
        );
        assert_eq!(
            error(
                &mut client,
                r#"{"jsonrpc":"2.0","id":7,"method":"eth_nope","params":[]}"#
            ),
            (json!(7), -32601)
        );
        let (status, body) =
            client.post(br#"{"jsonrpc":"2.0","method":"eth_chainId","params":[]}"#);
        assert_eq!((status, body.len()), (204, 0));
        // Odd but well-formed params are answered, not rejected.
        let odd = client.call(r#"{"jsonrpc":"2.0","id":8,"method":"eth_getLogs","params":[{"fromBlock":"0x10","toBlock":"0x1"}]}"#);
        assert_eq!(odd["result"], json!([]));
        let odd = client.call(r#"{"jsonrpc":"2.0","id":9,"method":"eth_getBlockByHash"}"#);
        assert!(odd["result"].is_object());
    }

    fn replies(server: &DemoServer, lines: &[String]) -> Vec<Vec<u8>> {
        let mut client = Client::connect(server);
        lines
            .iter()
            .map(|line| client.post(line.as_bytes()).1)
            .collect()
    }

    #[test]
    fn same_request_same_answer() {
        let lines = default_lines(300);
        let first = DemoServer::start(DemoServerConfig::default()).unwrap();
        let second = DemoServer::start(DemoServerConfig {
            name: "other".to_owned(),
            seed: 9,
            ..DemoServerConfig::default()
        })
        .unwrap();
        let answers = replies(&first, &lines);
        assert_eq!(answers, replies(&second, &lines));
        assert_eq!(answers, replies(&first, &lines));
    }

    #[test]
    fn mismatch_share_is_respected_and_deterministic() {
        let lines = default_lines(1000);
        let reference = DemoServer::start(DemoServerConfig::default()).unwrap();
        let candidate = || {
            DemoServer::start(DemoServerConfig {
                name: "candidate".to_owned(),
                mismatch_share: 0.5,
                seed: 7,
                ..DemoServerConfig::default()
            })
            .unwrap()
        };
        let expected = replies(&reference, &lines);
        let (first, second) = (candidate(), candidate());
        let answers = replies(&first, &lines);
        assert_eq!(answers, replies(&second, &lines));
        let different = expected
            .iter()
            .zip(&answers)
            .filter(|(a, b)| a != b)
            .count();
        assert!(
            (400..=600).contains(&different),
            "{different} of 1000 differ"
        );
        for answer in &answers {
            let reply: Value = serde_json::from_slice(answer).unwrap();
            assert!(reply.get("result").is_some() != reply.get("error").is_some());
        }
        assert!(DemoServer::start(DemoServerConfig {
            mismatch_share: 1.5,
            ..DemoServerConfig::default()
        })
        .is_err());
    }

    #[test]
    fn perturbations_always_differ() {
        let receipt = json!({"effectiveGasPrice": "0x1", "gasUsed": "0x5208", "logs": [1, 2]});
        let block = json!({"gasUsed": "0x10", "hash": "0x00"});
        let cases = [
            ("eth_getTransactionReceipt", receipt),
            ("eth_getBlockByNumber", block),
            (
                "eth_getTransactionByHash",
                json!({"hash": "0x00", "yParity": "0x1"}),
            ),
            ("eth_getLogs", json!([1, 2])),
            ("eth_getLogs", json!([])),
            ("eth_getBalance", json!("0x0")),
            ("eth_getCode", json!("0x")),
            ("eth_call", json!(word(5))),
            ("net_version", json!("1")),
            ("eth_syncing", json!(false)),
            ("eth_getTransactionReceipt", Value::Null),
        ];
        for (method, result) in cases {
            for choice in 0..12 {
                let changed = perturb(method, result.clone(), choice);
                assert_ne!(changed, Ok(result.clone()), "{method} {choice}");
                if let Ok(Value::String(text)) = &changed {
                    assert!(text.starts_with("0x") || method == "net_version", "{text}");
                }
            }
        }
    }

    #[test]
    fn latency_is_added_on_average_and_drop_stops_the_server() {
        let server = DemoServer::start(DemoServerConfig {
            name: "slow".to_owned(),
            extra_latency: Duration::from_micros(1500),
            jitter: Duration::from_micros(500),
            ..DemoServerConfig::default()
        })
        .unwrap();
        let lines = default_lines(100);
        let start = Instant::now();
        replies(&server, &lines);
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_millis(140) && elapsed < Duration::from_millis(1000),
            "{elapsed:?}"
        );
        assert!(server.url().starts_with("http://127.0.0.1:"));
        let address = server.address;
        let mut idle = Client::connect(&server);
        drop(server);
        assert!(TcpStream::connect(address).is_err());
        // Closed: end of stream, or a reset if it was never accepted.
        let mut rest = Vec::new();
        assert!(!matches!(idle.reader.read_to_end(&mut rest), Ok(n) if n > 0));
    }
}
