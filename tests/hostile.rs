//! Hostile servers, each a raw socket server in the test: versus keeps
//! its memory bounded and ends every request with a classified failure,
//! within `--timeout`, whatever the server sends (or does not).

mod common;

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use versus::endpoint::Failure;

/// A server that answers each connection's first request with `head`,
/// then writes `chunk` again and again until versus closes the
/// connection. Counts the bytes it wrote.
fn endless(head: &'static [u8], chunk: Vec<u8>) -> (RawServer, Arc<AtomicU64>) {
    let written = Arc::new(AtomicU64::new(0));
    let w = written.clone();
    let server = RawServer::start(move |mut conn, _| {
        if read_request(&mut conn).is_none() || conn.write_all(head).is_err() {
            return;
        }
        while conn.write_all(&chunk).is_ok() {
            w.fetch_add(chunk.len() as u64, Ordering::SeqCst);
        }
    });
    (server, written)
}

/// Run versus over `n` lines and return the endpoint's failures of `kind`
/// and the report.
fn failures(args: &[&str], n: usize, kind: Failure) -> (u64, String) {
    let (out, report) = run_lib(args, &lines(n));
    (out.stats.endpoints[0].failures[kind.index()], report)
}

/// Less than this was read of an endless answer: versus gave up at its
/// limit, the rest sat in socket buffers.
const READ_BOUND: u64 = 32 << 20;

#[test]
fn endless_headers_are_a_malformed_response() {
    let (server, written) = endless(b"HTTP/1.1 200 OK\r\n", b"x-flood: yes\r\n".to_vec());
    let (n, report) = failures(&["-c", "1", &server.url()], 2, Failure::Protocol);
    assert_eq!(n, 2, "{report}");
    assert!(written.load(Ordering::SeqCst) < READ_BOUND);
}

#[test]
fn a_header_line_of_a_gigabyte_is_a_malformed_response() {
    let (server, written) = endless(b"HTTP/1.1 200 OK\r\nx-big: ", vec![b'a'; 64 << 10]);
    let (n, report) = failures(&["-c", "1", &server.url()], 2, Failure::Protocol);
    assert_eq!(n, 2, "{report}");
    assert!(written.load(Ordering::SeqCst) < READ_BOUND);
}

#[test]
fn an_endless_chunked_body_is_too_large_kept_or_not() {
    let mut chunk = b"4000\r\n".to_vec();
    chunk.extend(vec![b'a'; 0x4000]);
    chunk.extend_from_slice(b"\r\n");
    let (server, written) = endless(
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n",
        chunk,
    );
    // Two endpoints: the bodies are kept to be compared.
    let (a, b) = (format!("a={}", server.url()), format!("b={}", server.url()));
    let (out, report) = run_lib(&["-c", "1", "--max-body", "1M", &a, &b], &lines(2));
    for s in &out.stats.endpoints {
        assert_eq!(s.failures[Failure::BodyTooLarge.index()], 2, "{report}");
    }
    assert!(written.load(Ordering::SeqCst) < READ_BOUND);
}

#[test]
fn a_content_length_of_a_terabyte_is_too_large_before_any_body_is_read() {
    let (server, _) = endless(
        b"HTTP/1.1 200 OK\r\ncontent-length: 1000000000000\r\n\r\n",
        vec![b'a'; 64 << 10],
    );
    let (n, report) = failures(&["-c", "1", &server.url()], 2, Failure::BodyTooLarge);
    assert_eq!(n, 2, "{report}");
}

