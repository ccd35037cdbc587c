//! An in-process gRPC server of the Items service
//! (`tests/fixtures/grpc/items.proto`) for tests, the example server and
//! the bench: hyper's HTTP/2 server, messages as `prost-reflect` dynamic
//! messages (no protoc, no generated code), server reflection (v1 and
//! v1alpha) by `tonic-reflection`. The same port serves HTTP/1.1 and h2c,
//! with a REST view of the same records (`POST /items.get`,
//! `GET /items/{id}`, and pages: `GET /items?offset=O&limit=L` with a
//! `_links.next.href`, `GET /stream/items?after=K&limit=L` with a
//! `next_cursor`) for the REST-versus-gRPC comparisons.
//!
//! Ids that misbehave on purpose: `missing` (NOT_FOUND, trailers-only),
//! `unavailable` (UNAVAILABLE in trailers after the head), `reset`
//! (RST_STREAM), `slow` (answers after 3 s), `deadline`
//! (DEADLINE_EXCEEDED, trailers-only), `bad-message` (bytes that are not an
//! Item). Record 7's price differs in the REST view when `plant` is set.
#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::{BufMut, Bytes};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Empty, Full, StreamBody};
use hyper::body::Frame;
use hyper_util::rt::{TokioExecutor, TokioIo};
use prost_reflect::{DescriptorPool, DynamicMessage, MessageDescriptor, Value};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Body = UnsyncBoxBody<Bytes, BoxError>;

/// The folder of the committed `.proto` files.
pub fn proto_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/grpc")
}

/// The path of `items.proto`.
pub fn items_proto() -> std::path::PathBuf {
    proto_dir().join("items.proto")
}

/// How the server behaves.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Serve reflection v1 (and v1alpha).
    pub reflection_v1: bool,
    pub reflection_v1alpha: bool,
    /// Record 7's price differs in the REST view.
    pub plant: bool,
    /// How many records there are.
    pub records: u32,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            reflection_v1: true,
            reflection_v1alpha: true,
            plant: false,
            records: 50,
        }
    }
}

/// What the server saw of one gRPC call.
#[derive(Clone, Debug)]
pub struct Call {
    pub path: String,
    pub headers: http::HeaderMap,
    /// The request message as JSON.
    pub request: serde_json::Value,
}

struct State {
    pool: DescriptorPool,
    options: Options,
    calls: Mutex<Vec<Call>>,
    /// The encoded schema reflection serves (made once, kept for the
    /// process: tonic-reflection takes a static slice).
    fds: &'static [u8],
}

/// A running server; stops when dropped.
pub struct GrpcServer {
    pub addr: SocketAddr,
    state: Arc<State>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl GrpcServer {
    /// Start on 127.0.0.1:0 with `options`, on a thread of its own.
    pub fn start(options: Options) -> GrpcServer {
        GrpcServer::start_at("127.0.0.1:0".parse().unwrap(), options, 2)
    }

    /// Start on 127.0.0.1:0 speaking TLS with `config` (its ALPN decides
    /// what is offered).
    pub fn start_tls(options: Options, config: rustls::ServerConfig) -> GrpcServer {
        let tls = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        GrpcServer::start_inner("127.0.0.1:0".parse().unwrap(), options, 2, Some(tls))
    }

    /// Start on `addr`, with a runtime of `threads` worker threads.
    pub fn start_at(addr: SocketAddr, options: Options, threads: usize) -> GrpcServer {
        GrpcServer::start_inner(addr, options, threads, None)
    }

    fn start_inner(
        addr: SocketAddr,
        options: Options,
        threads: usize,
        tls: Option<tokio_rustls::TlsAcceptor>,
    ) -> GrpcServer {
        let pool = schema();
        let state = Arc::new(State {
            pool,
            options,
            calls: Mutex::new(Vec::new()),
            fds: Box::leak(encoded_schema().into_boxed_slice()),
        });
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let st = state.clone();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads.max(1))
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
                ready_tx.send(listener.local_addr().unwrap()).unwrap();
                let mut rx = rx;
                loop {
                    tokio::select! {
                        _ = &mut rx => break,
                        accepted = listener.accept() => {
                            let Ok((stream, _)) = accepted else { continue };
                            let _ = stream.set_nodelay(true);
                            let st = st.clone();
                            let tls = tls.clone();
                            tokio::spawn(async move {
                                match tls {
                                    None => serve(st, stream).await,
                                    Some(tls) => {
                                        if let Ok(stream) = tls.accept(stream).await {
                                            serve(st, stream).await;
                                        }
                                    }
                                }
                            });
                        }
                    }
                }
            });
        });
        let addr = ready_rx.recv().unwrap();
        GrpcServer {
            addr,
            state,
            _stop: tx,
        }
    }

    /// `grpc://127.0.0.1:PORT/items.Items/METHOD`.
    pub fn url(&self, method: &str) -> String {
        format!("grpc://{}/items.Items/{method}", self.addr)
    }

    /// `http://127.0.0.1:PORT`.
    pub fn http(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The gRPC calls seen so far.
    pub fn calls(&self) -> Vec<Call> {
        self.state.calls.lock().unwrap().clone()
    }
}

