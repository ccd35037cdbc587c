//! The Items gRPC service of versus's tests (`tests/fixtures/grpc/items.proto`)
//! as a server to try versus's gRPC endpoints on, and the server of the
//! `grpc` bench (`bench/run.sh grpc`): unary GetItem, server-streaming
//! ListItems, paged ListItemsPage, reflection v1 and v1alpha, and a REST
//! view of the same records on the same port (`POST /items.get`,
//! `GET /items/{id}`, offset pages `GET /items?offset=O&limit=L` and keyset
//! pages `GET /stream/items?after=K&limit=L`: with `examples/items-pages.toml`
//! the three implementations of a paged list API).
//!
//!     cargo run --release --example grpc_server -- 127.0.0.1:50051 [THREADS]
//!     versus --proto tests/fixtures/grpc/items.proto \
//!         --body '{"id": "1"}' --stop-after 2s grpc://127.0.0.1:50051/items.Items/GetItem
//!
//! With `--plant`, record 7's price differs in the REST view;
//! `--records N` serves N records (default 50).

#[path = "../tests/common/grpc_server.rs"]
mod grpc_server;

fn main() {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:50051".into());
    let mut threads = 1;
    let mut options = grpc_server::Options::default();
    while let Some(a) = args.next() {
        if a == "--plant" {
            options.plant = true;
        } else if a == "--records" {
            options.records = args
                .next()
                .and_then(|n| n.parse().ok())
                .expect("--records N");
        } else if let Ok(n) = a.parse() {
            threads = n;
        }
    }
    let server = grpc_server::GrpcServer::start_at(addr.parse().expect("ADDR"), options, threads);
    eprintln!("grpc_server: listening on {}", server.addr);
    loop {
        std::thread::park();
    }
}
