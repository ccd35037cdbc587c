//! WebSocket endpoints against in-process WebSocket JSON-RPC servers: the
//! same node over HTTP and over WebSocket agrees, answers that differ are
//! mismatches, a silent socket times out, a closed socket is a reset and the
//! slot reconnects, and wss:// verifies TLS as https:// does.

mod common;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::handshake::server::{
    Request as WsRequest, Response as WsResponse,
};
use tokio_tungstenite::tungstenite::Message;
use versus::endpoint::{Failure, TlsReason};

/// What the WebSocket server does on one request.
enum Act {
    Send(String),
    Binary(&'static [u8]),
    /// A close frame, then the socket is closed.
    Close,
    /// The TCP connection is dropped without a close frame.
    Drop,
}

type WsHandler = Arc<dyn Fn(&Value, u64) -> Vec<Act> + Send + Sync>;

/// A WebSocket JSON-RPC server on 127.0.0.1:0, on its own thread.
struct WsServer {
    addr: SocketAddr,
    connections: Arc<AtomicU64>,
    messages: Arc<AtomicU64>,
    /// Handshake headers of the first connection, and the ALPN protocol
    /// the TLS ones negotiated.
    headers: Arc<Mutex<Option<http::HeaderMap>>>,
    alpn: Arc<Mutex<Vec<Option<Vec<u8>>>>>,
    _shutdown: tokio::sync::oneshot::Sender<()>,
}

impl WsServer {
    /// `handler` gets each request (parsed) and its number on the server
    /// (from 1) and says what to do.
    fn start(
        tls: Option<tokio_rustls::TlsAcceptor>,
        handler: impl Fn(&Value, u64) -> Vec<Act> + Send + Sync + 'static,
    ) -> WsServer {
        let handler: WsHandler = Arc::new(handler);
        let connections = Arc::new(AtomicU64::new(0));
        let messages = Arc::new(AtomicU64::new(0));
        let headers = Arc::new(Mutex::new(None));
        let alpn = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (c, m, h, a) = (
            connections.clone(),
            messages.clone(),
            headers.clone(),
            alpn.clone(),
        );
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                let accept = async {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            continue;
                        };
                        c.fetch_add(1, Ordering::SeqCst);
                        let (handler, m, h, a, tls) = (
                            handler.clone(),
                            m.clone(),
                            h.clone(),
                            a.clone(),
                            tls.clone(),
                        );
                        tokio::spawn(async move {
                            match tls {
                                Some(acceptor) => {
                                    let Ok(stream) = acceptor.accept(stream).await else {
                                        return;
                                    };
                                    let proto =
                                        stream.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
                                    a.lock().unwrap().push(proto);
                                    serve(stream, handler, m, h).await;
                                }
                                None => serve(stream, handler, m, h).await,
                            }
                        });
                    }
                };
                tokio::select! {
                    _ = accept => {}
                    _ = rx => {}
                }
            });
        });
        WsServer {
            addr: addr_rx.recv().unwrap(),
            connections,
            messages,
            headers,
            alpn,
            _shutdown: tx,
        }
    }

    fn url(&self) -> String {
        format!("ws://{}/", self.addr)
    }

    fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }
}

async fn serve<S>(
    stream: S,
    handler: WsHandler,
    messages: Arc<AtomicU64>,
    headers: Arc<Mutex<Option<http::HeaderMap>>>,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    #[allow(clippy::result_large_err)] // the signature tungstenite asks for
    let callback = |req: &WsRequest, resp: WsResponse| {
        headers
            .lock()
            .unwrap()
            .get_or_insert_with(|| req.headers().clone());
        Ok(resp)
    };
    let Ok(mut ws) = tokio_tungstenite::accept_hdr_async(stream, callback).await else {
        return;
    };
    while let Some(Ok(msg)) = ws.next().await {
        let Message::Text(text) = msg else {
            continue;
        };
        let n = messages.fetch_add(1, Ordering::SeqCst) + 1;
        let req: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        for act in handler(&req, n) {
            match act {
                Act::Send(s) => {
                    if ws.send(Message::text(s)).await.is_err() {
                        return;
                    }
                }
                Act::Binary(b) => {
                    if ws.send(Message::binary(b)).await.is_err() {
                        return;
                    }
                }
                Act::Close => {
                    let _ = ws.close(None).await;
                    return;
                }
                Act::Drop => return,
            }
        }
    }
}

