//! Test support: an HTTP server on 127.0.0.1:0 running on its own thread
//! and runtime, with a handler per test, that counts requests and the
//! highest number in flight at once; and helpers to run versus in-process
//! or as a process.
#![allow(dead_code)]

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;

/// What a test server saw of one request.
#[derive(Clone, Debug)]
pub struct Seen {
    pub version: http::Version,
    pub method: String,
    pub path: String,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

/// What the handler answers.
#[derive(Clone, Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Bytes,
    pub delay: Duration,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    pub fn ok(body: impl Into<Bytes>) -> Reply {
        Reply {
            status: 200,
            body: body.into(),
            delay: Duration::ZERO,
            headers: Vec::new(),
        }
    }
    pub fn header(mut self, name: &str, value: &str) -> Reply {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
    pub fn status(mut self, s: u16) -> Reply {
        self.status = s;
        self
    }
    pub fn after(mut self, d: Duration) -> Reply {
        self.delay = d;
        self
    }
}

type Handler = Arc<dyn Fn(&Seen) -> Reply + Send + Sync>;

/// Counters kept by a server.
#[derive(Default, Debug)]
pub struct Counters {
    pub requests: AtomicU64,
    pub in_flight: AtomicU64,
    pub max_in_flight: AtomicU64,
    pub connections: AtomicU64,
    /// Connections that ended (closed by either side).
    pub closed: AtomicU64,
}

/// What a test server limits.
#[derive(Clone, Copy, Default)]
struct Limits {
    /// Requests a connection takes before it is shut down gracefully.
    requests_per_connection: Option<u64>,
    /// Concurrent HTTP/2 streams per connection.
    h2_streams: Option<u32>,
    /// Stop reading each connection for this long once it has read 1 MiB,
    /// with HTTP/2 windows of 256 MiB: the client's writes fill the socket.
    stall: Option<Duration>,
    /// Once the server is busy (has had 100 requests), serve each new
    /// connection only this long after it was accepted, as a busy server
    /// gets to a new connection late: its first request waits.
    /// Connections opened before the requests are served at once (however
    /// late a loaded machine runs the accept loop).
    slow_start: Option<Duration>,
}

/// A socket that stops reading for a while once, after its first MiB
/// (see [`Limits::stall`]).
struct Stall {
    io: tokio::net::TcpStream,
    read: usize,
    stall: Option<Duration>,
    sleep: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
}

impl tokio::io::AsyncRead for Stall {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        if self.read >= 1 << 20 {
            if let Some(d) = self.stall.take() {
                self.sleep = Some(Box::pin(tokio::time::sleep(d)));
            }
        }
        if let Some(sleep) = self.sleep.as_mut() {
            std::task::ready!(std::future::Future::poll(sleep.as_mut(), cx));
            self.sleep = None;
        }
        let before = buf.filled().len();
        std::task::ready!(std::pin::Pin::new(&mut self.io).poll_read(cx, buf))?;
        self.read += buf.filled().len() - before;
        std::task::Poll::Ready(Ok(()))
    }
}

impl tokio::io::AsyncWrite for Stall {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// A running test server; dropped at the end of the test process.
pub struct Server {
    pub addr: SocketAddr,
    pub counters: Arc<Counters>,
    _shutdown: tokio::sync::oneshot::Sender<()>,
}

impl Server {
    /// Start a plain HTTP server (HTTP/1.1, and HTTP/2 with prior
    /// knowledge) whose handler maps each request to a reply.
    pub fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Server {
        Server::start_with(None, Limits::default(), handler)
    }

    /// [`Server::start`] with at most `streams` concurrent HTTP/2 streams
    /// per connection (SETTINGS_MAX_CONCURRENT_STREAMS; nginx's default is
    /// 128).
    pub fn start_h2_limited(
        streams: u32,
        handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let limits = Limits {
            h2_streams: Some(streams),
            ..Limits::default()
        };
        Server::start_with(None, limits, handler)
    }

    /// [`Server::start`], but each connection is shut down gracefully
    /// (HTTP/2 GOAWAY, HTTP/1.1 `Connection: close`) once it has taken
    /// `max` requests, as nginx's `keepalive_requests` does.
    pub fn start_limited(
        max: u64,
        handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let limits = Limits {
            requests_per_connection: Some(max),
            ..Limits::default()
        };
        Server::start_with(None, limits, handler)
    }