/// Serve one connection (HTTP/1.1 or HTTP/2, told by its first bytes).
async fn serve<S>(st: Arc<State>, stream: S)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |req| {
        let st = st.clone();
        async move { Ok::<_, Infallible>(handle(&st, req).await) }
    });
    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// The schema of `items.proto`, compiled here as versus compiles it.
pub fn schema() -> DescriptorPool {
    let mut c = protox::Compiler::new([proto_dir()]).unwrap();
    c.include_imports(true);
    c.open_file("items.proto").unwrap();
    c.descriptor_pool()
}

fn encoded_schema() -> Vec<u8> {
    let mut c = protox::Compiler::new([proto_dir()]).unwrap();
    c.include_imports(true);
    c.open_file("items.proto").unwrap();
    c.encode_file_descriptor_set()
}

/// Record `n` as JSON (the gRPC answer's fields, proto names).
pub fn record(n: u32) -> serde_json::Value {
    serde_json::json!({
        "id": n.to_string(),
        "name": format!("item {n}"),
        "stock_count": (n as i64) * 1_000_000_007,
        "price": { "currency_code": "EUR", "units": (n * 3) as i64 },
        "tags": if n % 2 == 0 { vec!["even".to_string()] } else { Vec::new() },
        "discontinued": n % 5 == 0,
        "kind": if n % 3 == 0 { "KIND_BOOK" } else { "KIND_TOOL" },
    })
}

/// Record `n` as the REST view writes it: snake_case names, 64-bit
/// integers as numbers, every field present (what `--grpc-json rest`
/// makes of the gRPC answer).
fn rest_record(n: u32, plant: bool) -> serde_json::Value {
    let mut v = record(n);
    if plant && n == 7 {
        v["price"]["units"] = serde_json::json!(22);
    }
    v
}

fn item(pool: &DescriptorPool, n: u32) -> DynamicMessage {
    let desc = pool.get_message_by_name("items.Item").unwrap();
    DynamicMessage::deserialize(desc, record(n)).unwrap()
}

fn frame_bytes(m: &impl prost::Message) -> Bytes {
    let mut out = Vec::with_capacity(m.encoded_len() + 5);
    out.put_u8(0);
    out.put_u32(m.encoded_len() as u32);
    m.encode(&mut out).unwrap();
    Bytes::from(out)
}

fn trailers(code: u32, message: &str) -> http::HeaderMap {
    let mut t = http::HeaderMap::new();
    t.insert("grpc-status", code.to_string().parse().unwrap());
    if !message.is_empty() {
        t.insert("grpc-message", message.replace(' ', "%20").parse().unwrap());
    }
    t
}

fn grpc_head() -> http::response::Builder {
    http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
}

/// A trailers-only answer: the status in the head, no body.
fn trailers_only(code: u32, message: &str) -> http::Response<Body> {
    let mut b = grpc_head().header("grpc-status", code.to_string());
    if !message.is_empty() {
        b = b.header("grpc-message", message.replace(' ', "%20"));
    }
    b.body(Empty::new().map_err(|e| match e {}).boxed_unsync())
        .unwrap()
}

