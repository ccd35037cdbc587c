//! Request streams users already have, replayed through versus to servers
//! that check what arrives: a HAR written by real Chromium, a capture
//! recorded by real tcpdump (from a file and from a live pipe), and JSON
//! lines, curl commands and vegeta targets.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::*;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

/// A server that records every request it sees.
fn recorder() -> (Server, Arc<Mutex<Vec<Seen>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let server = Server::start(move |r| {
        s.lock().unwrap().push(r.clone());
        Reply::ok("{}")
    });
    (server, seen)
}

fn by_path(seen: &Arc<Mutex<Vec<Seen>>>, path: &str) -> Seen {
    seen.lock()
        .unwrap()
        .iter()
        .find(|s| s.path == path)
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "{path} never arrived; got {:?}",
                seen.lock()
                    .unwrap()
                    .iter()
                    .map(|s| &s.path)
                    .collect::<Vec<_>>()
            )
        })
}

#[test]
fn a_har_from_chromium_is_replayed_to_each_endpoint_under_its_base_path() {
    let (a, seen_a) = recorder();
    let (b, seen_b) = recorder();
    let base_b = format!("{}v1/", b.url());
    let out = run_bin(
        &[
            "--input-file",
            &format!("{FIXTURES}/chromium.har"),
            &a.url(),
            &base_b,
        ],
        b"",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(a.requests(), 3);
    assert_eq!(b.requests(), 3);

    let get = by_path(&seen_a, "/api/search?q=caf%C3%A9&n=2");
    assert_eq!(get.method, "GET");
    assert!(get.body.is_empty());
    let post = by_path(&seen_a, "/api/items");
    assert_eq!(post.method, "POST");
    assert_eq!(
        &post.body[..],
        br#"{"name":"widget","count":3,"tags":["a","b"]}"#
    );
    assert_eq!(post.headers["x-versus-test"], "fixture-1");
    assert_eq!(post.headers["content-type"], "application/json");
    assert_eq!(post.headers["content-length"], post.body.len().to_string());
    // Host is the endpoint's, not the recorded 127.0.0.1:36707.
    assert_eq!(post.headers["host"], a.addr.to_string());
    assert!(post.headers["user-agent"]
        .to_str()
        .unwrap()
        .contains("HeadlessChrome"));

    let post_b = by_path(&seen_b, "/v1/api/items");
    assert_eq!(post_b.body, post.body);
    assert_eq!(post_b.headers["host"], b.addr.to_string());
    by_path(&seen_b, "/v1/api/search?q=caf%C3%A9&n=2");
}

fn check_capture_requests(seen: &Arc<Mutex<Vec<Seen>>>) {
    let get = by_path(seen, "/status?verbose=1&id=42");
    assert_eq!(get.method, "GET");
    assert_eq!(get.headers["user-agent"], "curl/7.88.1");
    let rpc = by_path(seen, "/rpc");
    assert_eq!(rpc.method, "POST");
    assert_eq!(
        &rpc.body[..],
        br#"{"jsonrpc":"2.0","method":"eth_blockNumber","params":[],"id":1}"#
    );
    assert_eq!(rpc.headers["content-type"], "application/json");
    let upload = by_path(seen, "/upload");
    assert_eq!(
        &upload.body[..],
        b"first line of the upload\nsecond line\n",
        "chunked body de-chunked"
    );
    assert!(
        !upload.headers.contains_key("transfer-encoding")
            || upload.headers["content-length"] == "37"
    );
    by_path(seen, "/pipelined/1?x=1");
    let p2 = by_path(seen, "/pipelined/2");
    assert_eq!(&p2.body[..], b"hello");
}

#[test]
fn a_tcpdump_capture_of_curl_is_replayed_exactly() {
    let (server, seen) = recorder();
    let out = run_bin(
        &[
            "--input-file",
            &format!("{FIXTURES}/curl-loopback.pcap"),
            &server.url(),
        ],
        b"",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(server.requests(), 5);
    check_capture_requests(&seen);
    assert!(
        stdout.contains("5 requests extracted, 0 streams incomplete, 0 not HTTP"),
        "{stdout}"
    );
}

/// Run versus with `args` and a pipe on stdin: write `first`, wait (20 s
/// at most) until `server` has seen `seen` requests while the pipe is
/// still open, then write `rest` and close it. Returns how versus ended.
fn live_pipe(
    args: &[&str],
    server: &Server,
    (first, seen): (&[u8], u64),
    rest: &[u8],
) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_versus"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(first).unwrap();
    stdin.flush().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.requests() < seen {
        assert!(
            Instant::now() < deadline,
            "{} of {seen} requests sent while the pipe stayed open",
            server.requests()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    stdin.write_all(rest).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

#[test]
fn a_live_capture_pipe_is_replayed_while_it_is_written() {
    let (server, seen) = recorder();
    let capture = std::fs::read(format!("{FIXTURES}/curl-loopback.pcap")).unwrap();
    // Write the capture up to the end of its second connection, then wait
    // until the requests in it have been replayed while the pipe is open.
    let half = capture.len() * 2 / 3;
    live_pipe(
        &["--input", "pcap", &server.url()],
        &server,
        (&capture[..half], 2),
        &capture[half..],
    );
    assert_eq!(server.requests(), 5);
    check_capture_requests(&seen);
}

#[test]
fn a_har_or_a_capture_piped_without_input_is_read_in_its_format_and_said_so() {
    for (file, requests, said) in [
        (
            "chromium.har",
            3,
            "stdin is a HAR file: reading it as --input har",
        ),
        (
            "curl-loopback.pcap",
            5,
            "stdin is a packet capture: reading it as --input pcap",
        ),
    ] {
        let (server, _) = recorder();
        let data = std::fs::read(format!("{FIXTURES}/{file}")).unwrap();
        let out = run_bin(&[&server.url()], &data);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{file}: {stderr}");
        assert_eq!(server.requests(), requests, "{file}: {stderr}");
        assert_eq!(stderr.matches(said).count(), 1, "{file}: {stderr}");
    }
    // Lines are still lines, with nothing said.
    let (server, seen) = recorder();
    let out = run_bin(
        &[&server.url()],
        b"{\"log\":\"started\"}\n{\"id\":1,\"log\":2}\n",
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(server.requests(), 2);
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .any(|s| s.body[..] == b"{\"log\":\"started\"}"[..]));
}

/// `tail -f log | versus URL`: finding stdin's format must not wait for
/// more than its first read, so the first line is sent while the pipe
/// stays open and silent.
#[test]
fn a_live_pipe_without_input_sends_its_first_line_before_any_more_arrives() {
    let (server, seen) = recorder();
    live_pipe(
        &[&server.url()],
        &server,
        (b"{\"first\":1}\n", 1),
        b"{\"second\":2}\n",
    );
    let bodies: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|s| s.body.clone())
        .collect();
    assert_eq!(bodies, [&b"{\"first\":1}"[..], b"{\"second\":2}"]);
}

#[test]
fn jsonl_curl_and_vegeta_files() {
    let dir = std::env::temp_dir().join(format!("versus-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let jsonl = dir.join("r.jsonl");
    std::fs::write(
        &jsonl,
        "{\"method\":\"PUT\",\"path\":\"/j?x=1\",\"headers\":{\"X-K\":\"v\"},\"json\":{\"a\":1}}\nnot json\n",
    )
    .unwrap();
    let curl = dir.join("r.curl");
    std::fs::write(
        &curl,
        "curl 'http://old.example/c' -H 'X-C: 1' --data-raw 'a=b'\n",
    )
    .unwrap();
    let vegeta = dir.join("targets.txt");
    std::fs::write(&vegeta, "DELETE http://old.example/v/1\nX-V: 2\n\n").unwrap();

    let (server, seen) = recorder();
    let out = run_bin(
        &["--input-file", jsonl.to_str().unwrap(), &server.url()],
        b"",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let j = by_path(&seen, "/j?x=1");
    assert_eq!(
        (j.method.as_str(), &j.body[..]),
        ("PUT", &br#"{"a":1}"#[..])
    );
    assert_eq!(j.headers["x-k"], "v");
    assert!(
        stdout.contains("1 requests read, 1 malformed records skipped"),
        "{stdout}"
    );
    assert!(stdout.contains("line 2:"), "{stdout}");

    let out = run_bin(
        &["--input-file", curl.to_str().unwrap(), &server.url()],
        b"",
    );
    assert_eq!(out.status.code(), Some(0));
    let c = by_path(&seen, "/c");
    assert_eq!((c.method.as_str(), &c.body[..]), ("POST", &b"a=b"[..]));
    assert_eq!(c.headers["x-c"], "1");
    assert_eq!(c.headers["host"], server.addr.to_string());

    let out = run_bin(
        &[
            "--input",
            "vegeta",
            "--input-file",
            vegeta.to_str().unwrap(),
            &server.url(),
        ],
        b"",
    );
    assert_eq!(out.status.code(), Some(0));
    let v = by_path(&seen, "/v/1");
    assert_eq!(v.method, "DELETE");
    assert_eq!(v.headers["x-v"], "2");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn bad_input_flags_fail_before_anything_is_sent() {
    let (server, _) = recorder();
    let out = run_bin(&["--input", "xml", &server.url()], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--input"));
    let out = run_bin(
        &["--input-file", "/nonexistent/requests.har", &server.url()],
        b"",
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/requests.har"));
    assert_eq!(server.requests(), 0);
}

#[test]
fn a_saved_run_replays_exactly_the_requests_it_read() {
    let dir = std::env::temp_dir().join(format!("versus-replay-run-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.jsonl");
    let mut jsonl = String::new();
    for i in 0..40 {
        let method = ["GET", "POST", "PUT", "DELETE"][i % 4];
        jsonl.push_str(&format!(
            "{{\"method\":\"{method}\",\"path\":\"/r/{i}?q={i}\",\"headers\":{{\"X-N\":\"{i}\",\"Authorization\":\"Bearer s3cret\"}},\"body_base64\":\"{}\"}}\n",
            if i % 2 == 0 { "aGVsbG8=" } else { "/w==" }
        ));
    }
    std::fs::write(&input, jsonl).unwrap();
    let saved = dir.join("run.jsonl");
    let (first, seen_first) = recorder();
    let out = run_bin(
        &[
            "--input-file",
            input.to_str().unwrap(),
            "--record",
            "requests",
            "-o",
            saved.to_str().unwrap(),
            &first.url(),
        ],
        b"",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !std::fs::read_to_string(&saved).unwrap().contains("s3cret"),
        "the saved run holds a secret"
    );

    let (second, seen_second) = recorder();
    let out = run_bin(
        &["--input-file", saved.to_str().unwrap(), &second.url()],
        b"",
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let key = |s: &Seen| {
        (
            s.method.clone(),
            s.path.clone(),
            s.body.clone(),
            s.headers.get("x-n").cloned(),
        )
    };
    let mut a: Vec<_> = seen_first.lock().unwrap().iter().map(key).collect();
    let mut b: Vec<_> = seen_second.lock().unwrap().iter().map(key).collect();
    a.sort();
    b.sort();
    assert_eq!(a.len(), 40);
    assert_eq!(a, b, "the replay differs from the original");
    assert!(seen_first
        .lock()
        .unwrap()
        .iter()
        .all(|s| s.headers.contains_key("authorization")));
    assert!(
        seen_second
            .lock()
            .unwrap()
            .iter()
            .all(|s| !s.headers.contains_key("authorization")),
        "a masked credential was sent"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// A GET (or HEAD) record with a body, as the REST-beside-gRPC example
/// of docs/grpc.md writes it, reaches an HTTP endpoint without the body
/// (a server that does not read GET bodies took it for the next
/// request); a POST keeps its body. Said once on stderr.
#[test]
fn a_get_records_body_is_not_sent_to_an_http_endpoint() {
    let (server, seen) = recorder();
    let input = concat!(
        r#"{"method": "GET", "path": "/items/7", "json": {"id": "7"}}"#,
        "\n",
        r#"{"method": "GET", "path": "/items/8", "json": {"id": "8"}}"#,
        "\n",
        r#"{"method": "POST", "path": "/items", "json": {"id": "9"}}"#,
        "\n",
    );
    let out = run_bin(&["--input", "jsonl", &server.url()], input.as_bytes());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for path in ["/items/7", "/items/8"] {
        let get = by_path(&seen, path);
        assert_eq!((get.method.as_str(), &get.body[..]), ("GET", &b""[..]));
    }
    assert_eq!(&by_path(&seen, "/items").body[..], br#"{"id":"9"}"#);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("a GET record's body is not sent").count(),
        1,
        "{stderr}"
    );
}

/// `{{ seq }}` in a stream's template is the request's number, the one
/// `--mismatches` (and `-v`) gives it: each line reaches the templated
/// endpoint under the number the mismatch log names that line by.
#[test]
fn a_templates_seq_is_the_number_the_mismatch_log_gives_the_request() {
    let (server, seen) = recorder();
    let other = Server::start(|_| Reply::ok(r#"{"other":true}"#));
    let dir = std::env::temp_dir().join(format!("versus-seq-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("m.jsonl");
    let input: String = (0..20).map(|i| format!("line{i}\n")).collect();
    let (a, b) = (format!("a={}", server.url()), format!("b={}", other.url()));
    let out = run_bin(
        &[
            "-c",
            "3",
            "--template",
            "a=POST /n/{{ seq }} {{ line }}",
            "--mismatches",
            log.to_str().unwrap(),
            &a,
            &b,
        ],
        input.as_bytes(),
    );
    assert!(
        out.status.code() != Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let logged: std::collections::HashMap<u64, String> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let body = v["request"]["body"].as_str().unwrap().to_string();
            (v["seq"].as_u64().unwrap(), body)
        })
        .collect();
    assert_eq!(logged.len(), 20);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 20);
    for s in seen.iter() {
        let n: u64 = s.path.strip_prefix("/n/").unwrap().parse().unwrap();
        assert_eq!(logged[&n].as_bytes(), &s.body[..], "request {n}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
