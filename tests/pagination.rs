//! Paged steps (`paginate` in scenario files): every pagination style
//! followed to the last page against the in-process catalog
//! (`versus::demo::catalog`), the items of differently shaped APIs
//! compared by key, planted faults found by key, traversals that cannot
//! go on stopped with their reason counted, and latency by page depth.

mod common;
#[path = "common/grpc_server.rs"]
mod grpc_server;

use std::time::Duration;

use common::{run_bin, run_scenario_json, scenario_file as write, step_of as step};
use serde_json::Value;
use versus::demo::catalog::{self, Catalog, Plants};

/// The JSON report of `versus run` of `scenario` with `args`.
fn run_json(name: &str, scenario: &str, args: &[&str]) -> Value {
    run_scenario_json(&write(name, scenario), args)
}

/// [`run_json`] of one traversal at a time, twice, against `endpoints`.
fn run_twice(name: &str, scenario: &str, endpoints: &[String]) -> Value {
    let mut args = vec!["--stop-after", "2", "-c", "1"];
    args.extend(endpoints.iter().map(String::as_str));
    run_json(name, scenario, &args)
}

fn quiet(items: u64) -> Catalog {
    Catalog {
        items,
        depth_cost: Duration::ZERO,
        plants: Plants::default(),
    }
}

/// A step that pages every way the catalog serves, one endpoint a way.
const EVERY_WAY: &str = r#"
[[step]]
name = "items"
path = "/items?page=0&size=40"
paginate = { items = "$.content", key = "id", next = "$._links.next.href" }
rules = { ignore = ["$.items.*._links"] }

[step.endpoint.stream]
path = "/items?limit=30"
paginate = { items = "$.items", cursor = "$.next_cursor", param = "after" }

[step.endpoint.rpc]
method = "POST"
path = "/ListItems"
json = { page_size = 50 }
paginate = { items = "$.items", token = "$.next_page_token", field = "page_token" }

[step.endpoint.link]
path = "/items?per_page=20"
paginate = { items = "$.results", next = "link" }

[step.endpoint.jsonapi]
path = "/items"
paginate = { items = "$.data", next = "$.links.next" }

[step.endpoint.offset]
path = "/items?limit=35"
paginate = { items = "$.items", offset = "offset", limit = 35 }

[step.endpoint.pages]
path = "/items?size=45"
paginate = { items = "$.items", page = "page", size = 45 }
"#;

const WAYS: [&str; 7] = [
    "hateoas", "stream", "rpc", "link", "jsonapi", "offset", "pages",
];

#[test]
fn every_pagination_style_reaches_the_last_page_with_the_same_items() {
    let c = catalog::start(quiet(1000)).unwrap();
    let endpoints: Vec<String> = WAYS
        .iter()
        .map(|w| format!("{w}={}{w}/", c.url()))
        .collect();
    let mut args = vec!["--stop-after", "3", "-c", "1"];
    args.extend(endpoints.iter().map(String::as_str));
    let report = run_json("every-way.toml", EVERY_WAY, &args);
    assert_eq!(report["comparison"]["mismatched"], 0, "{report:#}");
    let pages = [25, 34, 20, 50, 40, 29, 23];
    for (e, way) in WAYS.iter().enumerate() {
        let t = &step(&report, e, "items")["traversal"];
        assert_eq!(t["completed"], 3, "{way}: {t:#}");
        assert_eq!(t["stopped"], 0, "{way}: {t:#}");
        assert_eq!(t["items_per_traversal"], 1000.0, "{way}: {t:#}");
        assert_eq!(
            t["pages_per_traversal"],
            f64::from(pages[e]),
            "{way}: {t:#}"
        );
        assert_eq!(step(&report, e, "items")["requests"], 3 * pages[e], "{way}");
    }
}