/// Messages, then the status in trailers.
fn answer(messages: Vec<Bytes>, code: u32, message: &str) -> http::Response<Body> {
    let mut frames: Vec<Result<Frame<Bytes>, BoxError>> =
        messages.into_iter().map(|m| Ok(Frame::data(m))).collect();
    frames.push(Ok(Frame::trailers(trailers(code, message))));
    let body = StreamBody::new(futures_util::stream::iter(frames));
    grpc_head().body(body.boxed_unsync()).unwrap()
}

fn json(status: u16, v: &serde_json::Value) -> http::Response<Body> {
    http::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(
            Full::new(Bytes::from(v.to_string()))
                .map_err(|e| match e {})
                .boxed_unsync(),
        )
        .unwrap()
}

fn decode_request(desc: MessageDescriptor, body: &[u8]) -> Option<DynamicMessage> {
    if body.len() < 5 {
        return Some(DynamicMessage::new(desc));
    }
    let len = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    DynamicMessage::decode(desc, body.get(5..5 + len)?).ok()
}

/// The REST views of the same records: `/items.get`, pages at `/items`
/// and `/stream/items`, and `/items/{id}`; `None` for any other path.
fn rest(
    st: &Arc<State>,
    path: &str,
    query: Option<&str>,
    body: &Bytes,
) -> Option<http::Response<Body>> {
    let n_records = st.options.records;
    if path == "/items.get" {
        let id: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
        let id = id["id"].as_str().unwrap_or("").to_string();
        return Some(match id.parse::<u32>() {
            Ok(n) if (1..=n_records).contains(&n) => json(200, &rest_record(n, st.options.plant)),
            _ => json(404, &serde_json::json!({"error": "not found"})),
        });
    }
    // REST pages of the same records: offset with a HATEOAS next link,
    // and keyset with a cursor.
    let query = |name: &str| -> Option<u32> {
        query?.split('&').find_map(|kv| {
            let (k, v) = kv.split_once('=')?;
            (k == name).then(|| v.parse().ok()).flatten()
        })
    };
    if path == "/items" || path == "/stream/items" {
        let limit = query("limit").unwrap_or(10).max(1);
        let from = match path {
            "/items" => query("offset").unwrap_or(0) + 1,
            _ => query("after").unwrap_or(0) + 1,
        };
        let to = (from + limit).min(n_records + 1);
        let items: Vec<serde_json::Value> = (from..to)
            .map(|n| rest_record(n, st.options.plant))
            .collect();
        let more = to <= n_records;
        return Some(json(
            200,
            &match path {
                "/items" => {
                    let mut links = serde_json::json!({});
                    if more {
                        links["next"] = serde_json::json!({
                            "href": format!("/items?offset={}&limit={limit}", to - 1)
                        });
                    }
                    serde_json::json!({ "data": items, "_links": links })
                }
                _ => serde_json::json!({
                    "items": items,
                    "next_cursor": if more { Some(to - 1) } else { None },
                }),
            },
        ));
    }
    if let Some(id) = path.strip_prefix("/items/") {
        return Some(match id.parse::<u32>() {
            Ok(n) if (1..=n_records).contains(&n) => json(200, &rest_record(n, st.options.plant)),
            _ => json(404, &serde_json::json!({"error": "not found"})),
        });
    }
    None
}

async fn handle(
    st: &Arc<State>,
    req: http::Request<hyper::body::Incoming>,
) -> http::Response<Body> {
    let path = req.uri().path().to_string();
    if path.starts_with("/grpc.reflection.") {
        return reflection(st, req).await;
    }
    let (parts, body) = req.into_parts();
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return json(400, &serde_json::json!({"error": "body"})),
    };
    if let Some(reply) = rest(st, &path, parts.uri.query(), &body) {
        return reply;
    }
    grpc_call(st, path, parts.headers, &body).await
}

