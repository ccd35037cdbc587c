//! Transports against real servers: TLS verified by default, `--cacert` and
//! `--insecure`, HTTP/2 negotiated by ALPN, h2c with prior knowledge, and
//! HTTP/1.1 forced; one keep-alive connection carrying every kind of
//! answer, and losing itself to a timeout.

mod common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use versus::endpoint::TlsReason;

fn versions() -> (
    Arc<Mutex<Vec<http::Version>>>,
    impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    (seen, move |r: &Seen| {
        s.lock().unwrap().push(r.version);
        Reply::ok(r.body.clone())
    })
}

#[test]
fn tls_is_verified_by_default() {
    let cert = TestCert::new();
    let server = Server::start_tls(&cert, |_| Reply::ok("{}"));
    let url = server.https_url();
    let (out, report) = run_lib(&["-c", "1", "--threads", "1", &url], &lines(3));
    assert_eq!(
        out.stats.endpoints[0].failures
            [versus::endpoint::Failure::Tls(TlsReason::UnknownIssuer).index()],
        1,
        "{report}"
    );
    assert!(report.contains("tls handshake failed: 1"), "{report}");
    assert_eq!(server.requests(), 0);

    let pem = cert.pem_file();
    let (out, report) = run_lib(&["--cacert", pem.to_str().unwrap(), &url], &lines(3));
    assert_eq!(out.stats.endpoints[0].responses, 3, "{report}");
    // One connection, one handshake, timed apart from the TCP connect.
    assert_eq!(out.stats.endpoints[0].tls.len(), 1, "{report}");
    assert!(report.contains("   TLS:        1 handshake, "), "{report}");
    assert!(
        report.contains("   Connects:   1 connection, ") && report.contains(" (TCP and TLS); "),
        "{report}"
    );

    let (out, _) = run_lib(&["--insecure", &url], &lines(3));
    assert_eq!(out.stats.endpoints[0].responses, 3);
    let _ = std::fs::remove_file(pem);
}

/// Plain HTTP's connects are TCP alone (the line once said "TCP and TLS"
/// on http://), and one of them is one connection, not "1 connections".
#[test]
fn plain_http_connects_are_named_tcp_and_counted_in_the_singular() {
    let server = Server::start(|_| Reply::ok("{}"));
    let (_, report) = run_lib(&["-c", "1", &server.url()], &lines(3));
    assert!(
        report.contains("   Connects:   1 connection, ") && report.contains(" (TCP); "),
        "{report}"
    );
    assert!(!report.contains("TLS"), "{report}");
}

#[test]
fn https_negotiates_http2_by_alpn_unless_http1_is_forced() {
    let cert = TestCert::new();
    let (seen, handler) = versions();
    let server = Server::start_tls(&cert, handler);
    let url = format!("https://localhost:{}/", server.addr.port());
    let (out, _) = run_lib(&["-k", "-c", "8", &url], &lines(200));
    assert_eq!(out.stats.endpoints[0].responses, 200);
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .all(|v| *v == http::Version::HTTP_2));
    // One HTTP/2 connection per core carries all the streams.
    assert!(server.connections() <= 2);
    assert!(server.max_in_flight() <= 8);

    seen.lock().unwrap().clear();
    let (out, _) = run_lib(&["-k", "--http1", &url], &lines(20));
    assert_eq!(out.stats.endpoints[0].responses, 20);
    assert!(seen
        .lock()
        .unwrap()
        .iter()
        .all(|v| *v == http::Version::HTTP_11));
}

#[test]
fn cleartext_http2_with_prior_knowledge() {
    let (seen, handler) = versions();
    let server = Server::start(handler);
    let (a, b) = (format!("a={}", server.url()), format!("b={}", server.url()));
    let (out, report) = run_lib(&["--http2", "-c", "16", &a, &b], &lines(500));
    assert_eq!(out.stats.endpoints[0].responses, 500, "{report}");
    assert_eq!(out.stats.endpoints[1].responses, 500, "{report}");
    assert_eq!(out.stats.verdicts.mismatched, 0);
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1000);
    assert!(seen.iter().all(|v| *v == http::Version::HTTP_2));
    assert!(server.max_in_flight() <= 32);
}

#[test]
fn without_keepalive_every_request_opens_a_connection() {
    let server = Server::start(|_| Reply::ok("{}"));
    let (out, report) = run_lib(&["--no-keepalive", "-c", "2", &server.url()], &lines(50));
    assert_eq!(out.stats.endpoints[0].responses, 50, "{report}");
    // Two warm-up connections, then one per request.
    assert!(server.connections() >= 50);
    assert!(report.contains("Connects:"), "{report}");
}

/// Requests recorded over HTTP/1.1, and endpoint headers, may carry headers
/// HTTP/2 forbids; they are left out over h2 (not failed), the authority is
/// the endpoint's, and an endpoint's Host header replaces it, once, on
/// either protocol.
#[test]
fn recorded_headers_cross_to_http2_and_host_is_the_endpoints() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let server = Server::start(move |r: &Seen| {
        s.lock().unwrap().push(r.clone());
        Reply::ok("{}")
    });
    let input = br#"{"method":"POST","url":"http://old.example/x?y=1","headers":{"Host":"old.example","Connection":"keep-alive","Keep-Alive":"timeout=5","TE":"gzip","Transfer-Encoding":"chunked","X-Trace":"t1"},"body":"{\"a\":1}"}
