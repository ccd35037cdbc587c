//! Fuzzing on stable Rust: every parser of user input under proptest
//! (property-based, coverage-free), seeded with the committed fixtures in
//! `tests/fixtures`. Each target runs a fixed budget of inputs (2,000 by
//! default; `VERSUS_FUZZ_CASES=N` for a longer run) made three ways: a
//! seed mutated (bytes flipped, inserted, deleted, cut, spliced with a
//! token of the format), a soup of the format's tokens, or random bytes.
//! The properties: nothing panics, every source ends (at most one record
//! per byte of input, then `End`), every malformed record says why.
//! Crashes found are regression tests at the end of this file; the
//! figures of each run are in `docs/fuzzing.md`.

use std::io::Cursor;
use std::sync::atomic::{AtomicU64, Ordering};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use versus::input::{Next, ReadAhead, Source};

/// Inputs per target.
fn cases() -> u32 {
    std::env::var("VERSUS_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

/// One change to a seed; positions are taken modulo its length.
#[derive(Clone, Debug)]
enum Edit {
    Flip(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Token(usize, usize),
    Cut(usize),
    Repeat(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Edit::Flip(at, b)),
        (any::<usize>(), proptest::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, b)| Edit::Insert(at, b)),
        (any::<usize>(), 1usize..64).prop_map(|(at, n)| Edit::Delete(at, n)),
        (any::<usize>(), any::<usize>()).prop_map(|(at, t)| Edit::Token(at, t)),
        any::<usize>().prop_map(Edit::Cut),
        (any::<usize>(), 1usize..256).prop_map(|(at, n)| Edit::Repeat(at, n)),
    ]
}

fn apply(seed: &[u8], edits: &[Edit], tokens: &[&[u8]]) -> Vec<u8> {
    let mut out = seed.to_vec();
    for e in edits {
        let at = |i: usize| {
            if out.is_empty() {
                0
            } else {
                i % (out.len() + 1)
            }
        };
        match e {
            Edit::Flip(i, b) if !out.is_empty() => {
                let i = i % out.len();
                out[i] ^= b | 1;
            }
            Edit::Flip(..) => {}
            Edit::Insert(i, b) => {
                let i = at(*i);
                out.splice(i..i, b.iter().copied());
            }
            Edit::Delete(i, n) => {
                let i = at(*i);
                let end = (i + n).min(out.len());
                out.drain(i..end);
            }
            Edit::Token(i, t) => {
                let i = at(*i);
                let token = tokens[t % tokens.len()];
                out.splice(i..i, token.iter().copied());
            }
            Edit::Cut(i) => {
                let i = at(*i);
                out.truncate(i);
            }
            Edit::Repeat(i, n) => {
                let i = at(*i);
                let end = (i + n).min(out.len());
                let part = out[i..end].to_vec();
                out.splice(i..i, part);
            }
        }
    }
    out
}

/// Inputs for a target: its seeds mutated, a soup of its tokens, or
/// random bytes.
fn inputs(seeds: Vec<Vec<u8>>, tokens: &'static [&'static [u8]]) -> impl Strategy<Value = Vec<u8>> {
    let n = seeds.len();
    let mutated = (0..n, proptest::collection::vec(edit(), 0..12))
        .prop_map(move |(s, edits)| apply(&seeds[s], &edits, tokens));
    let soup = proptest::collection::vec(0..tokens.len(), 0..64)
        .prop_map(move |ts| ts.iter().flat_map(|&t| tokens[t].iter().copied()).collect());
    prop_oneof![
        6 => mutated,
        3 => soup,
        1 => proptest::collection::vec(any::<u8>(), 0..512),
    ]
}

/// Run `check` on `cases()` inputs of `strategy`; returns how many ran.
fn fuzz(
    name: &str,
    strategy: impl Strategy<Value = Vec<u8>>,
    check: impl Fn(&[u8]) -> Result<(), TestCaseError>,
) {
    let ran = AtomicU64::new(0);
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&strategy, |input| {
        ran.fetch_add(1, Ordering::Relaxed);
        check(&input)
    });
    println!("fuzz {name}: {} inputs", ran.load(Ordering::Relaxed));
    if let Err(e) = result {
        panic!("fuzz {name}: {e}");
    }
}

/// Read a source to its end: it must end, after at most one record per
/// byte of input, and every malformed record must say where and why.
fn drain(mut source: impl Source, len: usize) -> Result<(), TestCaseError> {
    for _ in 0..=len + 1 {
        match source.next() {
            Ok(Next::End) | Err(_) => return Ok(()),
            Ok(Next::Request(_)) => {}
            Ok(Next::Malformed(m)) => {
                prop_assert!(!m.reason.is_empty(), "a malformed record without a reason");
            }
        }
    }
    Err(TestCaseError::fail("the source did not end"))
}