/// A gRPC call of the Items service.
async fn grpc_call(
    st: &Arc<State>,
    path: String,
    headers: http::HeaderMap,
    body: &Bytes,
) -> http::Response<Body> {
    let n_records = st.options.records;
    let pool = &st.pool;
    let method = path.trim_start_matches('/').to_string();
    let input = match method.as_str() {
        "items.Items/GetItem" => "items.GetItemRequest",
        "items.Items/ListItems" => "items.ListItemsRequest",
        "items.Items/ListItemsPage" => "items.ListItemsPageRequest",
        _ => return trailers_only(12, &format!("unknown method {method}")),
    };
    let Some(request) = decode_request(pool.get_message_by_name(input).unwrap(), body) else {
        return trailers_only(3, "request does not decode");
    };
    st.calls.lock().unwrap().push(Call {
        path: path.clone(),
        headers,
        request: serde_json::to_value(&request).unwrap_or_default(),
    });
    match method.as_str() {
        "items.Items/GetItem" => {
            let id = match request.get_field_by_name("id").as_deref() {
                Some(Value::String(s)) => s.clone(),
                _ => String::new(),
            };
            match id.as_str() {
                "missing" => trailers_only(5, "no item missing"),
                "deadline" => trailers_only(4, "deadline exceeded"),
                "unavailable" => answer(Vec::new(), 14, "try again"),
                "bad-message" => answer(
                    vec![Bytes::from_static(&[0, 0, 0, 0, 2, 0xff, 0xff])],
                    0,
                    "",
                ),
                "reset" => {
                    let frames: Vec<Result<Frame<Bytes>, BoxError>> =
                        vec![Err("reset on purpose".into())];
                    let body = StreamBody::new(futures_util::stream::iter(frames));
                    grpc_head().body(body.boxed_unsync()).unwrap()
                }
                "slow" => {
                    tokio::time::sleep(Duration::from_secs(3)).await;
                    answer(vec![frame_bytes(&item(pool, 1))], 0, "")
                }
                id => match id.parse::<u32>() {
                    Ok(n) if (1..=n_records).contains(&n) => {
                        answer(vec![frame_bytes(&item(pool, n))], 0, "")
                    }
                    _ => trailers_only(5, &format!("no item {id}")),
                },
            }
        }
        "items.Items/ListItems" => {
            let limit = match request.get_field_by_name("limit").as_deref() {
                Some(Value::I32(n)) if *n > 0 => (*n as u32).min(n_records),
                _ => 3,
            };
            let messages = (1..=limit).map(|n| frame_bytes(&item(pool, n))).collect();
            answer(messages, 0, "")
        }
        "items.Items/ListItemsPage" => {
            let size = match request.get_field_by_name("page_size").as_deref() {
                Some(Value::I32(n)) if *n > 0 => *n as u32,
                _ => 10,
            };
            let from = match request.get_field_by_name("page_token").as_deref() {
                Some(Value::String(s)) if !s.is_empty() => s.parse::<u32>().unwrap_or(1),
                _ => 1,
            };
            let to = (from + size).min(n_records + 1);
            let items: Vec<serde_json::Value> = (from..to).map(record).collect();
            let next = if to <= n_records {
                to.to_string()
            } else {
                String::new()
            };
            let desc = pool
                .get_message_by_name("items.ListItemsPageResponse")
                .unwrap();
            let page = DynamicMessage::deserialize(
                desc,
                serde_json::json!({"items": items, "next_page_token": next}),
            )
            .unwrap();
            answer(vec![frame_bytes(&page)], 0, "")
        }
        _ => trailers_only(12, "unknown method"),
    }
}

async fn reflection(
    st: &Arc<State>,
    req: http::Request<hyper::body::Incoming>,
) -> http::Response<Body> {
    use tonic::codegen::Service as _;
    let path = req.uri().path().to_string();
    let v1 = path.starts_with("/grpc.reflection.v1.");
    if (v1 && !st.options.reflection_v1) || (!v1 && !st.options.reflection_v1alpha) {
        return trailers_only(12, "unknown service");
    }
    let builder = || {
        tonic_reflection::server::Builder::configure().register_encoded_file_descriptor_set(st.fds)
    };
    let response = if v1 {
        let mut s = builder().build_v1().unwrap();
        s.call(req).await
    } else {
        let mut s = builder().build_v1alpha().unwrap();
        s.call(req).await
    };
    match response {
        Ok(r) => r.map(|b| b.map_err(|e| Box::new(e) as BoxError).boxed_unsync()),
        Err(e) => match e {},
    }
}