"#;
    let url = server.url();
    // The endpoint's own connection headers are left out over HTTP/2 too.
    let out = run_bin(
        &[
            "--http2",
            "-H",
            "Connection: keep-alive",
            "-H",
            "TE: gzip",
            "--input",
            "jsonl",
            &url,
        ],
        input,
    );
    assert!(out.status.success(), "{out:?}");
    let out = run_bin(
        &[
            "--http2",
            "-H",
            "Host: vhost.example",
            "--input",
            "jsonl",
            &url,
        ],
        input,
    );
    assert!(out.status.success(), "{out:?}");
    let (out, report) = run_lib(&["-H", "Host: vhost.example", &url], &lines(1));
    assert_eq!(out.stats.endpoints[0].responses, 1, "{report}");

    let seen = seen.lock().unwrap();
    let h2 = &seen[0];
    assert_eq!(h2.version, http::Version::HTTP_2);
    assert_eq!(h2.method, "POST");
    assert_eq!(
        h2.path,
        format!("http://127.0.0.1:{}/x?y=1", server.addr.port())
    );
    assert_eq!(h2.body.as_ref(), br#"{"a":1}"#);
    assert_eq!(h2.headers["x-trace"], "t1");
    assert_eq!(h2.headers["content-length"], "7");
    for gone in [
        "host",
        "connection",
        "keep-alive",
        "te",
        "transfer-encoding",
    ] {
        assert!(!h2.headers.contains_key(gone), "{gone}: {:?}", h2.headers);
    }
    assert!(
        seen[1].path.starts_with("http://vhost.example/x?y=1"),
        "{}",
        seen[1].path
    );
    assert_eq!(seen[2].version, http::Version::HTTP_11);
    assert_eq!(seen[2].headers.get_all("host").iter().count(), 1);
    assert_eq!(seen[2].headers["host"], "vhost.example");
}

/// A server that ends each connection after a number of requests (nginx's
/// `keepalive_requests`, 1,000 by default, GOAWAY over HTTP/2): requests it
/// left unprocessed go again on a new connection, and none is lost or
/// counted as an error.
#[test]
fn connections_the_server_retires_are_replaced_without_errors() {
    for proto in [&["--http2"][..], &[][..]] {
        let server = Server::start_limited(25, |r: &Seen| Reply::ok(r.body.clone()));
        let (a, b) = (format!("a={}", server.url()), format!("b={}", server.url()));
        let mut args = proto.to_vec();
        args.extend(["-c", "8", &a, &b]);
        let (out, report) = run_lib(&args, &lines(1000));
        for e in &out.stats.endpoints {
            assert_eq!(e.responses, 1000, "{proto:?}\n{report}");
            assert_eq!(e.errors(), 0, "{proto:?}\n{report}");
        }
        assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");
        let conns = server.connections();
        if proto.is_empty() {
            // HTTP/1.1: exactly 25 requests a connection.
            assert!(conns >= 2000 / 25, "{conns} connections\n{report}");
        } else {
            // A retiring HTTP/2 connection still finishes the streams it
            // had accepted, so it may carry a few more than 25.
            assert!(conns >= 2000 / 50, "{conns} connections\n{report}");
            // One new HTTP/2 connection per retired one, not one per slot
            // that noticed (plus one per core and endpoint at the start).
            assert!(conns <= 2000 / 25 + 8, "{conns} connections\n{report}");
        }
    }
}

/// `-c N` means N requests in flight over HTTP/2 too: when the server
/// allows fewer streams per connection, versus opens more connections
/// instead of queueing behind the limit.
#[test]
fn http2_opens_connections_for_the_concurrency_the_server_limits() {
    let server = Server::start_h2_limited(4, |_| Reply::ok("{}").after(Duration::from_millis(20)));
    let (out, report) = run_lib(
        &["--http2", "--threads", "1", "-c", "16", &server.url()],
        &lines(320),
    );
    assert_eq!(out.stats.endpoints[0].responses, 320, "{report}");
    assert_eq!(out.stats.endpoints[0].errors(), 0, "{report}");
    assert_eq!(server.max_in_flight(), 16, "{report}");
    // All opened before the clock started, none during the run.
    assert_eq!(out.stats.endpoints[0].reconnects, 0, "{report}");
    let conns = server.connections();
    assert_eq!(conns, 4, "{report}");

    // One stream over the limit takes a second connection, opened ahead.
    let server = Server::start_h2_limited(4, |_| Reply::ok("{}").after(Duration::from_millis(20)));
    let (out, report) = run_lib(
        &["--http2", "--threads", "1", "-c", "5", &server.url()],
        &lines(50),
    );
    assert_eq!(out.stats.endpoints[0].responses, 50, "{report}");
    assert_eq!(server.max_in_flight(), 5, "{report}");
    assert_eq!(out.stats.endpoints[0].reconnects, 0, "{report}");
    let conns = server.connections();
    assert_eq!(conns, 2, "{report}");
}

/// HTTP/2 flow control both ways: request bodies larger than the server's
/// windows wait for its WINDOW_UPDATEs, and answers larger than versus's
/// connection window are read whole (versus hands its window back); over
/// TLS too.
#[test]
fn http2_bodies_larger_than_the_windows_go_through_whole() {
    let cert = TestCert::new();
    // 40 requests of 300 KB: 12 MB each way, over the 8 MiB connection
    // window versus opens and hyper's 1 MiB windows.
    let input = padded_lines(40, 300_000);
    for tls in [false, true] {
        let echo = |r: &Seen| Reply::ok(r.body.clone());
        let (a, b) = if tls {
            (
                Server::start_tls(&cert, echo),
                Server::start_tls(&cert, echo),
            )
        } else {
            (Server::start(echo), Server::start(echo))
        };
        let url = |s: &Server| if tls { s.https_url() } else { s.url() };
        let (out, report) = run_lib(
            &[
                "--http2",
                "--insecure",
                "--threads",
                "1",
                "-c",
                "8",
                "--timeout",
                "10s",
                &url(&a),
                &url(&b),
            ],
            &input,
        );
        for e in &out.stats.endpoints {
            assert_eq!(e.responses, 40, "tls {tls}\n{report}");
            assert_eq!(e.errors(), 0, "tls {tls}\n{report}");
            assert!(e.bytes_in >= 40 * 300_000, "{report}");
        }
        assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");
        let conns = a.connections();
        assert_eq!(conns, 1, "tls {tls}");
    }
}