/// The node's answer to a request: its id and its first parameter.
fn answer(req: &Value) -> String {
    json!({"jsonrpc":"2.0","id":req["id"],"result":req["params"][0]}).to_string()
}

/// The same node over HTTP.
fn http_node() -> Server {
    Server::start(|seen| {
        let req: Value = serde_json::from_slice(&seen.body).unwrap();
        Reply::ok(answer(&req))
    })
}

const NOTIFICATION: &str =
    r#"{"jsonrpc":"2.0","method":"eth_subscription","params":{"subscription":"0x9","result":{}}}"#;

/// `n` requests whose parameter is their line number, with ids as clients
/// write them: numbers that repeat, and strings.
fn requests(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        let id = if i % 2 == 0 {
            (i % 7).to_string()
        } else {
            format!("\"s{i}\"")
        };
        writeln!(
            out,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"eth_getBlockByNumber","params":["0x{i:x}",false]}}"#
        )
        .unwrap();
    }
    out
}

fn line_number(req: &Value) -> u64 {
    u64::from_str_radix(
        req["params"][0].as_str().unwrap().trim_start_matches("0x"),
        16,
    )
    .unwrap()
}

#[test]
fn http_and_websocket_endpoints_of_the_same_node_agree() {
    let ws = WsServer::start(None, |req, n| {
        let mut acts = Vec::new();
        if n % 10 == 0 {
            acts.push(Act::Send(NOTIFICATION.into()));
        }
        acts.push(Act::Send(answer(req)));
        acts
    });
    let http = http_node();
    let ws_arg = format!("ws={}", ws.url());
    let http_arg = format!("http={}", http.url());
    let (out, report) = run_lib(
        &[
            "-c",
            "8",
            "--endpoint-header",
            "ws=X-Api-Key: k1",
            &http_arg,
            &ws_arg,
        ],
        &requests(500),
    );
    assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");
    assert_eq!(out.stats.verdicts.compared, 500, "{report}");
    for e in &out.stats.endpoints {
        assert_eq!(e.responses, 500, "{report}");
        assert_eq!(e.status[200], 500, "{report}");
        assert_eq!(e.reconnects, 0, "{report}");
    }
    assert_eq!(
        out.stats.endpoints[0].bytes_in,
        out.stats.endpoints[1].bytes_in
    );
    assert_eq!(
        out.stats.endpoints[0].bytes_out,
        out.stats.endpoints[1].bytes_out
    );
    assert!(report.contains("Mismatched: 0"), "{report}");
    assert_eq!(ws.connections(), 8, "one socket per slot");
    assert_eq!(ws.messages.load(Ordering::SeqCst), 500);
    let headers = ws.headers.lock().unwrap().clone().unwrap();
    assert_eq!(headers["x-api-key"], "k1");
}

#[test]
fn websocket_answers_that_differ_are_mismatches() {
    let ws = WsServer::start(None, |req, _| {
        let mut a: Value = serde_json::from_str(&answer(req)).unwrap();
        if line_number(req) % 100 == 7 {
            a["result"] = json!("0xdifferent");
        }
        vec![Act::Send(a.to_string())]
    });
    let http = http_node();
    let (out, report) = run_lib(&["-c", "8", &http.url(), &ws.url()], &requests(500));
    assert_eq!(out.stats.verdicts.mismatched, 5, "{report}");
    assert_eq!(out.stats.endpoints[1].responses, 500, "{report}");
}