    /// [`Server::start`], but once it has answered a request each new
    /// connection is served only `delay` after it was accepted (see
    /// [`Limits::slow_start`]).
    pub fn start_slow_start(
        delay: Duration,
        handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let limits = Limits {
            slow_start: Some(delay),
            ..Limits::default()
        };
        Server::start_with(None, limits, handler)
    }

    /// The same over TLS with this certificate; ALPN offers h2 and http/1.1.
    pub fn start_tls(
        cert: &TestCert,
        handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Server {
        Server::start_tls_with(cert, Limits::default(), handler)
    }

    /// [`Server::start_tls`], but each connection stops reading for
    /// `stall` after its first MiB, with HTTP/2 windows large enough that
    /// the client's writes fill the socket meanwhile.
    pub fn start_tls_stalling(
        cert: &TestCert,
        stall: Duration,
        handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let limits = Limits {
            stall: Some(stall),
            ..Limits::default()
        };
        Server::start_tls_with(cert, limits, handler)
    }

    /// [`Server::start`] over TLS with `config` as it is (its ALPN, its
    /// client certificate verifier).
    pub fn start_tls_config(
        config: rustls::ServerConfig,
        handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Server {
        Server::start_with(
            Some(tokio_rustls::TlsAcceptor::from(Arc::new(config))),
            Limits::default(),
            handler,
        )
    }

    fn start_tls_with(
        cert: &TestCert,
        limits: Limits,
        handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let config = cert.server_config(&[b"h2", b"http/1.1"]);
        Server::start_with(
            Some(tokio_rustls::TlsAcceptor::from(Arc::new(config))),
            limits,
            handler,
        )
    }

    fn start_with(
        tls: Option<tokio_rustls::TlsAcceptor>,
        limits: Limits,
        handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
    ) -> Server {
        let handler: Handler = Arc::new(handler);
        let counters = Arc::new(Counters::default());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let c = counters.clone();
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
                        let _ = stream.set_nodelay(true);
                        c.connections.fetch_add(1, Ordering::Relaxed);
                        let handler = handler.clone();
                        let c = c.clone();
                        let tls = tls.clone();
                        tokio::spawn(async move {
                            let busy = c.requests.load(Ordering::SeqCst) > 0;
                            if let Some(d) = limits.slow_start.filter(|_| busy) {
                                tokio::time::sleep(d).await;
                            }
                            let taken = Arc::new(AtomicU64::new(0));
                            let enough = Arc::new(tokio::sync::Notify::new());
                            let (t, e, counters) = (taken.clone(), enough.clone(), c.clone());
                            let svc =
                                service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                                    let n = t.fetch_add(1, Ordering::SeqCst) + 1;
                                    let last = limits.requests_per_connection == Some(n);
                                    if last {
                                        e.notify_one();
                                    }
                                    serve(handler.clone(), counters.clone(), req, last)
                                });
                            let mut builder = auto::Builder::new(TokioExecutor::new());
                            if let Some(n) = limits.h2_streams {
                                builder.http2().max_concurrent_streams(n);
                            }
                            if limits.stall.is_some() {
                                builder
                                    .http2()
                                    .initial_stream_window_size(256 << 20)
                                    .initial_connection_window_size(256 << 20);
                            }
                            let stream = Stall {
                                io: stream,
                                read: 0,
                                stall: limits.stall,
                                sleep: None,
                            };
                            match tls {
                                Some(acceptor) => {
                                    if let Ok(stream) = acceptor.accept(stream).await {
                                        let conn =
                                            builder.serve_connection(TokioIo::new(stream), svc);
                                        serve_until(conn, &enough).await;
                                    }
                                }
                                None => {
                                    let conn = builder.serve_connection(TokioIo::new(stream), svc);
                                    serve_until(conn, &enough).await;
                                }
                            }
                            c.closed.fetch_add(1, Ordering::Relaxed);
                        });
                    }
                };
                tokio::select! {
                    _ = accept => {}
                    _ = rx => {}
                }
            });
        });
        let addr = addr_rx.recv().unwrap();
        Server {
            addr,
            counters,
            _shutdown: tx,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    pub fn requests(&self) -> u64 {
        self.counters.requests.load(Ordering::SeqCst)
    }

    pub fn max_in_flight(&self) -> u64 {
        self.counters.max_in_flight.load(Ordering::SeqCst)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.counters.connections.load(Ordering::SeqCst)
    }

    /// Connections ended so far.
    pub fn closed(&self) -> u64 {
        self.counters.closed.load(Ordering::SeqCst)
    }

    /// The URL of a TLS server ([`Server::start_tls`]).
    pub fn https_url(&self) -> String {
        format!("https://127.0.0.1:{}/", self.addr.port())
    }
}