/// A request past `--timeout` over HTTP/2 resets its stream only: the
/// connection carries on with the other requests.
#[test]
fn http2_timeout_resets_the_stream_and_keeps_the_connection() {
    let server = Server::start(|r: &Seen| {
        let reply = Reply::ok(r.body.clone());
        if id_of(&r.body) == 3 {
            reply.after(Duration::from_secs(5))
        } else {
            reply
        }
    });
    let (out, report) = run_lib(
        &[
            "--http2",
            "--threads",
            "1",
            "-c",
            "2",
            "--timeout",
            "300ms",
            &server.url(),
        ],
        &lines(20),
    );
    let e = &out.stats.endpoints[0];
    assert_eq!(e.responses, 19, "{report}");
    assert_eq!(
        e.failures[versus::endpoint::Failure::Timeout.index()],
        1,
        "{report}"
    );
    assert_eq!(e.reconnects, 0, "{report}");
    let conns = server.connections();
    assert_eq!(conns, 1, "{report}");
}

/// `--http2` against a server that only speaks HTTP/1.1: every request
/// fails as a protocol error, promptly.
#[test]
fn http2_to_an_http1_only_server_is_a_protocol_error() {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0; 1024];
            let _ = s.read(&mut buf);
            let _ = s.write_all(
                b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    let url = format!("http://127.0.0.1:{port}/");
    let (out, report) = run_lib(&["--http2", "--timeout", "5s", &url], &lines(3));
    let e = &out.stats.endpoints[0];
    assert_eq!(e.responses, 0, "{report}");
    assert_eq!(
        e.failures[versus::endpoint::Failure::Protocol.index()],
        3,
        "{report}"
    );
}

/// A server that stops reading for a while over TLS: versus's writes fill
/// the socket and the TLS layer, wait for them to drain, and every request
/// completes (none waits for `--timeout`).
#[test]
fn http2_over_tls_carries_on_after_the_server_stops_reading() {
    let cert = TestCert::new();
    let server = Server::start_tls_stalling(&cert, Duration::from_millis(500), |r: &Seen| {
        Reply::ok(r.body.len().to_string())
    });
    // 8 requests of 3 MB: more than loopback's socket buffers hold while
    // the server does not read.
    let input = padded_lines(8, 3_000_000);
    let url = server.https_url();
    let (out, report) = run_lib(
        &[
            "--http2",
            "--insecure",
            "--threads",
            "1",
            "-c",
            "8",
            "--timeout",
            "10s",
            &url,
        ],
        &input,
    );
    let e = &out.stats.endpoints[0];
    assert_eq!(e.responses, 8, "{report}");
    assert_eq!(e.errors(), 0, "{report}");
}

/// The certificate `openssl req -x509 -newkey rsa:2048 -nodes -subj
/// /CN=localhost` makes is marked as a CA: rejected with that reason, and
/// trusted when given with `--cacert` (it is exactly the server's), as curl
/// does.
#[test]
fn a_ca_certificate_given_with_cacert_is_trusted_as_curl_does() {
    let cert = TestCert::with(|p| {
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    });
    let server = Server::start_tls(&cert, |_| Reply::ok("{}"));
    let url = server.https_url();
    let (out, report) = run_lib(&["-c", "1", "--threads", "1", &url], &lines(2));
    let reason = TlsReason::CaAsEndEntity;
    assert_eq!(out.stats.endpoints[0].tls_reasons[reason.index()], 1);
    assert!(
        report.contains("     tls handshake failed: 1\n       tls: certificate is a CA used as an end entity: 1\n"),
        "{report}"
    );

    let pem = cert.pem_file();
    let (out, report) = run_lib(&["--cacert", pem.to_str().unwrap(), &url], &lines(3));
    assert_eq!(out.stats.endpoints[0].responses, 3, "{report}");
    let _ = std::fs::remove_file(pem);

    // Trusted as the server's own certificate, not for any name.
    let elsewhere = TestCert::with(|p| {
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.subject_alt_names = vec![rcgen::SanType::DnsName("example.com".try_into().unwrap())];
    });
    let server = Server::start_tls(&elsewhere, |_| Reply::ok("{}"));
    let pem = elsewhere.pem_file();
    assert_tls_failures(&pem, &server.https_url(), TlsReason::NameMismatch);
    let _ = std::fs::remove_file(pem);
}

/// The first of two requests to `url` trusting `pem` fails in the TLS
/// handshake for `reason`, counted and shown under it; the endpoint is
/// then stopped, and the second is not sent.
fn assert_tls_failures(pem: &std::path::Path, url: &str, reason: TlsReason) {
    let (out, report) = run_lib(
        &[
            "-c",
            "1",
            "--threads",
            "1",
            "--cacert",
            pem.to_str().unwrap(),
            url,
        ],
        &lines(2),
    );
    let s = &out.stats.endpoints[0];
    assert_eq!(s.tls_reasons[reason.index()], 1, "{report}");
    assert_eq!(s.stopped(), 1, "{report}");
    assert!(
        report.contains(&format!("       {}: 1\n", reason.name())),
        "{report}"
    );
}

/// A certificate that fails verification does not heal by retrying: the
/// endpoint is stopped at its first failure (one handshake per slot that
/// connected, not one per request after a growing back-off), told on
/// stderr with the reason and the fix, and its requests are counted as
/// not sent. The run goes on for a healthy endpoint, and ends at once
/// when none is left, however long it was to run.
#[test]
fn a_certificate_that_fails_verification_stops_its_endpoint_at_once() {
    let cert = TestCert::new();
    let bad = Server::start_tls(&cert, |_| Reply::ok("{}"));
    let good = Server::start(|_| Reply::ok("{}"));
    let one = ["-c", "1", "--threads", "1"];
    let (out, report) = run_lib(
        &[&one[..], &[&bad.https_url(), &good.url()]].concat(),
        &lines(30),
    );
    let (b, g) = (&out.stats.endpoints[0], &out.stats.endpoints[1]);
    assert_eq!(
        b.tls_reasons[TlsReason::UnknownIssuer.index()],
        1,
        "{report}"
    );
    assert_eq!(b.failed_connects(), 1, "{report}");
    assert_eq!(b.stopped(), 29, "{report}");
    assert_eq!(b.rate(), 0.0, "{report}");
    assert_eq!((g.responses, g.errors()), (30, 0), "{report}");
    assert!(
        report.contains("     not sent: endpoint stopped: 29\n"),
        "{report}"
    );
    assert!(
        report.contains("   Connect attempts: 1 failed (")
            && report.contains("then the endpoint was stopped)"),
        "{report}"
    );
    assert_eq!(bad.requests(), 0);

    // Alone, asked to repeat a request for a minute: the run ends after
    // the first failure (before, it retried with back-off all minute).
    let out = run_bin(
        &[
            &one[..],
            &["--method", "GET", "--stop-after", "60s", &bad.https_url()],
        ]
        .concat(),
        b"",
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("     tls handshake failed: 1\n       tls: unknown issuer: 1\n"),
        "{text}"
    );
    assert!(
        stderr.contains("tls: unknown issuer for 127.0.0.1"),
        "{stderr}"
    );
    assert!(stderr.contains("fix: give the issuing CA"), "{stderr}");
    assert!(
        stderr.contains("stopped after its first failed connect (tls: unknown issuer)"),
        "{stderr}"
    );
}

