//! The JSON comparison's speed against the parse limit: per case, the time
//! to compare two answers (both counted in MB/s), beside the time to parse
//! the same two bodies with serde_json into `Value`s and with simd-json
//! onto its tape (a SIMD parser; its time includes copying each body into
//! the mutable buffer it parses in place). `bench/run.sh compare` runs it
//! on one pinned core; the figures go in bench/RESULTS.md.
//! `COMPARE_CASE=unordered` runs the cases whose name has that in it;
//! `COMPARE_BUDGET_MS` sets the time each figure takes (1,500 ms).
//!
//! Cases: `eth_getBlockByNumber` with 150 full transactions (about 112 KB)
//! with one field changed, indented, its transactions reversed under an
//! unordered rule and under a key rule; a 1.4 MB `eth_getLogs` answer and a
//! 12 MB `debug_traceTransaction` answer, each with one field changed.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use versus::compare::json::compare;
use versus::compare::rules::RuleSet;

/// A hex string of `len` digits, different for each `seed`.
fn hex(seed: usize, len: usize) -> String {
    let mut x = seed as u64 ^ 0x9e37_79b9_7f4a_7c15;
    let digits: String = (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b"0123456789abcdef"[(x % 16) as usize])
        })
        .collect();
    format!("0x{digits}")
}

fn transaction(i: usize) -> Value {
    json!({
        "blockHash": hex(1, 64), "blockNumber": "0x1283a4f", "from": hex(i, 40),
        "gas": format!("0x{:x}", 21000 + i), "gasPrice": "0x3b9aca00",
        "maxFeePerGas": "0x4a817c800", "maxPriorityFeePerGas": "0x3b9aca00",
        "hash": hex(i + 1000, 64), "input": hex(i + 2000, 2 * (i % 40) + 8),
        "nonce": format!("0x{:x}", i), "to": hex(i + 3000, 40),
        "transactionIndex": format!("0x{i:x}"), "value": "0xde0b6b3a7640000",
        "type": "0x2", "accessList": [], "chainId": "0x1", "v": "0x1",
        "r": hex(i + 4000, 64), "s": hex(i + 5000, 64), "yParity": "0x1"
    })
}

fn block(transactions: Vec<Value>) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "result": {
        "baseFeePerGas": "0x7", "difficulty": "0x0", "extraData": hex(9, 40),
        "gasLimit": "0x1c9c380", "gasUsed": "0x1234", "hash": hex(101, 64),
        "logsBloom": hex(102, 512), "miner": hex(103, 40), "mixHash": hex(104, 64),
        "nonce": "0x0000000000000000", "number": "0x1283a4f", "parentHash": hex(105, 64),
        "size": "0x1a2b", "stateRoot": hex(106, 64), "timestamp": "0x65f1a2b3",
        "transactions": transactions, "uncles": []
    }})
}

fn log(i: usize) -> Value {
    json!({
        "address": hex(i % 7, 40), "topics": [hex(i, 64), hex(i + 1, 64), hex(i + 2, 64)],
        "data": hex(i + 3, 256), "blockNumber": format!("0x{:x}", 19_000_000 + i / 50),
        "transactionHash": hex(i + 4, 64), "transactionIndex": format!("0x{:x}", i % 200),
        "blockHash": hex(i / 50, 64), "logIndex": format!("0x{:x}", i % 300), "removed": false
    })
}

fn step(i: usize) -> Value {
    let stack: Vec<String> = (0..(i % 8)).map(|k| hex(i + k, 64)).collect();
    let op = ["PUSH1", "MSTORE", "SLOAD", "CALL"][i % 4];
    json!({"pc": i * 2, "op": op,
        "gas": 2_000_000 - i, "gasCost": 3, "depth": 1 + i % 3, "stack": stack})
}

/// Set `value` at `path` (keys and indices) in `doc`.
fn set(doc: &mut Value, path: &[&str], value: Value) {
    let mut at = doc;
    for p in path {
        at = match p.parse::<usize>() {
            Ok(i) => &mut at[i],
            Err(_) => &mut at[*p],
        };
    }
    *at = value;
}

struct Case {
    name: &'static str,
    reference: Vec<u8>,
    candidate: Vec<u8>,
    rules: RuleSet,
    differences: usize,
}

fn rules(edit: impl FnOnce(&mut RuleSet)) -> RuleSet {
    let mut r = RuleSet {
        jsonrpc: true,
        ..RuleSet::default()
    };
    edit(&mut r);
    r
}