/// `n` JSON lines of about `size` bytes each, numbered by `id`.
pub fn padded_lines(n: usize, size: usize) -> Vec<u8> {
    let pad = "x".repeat(size);
    let mut input = Vec::new();
    for i in 0..n {
        input.extend_from_slice(format!(r#"{{"id":{i},"pad":"{pad}"}}"#).as_bytes());
        input.push(b'\n');
    }
    input
}

/// Serve a connection; shut it down gracefully when `enough` is notified.
async fn serve_until<I, S>(
    conn: auto::Connection<'_, I, S, TokioExecutor>,
    enough: &tokio::sync::Notify,
) where
    S: hyper::service::Service<
            hyper::Request<hyper::body::Incoming>,
            Response = hyper::Response<Full<Bytes>>,
            Error = Infallible,
        > + Send,
    S::Future: Send + 'static,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = enough.notified() => conn.as_mut().graceful_shutdown(),
    }
    let _ = conn.await;
}

async fn serve(
    handler: Handler,
    c: Arc<Counters>,
    req: hyper::Request<hyper::body::Incoming>,
    last: bool,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    {
        let now = c.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        c.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let (parts, body) = req.into_parts();
        let body = body
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let seen = Seen {
            version: parts.version,
            method: parts.method.to_string(),
            path: parts.uri.to_string(),
            headers: parts.headers,
            body,
        };
        let reply = handler(&seen);
        if !reply.delay.is_zero() {
            tokio::time::sleep(reply.delay).await;
        }
        c.requests.fetch_add(1, Ordering::SeqCst);
        c.in_flight.fetch_sub(1, Ordering::SeqCst);
        let mut resp = hyper::Response::new(Full::new(reply.body));
        *resp.status_mut() = http::StatusCode::from_u16(reply.status).unwrap();
        for (n, v) in &reply.headers {
            resp.headers_mut().append(
                http::HeaderName::try_from(n.as_str()).unwrap(),
                http::HeaderValue::try_from(v.as_str()).unwrap(),
            );
        }
        if last && seen.version == http::Version::HTTP_11 {
            resp.headers_mut()
                .insert(http::header::CONNECTION, "close".parse().unwrap());
        }
        Ok(resp)
    }
}

/// A port on 127.0.0.1 where nothing listens: a socket bound to it but not
/// listening, left open for the rest of the test process, so connects are
/// refused and no other test's server can take the port meanwhile (a port
/// merely bound and closed again once was, and the "dead" endpoint
/// answered).
pub fn closed_port() -> u16 {
    // SAFETY: plain socket calls on a new descriptor and local structs of
    // the sizes passed; the descriptor is deliberately never closed.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let mut addr: libc::sockaddr_in = std::mem::zeroed();
        addr.sin_family = libc::AF_INET as libc::sa_family_t;
        addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
        let mut len = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;
        let sa = std::ptr::addr_of_mut!(addr).cast::<libc::sockaddr>();
        assert_eq!(libc::bind(fd, sa, len), 0, "bind");
        assert_eq!(libc::getsockname(fd, sa, &mut len), 0, "getsockname");
        u16::from_be(addr.sin_port)
    }
}

/// Run versus in-process over `input` lines; returns the run and its text
/// report.
pub fn run_lib(args: &[&str], input: &[u8]) -> (versus::engine::RunOutput, String) {
    run_lib_observed(args, input, &mut versus::engine::Quiet)
}

/// [`run_lib`] with an observer of the intervals.
pub fn run_lib_observed(
    args: &[&str],
    input: &[u8],
    observer: &mut dyn versus::engine::Observer,
) -> (versus::engine::RunOutput, String) {
    run_lib_with(args, input, observer, &versus::engine::Stop::new())
}