#[test]
fn a_websocket_endpoint_that_never_answers_times_out_and_the_run_goes_on() {
    let ws = WsServer::start(None, |_, _| Vec::new());
    let http = http_node();
    let (out, report) = run_lib(
        &["-c", "2", "--timeout", "200ms", &http.url(), &ws.url()],
        &requests(10),
    );
    assert_eq!(out.stats.endpoints[0].responses, 10, "{report}");
    let silent = &out.stats.endpoints[1];
    assert_eq!(silent.failures[Failure::Timeout.index()], 10, "{report}");
    assert_eq!(silent.responses, 0);
    assert!(report.contains("timeout: 10"), "{report}");
    // After a timeout the socket is dropped; each next request reconnects.
    assert!(silent.reconnects >= 8, "{report}");
    assert_eq!(ws.messages.load(Ordering::SeqCst), 10);
}

#[test]
fn a_socket_closed_mid_run_is_a_reset_and_the_slot_reconnects() {
    // The three resets come early (a slot reconnects when it claims its
    // next request: one reset near the input's end might never claim
    // another), on one core.
    let ws = WsServer::start(None, |req, n| match n {
        25 | 50 => vec![Act::Close],
        75 => vec![Act::Drop],
        _ => vec![Act::Send(answer(req))],
    });
    let http = http_node();
    let (out, report) = run_lib(
        &["-c", "4", "--threads", "1", &http.url(), &ws.url()],
        &requests(200),
    );
    let e = &out.stats.endpoints[1];
    assert_eq!(e.failures[Failure::Reset.index()], 3, "{report}");
    assert_eq!(e.responses, 197, "{report}");
    assert_eq!(e.reconnects, 3, "{report}");
    assert_eq!(ws.connections(), 4 + 3);
    assert!(report.contains("connection reset: 3"), "{report}");
    // A reset agrees with no response: exactly those are mismatched.
    assert_eq!(out.stats.verdicts.mismatched, 3, "{report}");
}

#[test]
fn wss_is_verified_by_default_and_speaks_http1_over_tls() {
    let cert = TestCert::new();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config = rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der.clone()],
            rustls::pki_types::PrivateKeyDer::Pkcs8(cert.key.clone_key()),
        )
        .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let ws = WsServer::start(
        Some(tokio_rustls::TlsAcceptor::from(Arc::new(config))),
        |req, _| vec![Act::Send(answer(req))],
    );
    let url = format!("wss://localhost:{}/", ws.addr.port());

    let (out, report) = run_lib(&["-c", "1", "--threads", "1", &url], &requests(3));
    assert_eq!(
        out.stats.endpoints[0].failures[Failure::Tls(TlsReason::UnknownIssuer).index()],
        1,
        "{report}"
    );
    // The endpoint was stopped: the run ended with no endpoint left.
    assert!(out.stats.endpoints[0].stopped() >= 1, "{report}");
    assert_eq!(ws.messages.load(Ordering::SeqCst), 0);

    let pem = cert.pem_file();
    let http = http_node();
    let (out, report) = run_lib(
        &[
            "-c",
            "2",
            "--cacert",
            pem.to_str().unwrap(),
            &http.url(),
            &url,
        ],
        &requests(50),
    );
    let _ = std::fs::remove_file(pem);
    assert_eq!(out.stats.endpoints[1].responses, 50, "{report}");
    assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");
    let alpn = ws.alpn.lock().unwrap();
    assert!(!alpn.is_empty());
    assert!(
        alpn.iter().all(|p| p.as_deref() == Some(&b"http/1.1"[..])),
        "{alpn:?}"
    );
}

#[test]
fn a_refused_upgrade_or_port_is_a_connect_failure() {
    let http = Server::start(|_| Reply::ok("{}"));
    let not_ws = format!("ws://{}/", http.addr);
    let closed = format!("ws://127.0.0.1:{}/", closed_port());
    let (out, report) = run_lib(&[&not_ws, &closed], &requests(4));
    assert_eq!(
        out.stats.endpoints[0].failures[Failure::Connect.index()],
        4,
        "{report}"
    );
    assert_eq!(
        out.stats.endpoints[1].failures[Failure::Refused.index()],
        4,
        "{report}"
    );
    assert!(report.contains("connect failed: 4"), "{report}");
}