/// Fuzz a source over its fixture `seed` and `tokens`; `open` makes it
/// read an input.
fn fuzz_source<S: Source>(
    name: &str,
    seed: &str,
    tokens: &'static [&'static [u8]],
    open: impl Fn(&[u8]) -> S,
) {
    fuzz(name, inputs(vec![fixture(seed)], tokens), |input| {
        drain(open(input), input.len())
    });
}

fn ahead(input: &[u8]) -> Box<dyn ReadAhead> {
    Box::new(std::io::BufReader::new(Cursor::new(input.to_vec())))
}

#[rustfmt::skip]
const LINE_TOKENS: &[&[u8]] = &[
    b"\n", b"\r\n", b"{", b"}", b"\"", b"\\", b"\xff", b"a", b" ",
];

#[test]
fn fuzz_lines() {
    let seeds = vec![b"{\"id\":1}\n{\"id\":2}\r\n\nlast".to_vec()];
    fuzz("lines", inputs(seeds, LINE_TOKENS), |input| {
        let source = versus::input::lines::LinesSource::new(Cursor::new(input.to_vec()), 64);
        drain(source, input.len())
    });
}

#[rustfmt::skip]
const JSONL_TOKENS: &[&[u8]] = &[
    b"{", b"}", b"[", b"]", b",", b":", b"\n", b"\"method\"", b"\"url\"", b"\"path\"",
    b"\"headers\"", b"\"body\"", b"\"json\"", b"\"body_base64\"", b"\"GET\"", b"\"POST\"",
    b"\"http://h/x?y=1\"", b"\"/p\"", b"\"QUJD\"", b"\"=\"", b"null", b"1e999", b"-0",
    b"\"\\u0000\"", b"\"\\ud800\"", b"\"X-A\"", b"\"Host\"", b"\"Content-Length\"",
];

#[test]
fn fuzz_jsonl() {
    fuzz_source("jsonl", "requests.jsonl", JSONL_TOKENS, |input| {
        versus::input::jsonl::JsonlSource::new(ahead(input), 4096)
    });
}

#[rustfmt::skip]
const HAR_TOKENS: &[&[u8]] = &[
    b"{", b"}", b"[", b"]", b",", b"\"log\":", b"\"entries\":", b"\"request\":",
    b"\"method\":\"POST\"", b"\"url\":\"http://h/a?b=c\"", b"\"headers\":[]",
    b"{\"name\":\"X\",\"value\":\"y\"}", b"\"postData\":{\"text\":\"x\"}",
    b"\"encoding\":\"base64\"", b"null", b"0", b"\"\"",
];

#[test]
fn fuzz_har() {
    fuzz_source("har", "chromium.har", HAR_TOKENS, |input| {
        versus::input::har::HarSource::new(ahead(input))
    });
}

#[rustfmt::skip]
const CURL_TOKENS: &[&[u8]] = &[
    b"curl ", b" -X ", b" -H ", b" -d ", b" --data ", b" --data-raw ", b" --data-binary ",
    b" --data-urlencode ", b" --json ", b" -G ", b" --url ", b" -u ", b" --compressed", b"'",
    b"\"", b"$'", b"\\\n", b"\\", b"\n", b" ", b"http://h/p?q=1", b"X-A: b", b"a=b", b"=",
    b"@-", b"\\x41", b"\\u00e9", b"#", b"\t",
];

#[test]
fn fuzz_curl() {
    fuzz_source("curl", "requests.curl", CURL_TOKENS, |input| {
        versus::input::curl::CurlSource::new(ahead(input), 4096)
    });
}

#[rustfmt::skip]
const VEGETA_TOKENS: &[&[u8]] = &[
    b"GET ", b"POST ", b"http://h/a", b"https://h:1/b?c", b"\n", b"\n\n", b"X-A: 1\n",
    b"Host: h\n", b"# c\n", b":", b" ", b"{\"method\":\"GET\",\"url\":\"http://h/\"}",
    b"\"body\":\"QQ==\"", b"\"header\":{\"A\":[\"b\"]}",
];

#[test]
fn fuzz_vegeta() {
    fuzz_source("vegeta", "targets.vegeta", VEGETA_TOKENS, |input| {
        versus::input::vegeta::VegetaSource::new(ahead(input), 4096)
    });
}

#[rustfmt::skip]
const PCAP_TOKENS: &[&[u8]] = &[
    b"\xd4\xc3\xb2\xa1", b"\x0a\x0d\x0d\x0a", b"\xff\xff\xff\xff", b"\x00\x00\x00\x00",
    b"GET / HTTP/1.1\r\n", b"POST /x HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
    b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", b"\r\n\r\n",
];