fn cases() -> Vec<Case> {
    let block_doc = block((0..150).map(transaction).collect());
    let reference = serde_json::to_vec(&block_doc).unwrap();
    let mut one = block_doc.clone();
    set(
        &mut one,
        &["result", "transactions", "120", "gas"],
        json!("0x1"),
    );
    let mut reversed = block_doc.clone();
    if let Some(t) = reversed["result"]["transactions"].as_array_mut() {
        t.reverse();
    }
    let path = || "$.result.transactions".parse().unwrap();
    let logs: Value =
        json!({"jsonrpc": "2.0", "id": 1, "result": (0..1700).map(log).collect::<Vec<_>>()});
    let mut logs_one = logs.clone();
    set(
        &mut logs_one,
        &["result", "1500", "logIndex"],
        json!("0x1ff"),
    );
    let trace: Value = json!({"jsonrpc": "2.0", "id": 1, "result": {"gas": 1, "failed": false,
        "returnValue": "", "structLogs": (0..38_000).map(step).collect::<Vec<_>>()}});
    let mut trace_one = trace.clone();
    set(
        &mut trace_one,
        &["result", "structLogs", "30000", "gas"],
        json!(7),
    );
    let bytes = |v: &Value| serde_json::to_vec(v).unwrap();
    vec![
        Case {
            name: "block, one field differs",
            candidate: bytes(&one),
            reference: reference.clone(),
            rules: rules(|_| {}),
            differences: 1,
        },
        Case {
            name: "block, indented",
            candidate: serde_json::to_vec_pretty(&block_doc).unwrap(),
            reference: reference.clone(),
            rules: rules(|_| {}),
            differences: 0,
        },
        Case {
            name: "block, unordered",
            candidate: bytes(&reversed),
            reference: reference.clone(),
            rules: rules(|r| r.unordered = vec![path()]),
            differences: 0,
        },
        Case {
            name: "block, by key",
            candidate: bytes(&reversed),
            reference,
            rules: rules(|r| r.array_keys = vec![(path(), "hash".into())]),
            differences: 0,
        },
        Case {
            name: "logs, one field",
            reference: bytes(&logs),
            candidate: bytes(&logs_one),
            rules: rules(|_| {}),
            differences: 1,
        },
        Case {
            name: "trace, one field",
            reference: bytes(&trace),
            candidate: bytes(&trace_one),
            rules: rules(|_| {}),
            differences: 1,
        },
    ]
}

/// The median time of one call of `f`, over batches of at least 20 ms
/// for about `budget`.
fn time(budget: Duration, mut f: impl FnMut()) -> Duration {
    f();
    let once = {
        let t = Instant::now();
        f();
        t.elapsed().max(Duration::from_nanos(100))
    };
    let batch = (Duration::from_millis(20).as_nanos() / once.as_nanos()).max(1) as u32;
    let rounds = (budget.as_nanos() / (once.as_nanos() * u128::from(batch))).clamp(3, 25);
    let mut per_call: Vec<Duration> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..batch {
                f();
            }
            t.elapsed() / batch
        })
        .collect();
    per_call.sort();
    per_call[per_call.len() / 2]
}

fn main() {
    let budget = Duration::from_millis(
        std::env::var("COMPARE_BUDGET_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1500),
    );
    println!(
        "| case | both bodies | compare, per pair | compare, MB/s | serde_json Value, MB/s | simd-json tape, MB/s | compare / simd-json |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    let only = std::env::var("COMPARE_CASE").unwrap_or_default();
    for case in cases().into_iter().filter(|c| c.name.contains(&only)) {
        let found = compare(&case.rules, &case.reference, &case.candidate).map(|d| d.len());
        assert_eq!(found, Ok(case.differences), "{}", case.name);
        let both = (case.reference.len() + case.candidate.len()) as f64;
        let mb_s = |d: Duration| both / d.as_secs_f64() / 1e6;
        let compared = time(budget, || {
            black_box(
                compare(
                    &case.rules,
                    black_box(&case.reference),
                    black_box(&case.candidate),
                )
                .ok(),
            );
        });
        let serde = time(budget, || {
            for body in [&case.reference, &case.candidate] {
                black_box(serde_json::from_slice::<Value>(black_box(body)).ok());
            }
        });
        let mut buffers = (Vec::new(), simd_json::Buffers::default());
        let simd = time(budget, || {
            for body in [&case.reference, &case.candidate] {
                buffers.0.clear();
                buffers.0.extend_from_slice(body);
                black_box(simd_json::to_tape_with_buffers(&mut buffers.0, &mut buffers.1).is_ok());
            }
        });
        println!(
            "| {} | {:.0} KB | {:.0} µs | {:.0} | {:.0} | {:.0} | {:.2}x |",
            case.name,
            both / 1e3,
            compared.as_secs_f64() * 1e6,
            mb_s(compared),
            mb_s(serde),
            mb_s(simd),
            compared.as_secs_f64() / simd.as_secs_f64()
        );
    }
}
