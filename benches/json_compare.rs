//! Structural comparison of two ~3 KB JSON-RPC `eth_getBlockByNumber` responses:
//! equal but reordered, one field different, and with ignore rules.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use versus::compare::json::compare;
use versus::compare::rules::RuleSet;

/// The `result` fields of a block whose transactions are listed by hash.
fn block_fields(gas_used: &str, timestamp: &str, hex_upper: bool) -> Vec<(String, String)> {
    let hash = |seed: u32| {
        let digits: String = (0..64)
            .map(|i| char::from(b"0123456789abcdef"[((seed * 7 + i * 13) % 16) as usize]))
            .collect();
        let digits = if hex_upper {
            digits.to_uppercase()
        } else {
            digits
        };
        format!("\"0x{digits}\"")
    };
    let transactions: Vec<String> = (0..20).map(hash).collect();
    let mut fields: Vec<(&str, String)> = vec![
        ("baseFeePerGas", "\"0x7\"".into()),
        ("difficulty", "\"0x0\"".into()),
        (
            "extraData",
            "\"0x546974616e2028746974616e6275696c6465722e78797a29\"".into(),
        ),
        ("gasLimit", "\"0x1c9c380\"".into()),
        ("gasUsed", format!("\"{gas_used}\"")),
        ("hash", hash(101)),
        ("logsBloom", format!("\"0x{}\"", "0".repeat(512))),
        (
            "miner",
            "\"0x4838b106fce9647bdf1e7877bf73ce8b0bad5f97\"".into(),
        ),
        ("mixHash", hash(102)),
        ("nonce", "\"0x0000000000000000\"".into()),
        ("number", "\"0x1283a4f\"".into()),
        ("parentHash", hash(103)),
        ("receiptsRoot", hash(104)),
        ("sha3Uncles", hash(105)),
        ("size", "\"0x1a2b\"".into()),
        ("stateRoot", hash(106)),
        ("timestamp", format!("\"{timestamp}\"")),
        ("totalDifficulty", "58750003716598352816469".into()),
        ("transactions", format!("[{}]", transactions.join(","))),
        ("transactionsRoot", hash(107)),
        ("uncles", "[]".into()),
        ("withdrawalsRoot", hash(108)),
    ];
    fields.sort_by_key(|(name, _)| *name);
    fields
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

fn response(fields: &[(String, String)], separator: &str) -> Vec<u8> {
    let members: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("\"{k}\":{separator}{v}"))
        .collect();
    format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{{}}}}}",
        members.join(&format!(",{separator}"))
    )
    .into_bytes()
}

fn benches(c: &mut Criterion) {
    let fields = block_fields("0x1234", "0x65f1a2b3", false);
    let reference = response(&fields, "");

    let mut reordered_fields = fields.clone();
    reordered_fields.reverse();
    let reordered = response(&reordered_fields, " ");
    let one_field = response(&block_fields("0x1235", "0x65f1a2b3", false), "");
    let noisy = response(&block_fields("0x1234", "0x65f1a2ff", true), "");

    assert!(
        reference.len() > 2800,
        "fixture is {} bytes",
        reference.len()
    );
    let strict = RuleSet::default();
    let rules = RuleSet {
        ignore: ["$..timestamp", "$.result.size", "$.result.mixHash"]
            .iter()
            .filter_map(|p| p.parse().ok())
            .collect(),
        hex_case_insensitive: true,
        jsonrpc: true,
        ..RuleSet::default()
    };
    let check = |rules: &RuleSet, candidate: &[u8], expected: usize| {
        let diffs = compare(rules, &reference, candidate).map(|d| d.len());
        assert_eq!(diffs, Ok(expected));
    };
    check(&strict, &reordered, 0);
    check(&strict, &one_field, 1);
    check(&rules, &noisy, 0);
    check(&strict, &noisy, 29);

    let mut group = c.benchmark_group("eth_getBlockByNumber");
    group.bench_function("equal-but-reordered", |b| {
        b.iter(|| compare(&strict, black_box(&reference), black_box(&reordered)))
    });
    group.bench_function("one-field-differs", |b| {
        b.iter(|| compare(&strict, black_box(&reference), black_box(&one_field)))
    });
    group.bench_function("with-ignore-rules", |b| {
        b.iter(|| compare(&rules, black_box(&reference), black_box(&noisy)))
    });
    group.finish();
}

criterion_group!(json_compare, benches);
criterion_main!(json_compare);