#[test]
fn unknown_ids_and_binary_frames_are_malformed_and_a_null_id_is_the_answer() {
    let ws = WsServer::start(None, |req, _| match line_number(req) % 4 {
        0 => vec![Act::Send(
            r#"{"jsonrpc":"2.0","id":999999,"result":"0x0"}"#.into(),
        )],
        1 => vec![Act::Binary(b"{}"), Act::Send(answer(req))],
        2 => vec![Act::Send(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}"#.into(),
        )],
        _ => vec![Act::Send(answer(req))],
    });
    let (out, report) = run_lib(&["-c", "2", "--timeout", "300ms", &ws.url()], &requests(8));
    let e = &out.stats.endpoints[0];
    // Lines 1 and 5: a binary message.
    // Lines 0 and 4: only an answer with an id not in flight, then nothing.
    assert_eq!(e.failures[Failure::Protocol.index()], 4, "{report}");
    assert_eq!(e.failures[Failure::Timeout.index()], 0, "{report}");
    assert_eq!(e.responses, 4, "{report}");
    assert!(report.contains("malformed response: 4"), "{report}");
}

#[test]
fn lines_without_an_id_take_the_next_message_as_the_answer() {
    let ws = WsServer::start(None, |_, n| {
        let mut acts = Vec::new();
        if n % 3 == 0 {
            acts.push(Act::Send(NOTIFICATION.into()));
        }
        acts.push(Act::Send("pong".into()));
        acts
    });
    let http = Server::start(|_| Reply::ok("pong"));
    let input = b"ping\n{\"method\":\"no_id\"}\nping\nping\n".repeat(5);
    let (out, report) = run_lib(&["-c", "2", &http.url(), &ws.url()], &input);
    assert_eq!(out.stats.endpoints[1].responses, 20, "{report}");
    assert_eq!(out.stats.verdicts.mismatched, 0, "{report}");
}

#[test]
fn without_keepalive_every_request_opens_its_own_socket() {
    let ws = WsServer::start(None, |req, _| vec![Act::Send(answer(req))]);
    let (out, report) = run_lib(&["-c", "2", "--no-keepalive", &ws.url()], &requests(20));
    let e = &out.stats.endpoints[0];
    assert_eq!(e.responses, 20, "{report}");
    // Two sockets are opened before the clock; after that, one per request
    // (a core may take every request, leaving its peer's socket unused).
    assert!(e.reconnects >= 18, "{report}");
    assert_eq!(ws.connections(), 2 + e.reconnects);
}

#[test]
fn errors_are_put_down_to_the_fault_or_the_endpoint_on_websocket_too() {
    // The server itself drops every 50th message's connection; a fault
    // resets half the connections once 1 KB came down them. Each reset is
    // put down to whoever caused it, exactly.
    let drops = Arc::new(AtomicU64::new(0));
    let d = drops.clone();
    let ws = WsServer::start(None, move |req, n| {
        if n % 50 == 0 {
            d.fetch_add(1, Ordering::SeqCst);
            vec![Act::Drop]
        } else {
            vec![Act::Send(answer(req))]
        }
    });
    let (out, report) = run_lib(
        &[
            "-c",
            "2",
            "--threads",
            "1",
            "--fault",
            "0=reset after 1KB prob 0.5",
            &ws.url(),
        ],
        &requests(400),
    );
    let e = &out.stats.endpoints[0];
    let resets = e.failures[Failure::Reset.index()];
    let blamed: u64 = e.fault_errors.values().sum();
    let own = drops.load(Ordering::SeqCst);
    assert!(
        own > 0 && blamed > 0,
        "{own} dropped, {blamed} blamed\n{report}"
    );
    assert_eq!(resets, blamed + own, "{:?}\n{report}", e.fault_errors);
    assert_eq!(
        e.causes("connection reset", resets),
        vec![
            ("fault reset after 1KB prob 0.5".to_string(), blamed),
            ("endpoint".to_string(), own)
        ],
        "{report}"
    );
}
