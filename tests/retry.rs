//! A request that never reached the server is sent once more on a new
//! connection (a reconnect, not an error): on a reused HTTP/1.1 keep-alive
//! connection that turns out closed before any byte of the answer, when
//! the method is idempotent or the request was not wholly written.

mod common;

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use common::*;

/// A server that answers the first request of each connection and closes
/// the connection when it has read the second, without a byte of answer
/// (as a server whose keep-alive timeout fires as the request arrives).
/// Counts the requests it read.
fn closes_after_one() -> (RawServer, Arc<AtomicU64>) {
    let seen = Arc::new(AtomicU64::new(0));
    let s = seen.clone();
    let server = RawServer::start(move |mut conn, _| {
        if read_request(&mut conn).is_none() {
            return;
        }
        s.fetch_add(1, Ordering::SeqCst);
        let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
        if read_request(&mut conn).is_some() {
            s.fetch_add(1, Ordering::SeqCst);
        }
    });
    (server, seen)
}

#[test]
fn an_idempotent_request_on_a_closed_keepalive_connection_is_sent_again() {
    let (server, seen) = closes_after_one();
    let url = format!("http+get://{}/", server.addr);
    let (out, report) = run_lib(&["-c", "1", &url], b"a\nb\nc\n");
    let s = &out.stats.endpoints[0];
    assert_eq!(s.responses, 3, "{report}");
    assert_eq!(s.errors(), 0, "{report}");
    // Requests 2 and 3 each found their connection closed and went again
    // on a new one: counted as reconnects.
    assert_eq!(s.reconnects, 2, "{report}");
    assert_eq!(server.connections(), 3);
    assert_eq!(seen.load(Ordering::SeqCst), 5);
}

#[test]
fn a_post_the_server_may_have_processed_is_not_sent_again() {
    let (server, seen) = closes_after_one();
    let (out, report) = run_lib(&["-c", "1", &server.url()], &lines(3));
    let s = &out.stats.endpoints[0];
    // The second request was written whole before the connection closed:
    // a POST is not repeated, it is an error.
    assert_eq!(s.responses, 2, "{report}");
    assert_eq!(
        s.failures[versus::endpoint::Failure::Reset.index()],
        1,
        "{report}"
    );
    assert_eq!(seen.load(Ordering::SeqCst), 3);
}

/// A server that closes a keep-alive connection once it has been idle for
/// 50 ms (as servers with a short keep-alive timeout do), answering every
/// request that comes before that.
fn closes_when_idle() -> RawServer {
    RawServer::start(|mut conn, _| {
        conn.set_read_timeout(Some(std::time::Duration::from_millis(50)))
            .unwrap();
        while read_request(&mut conn).is_some() {
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
        }
    })
}

#[test]
fn a_connection_the_server_closed_while_idle_is_not_used_again() {
    // Requests 250 ms apart: each finds the last one's connection closed
    // by the server. A POST cannot be sent again once written, so the
    // close must be noticed before it is sent (both I/O drivers run this).
    let server = closes_when_idle();
    let (out, report) = run_lib(
        &["--rate", "4", "--stop-after", "4", &server.url()],
        &lines(4),
    );
    let s = &out.stats.endpoints[0];
    assert_eq!(s.responses, 4, "{report}");
    assert_eq!(s.errors(), 0, "{report}");
    // The server did close them: each request went on a connection of
    // its own, none on one the server had closed.
    assert!(server.connections() >= 4, "{report}");
}
