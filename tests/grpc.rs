//! gRPC endpoints against an in-process Items server (hyper's HTTP/2
//! server, dynamic messages, tonic-reflection): calls from a `.proto` and
//! from reflection, metadata and deadlines, every status path, REST and
//! gRPC over the same records compared, gRPC steps in a scenario, and the
//! schema errors that stop a run before it starts.

mod common;
#[path = "common/grpc_server.rs"]
mod grpc_server;

use common::{run_bin, run_lib};
use grpc_server::{items_proto, proto_dir, GrpcServer, Options};
use versus::endpoint::Failure;

fn proto() -> String {
    items_proto().to_str().unwrap().to_string()
}

fn ids(ids: &[&str]) -> Vec<u8> {
    ids.iter()
        .map(|id| format!("{{\"id\": \"{id}\"}}\n"))
        .collect::<String>()
        .into_bytes()
}

fn tmp(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("versus-grpc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn unary_and_server_streaming_calls_from_a_proto_file() {
    let server = GrpcServer::start(Options {
        reflection_v1: false,
        reflection_v1alpha: false,
        ..Options::default()
    });
    let p = proto();
    let (out, report) = run_lib(
        &["--proto", &p, &server.url("GetItem")],
        &ids(&["1", "2", "3"]),
    );
    let s = &out.stats.endpoints[0];
    assert_eq!((s.responses, s.errors()), (3, 0), "{report}");
    let calls = server.calls();
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[0].path, "/items.Items/GetItem");
    assert_eq!(calls[0].request["id"], "1");
    assert_eq!(calls[0].headers["content-type"], "application/grpc");
    assert_eq!(calls[0].headers["te"], "trailers");

    // Server streaming: every message is taken, the time to the first
    // message is reported apart from the latency (to the end).
    let a = server.url("ListItems");
    let b = format!("twin={}", server.url("ListItems"));
    let (out, report) = run_lib(
        &["--proto", &p, &a, &b],
        b"{\"limit\": 20}\n{\"limit\": 5}\n",
    );
    let s = &out.stats.endpoints[0];
    assert_eq!((s.responses, s.errors()), (2, 0), "{report}");
    assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");
    assert!(
        !s.ttfb.is_empty() && s.ttfb.max() <= s.latency.max(),
        "{report}"
    );
    assert!(s.bytes_in > 20 * 30, "{report}");
}

#[test]
fn unary_and_server_streaming_calls_from_reflection_v1_and_v1alpha() {
    for (v1, v1alpha) in [(true, true), (false, true)] {
        let server = GrpcServer::start(Options {
            reflection_v1: v1,
            reflection_v1alpha: v1alpha,
            ..Options::default()
        });
        let (out, report) = run_lib(&[&server.url("GetItem")], &ids(&["4", "5"]));
        let s = &out.stats.endpoints[0];
        assert_eq!((s.responses, s.errors()), (2, 0), "v1 {v1}: {report}");
        let (out, report) = run_lib(
            &[
                &server.url("ListItems"),
                &server.url("ListItems").replace("grpc://", "b=grpc://"),
            ],
            b"{\"limit\": 3}\n",
        );
        assert_eq!(out.stats.endpoints[0].responses, 1, "{report}");
        assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");
    }
}

#[test]
fn metadata_and_the_deadline_reach_the_server() {
    let server = GrpcServer::start(Options::default());
    let p = proto();
    let url = server.url("GetItem");
    let (out, report) = run_lib(
        &[
            "--proto",
            &p,
            "-H",
            "x-api-key: k1",
            "--endpoint-header",
            "0=x-tenant: acme",
            "--timeout",
            "7s",
            &url,
        ],
        &ids(&["1"]),
    );
    assert_eq!(out.stats.endpoints[0].responses, 1, "{report}");
    let call = &server.calls()[0];
    assert_eq!(call.headers["x-api-key"], "k1");
    assert_eq!(call.headers["x-tenant"], "acme");
    // 7 s in microseconds: at most 8 digits, never earlier than versus's.
    assert_eq!(call.headers["grpc-timeout"], "7000000u");
}