/// [`run_lib`] with an observer and a stop handle.
pub fn run_lib_with(
    args: &[&str],
    input: &[u8],
    observer: &mut dyn versus::engine::Observer,
    stop: &versus::engine::Stop,
) -> (versus::engine::RunOutput, String) {
    run_lib_tapped(args, input, observer, stop, None)
}

/// [`run_lib_with`] with one more tap, which sees what the run's own do.
pub fn run_lib_tapped(
    args: &[&str],
    input: &[u8],
    observer: &mut dyn versus::engine::Observer,
    stop: &versus::engine::Stop,
    tap: Option<Arc<dyn versus::engine::Tap>>,
) -> (versus::engine::RunOutput, String) {
    use clap::Parser;
    let mut argv = vec!["versus"];
    argv.extend_from_slice(args);
    let cli = versus::cli::Cli::try_parse_from(argv).expect("arguments");
    let mut plan = versus::plan::Plan::from_args(&cli.run, false).expect("plan");
    versus::plan::grpc::setup(&mut plan).expect("gRPC set-up");
    plan.engine_mut().taps.extend(tap);
    let plan = Arc::new(plan);
    if let Some(log) = &plan.mismatch_log {
        log.open().expect("--mismatches");
    }
    let lines =
        versus::input::lines::LinesSource::new(std::io::Cursor::new(input.to_vec()), plan.max_line);
    let input = plan.input(Some(Box::new(lines))).expect("input");
    let out = versus::engine::run(&plan.engine, input, stop, observer).expect("run");
    let mut report = Vec::new();
    versus::report::text::write(&mut report, &plan.run_info(), &out).unwrap();
    (out, String::from_utf8(report).unwrap())
}

/// Run the versus binary with `stdin` as its input.
pub fn run_bin(args: &[&str], stdin: &[u8]) -> Output {
    run_bin_summary(args, stdin, None)
}

/// [`run_bin`] with GitHub Actions' `GITHUB_STEP_SUMMARY` set to
/// `summary`; unset without one (a test run on GitHub Actions must not
/// append its reports to the job's summary).
pub fn run_bin_summary(args: &[&str], stdin: &[u8], summary: Option<&std::path::Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_versus"));
    cmd.args(args)
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(path) = summary {
        cmd.env("GITHUB_STEP_SUMMARY", path);
    }
    let mut child = cmd.spawn().unwrap();
    let mut pipe = child.stdin.take().unwrap();
    let data = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = pipe.write_all(&data);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    out
}

/// The number after `label` on the first line of `report` that has it.
pub fn number_after(report: &str, label: &str) -> f64 {
    let line = report
        .lines()
        .find(|l| l.contains(label))
        .unwrap_or_else(|| panic!("no {label:?} in report:\n{report}"));
    let rest = &line[line.find(label).unwrap() + label.len()..];
    let num: String = rest
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    num.parse()
        .unwrap_or_else(|_| panic!("no number after {label:?} in {line:?}"))
}

/// `n` JSON-RPC-like lines, `{"id":N,...}`.
pub fn lines(n: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..n {
        writeln!(
            out,
            r#"{{"jsonrpc":"2.0","id":{i},"method":"eth_blockNumber","params":[]}}"#
        )
        .unwrap();
    }
    out
}

/// The `id` of a JSON-RPC-like body.
pub fn id_of(body: &[u8]) -> u64 {
    let v: serde_json::Value = serde_json::from_slice(body).expect("JSON body");
    v["id"]
        .as_u64()
        .or_else(|| v["id"].as_str().and_then(|s| s.parse().ok()))
        .expect("id")
}

/// A self-signed certificate for 127.0.0.1 and localhost.
pub struct TestCert {
    pub der: rustls::pki_types::CertificateDer<'static>,
    pub key: rustls::pki_types::PrivatePkcs8KeyDer<'static>,
    pub pem: String,
}

impl TestCert {
    pub fn new() -> TestCert {
        TestCert::with(|_| {})
    }

