//! Opening connections: name resolution (once, before the run), TCP, TLS
//! with rustls (verified by default), and the HTTP handshake: HTTP/1.1 on
//! versus's own codec (`h1.rs`, nothing to run beside the slot), HTTP/2 on
//! the `h2` crate, whose connection driver runs as a local task on the
//! calling core.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use tokio::net::TcpStream;

use super::{Failure, HttpVersion, Scheme};

/// A byte stream, TCP or TLS.
pub(crate) trait Io: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send {}

impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Io for T {}

/// An HTTP/1.1 connection on versus's codec, TCP or TLS.
pub(crate) type H1Conn = super::h1::Conn<Box<dyn Io>>;

/// An HTTP/2 connection: the handle streams are opened on, and whether
/// its driver has ended (the connection is gone). Only its own core uses
/// it (`Arc` because a link is made before its core's thread starts).
pub(crate) struct H2Conn {
    pub send: h2::client::SendRequest<Bytes>,
    closed: Arc<AtomicBool>,
}

impl H2Conn {
    /// Whether the connection has ended or takes no new streams.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Relaxed)
    }

    /// Take no new streams here (the server is going away): the next
    /// request opens a new connection.
    pub fn retire(&self) {
        self.closed.store(true, Ordering::Relaxed);
    }
}

/// A ready connection.
pub(crate) enum Connected {
    H1(H1Conn),
    H2(Arc<H2Conn>),
}

/// TLS settings from the command line.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// Accept any server certificate (`--insecure`).
    pub insecure: bool,
    /// Extra trusted roots, PEM (`--cacert`).
    pub ca_file: Option<PathBuf>,
}

/// Resolve `host:port` once; connections then go to the first address that
/// accepts.
///
/// # Errors
/// When the name does not resolve.
pub fn resolve(host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
    let addrs: Vec<SocketAddr> = (host, port).to_socket_addrs()?.collect();
    if addrs.is_empty() {
        return Err(io::Error::new(io::ErrorKind::NotFound, "no addresses"));
    }
    Ok(addrs)
}

/// Build the rustls client configuration for one ALPN policy.
///
/// # Errors
/// When `--cacert` cannot be read or holds no certificate.
pub fn tls_config(opts: &TlsOptions, version: HttpVersion) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?;
    let mut config = if opts.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider)))
            .with_no_client_auth()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        if let Some(path) = &opts.ca_file {
            use rustls::pki_types::pem::PemObject;
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("--cacert {}: {e}", path.display()))?
                .collect::<Result<_, _>>()
                .map_err(|e| format!("--cacert {}: {e}", path.display()))?;
            if certs.is_empty() {
                return Err(format!(
                    "--cacert {}: no PEM certificate in the file",
                    path.display()
                ));
            }
            for c in certs {
                roots
                    .add(c)
                    .map_err(|e| format!("--cacert {}: {e}", path.display()))?;
            }
        }
        builder.with_root_certificates(roots).with_no_client_auth()
    };
    config.alpn_protocols = match version {
        HttpVersion::Auto => vec![b"h2".to_vec(), b"http/1.1".to_vec()],
        HttpVersion::Http1 => vec![b"http/1.1".to_vec()],
        HttpVersion::Http2 => vec![b"h2".to_vec()],
    };
    Ok(Arc::new(config))
}

/// Where and how to connect: the part of an endpoint the transport needs.
pub(crate) struct Dialer {
    pub addrs: Vec<SocketAddr>,
    pub scheme: Scheme,
    pub server_name: Option<ServerName<'static>>,
    pub tls: Option<tokio_rustls::TlsConnector>,
    pub version: HttpVersion,
    /// TLS handshake times (µs) since the core last took them.
    pub handshakes: std::cell::RefCell<hdrhistogram::Histogram<u64>>,
}

impl Dialer {
    /// Open one connection and run its HTTP handshake; the connection's
    /// driver is spawned on the current `LocalSet`.
    pub async fn connect(&self) -> Result<Connected, Failure> {
        let tcp = self.tcp().await?;
        match (self.scheme, &self.tls, &self.server_name) {
            (Scheme::Https, Some(tls), Some(name)) => {
                let stream = self.tls_handshake(tls, name, tcp).await?;
                let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                handshake(stream, h2).await
            }
            _ => handshake(tcp, self.version == HttpVersion::Http2).await,
        }
    }