#[test]
fn error_statuses_are_counted_by_code_name_from_trailers_and_trailers_only_answers() {
    let server = GrpcServer::start(Options::default());
    let p = proto();
    let url = server.url("GetItem");
    // missing: NOT_FOUND trailers-only; deadline: DEADLINE_EXCEEDED
    // trailers-only; unavailable: UNAVAILABLE in trailers after the head.
    let (out, report) = run_lib(
        &["--proto", &p, &url],
        &ids(&["1", "missing", "missing", "deadline", "unavailable"]),
    );
    let s = &out.stats.endpoints[0];
    assert_eq!(s.responses, 5, "{report}");
    assert_eq!(s.errors(), 4, "{report}");
    let by_name = |n: u32| s.grpc_errors.get(&n).copied().unwrap_or(0);
    assert_eq!((by_name(5), by_name(4), by_name(14)), (2, 1, 1), "{report}");
    assert!(report.contains("gRPC NOT_FOUND: 2"), "{report}");
    assert!(report.contains("gRPC DEADLINE_EXCEEDED: 1"), "{report}");
    assert!(report.contains("gRPC UNAVAILABLE: 1"), "{report}");
    // The I/O driver of plain-TCP HTTP/1.1 connections carried nothing
    // here: no line for it.
    assert!(!report.contains("I/O:"), "{report}");

    // In the JSON report and in a saved run, by name too.
    let dir = std::env::temp_dir().join(format!("versus-grpc-saved-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("run.jsonl");
    let out = run_bin(
        &[
            "--proto",
            &p,
            "--format",
            "json",
            "-q",
            "--output",
            saved.to_str().unwrap(),
            &url,
        ],
        &ids(&["missing", "2"]),
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["endpoints"][0]["errors"]["grpc"]["NOT_FOUND"], 1,
        "{json}"
    );
    let text = std::fs::read_to_string(&saved).unwrap();
    assert!(text.contains("\"grpc_errors\":{\"NOT_FOUND\":1}"), "{text}");
    let replay = run_bin(&["report", saved.to_str().unwrap()], b"");
    let replay = String::from_utf8_lossy(&replay.stdout);
    assert!(replay.contains("gRPC NOT_FOUND: 1"), "{replay}");
}

#[test]
fn a_stream_reset_and_a_missed_deadline_are_classified() {
    let server = GrpcServer::start(Options::default());
    let p = proto();
    let url = server.url("GetItem");
    let (out, report) = run_lib(
        &["--proto", &p, "--timeout", "500ms", "-c", "2", &url],
        &ids(&["reset", "slow", "1", "bad-message"]),
    );
    let s = &out.stats.endpoints[0];
    assert_eq!(s.failures[Failure::StreamReset.index()], 1, "{report}");
    assert_eq!(s.failures[Failure::Timeout.index()], 1, "{report}");
    assert!(report.contains("stream reset (INTERNAL): 1"), "{report}");
    assert!(
        report.contains("timeout (DEADLINE_EXCEEDED): 1"),
        "{report}"
    );
    // The server saw versus's deadline: 500 ms.
    assert!(server
        .calls()
        .iter()
        .all(|c| c.headers["grpc-timeout"] == "500000u"));
    // An answer that is not an Item is a malformed response when it is
    // read as JSON (to compare it, or for -v).
    assert_eq!(
        s.responses + s.failures[Failure::Protocol.index()],
        2,
        "{report}"
    );
}

#[test]
fn rest_and_grpc_over_the_same_records_agree_after_the_json_options() {
    let server = GrpcServer::start(Options::default());
    let p = proto();
    let grpc = format!("grpc={}", server.url("GetItem"));
    let rest = format!("rest={}/items.get", server.http());
    let lines = ids(&(1..=20)
        .map(|n| n.to_string())
        .collect::<Vec<_>>()
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>());
    let (out, report) = run_lib(
        &["--proto", &p, "--grpc-json", "rest", &grpc, &rest],
        &lines,
    );
    assert_eq!(out.stats.verdicts.compared, 20, "{report}");
    assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");
    // The REST endpoint is plain-TCP HTTP/1.1: its driver is named.
    assert!(report.contains("   I/O:        "), "{report}");
    // Without the options the proto3 JSON mapping differs from the REST
    // API: camelCase names, 64-bit integers as strings, defaults left out.
    let (out, report) = run_lib(&["--proto", &p, &grpc, &rest], &lines);
    assert_eq!(out.stats.verdicts.mismatched, 20, "{report}");
}

#[test]
fn a_planted_difference_between_rest_and_grpc_is_found_by_field() {
    let server = GrpcServer::start(Options {
        plant: true,
        ..Options::default()
    });
    let p = proto();
    let grpc = format!("grpc={}", server.url("GetItem"));
    let rest = format!("rest={}/items.get", server.http());
    let (out, report) = run_lib(
        &["--proto", &p, "--grpc-json", "rest", &grpc, &rest],
        &ids(&["5", "6", "7", "8"]),
    );
    assert_eq!(out.stats.verdicts.mismatched, 1, "{report}");
    let g = &out.stats.verdicts.groups;
    assert_eq!(g.len(), 1, "{report}");
    assert_eq!(
        (g[0].field.as_str(), g[0].endpoint.as_str()),
        ("$.price.units", "rest"),
        "{report}"
    );
    assert_eq!(g[0].method, "items.Items/GetItem");
}

/// The JSON report of `versus run FILE ARGS...`.
fn run_scenario(file: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec![
        "run",
        file.to_str().unwrap(),
        "--format",
        "json",
        "-q",
        "-c",
        "1",
    ];
    all.extend_from_slice(args);
    let out = run_bin(&all, b"");
    let stderr = String::from_utf8_lossy(&out.stderr);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"))
}

#[test]
fn a_grpc_endpoint_and_an_http_endpoint_in_one_scenario() {
    let server = GrpcServer::start(Options::default());
    let file = tmp(
        "mixed.toml",
        r#"
[data]
rows = [{ n = "3" }, { n = "4" }, { n = "5" }]

[[step]]
name = "get"
path = "/items/{{ n }}"
extract = { id = "$.id" }
[step.endpoint.grpc]
grpc = "items.Items/GetItem"
json = { id = "{{ n }}" }

[[step]]
name = "again"
path = "/items/{{ id }}"
check = { "$.name" = { matches = "^item " }, grpc-status = "OK" }
[step.endpoint.grpc]
grpc = "items.Items/GetItem"
json = { id = "{{ id }}" }
"#,
    );
    let grpc = format!("grpc={}", server.url("GetItem"));
    let rest = format!("rest={}", server.http());
    let p = proto();
    let json = run_scenario(
        &file,
        &[
            "--proto",
            &p,
            "--grpc-json",
            "rest",
            "--stop-after",
            "6",
            &rest,
            &grpc,
        ],
    );
    for e in 0..2 {
        let steps = json["endpoints"][e]["steps"].as_array().unwrap();
        let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["get", "again"], "{json}");
        for s in steps {
            assert_eq!(s["requests"], 6, "{json}");
            assert!(s["errors"].as_u64().unwrap_or(0) == 0, "{json}");
        }
    }
    // The answers agree step by step, the gRPC ones read as REST JSON.
    assert_eq!(
        json["mismatches"]["groups"].as_array().map_or(0, Vec::len),
        0,
        "{json}"
    );
    let ids: Vec<String> = server
        .calls()
        .iter()
        .map(|c| c.request["id"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(ids.len(), 12);
    assert!(
        ids.iter().all(|i| ["3", "4", "5"].contains(&i.as_str())),
        "{ids:?}"
    );
}

#[test]
fn a_grpc_step_takes_values_from_its_answer_for_the_next_call() {
    let server = GrpcServer::start(Options::default());
    let file = tmp(
        "pages.toml",
        r#"
[[step]]
name = "first page"
grpc = "items.Items/ListItemsPage"
json = { page_size = 2 }
extract = { next = "$.nextPageToken", code = "grpc-status" }
check = { "$.items[1].id" = "2" }

[[step]]
name = "second page"
grpc = "items.Items/ListItemsPage"
json = { page_size = 2, page_token = "{{ next }}" }
check = { "$.items[0].id" = "3", grpc-status = "OK" }

[[step]]
name = "missing"
grpc = "items.Items/GetItem"
json = { id = "missing" }
check = { grpc-status = "NOT_FOUND", "$.code" = "NOT_FOUND" }
"#,
    );
    // From reflection: the steps' methods are resolved before the run.
    let url = format!("g=grpc://{}", server.addr);
    let json = run_scenario(&file, &["--stop-after", "3", &url]);
    let steps = json["endpoints"][0]["steps"].as_array().unwrap();
    for s in steps {
        assert_eq!(s["requests"], 3, "{json}");
        assert_eq!(s["errors"].as_u64().unwrap_or(0), 0, "{json}");
        assert_eq!(s["failed_checks"].as_u64().unwrap_or(0), 0, "{json}");
    }
    let tokens: Vec<String> = server
        .calls()
        .iter()
        .filter(|c| c.path.ends_with("ListItemsPage"))
        .map(|c| c.request["pageToken"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(tokens, ["", "3", "", "3", "", "3"]);
    // A method the schema lacks stops the run before it starts.
    let bad = tmp(
        "bad.toml",
        "[[step]]\nname = \"x\"\ngrpc = \"items.Items/Nope\"\n",
    );
    let out = run_bin(&["run", bad.to_str().unwrap(), &url], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("method Nope is not in service items.Items")
    );
}

#[test]
fn bad_schema_inputs_exit_2_with_the_name_and_the_fix() {
    let server = GrpcServer::start(Options {
        reflection_v1: false,
        reflection_v1alpha: false,
        ..Options::default()
    });
    let p = proto();
    let url = server.url("GetItem");
    let broken_import = tmp(
        "broken.proto",
        "syntax = \"proto3\";\nimport \"nowhere.proto\";\n",
    );
    let not_proto = tmp("garbage.proto", "syntax = \"proto3\";\nmessage {\n");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["--proto".into(), "/no/such.proto".into(), url.clone()], "file not found"),
        (
            vec!["--proto".into(), broken_import.to_str().unwrap().into(), url.clone()],
            "nowhere.proto",
        ),
        (vec!["--proto".into(), not_proto.to_str().unwrap().into(), url.clone()], "garbage.proto"),
        (
            vec!["--proto".into(), p.clone(), server.url("GetItems")],
            "method GetItems is not in service items.Items: it has GetItem, ListItems, ListItemsPage",
        ),
        (
            vec!["--proto".into(), p.clone(), url.replace("items.Items", "items.Nope")],
            "service items.Nope is not in the schema",
        ),
        (vec![url.clone()], "no reflection service"),
        (vec![url.replace("/items.Items/GetItem", "")], "no gRPC method"),
        (
            vec!["--proto".into(), p.clone(), "--body".into(), "{}".into(), url.replace("/items.Items/GetItem", "")],
            "no gRPC method to call with --body",
        ),
        (
            vec!["--proto".into(), p.clone(), "--body".into(), "{\"idd\": 1}".into(), url.clone()],
            "unrecognized field name 'idd'",
        ),
        (vec!["--proto-path".into(), proto_dir().to_str().unwrap().into(), url.clone()], "--proto-path needs --proto"),
        (vec!["--grpc-json".into(), "camel".into(), url.clone()], "--grpc-json"),
    ];
    for (args, want) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run_bin(&args, b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
    }
    // The import is found once its folder is given, and its own folder is
    // searched by default.
    let out = run_bin(
        &[
            "--proto",
            &p,
            "--proto-path",
            proto_dir().to_str().unwrap(),
            "--body",
            "{\"id\": \"1\"}",
            "--stop-after",
            "1",
            &url,
        ],
        b"",
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_line_that_does_not_fit_the_request_type_is_counted_as_malformed() {
    let server = GrpcServer::start(Options::default());
    let p = proto();
    let url = server.url("GetItem");
    let (out, report) = run_lib(
        &["--proto", &p, &url],
        b"{\"id\": \"1\"}\n{\"id\": 5}\nnot json\n{\"id\": \"2\", \"colour\": \"red\"}\n{\"id\": \"3\"}\n",
    );
    assert_eq!(out.stats.endpoints[0].responses, 2, "{report}");
    assert_eq!(out.input.malformed, 3, "{report}");
    let at: Vec<&str> = out
        .input
        .samples
        .iter()
        .map(|m| m.location.as_str())
        .collect();
    assert_eq!(at, ["line 2", "line 3", "line 4"], "{report}");
    assert!(out.input.samples[2].reason.contains("colour"), "{report}");
    assert_eq!(server.calls().len(), 2);
}

#[test]
fn grpcs_is_verified_by_default_and_speaks_h2_over_tls() {
    let cert = common::TestCert::new();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der.clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key.clone_key()),
        )
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let server = GrpcServer::start_tls(Options::default(), config);
    let url = format!(
        "grpcs://localhost:{}/items.Items/GetItem",
        server.addr.port()
    );
    let pem = cert.pem_file();
    // Trusted with --cacert, the schema from reflection over TLS too.
    let (out, report) = run_lib(
        &["--cacert", pem.to_str().unwrap(), &url],
        &ids(&["1", "2"]),
    );
    let s = &out.stats.endpoints[0];
    assert_eq!((s.responses, s.errors()), (2, 0), "{report}");
    assert!(!s.tls.is_empty(), "{report}");
    // Without it the certificate is refused: verified by default.
    let p = proto();
    let (out, report) = run_lib(&["--proto", &p, &url], &ids(&["1"]));
    let s = &out.stats.endpoints[0];
    assert_eq!(s.responses, 0, "{report}");
    assert!(report.contains("tls: unknown issuer"), "{report}");
}

#[test]
fn a_library_flow_calls_grpc_methods_json_in_json_and_status_out() {
    use clap::Parser;
    use serde_json::json;
    use versus::flow::{Call, Flow, Mix};

    let server = GrpcServer::start(Options::default());
    // Methods named only at the call: the schema from --proto.
    let p = proto();
    let url = format!("grpc://{}", server.addr);
    let cli = versus::cli::Cli::try_parse_from([
        "versus",
        "--proto",
        &p,
        "--stop-after",
        "4",
        "-c",
        "1",
        &url,
    ])
    .unwrap();
    let mut plan = versus::plan::Plan::from_args(&cli.run, false).unwrap();
    versus::plan::grpc::setup(&mut plan).unwrap();
    let plan = std::sync::Arc::new(plan);
    let flow = Flow::new("pages")
        .step("first", |_| async {
            Ok(Call::grpc(
                "items.Items/ListItemsPage",
                &json!({"page_size": 2}),
            ))
        })
        .take(|reply, vars| {
            vars.insert("next".into(), reply.json_str("/nextPageToken")?);
            Ok(())
        })
        .step("next", |ctx| async move {
            Ok(Call::grpc(
                "items.Items/ListItemsPage",
                &json!({"page_size": 2, "page_token": ctx.vars["next"]}),
            ))
        })
        .check(
            |reply| match (reply.grpc_code(), reply.json_str("/items/0/id")) {
                (Some("OK"), Ok(id)) if id == "3" => Ok(()),
                other => Err(format!("{other:?}").into()),
            },
        )
        .step("missing", |_| async {
            Ok(Call::grpc("items.Items/GetItem", &json!({"id": "missing"})))
        })
        .check(|reply| match reply.grpc_code() {
            Some("NOT_FOUND") => Ok(()),
            other => Err(format!("{other:?}").into()),
        });
    let input =
        versus::engine::Workload::Mix(std::sync::Arc::new(Mix::one(std::sync::Arc::new(flow))));
    let out = versus::engine::run(
        &plan.engine,
        input,
        &versus::engine::Stop::new(),
        &mut versus::engine::Quiet,
    )
    .unwrap();
    let s = &out.stats.endpoints[0];
    assert_eq!(s.flows.instances, 4);
    assert_eq!(s.flows.succeeded, 4, "{:?}", s.steps);
    let tokens: Vec<String> = server
        .calls()
        .iter()
        .filter(|c| c.path.ends_with("ListItemsPage"))
        .map(|c| c.request["pageToken"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(tokens.len(), 8);
    assert!(
        tokens.chunks(2).all(|t| t[0].is_empty() && t[1] == "3"),
        "{tokens:?}"
    );
}

#[test]
fn json_records_with_a_rest_path_reach_a_grpc_endpoint_by_its_own_method() {
    // A REST API that takes the id in its path, and the gRPC method of the
    // same records: each JSON-lines record carries the REST path and the
    // message. At the gRPC endpoint the REST path is not a method's, so
    // the method its URL names is called with the record's body; both
    // agree. A path of a method's shape that is not in the schema is a
    // malformed record, said truly.
    let server = GrpcServer::start(Options::default());
    let p = proto();
    let mut records: String = (1..=20)
        .map(|n| {
            format!("{{\"method\":\"GET\",\"path\":\"/items/{n}\",\"json\":{{\"id\":\"{n}\"}}}}\n")
        })
        .collect();
    records.push_str("{\"path\":\"/items.Items/Nothing\",\"json\":{\"id\":\"1\"}}\n");
    let grpc = format!("grpc={}", server.url("GetItem"));
    let rest = format!("rest={}/", server.http());
    let out = run_bin(
        &[
            "--input",
            "jsonl",
            "--proto",
            &p,
            "--grpc-json",
            "rest",
            "--format",
            "json",
            "-q",
            &grpc,
            &rest,
        ],
        records.as_bytes(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: serde_json::Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert_eq!(report["comparison"]["compared"], 20, "{report:#}");
    assert_eq!(report["comparison"]["mismatched"], 0, "{report:#}");
    assert_eq!(report["input"]["malformed"], 1, "{report:#}");
    let why = report["input"]["samples"][0]["reason"]
        .as_str()
        .unwrap_or("");
    assert!(
        why.contains("/items.Items/Nothing") && why.contains("schema"),
        "{report:#}"
    );
    assert_eq!(server.calls().len(), 20);
}

/// A run of `lines` against `server`'s `items.Items/GetItem` (`grpc`)
/// and its REST view's root (`rest`), the gRPC answers written as the
/// REST API's, with `flags`.
fn against_both(
    server: &GrpcServer,
    flags: &[&str],
    lines: &[u8],
) -> (versus::engine::RunOutput, String) {
    let p = proto();
    let grpc = format!("grpc={}", server.url("GetItem"));
    let rest = format!("rest={}/", server.http());
    let mut args = vec!["--proto", &p, "--grpc-json", "rest"];
    args.extend_from_slice(flags);
    args.extend([grpc.as_str(), rest.as_str()]);
    run_lib(&args, lines)
}

/// The REST view's `GET /items/{id}` and `items.Items/GetItem`, each
/// with the id of a line of ids templated into its request, 4 in flight.
const PATH_ID_AND_MESSAGE: [&str; 6] = [
    "-c",
    "4",
    "--template",
    "rest=GET /items/{{ line }}",
    "--template",
    r#"grpc={"id": "{{ line }}"}"#,
];

#[test]
fn a_stream_line_templated_into_a_path_id_rest_request_and_a_grpc_request_agrees() {
    let server = GrpcServer::start(Options::default());
    let lines: String = (0..200).map(|i| format!("{}\n", i % 50 + 1)).collect();
    let (out, report) = against_both(&server, &PATH_ID_AND_MESSAGE, lines.as_bytes());
    for s in &out.stats.endpoints {
        assert_eq!((s.responses, s.errors()), (200, 0), "{report}");
    }
    assert_eq!(out.stats.verdicts.compared, 200, "{report}");
    assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");
    // Each line's id reached the gRPC method in its message.
    let mut called: Vec<u32> = server
        .calls()
        .iter()
        .map(|c| c.request["id"].as_str().unwrap().parse().unwrap())
        .collect();
    called.sort_unstable();
    let mut sent: Vec<u32> = (0..200).map(|i| i % 50 + 1).collect();
    sent.sort_unstable();
    assert_eq!(called, sent);

    // A field of a JSON line into the REST path; the gRPC endpoint
    // without a template takes the line as its message, as before.
    let lines = ids(&["3", "1", "4", "15"]);
    let (out, report) = against_both(&server, &["--template", "1=GET /items/{{ id }}"], &lines);
    assert_eq!(out.stats.endpoints[1].responses, 4, "{report}");
    assert_eq!(out.stats.verdicts.compared, 4, "{report}");
    assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");
}

#[test]
fn a_templated_rest_answer_that_differs_from_the_grpc_one_is_found() {
    let server = GrpcServer::start(Options {
        plant: true,
        ..Options::default()
    });
    let (out, report) = against_both(&server, &PATH_ID_AND_MESSAGE, b"5\n6\n7\n8\n");
    assert_eq!(out.stats.verdicts.compared, 4, "{report}");
    assert_eq!(out.stats.verdicts.mismatched, 1, "{report}");
    let g = &out.stats.verdicts.groups;
    assert_eq!(
        (g[0].field.as_str(), g[0].endpoint.as_str()),
        ("$.price.units", "rest"),
        "{report}"
    );
}

#[test]
fn a_line_without_a_field_a_template_reads_is_malformed_by_its_line_number() {
    let server = GrpcServer::start(Options::default());
    let (out, report) = against_both(
        &server,
        &[
            "--template",
            "rest=GET /items/{{ id }}",
            "--template",
            r#"grpc={"id": "{{ id }}"}"#,
        ],
        b"{\"id\": \"1\"}\n{\"sku\": \"2\"}\nnot json\n{\"id\": 3}\n",
    );
    for s in &out.stats.endpoints {
        assert_eq!((s.responses, s.errors()), (2, 0), "{report}");
    }
    assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");
    assert_eq!(out.input.malformed, 2, "{report}");
    let samples = &out.input.samples;
    assert_eq!(
        (samples[0].location.as_str(), samples[1].location.as_str()),
        ("line 2", "line 3"),
        "{report}"
    );
    assert!(
        samples[0]
            .reason
            .contains("template reads {{ id }}: not in the record"),
        "{report}"
    );
    assert!(samples[1].reason.contains("not JSON"), "{report}");
    assert_eq!(server.calls().len(), 2);

    // The message a template makes is checked against the request type:
    // outside a string a value is written as it is, so the second line's
    // id is a number there, and that line is malformed.
    let (out, report) = against_both(
        &server,
        &["--template", r#"grpc={"id": {{ id }}}"#],
        b"{\"id\": \"\\\"1\\\"\"}\n{\"id\": \"1\"}\n",
    );
    assert_eq!(out.stats.endpoints[0].responses, 1, "{report}");
    assert_eq!(out.input.samples[0].location, "line 2", "{report}");
    assert_eq!(server.calls().len(), 3);
}

#[test]
fn requests_are_counted_under_the_templated_reference_requests_route() {
    // The REST endpoint is the reference: its requests are counted under
    // its route, not under the record's own `POST /`.
    let server = GrpcServer::start(Options::default());
    let p = proto();
    let grpc = format!("grpc={}", server.url("GetItem"));
    let rest = format!("rest={}/", server.http());
    let mut args = vec!["--proto", &p, "--grpc-json", "rest"];
    args.extend_from_slice(&PATH_ID_AND_MESSAGE);
    args.extend([rest.as_str(), grpc.as_str()]);
    let (out, report) = run_lib(&args, b"5\n6\n7\n8\n");
    assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");
    assert_eq!(
        out.stats.verdicts.methods,
        vec![("GET /items/{id}".to_string(), 4)],
        "{report}"
    );
}

/// `grpc://` at a port that answers in HTTP/1.1: the server is up, so the
/// message says what it answered and where to point the URL, not "cannot
/// reach the server ... start it".
#[test]
fn grpc_at_an_http1_server_says_what_it_answered() {
    use std::io::Write as _;
    let server = common::RawServer::start(|mut s, _| {
        let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n");
    });
    let url = format!("grpc://{}/items.Items/GetItem", server.addr);
    let out = run_bin(&[&url], &ids(&["1"]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("start it"), "{stderr}");
    assert!(
        stderr.contains("the server is up but did not speak HTTP/2")
            && stderr.contains(r#"it answered in HTTP/1: "HTTP/1.1 400 Bad Request""#)
            && stderr.contains("point grpc:// at the gRPC server's port"),
        "{stderr}"
    );
}

/// A templated REST reference counts its requests as `GET /items/{id}`,
/// and a rules file's `[method."GET /items/{id}"]` section (the form
/// docs/input-formats.md gives) applies to them: the planted difference
/// is found without it and ignored with it.
#[test]
fn a_rules_section_named_by_a_templated_route_applies_to_its_requests() {
    let server = GrpcServer::start(Options {
        plant: true,
        ..Options::default()
    });
    let p = proto();
    let grpc = format!("grpc={}", server.url("GetItem"));
    let rest = format!("rest={}/", server.http());
    let rules = tmp(
        "route-rules.toml",
        "[method.\"GET /items/{id}\"]\nignore = [\"$.price.units\"]\n",
    );
    let mut args = vec!["--proto", &p, "--grpc-json", "rest"];
    args.extend_from_slice(&PATH_ID_AND_MESSAGE);
    args.extend([rest.as_str(), grpc.as_str()]);
    let (out, report) = run_lib(&args, b"5\n6\n7\n8\n");
    assert_eq!(out.stats.verdicts.mismatched, 1, "{report}");
    assert!(report.contains("GET /items/{id}"), "{report}");

    args.extend(["--rules", rules.to_str().unwrap()]);
    let (out, report) = run_lib(&args, b"5\n6\n7\n8\n");
    assert_eq!(out.stats.verdicts.compared, 4, "{report}");
    assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");
}