    /// A self-signed certificate for `127.0.0.1` and `localhost`, changed by
    /// `edit` (names, CA flag, validity) before it is signed.
    pub fn with(edit: impl FnOnce(&mut rcgen::CertificateParams)) -> TestCert {
        let mut params =
            rcgen::CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()]).unwrap();
        edit(&mut params);
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        TestCert {
            der: cert.der().clone(),
            key: rustls::pki_types::PrivatePkcs8KeyDer::from(key.serialize_der()),
            pem: cert.pem(),
        }
    }

    /// A server's TLS configuration with this certificate, offering `alpn`.
    pub fn server_config(&self, alpn: &[&[u8]]) -> rustls::ServerConfig {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(
                vec![self.der.clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(self.key.clone_key()),
            )
            .unwrap();
        config.alpn_protocols = alpn.iter().map(|a| a.to_vec()).collect();
        config
    }

    /// Write the certificate as PEM to a temporary file.
    pub fn pem_file(&self) -> std::path::PathBuf {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("versus-test-{}-{n}.pem", std::process::id()));
        std::fs::write(&path, &self.pem).unwrap();
        path
    }
}

/// A raw TCP server on 127.0.0.1:0, for servers that break the rules: each
/// connection is handed, with its number (from 0), to `serve` on a thread
/// of its own.
pub struct RawServer {
    pub addr: SocketAddr,
    connections: Arc<AtomicU64>,
}

impl RawServer {
    pub fn start(serve: impl Fn(std::net::TcpStream, u64) + Send + Sync + 'static) -> RawServer {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let connections = Arc::new(AtomicU64::new(0));
        let count = connections.clone();
        let serve = Arc::new(serve);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { return };
                let n = count.fetch_add(1, Ordering::SeqCst);
                let serve = serve.clone();
                std::thread::spawn(move || serve(stream, n));
            }
        });
        RawServer { addr, connections }
    }

    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }
}

/// The Content-Length of a request head (0 without one).
pub fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0)
}

/// Read one HTTP/1.1 request (its head and a Content-Length body) from
/// `s`; its head, or `None` at the end of the stream.
pub fn read_request(s: &mut std::net::TcpStream) -> Option<String> {
    use std::io::Read;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let length = content_length(&head);
    let mut body = buf.len() - head_end;
    while body < length {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return None,
            Ok(n) => body += n,
        }
    }
    Some(head)
}

/// Write a scenario (or data) file `name` with `text` into this test
/// process's own temporary folder.
pub fn scenario_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("versus-scenarios-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The JSON report of `versus run FILE` with `args` (which must succeed).
pub fn run_scenario_json(file: &std::path::Path, args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run", file.to_str().unwrap(), "--format", "json", "-q"];
    all.extend_from_slice(args);
    let out = run_bin(&all, b"");
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// Step `name` of endpoint `e` in a JSON report.
pub fn step_of<'a>(report: &'a serde_json::Value, e: usize, name: &str) -> &'a serde_json::Value {
    report["endpoints"][e]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}: {report}"))
}