    /// Open one connection, TCP or TLS, without any HTTP handshake (for
    /// WebSocket, whose handshake is its own).
    pub async fn open(&self) -> Result<Box<dyn Io>, Failure> {
        let tcp = self.tcp().await?;
        match (self.scheme, &self.tls, &self.server_name) {
            (Scheme::Https, Some(tls), Some(name)) => {
                let stream = self.tls_handshake(tls, name, tcp).await?;
                Ok(Box::new(stream))
            }
            _ => Ok(Box::new(tcp)),
        }
    }

    /// The TLS handshake on `tcp`, its time recorded.
    async fn tls_handshake(
        &self,
        tls: &tokio_rustls::TlsConnector,
        name: &ServerName<'static>,
        tcp: TcpStream,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>, Failure> {
        let t0 = std::time::Instant::now();
        let stream = tls
            .connect(name.clone(), tcp)
            .await
            .map_err(|e| classify_io(&e, Failure::Tls))?;
        crate::stats::record(&mut self.handshakes.borrow_mut(), t0.elapsed());
        Ok(stream)
    }

    async fn tcp(&self) -> Result<TcpStream, Failure> {
        let mut last = Failure::Connect;
        for addr in &self.addrs {
            match TcpStream::connect(addr).await {
                Ok(s) => {
                    let _ = s.set_nodelay(true);
                    return Ok(s);
                }
                Err(e) => last = classify_io(&e, Failure::Connect),
            }
        }
        Err(last)
    }
}

async fn handshake<I>(io: I, h2: bool) -> Result<Connected, Failure>
where
    I: Io + 'static,
{
    if !h2 {
        return Ok(Connected::H1(super::h1::Conn::new(Box::new(io))));
    }
    let (send, mut conn) = h2::client::Builder::new()
        .initial_window_size(4 << 20)
        .initial_connection_window_size(8 << 20)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(|e| classify_h2(&e))?;
    let pong = conn.ping_pong();
    let closed = Arc::new(AtomicBool::new(false));
    let flag = closed.clone();
    tokio::task::spawn_local(async move {
        let _ = conn.await;
        flag.store(true, Ordering::Relaxed);
    });
    // One PING round trip: the server's SETTINGS come before its PONG, so
    // afterwards its limit of concurrent streams is known, and streams
    // opened at once are not refused for going past it.
    if let Some(mut pong) = pong {
        pong.ping(h2::Ping::opaque())
            .await
            .map_err(|e| classify_h2(&e))?;
    }
    Ok(Connected::H2(Arc::new(H2Conn { send, closed })))
}

/// Map an I/O error to a failure kind; `fallback` for the rest.
pub(crate) fn classify_io(e: &io::Error, fallback: Failure) -> Failure {
    use io::ErrorKind::*;
    match e.kind() {
        ConnectionRefused => Failure::Refused,
        ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof => Failure::Reset,
        TimedOut => Failure::Timeout,
        InvalidData if fallback == Failure::Tls => Failure::Tls,
        _ => fallback,
    }
}

/// Map an HTTP/2 error to a failure kind.
pub(crate) fn classify_h2(e: &h2::Error) -> Failure {
    use h2::Reason;
    if let Some(io) = e.get_io() {
        return classify_io(io, Failure::Io);
    }
    match e.reason() {
        // The server broke the protocol (h2 noticed and ended the stream or
        // connection), or said that versus did.
        Some(
            Reason::PROTOCOL_ERROR
            | Reason::COMPRESSION_ERROR
            | Reason::FRAME_SIZE_ERROR
            | Reason::FLOW_CONTROL_ERROR,
        ) => Failure::Protocol,
        // RST_STREAM, GOAWAY or a closed connection.
        Some(_) => Failure::Reset,
        // h2 refused the request itself (a header HTTP/2 does not allow).
        None => Failure::BadRequest,
    }
}

/// `--insecure`: any certificate is accepted, but the handshake signatures
/// are still checked so the session keys are real.
#[derive(Debug)]
struct AcceptAnyCert(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