#[test]
fn garbage_instead_of_http_is_a_malformed_response() {
    let garbage: Vec<u8> = (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect();
    let (server, written) = endless(b"\x16\x03\x01garbage", garbage);
    let (n, report) = failures(&["-c", "1", &server.url()], 2, Failure::Protocol);
    assert_eq!(n, 2, "{report}");
    assert!(written.load(Ordering::SeqCst) < READ_BOUND);
}

/// Slowloris: a byte every 50 ms never completes an answer within
/// `--timeout`, however long it would go on.
#[test]
fn a_response_trickled_a_byte_at_a_time_ends_at_the_timeout() {
    let server = RawServer::start(|mut conn, _| {
        if read_request(&mut conn).is_none() {
            return;
        }
        for b in b"HTTP/1.1 200 OK\r\ncontent-length: 1000\r\n\r\n"
            .iter()
            .cycle()
        {
            std::thread::sleep(Duration::from_millis(50));
            if conn.write_all(&[*b]).is_err() {
                return;
            }
        }
    });
    let t0 = Instant::now();
    let (n, report) = failures(
        &["-c", "1", "--timeout", "400ms", &server.url()],
        2,
        Failure::Timeout,
    );
    assert_eq!(n, 2, "{report}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
}

/// A TLS server that reads the ClientHello and never answers: the connect
/// ends at `--timeout`.
#[test]
fn a_tls_server_that_stalls_mid_handshake_is_a_timeout() {
    let server = RawServer::start(|mut conn, _| {
        let mut buf = [0u8; 4096];
        while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
    });
    let url = format!("https://127.0.0.1:{}/", server.addr.port());
    let t0 = Instant::now();
    let (n, report) = failures(
        &["-c", "1", "--timeout", "300ms", &url],
        2,
        Failure::Timeout,
    );
    assert_eq!(n, 2, "{report}");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
}

/// An HTTP/2 frame header.
fn h2_frame(out: &mut Vec<u8>, kind: u8, flags: u8, id: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(payload);
}

/// An h2c server that sends its SETTINGS, then `flood` again and again
/// without ever reading. Returns whether its writes came to a stop (versus
/// stopped reading: it does not buffer the replies without bound) and the
/// bytes it wrote.
fn flooding_h2(flood: Vec<u8>) -> (RawServer, Arc<AtomicBool>, Arc<AtomicU64>) {
    let blocked = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicU64::new(0));
    let (b, w) = (blocked.clone(), written.clone());
    let server = RawServer::start(move |mut conn, _| {
        let mut settings = Vec::new();
        h2_frame(&mut settings, 4, 0, 0, &[]);
        if conn.write_all(&settings).is_err() {
            return;
        }
        conn.set_write_timeout(Some(Duration::from_millis(300)))
            .unwrap();
        loop {
            match conn.write_all(&flood) {
                Ok(()) => {
                    w.fetch_add(flood.len() as u64, Ordering::SeqCst);
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    b.store(true, Ordering::SeqCst);
                    // Hold the connection until versus closes it.
                    let _ = conn.set_read_timeout(None);
                    let mut buf = [0u8; 4096];
                    while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
                    return;
                }
                Err(_) => return,
            }
        }
    });
    (server, blocked, written)
}

fn assert_flood_is_held_back(flood: Vec<u8>) {
    let (server, blocked, written) = flooding_h2(flood);
    let (n, report) = failures(
        &["--http2", "-c", "1", "--timeout", "1500ms", &server.url()],
        1,
        Failure::Timeout,
    );
    assert_eq!(n, 1, "{report}");
    assert!(
        blocked.load(Ordering::SeqCst),
        "versus read the flood as fast as it came ({} bytes)",
        written.load(Ordering::SeqCst)
    );
    assert!(written.load(Ordering::SeqCst) < READ_BOUND);
}

#[test]
fn an_http2_ping_flood_while_not_reading_is_held_back() {
    let mut ping = Vec::new();
    for i in 0..256u64 {
        h2_frame(&mut ping, 6, 0, 0, &i.to_be_bytes());
    }
    assert_flood_is_held_back(ping);
}

#[test]
fn an_http2_settings_flood_while_not_reading_is_held_back() {
    let mut settings = Vec::new();
    for _ in 0..256 {
        // SETTINGS_MAX_CONCURRENT_STREAMS = 100, again and again.
        h2_frame(&mut settings, 4, 0, 0, &[0, 3, 0, 0, 0, 100]);
    }
    assert_flood_is_held_back(settings);
}

/// A server that says GOAWAY (no stream processed) with its SETTINGS, then
/// a thousand times more, on every connection: every request fails as a
/// reset after its one retry, and no connection ever carries a request
/// (no frame opens a stream after a GOAWAY).
#[test]
fn an_http2_goaway_storm_opens_no_stream() {
    let headers = Arc::new(AtomicU64::new(0));
    let h = headers.clone();
    let server = RawServer::start(move |mut conn, _| {
        let mut first = Vec::new();
        h2_frame(&mut first, 4, 0, 0, &[]);
        h2_frame(&mut first, 7, 0, 0, &[0; 8]);
        let mut storm = Vec::new();
        for i in 0..1000u32 {
            let mut payload = i.to_be_bytes().to_vec();
            payload.extend_from_slice(&[0; 4]);
            h2_frame(&mut storm, 7, 0, 0, &payload);
        }
        if conn.write_all(&first).is_err() || conn.write_all(&storm).is_err() {
            return;
        }
        // Read what versus sends: the preface, then frames.
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = conn.read(&mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        let mut at = 24.min(got.len());
        while at + 9 <= got.len() {
            let len = u32::from_be_bytes([0, got[at], got[at + 1], got[at + 2]]) as usize;
            if got[at + 3] == 1 {
                h.fetch_add(1, Ordering::SeqCst);
            }
            at += 9 + len;
        }
    });
    let t0 = Instant::now();
    let (out, report) = run_lib(
        &["--http2", "-c", "2", "--timeout", "2s", &server.url()],
        &lines(6),
    );
    let s = &out.stats.endpoints[0];
    assert_eq!(s.failures[Failure::Reset.index()], 6, "{report}");
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    drop(out);
    // The connections are closed once the run is over; what the server
    // read by then carried no request.
    assert_eq!(headers.load(Ordering::SeqCst), 0, "{report}");
}

/// A WebSocket server that floods notifications and never answers: the
/// request ends at `--timeout`, each message dropped as it comes.
#[test]
fn a_websocket_message_flood_ends_at_the_timeout() {
    use tokio_tungstenite::tungstenite::{accept, Message};
    let server = RawServer::start(|conn, _| {
        let Ok(mut ws) = accept(conn) else { return };
        let note = r#"{"jsonrpc":"2.0","method":"eth_subscription","params":{"result":"0x1"}}"#;
        while ws.send(Message::text(note)).is_ok() {}
    });
    let url = format!("ws://{}/", server.addr);
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}"#;
    let t0 = Instant::now();
    let (out, report) = run_lib(
        &["-c", "1", "--timeout", "500ms", &url],
        &[&body[..], b"\n"].concat(),
    );
    assert_eq!(
        out.stats.endpoints[0].failures[Failure::Timeout.index()],
        1,
        "{report}"
    );
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
}