/// Run versus as a process on 1,000 requests whose answers differ at two
/// endpoints, with `extra` arguments, and Ctrl-C it once every request was
/// sent, while answers still wait to be judged: its judge thread is held
/// up writing the mismatch log to a pipe nobody reads until the run is
/// stopped. `--drain 0s`: judging stops at once.
pub fn stopped_while_judging(extra: &[&str]) -> Output {
    use std::io::{BufRead, BufReader};
    use std::os::unix::fs::OpenOptionsExt;
    let pad = "x".repeat(500);
    let answer = |v: u32| {
        let body = format!(r#"{{"v":{v},"pad":"{pad}"}}"#);
        move |_: &Seen| Reply::ok(body.clone())
    };
    let (one, two) = (Server::start(answer(1)), Server::start(answer(2)));
    let fifo = std::env::temp_dir().join(format!(
        "versus-judging-{}-{}.fifo",
        std::process::id(),
        one.url().rsplit(':').next().unwrap().trim_end_matches('/')
    ));
    let _ = std::fs::remove_file(&fifo);
    let path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: mkfifo(3) with a NUL-terminated path has no memory effects.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    // The reading end, open (so that versus can open the writing end) and
    // not read: the pipe fills, and the judge thread waits.
    let mut reader = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(&fifo)
        .unwrap();
    let (e1, e2) = (format!("a={}", one.url()), format!("b={}", two.url()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_versus"))
        .args(["--mismatches", fifo.to_str().unwrap(), "--drain", "0s"])
        .args(extra)
        .args(["-c", "4", &e1, &e2])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&lines(1_000)).unwrap();
    drop(stdin);
    let (tx, stderr) = std::sync::mpsc::channel();
    let err = child.stderr.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(err).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Every request sent: the mismatch log's first lines filled the pipe
    // long before.
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while one.requests() + two.requests() < 2_000 {
        assert!(
            std::time::Instant::now() < deadline,
            "not every request was sent"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) with a valid pid and signal has no memory effects.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    // Stopped once it says so; then let the judge thread go on.
    while !stderr
        .recv_timeout(Duration::from_secs(60))
        .unwrap()
        .starts_with("versus: stopping;")
    {}
    let drained = std::thread::spawn(move || {
        let fd = std::os::fd::AsRawFd::as_raw_fd(&reader);
        // SAFETY: fcntl(2) on an open descriptor has no memory effects.
        unsafe { libc::fcntl(fd, libc::F_SETFL, 0) };
        let mut log = Vec::new();
        std::io::Read::read_to_end(&mut reader, &mut log).unwrap();
    });
    let out = child.wait_with_output().unwrap();
    drained.join().unwrap();
    let _ = std::fs::remove_file(&fifo);
    out
}

/// nginx serving on a free port of 127.0.0.1 from a prefix folder of its
/// own, stopped when dropped.
pub struct Nginx {
    child: std::process::Child,
    pub port: u16,
}

impl Nginx {
    /// Start nginx with `http` (more of its `http` block) and `server`
    /// (the body of its `server` block; `@PORT@` is the port) under
    /// `prefix`, and wait until it listens.
    pub fn start(prefix: &std::path::Path, http: &str, server: &str) -> Nginx {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let p = prefix.display();
        let tmp = format!("{p}/tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let conf = format!(
            "worker_processes 1;\npid {p}/nginx.pid;\nerror_log {p}/error.log warn;\ndaemon off;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n  access_log off;\n  {http}\n  client_body_temp_path {tmp};\n  proxy_temp_path {tmp};\n  \
             fastcgi_temp_path {tmp};\n  uwsgi_temp_path {tmp};\n  scgi_temp_path {tmp};\n  \
             server {{\n{}\n  }}\n}}\n",
            server.replace("@PORT@", &port.to_string())
        );
        let file = prefix.join("nginx.conf");
        std::fs::write(&file, conf).unwrap();
        let child = std::process::Command::new("nginx")
            .args(["-p", &p.to_string(), "-e", &format!("{p}/error.log"), "-c"])
            .arg(&file)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("nginx is installed (bash .ci/run installs it)");
        let mut nginx = Nginx { child, port };
        // Until it listens (or has exited, its log saying why).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            let exited = nginx.child.try_wait().unwrap();
            if exited.is_some() || std::time::Instant::now() > deadline {
                let log = std::fs::read_to_string(prefix.join("error.log")).unwrap_or_default();
                panic!("nginx did not start ({exited:?}): {log}");
            }
            std::thread::yield_now();
        }
        nginx
    }
}

impl Drop for Nginx {
    /// SIGTERM, on which the master stops its workers before it exits
    /// (SIGKILL would leave them running).
    fn drop(&mut self) {
        let pid = i32::try_from(self.child.id()).unwrap();
        // SAFETY: kill(2) on the process this test started and has not
        // waited for yet, so the pid is still its.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let _ = self.child.wait();
    }
}

/// Headless Chromium's DOM of `page` once loaded, and its log (console
/// messages show as `:CONSOLE`); `more` flags, as a screenshot's.
pub fn chromium(
    page: &std::path::Path,
    profile: &std::path::Path,
    more: &[&str],
) -> (String, String) {
    let out = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            &format!("--user-data-dir={}", profile.display()),
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(more)
        .arg(format!("file://{}", page.display()))
        .stdin(Stdio::null())
        .output()
        .expect("chromium");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (text(&out.stdout), text(&out.stderr))
}

/// Tests that measure time run one at a time (hold the guard), so one
/// test's requests do not show up as another's latency or take its cores.
pub fn alone() -> std::sync::MutexGuard<'static, ()> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

/// Each of `cases` (flags, and a part of the error they must get) is
/// refused before any request: exit 2, the message on stderr, nothing
/// sent to `server`, which each command line names as its endpoint.
pub fn refused(server: &Server, cases: &[(Vec<&str>, &str)]) {
    let url = server.url();
    for (args, says) in cases {
        let mut argv = args.clone();
        argv.extend(["--method", "GET", url.as_str()]);
        let out = run_bin(&argv, b"");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    assert_eq!(server.requests(), 0);
}