#[test]
fn fuzz_pcap() {
    fuzz_source("pcap", "curl-loopback.pcap", PCAP_TOKENS, |input| {
        versus::input::pcap::PcapSource::new(Box::new(Cursor::new(input.to_vec())))
    });
}

#[rustfmt::skip]
const RUN_TOKENS: &[&[u8]] = &[
    b"\n", b"{", b"}", b"\"type\":\"request\"", b"\"type\":\"interval\"",
    b"\"type\":\"totals\"", b"\"seq\":", b"\"body\":", b"\"body_base64\":\"AA==\"",
    b"\"version\":1", b"\"version\":99", b"\"interval_ms\":0", b"\"endpoints\":[]",
    b"\"index\":18446744073709551615", b"null", b"\"latency\":\"HISTFAAAAB\"",
    b"\"status\":{\"999\":1}", b"\"failures\":{\"x\":1}",
];

#[test]
fn fuzz_saved_run_requests() {
    fuzz_source(
        "saved run (requests)",
        "saved-run.jsonl",
        RUN_TOKENS,
        |input| versus::input::saved::SavedRunSource::new(ahead(input)),
    );
}

#[test]
fn fuzz_saved_run_file() {
    let dir = std::env::temp_dir().join(format!("versus-fuzz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("run.jsonl");
    fuzz(
        "saved run (file)",
        inputs(vec![fixture("saved-run.jsonl")], RUN_TOKENS),
        |input| {
            std::fs::write(&path, input).unwrap();
            // Errors are fine; a panic or a hang is not.
            if let Ok(reader) = versus::results::reader::RunReader::open(&path) {
                let _ = reader.finish();
            }
            Ok(())
        },
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[rustfmt::skip]
const RULES_TOKENS: &[&[u8]] = &[
    b"\n", b"[method.eth_call]", b"[http.\"GET /a/*\"]", b"[step.x]", b"ignore = ",
    b"[\"$..a\"]", b"[\"$.a[*].b\"]", b"[\"$[\"]", b"subset = true", b"unordered = ",
    b"tolerance = { \"$.a\" = \"1%\" }", b"tolerance = { \"$.a\" = \"-1e308\" }",
    b"array_keys = { \"$.l\" = \"k\" }", b"jsonrpc = false", b"\"", b"=", b"{", b"}",
];

#[test]
fn fuzz_rules_file() {
    fuzz(
        "rules file",
        inputs(vec![fixture("rules.toml")], RULES_TOKENS),
        |input| {
            let text = String::from_utf8_lossy(input);
            let _ = versus::compare::rules::Rules::from_toml(&text, Default::default());
            Ok(())
        },
    );
}

#[rustfmt::skip]
const SCENARIO_TOKENS: &[&[u8]] = &[
    b"\n", b"[[step]]", b"[[endpoint]]", b"[[scenario]]", b"[[scenario.step]]", b"[vars]",
    b"[data]", b"[step.endpoint.a]", b"name = \"a\"", b"url = \"http://127.0.0.1:9/\"",
    b"path = \"/{{ id }}\"", b"json = { n = \"{{ random_int(1, 9) }}\" }",
    b"extract = { id = \"$.id\" }", b"check = { status = 200 }", b"optional = true",
    b"paginate = { items = \"$.data\", key = \"id\", next = \"link\" }",
    b"paginate = { items = \"$\", key = \"$.a[0]\", cursor = \"$.c\", param = \"p\", more = \"$.m\" }",
    b"paginate = { items = \"$.i\", key = \"id\", offset = \"o\", limit = 0, max_pages = 0 }",
    b"paginate = { items = \"$.i\", token = \"$.t\", field = \"f\", page = \"p\", size = 1 }",
    b"grpc = \"a.B/C\"", b"rules = { ignore = [\"$.items.*.x\"] }", b"think = \"1ms\"",
    b"weight = 0", b"{{", b"}}", b"\"", b"=", b"{", b"}",
];

/// Scenario files, with their pagination tables: read to a suite or an
/// error naming the place, never a panic.
#[test]
fn fuzz_scenario_file() {
    let seeds = ["shop.toml", "pages.toml", "items-pages.toml"]
        .iter()
        .map(|f| {
            std::fs::read(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("examples")
                    .join(f),
            )
            .unwrap()
        })
        .collect();
    fuzz("scenario file", inputs(seeds, SCENARIO_TOKENS), |input| {
        let text = String::from_utf8_lossy(input);
        let path = std::path::Path::new("fuzz.toml");
        if let Err(e) = versus::scenario::Suite::parse(&text, path, &[]) {
            prop_assert!(e.to_string().starts_with("fuzz.toml"), "{e}");
        }
        Ok(())
    });
}

#[rustfmt::skip]
const PROTO_JSON_TOKENS: &[&[u8]] = &[
    b"{", b"}", b"[", b"]", b",", b":", b"\"id\"", b"\"name\"", b"\"stockCount\"",
    b"\"stock_count\"", b"\"price\"", b"\"units\"", b"\"currencyCode\"", b"\"tags\"",
    b"\"kind\"", b"\"KIND_BOOK\"", b"\"KIND_NOPE\"", b"2", b"-1", b"1e3", b"1.5",
    b"\"9223372036854775808\"", b"18446744073709551616", b"-9223372036854775809", b"null",
    b"true", b"\"\"", b"\"NaN\"", b"\"\\ud800\"", b"\"\\u0000\"", b"\"@type\"",
    b"\"discontinued\"", b"1e999",
];

/// The `items.Item` message of the gRPC test schema.
fn item_type() -> prost_reflect::MessageDescriptor {
    let pool =
        versus::grpc::compile(
            &[std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/grpc/items.proto")],
            &[],
        )
        .unwrap();
    pool.get_message_by_name("items.Item").unwrap()
}

#[test]
fn fuzz_grpc_request_json() {
    // A request line of a gRPC endpoint, read in the proto3 JSON mapping
    // (the input thread's check, and the encoding on the core): a message
    // or a reason; a message encodes, and its answer JSON (every option)
    // reads back as the same message.
    let item = item_type();
    let seeds = vec![
        br#"{"id": "1", "name": "item 1", "stockCount": "1000000007", "price": {"currencyCode": "EUR", "units": 3}, "tags": ["a", "b"], "discontinued": true, "kind": "KIND_BOOK"}"#.to_vec(),
        br#"{"id": "2", "stock_count": 5, "kind": 2, "price": null}"#.to_vec(),
        b"{}".to_vec(),
    ];
    fuzz(
        "grpc request json",
        inputs(seeds, PROTO_JSON_TOKENS),
        |input| {
            let mut framed = Vec::new();
            match versus::grpc::encode_request(&item, input, &mut framed) {
                Err(reason) => prop_assert!(!reason.is_empty(), "no reason"),
                Ok(()) => {
                    let messages = versus::grpc::messages(&framed).map_err(TestCaseError::fail)?;
                    prop_assert_eq!(messages.len(), 1);
                    for opts in ["", "rest", "enum-numbers"] {
                        let opts: versus::grpc::JsonOptions = opts.parse().unwrap();
                        let mut json = Vec::new();
                        versus::grpc::message_json(&item, messages[0], opts, &mut json)
                            .map_err(TestCaseError::fail)?;
                        let mut again = Vec::new();
                        versus::grpc::encode_request(&item, &json, &mut again).map_err(|e| {
                            TestCaseError::fail(format!("{e}: {}", String::from_utf8_lossy(&json)))
                        })?;
                        prop_assert_eq!(&again, &framed, "{}", String::from_utf8_lossy(&json));
                    }
                }
            }
            Ok(())
        },
    );
}

#[test]
fn fuzz_grpc_answer_body() {
    // A gRPC answer's body (length-prefixed messages) turned into JSON for
    // comparison: JSON or a reason, never a panic; and grpc-message
    // percent-decoding of any bytes.
    let item = item_type();
    let method = versus::grpc::Method {
        path: "/items.Items/ListItems".into(),
        input: item.clone(),
        output: item,
        server_streaming: true,
    };
    let seeds = vec![
        vec![0, 0, 0, 0, 5, 0x0a, 0x01, b'1', 0x18, 0x07, 0, 0, 0, 0, 0],
        vec![1, 0, 0, 0, 1, 0],
    ];
    const TOKENS: &[&[u8]] = &[
        &[0],
        &[0, 0, 0, 0],
        &[1],
        &[0xff, 0xff, 0xff, 0xff],
        &[0x0a],
        &[0x22],
        &[0x80],
        b"%",
        b"%4",
    ];
    fuzz("grpc answer body", inputs(seeds, TOKENS), |input| {
        for streaming in [true, false] {
            let m = versus::grpc::Method {
                server_streaming: streaming,
                ..method.clone()
            };
            for status in [
                versus::model::GrpcStatus::OK,
                versus::model::GrpcStatus {
                    code: 5,
                    message: None,
                },
            ] {
                if let Ok(json) = versus::grpc::answer_json(&m, input, &status, Default::default())
                {
                    prop_assert!(serde_json::from_slice::<serde_json::Value>(&json).is_ok());
                }
            }
        }
        let _ = versus::grpc::decode_message(input);
        Ok(())
    });
}

#[test]
fn fuzz_format_detection() {
    let seeds = [
        "chromium.har",
        "curl-loopback.pcap",
        "saved-run.jsonl",
        "requests.curl",
    ]
    .map(fixture)
    .to_vec();
    fuzz("format detection", inputs(seeds, PCAP_TOKENS), |input| {
        let _ = versus::input::detect::detect(input, None);
        Ok(())
    });
}