#[test]
fn a_duplicate_at_the_reference_is_named_at_the_reference() {
    // The reference repeats item 7; the two others do not. The finding is
    // the reference's, once per traversal, and neither other endpoint is
    // blamed for it.
    let repeats = catalog::start(Catalog {
        plants: Plants {
            repeat: Some(7),
            ..Plants::default()
        },
        ..quiet(300)
    })
    .unwrap();
    let (a, b) = (
        catalog::start(quiet(300)).unwrap(),
        catalog::start(quiet(300)).unwrap(),
    );
    let scenario = r#"
[[step]]
name = "items"
path = "/items?page=0&size=25"
paginate = { items = "$.content", key = "id", next = "$._links.next.href" }
rules = { ignore = ["$.items.*._links"] }
"#;
    let endpoints = [
        format!("reference={}hateoas/", repeats.url()),
        format!("keyset={}hateoas/", a.url()),
        format!("tokens={}hateoas/", b.url()),
    ];
    let report = run_twice("reference-repeats.toml", scenario, &endpoints);
    let groups = report["comparison"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{:#}", report["comparison"]);
    let g = &groups[0];
    assert_eq!(
        (&g["endpoint"], &g["kind"]),
        (&Value::from("reference"), &Value::from("duplicated")),
        "{g:#}"
    );
    assert_eq!(g["count"], 2, "once per traversal: {g:#}");
    assert_eq!(step(&report, 1, "items")["mismatched"], 0);
    assert_eq!(step(&report, 2, "items")["mismatched"], 0);
    assert_eq!(step(&report, 0, "items")["traversal"]["repeated_items"], 2);
}

#[test]
fn a_skipped_and_a_repeated_item_are_found_by_key() {
    let reference = catalog::start(quiet(500)).unwrap();
    let skips = catalog::start(Catalog {
        plants: Plants {
            skip: Some(42),
            ..Plants::default()
        },
        ..quiet(500)
    })
    .unwrap();
    let repeats = catalog::start(Catalog {
        plants: Plants {
            repeat: Some(7),
            ..Plants::default()
        },
        ..quiet(500)
    })
    .unwrap();
    // Three shapes over the same records: HATEOAS offset, keyset, tokens.
    let scenario = r#"
[[step]]
name = "items"
path = "/items?page=0&size=25"
paginate = { items = "$.content", key = "id", next = "$._links.next.href" }
rules = { ignore = ["$.items.*._links"] }

[step.endpoint.skips]
path = "/items?limit=40"
paginate = { items = "$.items", cursor = "$.next_cursor", param = "after" }

[step.endpoint.repeats]
method = "POST"
path = "/ListItems"
json = { page_size = 30 }
paginate = { items = "$.items", token = "$.next_page_token", field = "page_token" }
"#;
    let endpoints = [
        format!("reference={}hateoas/", reference.url()),
        format!("skips={}stream/", skips.url()),
        format!("repeats={}rpc/", repeats.url()),
    ];
    let report = run_twice("planted.toml", scenario, &endpoints);
    let groups = report["comparison"]["groups"].as_array().unwrap();
    let find = |endpoint: &str, kind: &str| {
        groups
            .iter()
            .find(|g| g["endpoint"] == endpoint && g["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} at {endpoint}: {report:#}"))
    };
    let missing = find("skips", "missing item");
    assert_eq!(missing["field"], "$.items[*]");
    assert_eq!(missing["count"], 2, "once per traversal: {missing:#}");
    let sample = &missing["samples"][0];
    assert!(
        sample["request"].as_str().unwrap().contains("@.id==\"42\""),
        "{sample:#}"
    );
    assert_eq!(sample["values"][1], "(absent)");
    let repeated = find("repeats", "duplicated");
    assert_eq!(repeated["count"], 2, "{repeated:#}");
    assert!(
        repeated["samples"][0]["request"]
            .as_str()
            .unwrap()
            .contains("\"7\""),
        "{repeated:#}"
    );
    // Nothing else differs: the skipped item is the only difference there.
    assert_eq!(
        groups.len(),
        2,
        "only the planted differences: {:#}",
        report["comparison"]
    );
    assert_eq!(step(&report, 2, "items")["traversal"]["repeated_items"], 2);
    assert_eq!(step(&report, 1, "items")["mismatched"], 2);
}

#[test]
fn a_deep_traversal_shows_the_slowdown_by_depth() {
    // 10,000 items in 100 pages; each page of the offset style costs 500
    // µs more than the one before it (an OFFSET scans what it skips).
    let c = catalog::start(Catalog {
        items: 10_000,
        depth_cost: Duration::from_micros(500),
        plants: Plants::default(),
    })
    .unwrap();
    let scenario = r#"
[[step]]
name = "items"
path = "/items?limit=100"
paginate = { items = "$.items", key = "id", offset = "offset", limit = 100, max_pages = 200 }
"#;
    let endpoint = format!("deep={}offset/", c.url());
    let report = run_json("deep.toml", scenario, &["--stop-after", "1", &endpoint]);
    let t = &step(&report, 0, "items")["traversal"];
    assert_eq!(t["items"], 10_000, "{t:#}");
    // 100 full pages, then the empty one that tells offset pagination it
    // is done.
    assert_eq!(t["pages"], 101, "{t:#}");
    let depth = t["latency_by_depth"].as_array().unwrap();
    let labels: Vec<&str> = depth.iter().map(|d| d["pages"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        ["1", "2", "3-4", "5-8", "9-16", "17-32", "33-64", "65-128"]
    );
    let p50 = |b: usize| depth[b]["latency_ms"]["p50"].as_f64().unwrap();
    // Pages 65-100 wait 32-50 ms more than page 1; pages 33-64 16-32 ms,
    // pages 9-16 4-8 ms: whatever else a page costs, the planted cost
    // shows by depth.
    assert!(p50(7) >= 32.0, "{depth:#?}");
    assert!(p50(7) >= p50(0) + 25.0, "{depth:#?}");
    assert!(p50(6) >= p50(4) + 8.0, "{depth:#?}");
}

/// `max_pages` is a number of pages: a traversal of exactly that many
/// completes, and one of a page more stops there with its reason.
#[test]
fn a_traversal_of_exactly_max_pages_completes_and_one_page_more_stops() {
    // 1,000 items, 40 a page: 25 pages, the last with no next link.
    let c = catalog::start(quiet(1000)).unwrap();
    let endpoint = format!("a={}hateoas/", c.url());
    let scenario = |max: u32| {
        format!(
            r#"
[[step]]
name = "items"
path = "/items?page=0&size=40"
paginate = {{ items = "$.content", key = "id", next = "$._links.next.href", max_pages = {max} }}
"#
        )
    };
    let report = run_twice(
        "max-pages-25.toml",
        &scenario(25),
        std::slice::from_ref(&endpoint),
    );
    let t = &step(&report, 0, "items")["traversal"];
    assert_eq!(t["completed"], 2, "{t:#}");
    assert_eq!(t["stopped"], 0, "{t:#}");
    assert_eq!(t["items_per_traversal"], 1000.0, "{t:#}");
    assert_eq!(t["pages_per_traversal"], 25.0, "{t:#}");

    let report = run_twice("max-pages-24.toml", &scenario(24), &[endpoint]);
    let s = step(&report, 0, "items");
    assert_eq!(s["traversal"]["completed"], 0, "{s:#}");
    assert_eq!(s["traversal"]["stopped"], 2, "{s:#}");
    assert_eq!(s["requests"], 2 * 24, "pages asked for: {s:#}");
    assert!(
        report.to_string().contains("more pages than max_pages"),
        "{report:#}"
    );
}

#[test]
fn traversals_that_cannot_go_on_stop_with_their_reason_counted() {
    let plant = |plants: Plants| {
        catalog::start(Catalog {
            plants,
            ..quiet(300)
        })
        .unwrap()
    };
    let looping = plant(Plants {
        cycle_after: Some(3),
        ..Plants::default()
    });
    let foreign = plant(Plants {
        foreign_after: Some(2),
        ..Plants::default()
    });
    let garbage = plant(Plants {
        garbage_after: Some(4),
        ..Plants::default()
    });
    let scenario = r#"
[[step]]
name = "items"
path = "/items?page=0&size=20"
paginate = { items = "$.content", key = "id", next = "$._links.next.href" }

[[step]]
name = "after"
path = "/items?page=0&size=1"
"#;
    let endpoints = [
        format!("looping={}hateoas/", looping.url()),
        format!("foreign={}hateoas/", foreign.url()),
        format!("garbage={}hateoas/", garbage.url()),
    ];
    let report = run_twice("stops.toml", scenario, &endpoints);
    for (e, pages) in [(0, 3), (1, 2), (2, 5)] {
        let s = step(&report, e, "items");
        assert_eq!(s["traversal"]["stopped"], 2, "{s:#}");
        assert_eq!(s["traversal"]["completed"], 0, "{s:#}");
        assert_eq!(s["requests"], 2 * pages, "pages answered: {s:#}");
        // The instance ends there: its next step is never sent.
        assert_eq!(step(&report, e, "after")["skipped"], 2, "{report:#}");
    }
    // The reasons, grouped by step, in the text report.
    let file = write("stops.toml", scenario);
    let out = run_bin(
        &[
            "run",
            file.to_str().unwrap(),
            "-q",
            "--stop-after",
            "2",
            "-c",
            "1",
            &endpoints[0],
            &endpoints[1],
            &endpoints[2],
        ],
        b"",
    );
    let text = String::from_utf8_lossy(&out.stdout);
    for reason in [
        "pagination stopped: the next page is one seen before (a cycle)",
        "pagination stopped: the next link leads to another host",
        "pagination stopped: a page is not JSON",
    ] {
        assert!(text.contains(reason), "{reason}:\n{text}");
    }
}

#[test]
fn preflight_stops_a_run_at_an_unreachable_endpoint_and_skips_an_optional_one() {
    let c = catalog::start(quiet(100)).unwrap();
    let closed = common::closed_port();
    let scenario = |optional: bool| {
        format!(
            r#"
[[endpoint]]
name = "hateoas"
url = "{url}hateoas/"

[[endpoint]]
name = "rpc"
url = "http://127.0.0.1:{closed}/rpc/"
optional = {optional}

[[step]]
name = "items"
path = "/items?page=0&size=50"
paginate = {{ items = "$.content", key = "id", next = "$._links.next.href" }}

[step.endpoint.rpc]
method = "POST"
path = "/ListItems"
json = {{ page_size = 50 }}
paginate = {{ items = "$.items", token = "$.next_page_token", field = "page_token" }}
"#,
            url = c.url()
        )
    };
    // Required: no run, exit 1, the endpoint and the reason named.
    let file = write("preflight-required.toml", &scenario(false));
    let out = run_bin(
        &["run", file.to_str().unwrap(), "-q", "--stop-after", "2"],
        b"",
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "pre-flight: endpoint rpc (http://127.0.0.1:{closed}/rpc/) cannot be reached: connection refused"
        )),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "no report without a run");
    // Optional: skipped with a note, the run goes on without it.
    let file = write("preflight-optional.toml", &scenario(true));
    let out = run_bin(
        &["run", file.to_str().unwrap(), "-q", "--stop-after", "2"],
        b"",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        report.starts_with(&format!(
            "Note: optional endpoint rpc (http://127.0.0.1:{closed}/rpc/) skipped: pre-flight: connection refused"
        )),
        "{report}"
    );
    assert!(report.contains("** Pages of step items:"), "{report}");
    assert!(!report.contains("1. rpc"), "{report}");
}

#[test]
fn a_paginate_table_that_cannot_work_exits_2_naming_the_step_and_the_fix() {
    let cases = [
        (
            r#"{ items = "$.data", key = "id" }"#,
            "give one way to the next page",
        ),
        (
            r#"{ items = "$.data", key = "id", cursor = "$.next" }"#,
            "a cursor needs the query parameter that carries it",
        ),
        (
            r#"{ items = "data", key = "id", next = "link" }"#,
            "it must start with $",
        ),
        (
            r#"{ items = "$.data", next = "link" }"#,
            "give the items' key",
        ),
        (
            r#"{ items = "$.data", key = "id", next = "link", page = "page", size = 10 }"#,
            "give one way to the next page",
        ),
    ];
    for (i, (table, message)) in cases.iter().enumerate() {
        let text = format!(
            "[[endpoint]]\nname = \"a\"\nurl = \"http://127.0.0.1:9/\"\n\n[[step]]\nname = \"list\"\npath = \"/items\"\npaginate = {table}\n"
        );
        let file = write(&format!("bad-{i}.toml"), &text);
        let out = run_bin(&["run", file.to_str().unwrap()], b"");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{table}: {stderr}");
        assert!(
            stderr.contains(&format!("bad-{i}.toml:6: step \"list\"")) && stderr.contains(message),
            "{table}: {stderr}"
        );
    }
}

#[test]
fn a_saved_run_shows_the_same_pages_section_in_every_format() {
    let c = catalog::start(quiet(240)).unwrap();
    let scenario = r#"
[[step]]
name = "items"
path = "/items?page=0&size=40"
paginate = { items = "$.content", key = "id", next = "$._links.next.href" }
rules = { ignore = ["$.items.*._links"] }

[step.endpoint.stream]
path = "/items?limit=60"
paginate = { items = "$.items", cursor = "$.next_cursor", param = "after" }
"#;
    let file = write("formats.toml", scenario);
    let saved = std::env::temp_dir().join(format!("versus-pages-{}.jsonl", std::process::id()));
    let a = format!("hateoas={}hateoas/", c.url());
    let b = format!("stream={}stream/", c.url());
    let out = run_bin(
        &[
            "run",
            file.to_str().unwrap(),
            "-q",
            "--stop-after",
            "4",
            "-c",
            "1",
            "-o",
            saved.to_str().unwrap(),
            &a,
            &b,
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0));
    let live = String::from_utf8_lossy(&out.stdout).into_owned();
    let report = |format: &str| {
        let out = run_bin(
            &["report", saved.to_str().unwrap(), "--format", format],
            b"",
        );
        assert_eq!(out.status.code(), Some(0), "{format}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let (text, markdown, html, json) = (
        report("text"),
        report("markdown"),
        report("html"),
        report("json"),
    );
    // The live report and the saved run's agree.
    let section = |t: &str| {
        t[t.find("** Pages of step items:").unwrap()..t.find("** Summary").unwrap()].to_string()
    };
    assert_eq!(section(&live), section(&text));
    assert!(markdown.contains("## Pages of step items"), "{markdown}");
    assert!(markdown.contains("| Pages | 6 | 4 |"), "{markdown}");
    assert!(html.contains("<h2>Pages of step items</h2>"), "{html}");
    assert!(html.contains("id=\"depth-0\""), "the depth chart: {html}");
    let json: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        json["endpoints"][0]["steps"][0]["traversal"]["pages_per_traversal"],
        6.0
    );
    assert_eq!(
        json["endpoints"][1]["steps"][0]["traversal"]["pages_per_traversal"],
        4.0
    );
    // The improvement line is the same computation everywhere.
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("stream vs hateoas:"))
        .unwrap()
        .trim()
        .to_string();
    assert!(
        markdown.contains(&format!("- {line}")),
        "{line}\n{markdown}"
    );
    assert!(html.contains(&format!("<li>{line}</li>")), "{line}");
    let _ = std::fs::remove_file(saved);
}