/// Each way a certificate fails is counted under its own reason, in the
/// text report, the JSON report and a saved run.
#[test]
fn tls_failures_are_counted_by_reason() {
    let expired = TestCert::with(|p| {
        p.not_before = rcgen::date_time_ymd(2000, 1, 1);
        p.not_after = rcgen::date_time_ymd(2001, 1, 1);
    });
    let elsewhere = TestCert::with(|p| {
        p.subject_alt_names = vec![rcgen::SanType::DnsName("example.com".try_into().unwrap())];
    });
    for (cert, reason) in [
        (&expired, TlsReason::Expired),
        (&elsewhere, TlsReason::NameMismatch),
    ] {
        let server = Server::start_tls(cert, |_| Reply::ok("{}"));
        let pem = cert.pem_file();
        assert_tls_failures(&pem, &server.https_url(), reason);
        let _ = std::fs::remove_file(pem);
    }

    // A plain HTTP port asked for TLS.
    let plain = Server::start(|_| Reply::ok("{}"));
    let url = format!("https://127.0.0.1:{}/", plain.addr.port());
    let dir = std::env::temp_dir().join(format!("versus-tls-reasons-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("run.jsonl");
    let out = run_bin(
        &["--format", "json", "-o", saved.to_str().unwrap(), &url],
        &lines(2),
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["endpoints"][0]["errors"]["tls_reasons"]["tls: not a TLS server"], 2,
        "{json}"
    );
    // Connect attempts, not requests: nothing ever connected, and the
    // rate of requests (as in the text report) is 0.
    assert_eq!(json["endpoints"][0]["failed_connects"], 2, "{json}");
    assert_eq!(json["endpoints"][0]["rps"], 0.0, "{json}");
    assert_eq!(json["endpoints"][0]["never_connected"], true, "{json}");
    // Told once on stderr, with the fix, however many connections failed.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.matches("tls: not a TLS server").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("fix: the port does not speak TLS"),
        "{stderr}"
    );
    // The saved run carries the reasons into a later report.
    let again = run_bin(&["report", saved.to_str().unwrap()], b"");
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(text.contains("       tls: not a TLS server: 2\n"), "{text}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A port where nothing listens is not a hot loop of "requests": each slot
/// backs off after a failed connect, the report counts connect attempts
/// (left out of the rate) and says at the top that nothing connected.
#[test]
fn a_refused_port_is_backed_off_connect_attempts_not_a_benchmark() {
    let refused = format!("http://127.0.0.1:{}/", closed_port());
    let (out, report) = run_lib(
        &["--stop-after=1s", "-c", "4", "--method", "GET", &refused],
        b"",
    );
    let s = &out.stats.endpoints[0];
    let attempts = s.failures[versus::endpoint::Failure::Refused.index()];
    // 10 ms, then doubling: about eight attempts per slot in a second
    // (without back-off, tens of thousands).
    assert!((4..=4 * 12).contains(&attempts), "{report}");
    assert_eq!(s.failed_connects(), attempts);
    assert!(
        report.starts_with("Nothing connected to any endpoint: all "),
        "{report}"
    );
    assert!(
        report.contains("   Requests:   0.00 per second\n"),
        "{report}"
    );
    assert!(
        report.contains(&format!("   Connect attempts: {attempts} failed (")),
        "{report}"
    );

    // A run that connected says nothing of the kind.
    let server = Server::start(|_| Reply::ok("{}"));
    let (_, report) = run_lib(&[&server.url()], &lines(2));
    assert!(report.starts_with("Endpoints:"), "{report}");
    assert!(!report.contains("Connect attempts"), "{report}");
}

/// The issue's recipe exactly: `openssl req -x509 -newkey rsa:2048 -nodes
/// -subj /CN=localhost` makes a CA certificate with no subjectAltName.
/// Given with `--cacert`, curl takes it for `localhost` by its common name;
/// so does versus (for that very certificate only), and not for another
/// name.
#[test]
fn the_openssl_req_x509_certificate_works_with_cacert_as_with_curl() {
    let cert = TestCert::with(|p| {
        p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        p.subject_alt_names.clear();
        p.distinguished_name = rcgen::DistinguishedName::new();
        p.distinguished_name
            .push(rcgen::DnType::CommonName, "localhost");
    });
    let server = Server::start_tls(&cert, |_| Reply::ok("{}"));
    let pem = cert.pem_file();
    let localhost = format!("https://localhost:{}/", server.addr.port());
    let (out, report) = run_lib(&["--cacert", pem.to_str().unwrap(), &localhost], &lines(2));
    assert_eq!(out.stats.endpoints[0].responses, 2, "{report}");

    assert_tls_failures(&pem, &server.https_url(), TlsReason::NameMismatch);
    let _ = std::fs::remove_file(pem);
}

#[test]
fn max_connections_makes_the_slots_share_fewer_connections() {
    // Eight requests in flight (-c 8) over at most two connections: the
    // server never sees more than two connections or two requests at once,
    // and every request is answered.
    let server = Server::start(|_| Reply::ok("{}").after(Duration::from_millis(2)));
    let (out, report) = run_lib(
        &[
            "-c",
            "8",
            "--threads",
            "2",
            "--max-connections",
            "2",
            &server.url(),
        ],
        &lines(200),
    );
    let e = &out.stats.endpoints[0];
    assert_eq!(e.responses, 200, "{report}");
    assert_eq!(e.errors(), 0, "{report}");
    assert_eq!(server.connections(), 2, "{report}");
    let in_flight = server.counters.max_in_flight.load(Ordering::SeqCst);
    assert!(in_flight <= 2, "{in_flight} in flight at once\n{report}");
}

#[test]
fn slots_waiting_for_a_shared_connection_get_it_in_turn() {
    // Eight slots over at most two connections: a slot keeps its
    // connection from one request to the next only while no other slot
    // waits for one. Were it kept regardless, the six slots that found no
    // connection would wait until the two others ran out of work, and
    // their requests would reach the server last of all 200.
    let arrived = Arc::new(Mutex::new(Vec::new()));
    let log = arrived.clone();
    let server = Server::start(move |seen| {
        let body: serde_json::Value = serde_json::from_slice(&seen.body).unwrap();
        log.lock().unwrap().push(body["id"].as_u64().unwrap());
        Reply::ok("{}").after(Duration::from_millis(1))
    });
    let (out, report) = run_lib(
        &[
            "-c",
            "8",
            "--threads",
            "1",
            "--max-connections",
            "2",
            &server.url(),
        ],
        &lines(200),
    );
    assert_eq!(out.stats.endpoints[0].responses, 200, "{report}");
    assert_eq!(server.connections(), 2, "{report}");
    let arrived = arrived.lock().unwrap();
    // Request i (sent in order) arrives at place p: overtaken by p - i
    // requests sent after it. Taking turns, eight slots overtake a request
    // a few times at most.
    let overtaken = arrived
        .iter()
        .enumerate()
        .map(|(p, &i)| p.saturating_sub(i as usize))
        .max();
    assert!(
        overtaken.is_some_and(|n| n <= 16),
        "a request was overtaken by {overtaken:?}: {arrived:?}\n{report}"
    );
}

/// The report names the I/O driver plain HTTP/1.1 ran on: the one asked
/// for, and with `auto` io_uring exactly where this process can have it.
#[test]
fn the_report_names_the_io_driver_that_ran() {
    let server = Server::start(|_| Reply::ok("{}"));
    let (out, report) = run_lib(&["--io", "epoll", &server.url()], &lines(3));
    assert_eq!(out.stats.endpoints[0].responses, 3);
    assert!(
        report.contains("   I/O:        epoll (plain-TCP HTTP/1.1 connections)\n"),
        "{report}"
    );
    let (out, report) = run_lib(&["--io", "auto", &server.url()], &lines(3));
    assert_eq!(out.stats.endpoints[0].responses, 3);
    let expected = match versus::endpoint::probe_uring() {
        Ok(()) => "io_uring",
        Err(_) => "epoll",
    };
    assert!(
        report.contains(&format!("   I/O:        {expected} (plain-TCP")),
        "{report}"
    );
}

/// Where io_uring is refused (here by a seccomp filter on
/// `io_uring_setup`, as container runtimes' default profiles do), `--io
/// auto` runs on epoll and says so, and `--io uring` is refused with the
/// reason.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
#[test]
fn where_io_uring_is_refused_auto_runs_on_epoll_and_uring_is_an_error() {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let server = Server::start(|_| Reply::ok("{}"));
    let run = |io: &str| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_versus"));
        cmd.args(["--io", io, "--method", "GET", "--stop-after=20", "-c", "2"])
            .arg(server.url())
            .stdin(Stdio::null());
        // SAFETY: only async-signal-safe calls (prctl) between fork and
        // exec, on a filter that lives on this closure's stack.
        unsafe {
            cmd.pre_exec(|| {
                let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
                let mut filter = [
                    // The system call's number; io_uring_setup fails with
                    // ENOSYS, everything else is allowed.
                    op(0x20, 0, 0, 0),
                    op(0x15, 0, 1, libc::SYS_io_uring_setup as u32),
                    op(0x06, 0, 0, libc::SECCOMP_RET_ERRNO | libc::ENOSYS as u32),
                    op(0x06, 0, 0, libc::SECCOMP_RET_ALLOW),
                ];
                let prog = libc::sock_fprog {
                    len: filter.len() as u16,
                    filter: filter.as_mut_ptr(),
                };
                if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0
                    || libc::prctl(
                        libc::PR_SET_SECCOMP,
                        libc::SECCOMP_MODE_FILTER,
                        std::ptr::from_ref(&prog),
                    ) != 0
                {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, report, err) = run("auto");
    assert_eq!(code, Some(0), "{err}\n{report}");
    assert!(
        report.contains("   I/O:        epoll (plain-TCP HTTP/1.1 connections)\n"),
        "{report}"
    );
    assert_eq!(number_after(&report, "Completed:"), 20.0, "{report}");
    let (code, report, err) = run("uring");
    assert_eq!(code, Some(2), "{err}\n{report}");
    assert!(
        err.contains("--io uring: io_uring is unavailable here"),
        "{err}"
    );
}

/// The answers [`one_connection_carries_every_kind_of_answer_in_turn`]'s
/// server gives on its first connection, one a request, each in the
/// writes listed; the last closes the connection.
const KINDS_OF_ANSWER: &[&[&[u8]]] = &[
    // Plain: read where it landed, on the ring.
    &[b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"],
    // Chunked: read where it landed too, when it is whole there.
    &[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"],
    // Chunked, with an extension, two chunks and a trailer.
    &[b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;x=y\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: t\r\n\r\n"],
    // Chunked, its last chunk in a write of its own (one receive or two).
    &[
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nsplit\r\n",
        b"0\r\n\r\n",
    ],
    // An interim answer before the final one.
    &[b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 4\r\n\r\nabcd"],
    // The head and the body in two writes (one receive or two).
    &[b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", b"hello"],
    // No body, by its status.
    &[b"HTTP/1.1 204 No Content\r\n\r\n"],
    // Plain again, after all the others.
    &[b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]"],
    // Delimited by the close of the connection.
    &[b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nbye"],
];

/// A plain answer, read where it landed on the ring.
const PLAIN: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// An answer whose body is more than one receive holds.
fn big_answer() -> Vec<u8> {
    let mut big = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".to_vec();
    big.resize(big.len() + 100_000, b'x');
    big
}

/// A server whose first connection answers one request with each entry of
/// `script` in turn (in the writes listed) and then closes; every later
/// connection answers every request plainly.
fn scripted(script: Vec<Vec<Vec<u8>>>) -> RawServer {
    RawServer::start(move |mut conn, n| {
        use std::io::Write;
        if n > 0 {
            while read_request(&mut conn).is_some() {
                let _ = conn.write_all(PLAIN);
            }
            return;
        }
        for writes in &script {
            if read_request(&mut conn).is_none() {
                return;
            }
            for w in writes {
                conn.write_all(w).unwrap();
            }
        }
    })
}

/// Every kind of answer in [`KINDS_OF_ANSWER`], with a body over what one
/// receive holds after the fourth, each after `plain` plain answers.
fn kinds_after(plain: usize) -> Vec<Vec<Vec<u8>>> {
    let mut kinds: Vec<Vec<Vec<u8>>> = KINDS_OF_ANSWER
        .iter()
        .map(|writes| writes.iter().map(|w| w.to_vec()).collect())
        .collect();
    kinds.insert(4, vec![big_answer()]);
    let mut script = Vec::new();
    for kind in kinds {
        script.extend(std::iter::repeat_n(vec![PLAIN.to_vec()], plain));
        script.push(kind);
    }
    script
}

/// A server whose first connection answers `answered` requests and holds
/// the next until the client gives the connection up; every later
/// connection answers every request.
fn holding_after(answered: usize) -> RawServer {
    RawServer::start(move |mut conn, n| {
        use std::io::Write;
        let mut done = 0;
        while read_request(&mut conn).is_some() {
            if n == 0 && done == answered {
                continue;
            }
            done += 1;
            let _ = conn.write_all(PLAIN);
        }
    })
}

/// Single-request mode on one connection to `server`: `--method GET -c 1`,
/// then `args`.
fn repeat_get(server: &RawServer, args: &[&str]) -> (versus::engine::RunOutput, String) {
    let url = format!("http://{}/", server.addr);
    let mut all = vec!["--method", "GET", "-c", "1"];
    all.extend_from_slice(args);
    all.push(&url);
    run_lib(&all, b"")
}

#[test]
fn one_connection_carries_every_kind_of_answer_in_turn() {
    // On a kept connection a request goes by the quick path, which reads
    // only a plain answer, whole where it landed; every other kind is read
    // on from where the quick path left it. Both I/O drivers run this.
    let server = scripted(kinds_after(0));
    let url = format!("http+get://{}/", server.addr);
    let lines = b"a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n";
    let (out, report) = run_lib(&["-c", "1", &url], lines);
    let s = &out.stats.endpoints[0];
    assert_eq!(s.responses, 11, "{report}");
    assert_eq!(s.errors(), 0, "{report}");
    assert_eq!(
        (s.status[200], s.status[201], s.status[204]),
        (9, 1, 1),
        "{report}"
    );
    let chunked = 3 + 11 + 5;
    assert_eq!(
        s.bytes_in,
        2 + chunked + 4 + 5 + 100_000 + 2 + 3 + 2,
        "{report}"
    );
    // The first ten on one connection, the last on the next.
    assert_eq!(server.connections(), 2, "{report}");
}

#[test]
fn a_request_out_of_time_on_a_kept_connection_takes_it_along() {
    // The server answers the first request on its first connection and
    // never the second; the third goes on a new connection.
    let server = holding_after(1);
    let url = format!("http+get://{}/", server.addr);
    let (out, report) = run_lib(&["-c", "1", "--timeout", "300ms", &url], b"a\nb\nc\n");
    let s = &out.stats.endpoints[0];
    assert_eq!(s.responses, 2, "{report}");
    assert_eq!(
        s.failures[versus::endpoint::Failure::Timeout.index()],
        1,
        "{report}"
    );
    assert_eq!(server.connections(), 2, "{report}");
}

#[test]
fn one_request_repeated_meets_every_kind_of_answer_in_turn() {
    // Single-request mode: from its second request on, a slot's request
    // repeated on its kept connection goes by a lane on the ring (each
    // answer taken, and the next request sent, in the driver's turn where
    // the answer landed); an answer a lane cannot take is read by the
    // slot, from where the lane left it. Three plain answers before each
    // other kind. Both I/O drivers run this.
    let server = scripted(kinds_after(3));
    let (out, report) = repeat_get(&server, &["--stop-after", "42"]);
    every_kind_answered(&out, &report, &server);
}

/// 42 requests answered by [`kinds_after`]`(3)`'s script, every one
/// counted: forty on the first connection, the rest on the next.
fn every_kind_answered(out: &versus::engine::RunOutput, report: &str, server: &RawServer) {
    let s = &out.stats.endpoints[0];
    assert_eq!((s.sent, s.responses), (42, 42), "{report}");
    assert_eq!(s.errors(), 0, "{report}");
    assert_eq!(
        (s.status[200], s.status[201], s.status[204]),
        (40, 1, 1),
        "{report}"
    );
    let (plain, chunked) = (2 * (42 - 10), 3 + 11 + 5);
    assert_eq!(
        s.bytes_in,
        plain + 2 + chunked + 4 + 5 + 100_000 + 2 + 3,
        "{report}"
    );
    assert_eq!(server.connections(), 2, "{report}");
}

#[test]
fn a_repeated_request_out_of_time_is_a_timeout_and_the_next_goes_on() {
    // The first connection answers three requests and holds the fourth:
    // on the ring the lane carrying them ends at the fourth's deadline,
    // which times it out; the fifth goes on a new connection.
    let server = holding_after(3);
    let (out, report) = repeat_get(&server, &["--timeout", "300ms", "--stop-after", "5"]);
    let s = &out.stats.endpoints[0];
    assert_eq!((s.sent, s.responses), (5, 4), "{report}");
    assert_eq!(
        s.failures[versus::endpoint::Failure::Timeout.index()],
        1,
        "{report}"
    );
    assert_eq!(server.connections(), 2, "{report}");
}

#[test]
fn a_repeated_request_stops_on_time_with_every_request_accounted_for() {
    // Stopped by its duration while the lanes carry the requests: every
    // request sent is answered and counted once, none is left out.
    let server = Server::start(|_| Reply::ok("{}"));
    let args = [
        "--method",
        "GET",
        "-c",
        "4",
        "--stop-after",
        "300ms",
        &server.url(),
    ];
    let (out, report) = run_lib(&args, b"");
    let s = &out.stats.endpoints[0];
    assert!(s.responses > 100, "{report}");
    assert_eq!((s.sent, s.errors()), (s.responses, 0), "{report}");
    assert_eq!(server.requests(), s.responses, "{report}");
    assert_eq!(out.stats.verdicts.compared, s.responses, "{report}");
}

#[test]
fn a_repeated_request_shares_few_connections_in_turn() {
    // Three slots over one connection: a lane gives its connection up to
    // a slot that waits for one, as the quick path does.
    let server = Server::start(|_| Reply::ok("{}"));
    let args = [
        "--method",
        "GET",
        "-c",
        "3",
        "--threads",
        "1",
        "--max-connections",
        "1",
        "--stop-after",
        "300",
        &server.url(),
    ];
    let (out, report) = run_lib(&args, b"");
    let s = &out.stats.endpoints[0];
    assert_eq!((s.sent, s.responses, s.errors()), (300, 300, 0), "{report}");
    assert_eq!(server.connections(), 1, "{report}");
}

#[test]
fn a_repeated_request_meets_a_large_answer_and_a_closed_connection() {
    // A lane's connection brings an answer larger than a receive buffer,
    // then closes after taking a request (no answer, no notice): the slot
    // reads the one and sends the other again on a new connection (a GET
    // that got no byte of answer), with no request lost or timed out.
    let mut script = vec![vec![PLAIN.to_vec()]; 11];
    script[5] = vec![big_answer()];
    // The twelfth request read, the connection closes.
    script.push(Vec::new());
    let server = scripted(script);
    let (out, report) = repeat_get(&server, &["--timeout", "5s", "--stop-after", "20"]);
    let s = &out.stats.endpoints[0];
    assert_eq!((s.sent, s.responses, s.errors()), (20, 20, 0), "{report}");
    assert_eq!(s.bytes_in, 19 * 2 + 100_000, "{report}");
    // Nothing waited for a request's deadline to be read: a lane left
    // asleep with its answer in hand would hold the run for the whole
    // timeout (the answer's latency, timed when it landed, would not
    // show it).
    assert!(out.elapsed < Duration::from_secs(5), "{report}");
    assert_eq!(server.connections(), 2, "{report}");
}

/// `n` distinct JSON-RPC lines, the `i`th with `"id":i`.
fn rpc_lines(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| {
            format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"m{}\",\"params\":[]}}\n",
                i % 3
            )
        })
        .collect::<String>()
        .into_bytes()
}

#[test]
fn a_compared_stream_of_lines_goes_on_with_each_answer_judged_against_its_own_request() {
    // A stream's plain POST lines go by lanes on the ring: each answer is
    // taken, and the next line formed and sent, where the answer landed.
    // Each endpoint echoes the body it got, one changing every seventh:
    // every line reaches both once, whole, and exactly those lines differ
    // (an answer put down to another unit would differ elsewhere). Both
    // I/O drivers run this.
    let seen: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let log = seen.clone();
    let a = Server::start(move |req| {
        log.lock().unwrap().push(req.body.to_vec());
        Reply::ok(req.body.clone())
    });
    let b = Server::start(|req| {
        let body = String::from_utf8_lossy(&req.body).to_string();
        let id: u64 = body
            .split("\"id\":")
            .nth(1)
            .and_then(|r| r.split(',').next())
            .unwrap()
            .parse()
            .unwrap();
        match id % 7 {
            0 => Reply::ok(body.replace("\"params\"", "\"other\"")),
            _ => Reply::ok(req.body.clone()),
        }
    });
    let lines = rpc_lines(700);
    let (ra, rb) = (format!("a={}", a.url()), format!("b={}", b.url()));
    let (out, report) = run_lib(&["-c", "4", "--threads", "1", &ra, &rb], &lines);
    for s in &out.stats.endpoints {
        assert_eq!((s.sent, s.responses, s.errors()), (700, 700, 0), "{report}");
    }
    let v = &out.stats.verdicts;
    assert_eq!((v.compared, v.mismatched), (700, 100), "{report}");
    let mut got = seen.lock().unwrap().clone();
    got.sort();
    let mut want: Vec<Vec<u8>> = lines
        .split(|&c| c == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    want.sort();
    assert_eq!(got, want, "{report}");
    // Few connections: the lanes kept theirs.
    assert_eq!((a.connections(), b.connections()), (4, 4), "{report}");
}

#[test]
fn a_stream_line_a_lane_cannot_form_is_sent_by_its_slot() {
    // Every third line is over 64 KiB, which a lane does not form: the
    // lane ends with it claimed, the slot sends it as any other request
    // (its body written from the request itself), and a lane goes on
    // with the lines after it.
    let seen: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
    let log = seen.clone();
    let server = Server::start(move |req| {
        log.lock().unwrap().push(req.body.to_vec());
        Reply::ok("{}")
    });
    let line = |i: usize| match i % 3 {
        0 => format!("{i} {}", "x".repeat(70_000)),
        _ => format!("{i}"),
    };
    let lines: String = (0..60).map(|i| line(i) + "\n").collect();
    let url = server.url();
    let (out, report) = run_lib(&["-c", "2", "--max-line", "100000", &url], lines.as_bytes());
    let s = &out.stats.endpoints[0];
    assert_eq!((s.sent, s.responses, s.errors()), (60, 60, 0), "{report}");
    let mut got = seen.lock().unwrap().clone();
    got.sort();
    let mut want: Vec<Vec<u8>> = (0..60).map(|i| line(i).into_bytes()).collect();
    want.sort();
    assert!(got == want, "the server got other bodies\n{report}");
}

#[test]
fn a_stream_of_lines_meets_every_kind_of_answer_in_turn() {
    // As a repeated request does: a lane carrying a stream's lines ends
    // at an answer it cannot take, the slot reads that one, and a lane
    // takes up the lines after it.
    let server = scripted(kinds_after(3));
    let lines = rpc_lines(42);
    let url = server.url();
    let (out, report) = run_lib(&["-c", "1", &url], &lines);
    every_kind_answered(&out, &report, &server);
}

/// One request's bytes as they came on the wire (head and a
/// Content-Length body), or `None` at the end of the stream.
fn raw_request(s: &mut std::net::TcpStream, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let length = content_length(&String::from_utf8_lossy(&buf[..i + 4]));
            if buf.len() >= i + 4 + length {
                return Some(buf.drain(..i + 4 + length).collect());
            }
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

#[test]
fn every_route_sends_the_same_bytes_and_times_the_server_alike() {
    // A request goes by the route its endpoint chooses: a lane on the
    // ring (closed model, a plain POST line), the quick path on the kept
    // connection (the open model, or epoll), or the general path (a
    // connection the server closed after each answer, so every request
    // connects again). Whichever, the server sees the same bytes, every
    // request gets the same outcome, and each latency is timed from the
    // send to the answer: at least the server's own wait before it answers.
    const WAIT: Duration = Duration::from_millis(3);
    let run = |close: bool, args: &[&str]| {
        let seen: Arc<Mutex<Vec<Vec<u8>>>> = Arc::default();
        let log = seen.clone();
        let server = RawServer::start(move |mut s, _| {
            use std::io::Write;
            let mut buf = Vec::new();
            while let Some(req) = raw_request(&mut s, &mut buf) {
                log.lock().unwrap().push(req);
                std::thread::sleep(WAIT);
                let answer: &[u8] = match close {
                    true => b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\nconnection: close\r\n\r\n{\"a\":1}",
                    false => b"HTTP/1.1 200 OK\r\ncontent-length: 7\r\n\r\n{\"a\":1}",
                };
                if s.write_all(answer).is_err() || close {
                    return;
                }
            }
        });
        let url = server.url();
        let mut argv = vec!["-c", "2", "--threads", "1", "--stop-after", "60"];
        argv.extend_from_slice(args);
        argv.push(&url);
        let line = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_chainId\",\"params\":[]}\n";
        let (out, report) = run_lib(&argv, &line.repeat(60));
        let s = &out.stats.endpoints[0];
        assert_eq!(
            (s.sent, s.responses, s.errors()),
            (60, 60, 0),
            "{args:?}\n{report}"
        );
        assert_eq!(s.status[200], 60, "{args:?}\n{report}");
        assert_eq!(s.bytes_in, 60 * 7, "{args:?}\n{report}");
        let least = Duration::from_nanos(s.latency.min() * 1000);
        assert!(
            least >= WAIT,
            "{args:?}: a latency of {least:?} under the server's wait\n{report}"
        );
        // Each run has a server of its own: its port is put aside.
        let port = server.addr.port().to_string();
        let seen: Vec<String> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|r| String::from_utf8_lossy(r).replace(&port, "PORT"))
            .collect();
        assert_eq!(seen.len(), 60, "{args:?}\n{report}");
        (seen, server.connections())
    };
    let (laned, _) = run(false, &[]);
    let (quick_open, _) = run(false, &["--rate", "2000"]);
    let (quick_epoll, _) = run(false, &["--io", "epoll"]);
    let (general, connections) = run(true, &[]);
    assert!(
        connections >= 60,
        "the general path connected {connections} times"
    );
    let first = laned[0].clone();
    for (route, requests) in [
        ("lane", &laned),
        ("quick path (open model)", &quick_open),
        ("quick path (epoll)", &quick_epoll),
        ("general path", &general),
    ] {
        for r in requests {
            assert_eq!(r, &first, "the {route} sent other bytes");
        }
    }
}

/// Plain HTTP/1.1 at a port that speaks only HTTP/2 (h2c): the server
/// answers with its SETTINGS and a GOAWAY, as an HTTP/2 server does to a
/// connection that does not start with the preface. The request fails as
/// a `malformed response`, and stderr says once what that means and that
/// `--http2` is the fix.
#[test]
fn http1_at_an_h2c_only_port_hints_http2() {
    use std::io::Write as _;
    let server = RawServer::start(|mut s, _| {
        let _ = read_request(&mut s);
        let mut frames = vec![0, 0, 0, 4, 0, 0, 0, 0, 0];
        frames.extend_from_slice(&[0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        let _ = s.write_all(&frames);
    });
    let out = run_bin(&["-c", "1", &server.url()], &lines(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("malformed response: 2"), "{text}");
    assert_eq!(
        stderr
            .matches("answered HTTP/1.1 with HTTP/2 frames")
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("fix: give --http2"), "{stderr}");
}

/// `--http2` at a port that speaks only HTTP/1.1: it answers the preface
/// with an HTTP/1 status line, a `malformed response`, and stderr says
/// once what it answered and that dropping `--http2` is the fix.
#[test]
fn http2_at_an_http1_only_port_says_what_it_answered() {
    use std::io::Write as _;
    let server = RawServer::start(|mut s, _| {
        let _ =
            s.write_all(b"HTTP/1.1 505 HTTP Version Not Supported\r\nConnection: close\r\n\r\n");
    });
    let out = run_bin(&["-c", "1", "--http2", &server.url()], &lines(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("malformed response: 2"), "{text}");
    assert_eq!(
        stderr
            .matches(r#"answered HTTP/2 in HTTP/1 ("HTTP/1.1 505 HTTP Version Not Supported")"#)
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("for http://, drop --http2"), "{stderr}");
}
