//! The demos' in-process HTTP/1.1 servers: one listener on an ephemeral
//! 127.0.0.1 port, served on a thread of its own until dropped.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

/// A running demo server; it stops when dropped.
pub struct Running {
    address: SocketAddr,
    _stop: tokio::sync::oneshot::Sender<()>,
}

impl Running {
    /// The server's URL, `http://127.0.0.1:PORT/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.address)
    }
}

/// A JSON answer with `status`.
pub fn json(status: u16, body: String) -> hyper::Response<Full<Bytes>> {
    let mut response = hyper::Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or_default();
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// Serve `answer` (given each request's head and whole body) on
/// 127.0.0.1 on a thread named `name`.
///
/// # Errors
/// When the socket, runtime or thread cannot be made.
pub fn serve<F, Fut>(name: &str, answer: F) -> std::io::Result<Running>
where
    F: Fn(http::request::Parts, Bytes) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = hyper::Response<Full<Bytes>>> + Send + 'static,
{
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    listener.set_nonblocking(true)?;
    let address = listener.local_addr()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let listener = {
        let _context = runtime.enter();
        tokio::net::TcpListener::from_std(listener)?
    };
    let answer = Arc::new(answer);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            runtime.block_on(async move {
                let serve = async {
                    loop {
                        let Ok((stream, _)) = listener.accept().await else {
                            continue;
                        };
                        let answer = answer.clone();
                        tokio::spawn(async move {
                            let service = hyper::service::service_fn(
                                move |r: hyper::Request<hyper::body::Incoming>| {
                                    let answer = answer.clone();
                                    async move {
                                        let (parts, body) = r.into_parts();
                                        let body = body
                                            .collect()
                                            .await
                                            .map(|b| b.to_bytes())
                                            .unwrap_or_default();
                                        Ok::<_, std::convert::Infallible>(answer(parts, body).await)
                                    }
                                },
                            );
                            let _ = hyper::server::conn::http1::Builder::new()
                                .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                                .await;
                        });
                    }
                };
                tokio::select! {
                    () = serve => {}
                    _ = stopped => {}
                }
            });
        })?;
    Ok(Running {
        address,
        _stop: stop,
    })
}