#[test]
fn a_page_over_max_body_ends_the_traversal_as_a_counted_error() {
    let c = catalog::start(quiet(300)).unwrap();
    let scenario = r#"
[[step]]
name = "items"
path = "/items?limit=10"
paginate = { items = "$.items", key = "id", offset = "offset", limit = 10 }
"#;
    // Pages of 10 items are about 700 bytes; 100 is far too little.
    let endpoint = format!("small={}offset/", c.url());
    let file = write("max-body.toml", scenario);
    let args = [
        "run",
        file.to_str().unwrap(),
        "--format",
        "json",
        "-q",
        "--stop-after",
        "2",
        "-c",
        "1",
        "--max-body",
        "100",
        &endpoint,
    ];
    let out = run_bin(&args, b"");
    // Nothing was answered whole: exit 1, after the report.
    assert_eq!(out.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let s = step(&report, 0, "items");
    assert_eq!(s["traversal"]["stopped"], 2, "{s:#}");
    assert_eq!(s["requests"], 2, "one page each: {s:#}");
    assert_eq!(s["errors"], 2, "{s:#}");
    assert_eq!(
        report["endpoints"][0]["errors"]["kinds"]["body too large"], 2,
        "{report:#}"
    );
}

/// REST offset pages, REST keyset pages and gRPC page tokens over the same
/// records (the three implementations of the API benchmark script).
const THREE_WAYS: &str = r#"
[[step]]
name = "items"
path = "/items?offset=0&limit=20"
paginate = { items = "$.data", key = "id", next = "$._links.next.href" }

[step.endpoint.keyset]
path = "/stream/items?limit=15"
paginate = { items = "$.items", cursor = "$.next_cursor", param = "after" }

[step.endpoint.grpc]
grpc = "items.Items/ListItemsPage"
json = { page_size = 10 }
paginate = { items = "$.items", token = "$.next_page_token", field = "page_token" }
"#;

fn three_ways(plant: bool) -> Value {
    let server = grpc_server::GrpcServer::start(grpc_server::Options {
        records: 95,
        plant,
        ..grpc_server::Options::default()
    });
    let proto = grpc_server::items_proto();
    let offset = format!("offset={}/", server.http());
    let keyset = format!("keyset={}/", server.http());
    let grpc = format!("grpc=grpc://{}", server.addr);
    run_json(
        "three-ways.toml",
        THREE_WAYS,
        &[
            "--stop-after",
            "2",
            "-c",
            "1",
            "--proto",
            proto.to_str().unwrap(),
            "--grpc-json",
            "rest",
            &offset,
            &keyset,
            &grpc,
        ],
    )
}

#[test]
fn rest_offset_rest_keyset_and_grpc_page_tokens_agree_item_by_item() {
    let report = three_ways(false);
    assert_eq!(report["comparison"]["mismatched"], 0, "{report:#}");
    for (e, pages) in [(0, 5), (1, 7), (2, 10)] {
        let t = &step(&report, e, "items")["traversal"];
        assert_eq!(t["completed"], 2, "{e}: {t:#}");
        assert_eq!(t["items_per_traversal"], 95.0, "{e}: {t:#}");
        assert_eq!(t["pages_per_traversal"], f64::from(pages), "{e}: {t:#}");
    }
    // Sizes are as received: the gRPC answers' protobuf messages, not
    // the JSON they are compared as.
    let size = |e: usize| {
        step(&report, e, "items")["traversal"]["bytes_per_page"]
            .as_f64()
            .unwrap()
    };
    assert!(
        size(2) < 0.5 * size(1),
        "gRPC {} against REST {}",
        size(2),
        size(1)
    );
    // A record whose price differs in the REST view: found by field, at
    // the gRPC endpoint (the reference is REST), named by key.
    let report = three_ways(true);
    let groups = report["comparison"]["groups"].as_array().unwrap();
    assert_eq!(groups.len(), 1, "{:#}", report["comparison"]);
    let g = &groups[0];
    assert_eq!(g["endpoint"], "grpc");
    assert_eq!(g["field"], "$.items[*].price.units");
    assert_eq!(g["kind"], "changed");
    assert_eq!(g["count"], 2, "once per traversal");
    let sample = g["samples"][0]["request"].as_str().unwrap();
    assert!(sample.contains("@.id==\"7\""), "{sample}");
}
