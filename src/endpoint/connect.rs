//! Opening connections: name resolution (once, before the run), TCP, TLS
//! with rustls (verified by default), and the HTTP handshake: HTTP/1.1 on
//! versus's own codec (`h1.rs`, nothing to run beside the slot), HTTP/2 on
//! its own too (`h2.rs`), whose connection driver runs as a local task on
//! the calling core.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::{verify_server_name, WebPkiServerVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::ParsedCertificate;
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use tokio::net::TcpStream;

use super::io::{classify_io, is_ca_used_as_end_entity, Io};
use super::{Failure, HttpVersion, Protocol, Scheme, TlsReason};

/// An HTTP/1.1 connection on versus's codec, TCP or TLS.
pub(crate) type H1Conn = super::h1::Conn<Box<dyn Io>>;

/// A ready connection. An HTTP/1.1 one is boxed: it moves between the
/// idle pool and a slot's request future on every request, and a pointer
/// moves for less than its ~200 bytes did (a memmove each, 14 a request).
pub(crate) enum Connected {
    H1(Box<H1Conn>),
    H2(Rc<super::h2::Conn>),
}

/// TLS settings from the command line.
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    /// Accept any server certificate (`--insecure`).
    pub insecure: bool,
    /// Extra trusted roots, PEM (`--cacert`).
    pub ca_file: Option<PathBuf>,
    /// The certificate to show a server that asks for one (mutual TLS).
    pub client: Option<ClientCert>,
}

/// A client certificate for mutual TLS: its chain and private key, PEM
/// files (`--cert` and `--key`, as curl and vegeta take them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientCert {
    /// The certificate chain, the client's own certificate first.
    pub cert: PathBuf,
    /// The private key (PKCS#8, PKCS#1 or SEC1); `None` when it is in
    /// `cert`'s file.
    pub key: Option<PathBuf>,
    /// The flags that gave them, as errors name them (`--cert`, `--key`).
    pub flags: [&'static str; 2],
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
/// When `--cacert` cannot be read or holds no certificate, or a client
/// certificate or its key cannot be read or do not belong together.
pub fn tls_config(opts: &TlsOptions, version: HttpVersion) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("tls: {e}"))?;
    let verifier = if opts.insecure {
        Verifier {
            webpki: None,
            pinned: Vec::new(),
            provider,
        }
    } else {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        let mut pinned = Vec::new();
        if let Some(path) = &opts.ca_file {
            use rustls::pki_types::pem::PemObject;
            pinned = CertificateDer::pem_file_iter(path)
                .map_err(|e| format!("--cacert {}: {e}", path.display()))?
                .collect::<Result<_, _>>()
                .map_err(|e| format!("--cacert {}: {e}", path.display()))?;
            if pinned.is_empty() {
                return Err(format!(
                    "--cacert {}: no PEM certificate in the file",
                    path.display()
                ));
            }
            for c in &pinned {
                roots
                    .add(c.clone())
                    .map_err(|e| format!("--cacert {}: {e}", path.display()))?;
            }
        }
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
            .build()
            .map_err(|e| format!("tls: {e}"))?;
        Verifier {
            webpki: Some(webpki),
            pinned,
            provider,
        }
    };
    let builder = builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier));
    let mut config = match &opts.client {
        None => builder.with_no_client_auth(),
        Some(c) => {
            let (chain, key) = read_client_cert(c)?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| client_cert_error(c, &e))?
        }
    };
    config.alpn_protocols = match version {
        HttpVersion::Auto => Protocol::Negotiate,
        HttpVersion::Http1 => Protocol::Http1,
        HttpVersion::Http2 => Protocol::Http2,
    }
    .alpn();
    Ok(Arc::new(config))
}

/// The chain and key of `c`. Errors name the flag and the file, never a
/// key's contents.
fn read_client_cert(
    c: &ClientCert,
) -> Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    use rustls::pki_types::pem::{Error as Pem, PemObject};
    let [cert_flag, key_flag] = c.flags;
    let cert_at = format!("{cert_flag} {}", c.cert.display());
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&c.cert)
        .map_err(|e| format!("{cert_at}: {}", pem_problem(e)))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{cert_at}: {}", pem_problem(e)))?;
    if chain.is_empty() {
        return Err(format!("{cert_at}: no PEM certificate in the file"));
    }
    let key = match &c.key {
        Some(path) => PrivateKeyDer::from_pem_file(path).map_err(|e| match e {
            Pem::NoItemsFound => format!(
                "{key_flag} {}: no PEM private key in the file",
                path.display()
            ),
            e => format!("{key_flag} {}: {}", path.display(), pem_problem(e)),
        })?,
        None => PrivateKeyDer::from_pem_file(&c.cert).map_err(|e| match e {
            Pem::NoItemsFound => {
                format!("{cert_at}: no private key in the file: give it with {key_flag} FILE")
            }
            e => format!("{cert_at}: {}", pem_problem(e)),
        })?,
    };
    Ok((chain, key))
}

/// What is wrong with a PEM file, told without its contents (a key's
/// stay secret).
fn pem_problem(e: rustls::pki_types::pem::Error) -> String {
    match e {
        rustls::pki_types::pem::Error::Io(e) => format!("cannot read it: {e}"),
        _ => "not a valid PEM file".to_string(),
    }
}

/// Why rustls refused the client certificate `c` and its key.
fn client_cert_error(c: &ClientCert, e: &rustls::Error) -> String {
    let [cert_flag, key_flag] = c.flags;
    let key = c.key.as_ref().unwrap_or(&c.cert);
    match e {
        rustls::Error::InconsistentKeys(_) => format!(
            "{key_flag} {} is not the key of the certificate in {cert_flag} {} (their public keys differ)",
            key.display(),
            c.cert.display()
        ),
        e => format!("{key_flag} {}: {e}", key.display()),
    }
}

/// Where and how to connect: the part of an endpoint the transport needs.
pub(crate) struct Dialer {
    pub addrs: Vec<SocketAddr>,
    pub scheme: Scheme,
    pub server_name: Option<ServerName<'static>>,
    pub tls: Option<tokio_rustls::TlsConnector>,
    pub protocol: Protocol,
    /// TLS handshake times (µs) since the core last took them.
    pub handshakes: std::cell::RefCell<hdrhistogram::Histogram<u64>>,
    /// Response headers HTTP/2 connections keep (`--compare-header`).
    pub keep_headers: Vec<http::HeaderName>,
    /// The driver of plain-TCP HTTP/1.1 connections.
    pub io: super::IoDriver,
    /// Whether the endpoint was stopped, shared by every core's dialer.
    pub halt: Arc<Halt>,
}

/// An endpoint stopped for the rest of a run, shared by every core's link
/// to it: a counted connect failed on the server's certificate
/// ([`TlsReason::lasts`]), which stays as it is however often it is
/// retried. Its requests then fail at once as [`Failure::Stopped`],
/// without a connect or a back-off; the engine ends the run when no
/// endpoint is left.
#[derive(Debug, Default)]
pub struct Halt {
    /// 0 while the endpoint runs, else its reason's index + 1.
    state: AtomicU8,
    /// The endpoint's label, for the message.
    label: String,
}

impl Halt {
    /// A running endpoint's stop, for the endpoint named `label`.
    pub fn new(label: &str) -> Halt {
        Halt {
            state: AtomicU8::new(0),
            label: label.to_string(),
        }
    }

    /// Why the endpoint was stopped; `None` while it runs.
    pub fn reason(&self) -> Option<TlsReason> {
        let n = self.state.load(Ordering::Relaxed);
        TlsReason::ALL.get(usize::from(n.checked_sub(1)?)).copied()
    }

    /// [`Failure::Stopped`] once the endpoint was stopped: checked before
    /// each connect (not per request).
    pub(crate) fn check(&self) -> Result<(), Failure> {
        match self.state.load(Ordering::Relaxed) {
            0 => Ok(()),
            _ => Err(Failure::Stopped),
        }
    }

    /// Note how a counted connect ended: a certificate that failed
    /// verification stops the endpoint (told once, after the reason and
    /// its fix from the handshake).
    pub(crate) fn note<T>(&self, r: &Result<T, Failure>) {
        let Err(Failure::Tls(reason)) = r else {
            return;
        };
        if !reason.lasts() {
            return;
        }
        // `as u8`: an index of a ten-element array.
        let code = reason.index() as u8 + 1;
        if self
            .state
            .compare_exchange(0, code, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
        {
            eprintln!(
                "versus: {}: stopped after its first failed connect ({}): a certificate \
                 does not change by retrying, so no more requests go there",
                self.label,
                reason.name()
            );
        }
    }
}

impl Dialer {
    /// Open one connection and run its HTTP handshake; the connection's
    /// driver is spawned on the current `LocalSet`.
    pub async fn connect(&self) -> Result<Connected, Failure> {
        self.halt.check()?;
        let tcp = self.tcp().await?;
        // Names the connection to a fault proxy (`crate::fault::Ledger`).
        let port = tcp.local_addr().map_or(0, |a| a.port());
        match (self.scheme, &self.tls, &self.server_name) {
            (Scheme::Https, Some(tls), Some(name)) => {
                let stream = self.tls_handshake(tls, name, tcp).await?;
                let h2 = stream.get_ref().1.alpn_protocol() == Some(b"h2");
                if !h2 && self.protocol == Protocol::Grpc {
                    // gRPC is HTTP/2 only: a server that did not take ALPN
                    // h2 cannot answer it.
                    return Err(Failure::Tls(crate::model::TlsReason::Incompatible));
                }
                self.handshake(stream, h2, port).await
            }
            _ if matches!(self.protocol, Protocol::Http2 | Protocol::Grpc) => {
                let socket = super::h2_socket::Socket::Tcp(super::h2_socket::Peeking::new(tcp));
                self.h2_handshake(socket, port).await
            }
            _ if self.io == super::IoDriver::Uring => {
                let io =
                    super::uring::Stream::wrap(tcp).map_err(|e| classify_io(&e, Failure::Io))?;
                Ok(Connected::H1(Box::new(
                    super::h1::Conn::new(io).with_port(port),
                )))
            }
            _ => self.handshake(tcp, false, port).await,
        }
    }

    /// Open one connection, TCP or TLS, without any HTTP handshake (for
    /// WebSocket, whose handshake is its own).
    pub async fn open(&self) -> Result<(Box<dyn Io>, u16), Failure> {
        self.halt.check()?;
        let tcp = self.tcp().await?;
        // Names the connection to a fault proxy (`crate::fault::Ledger`).
        let port = tcp.local_addr().map_or(0, |a| a.port());
        let io: Box<dyn Io> = match (self.scheme, &self.tls, &self.server_name) {
            (Scheme::Https, Some(tls), Some(name)) => {
                Box::new(self.tls_handshake(tls, name, tcp).await?)
            }
            _ => Box::new(tcp),
        };
        Ok((io, port))
    }

    /// The TLS handshake on `tcp`, its time recorded.
    async fn tls_handshake(
        &self,
        tls: &tokio_rustls::TlsConnector,
        name: &ServerName<'static>,
        tcp: TcpStream,
    ) -> Result<tokio_rustls::client::TlsStream<TcpStream>, Failure> {
        let t0 = std::time::Instant::now();
        let stream = tls.connect(name.clone(), tcp).await.map_err(|e| {
            let f = classify_tls(&e);
            if let Failure::Tls(reason) = f {
                tell_once(reason, name, &e);
            }
            f
        })?;
        crate::stats::record(&mut self.handshakes.borrow_mut(), t0.elapsed());
        Ok(stream)
    }

    /// HTTP/1.1 or (`h2`) HTTP/2 on `io`, TLS or plain TCP.
    async fn handshake<I: Io + 'static>(
        &self,
        io: I,
        h2: bool,
        port: u16,
    ) -> Result<Connected, Failure> {
        if h2 {
            self.h2_handshake(super::h2_socket::Socket::Other(Box::new(io)), port)
                .await
        } else {
            let io: Box<dyn Io> = Box::new(io);
            Ok(Connected::H1(Box::new(
                super::h1::Conn::new(io).with_port(port),
            )))
        }
    }

    /// The HTTP/2 handshake on `socket`.
    async fn h2_handshake(
        &self,
        socket: super::h2_socket::Socket,
        port: u16,
    ) -> Result<Connected, Failure> {
        let keep = self.keep_headers.clone();
        let grpc = self.protocol == Protocol::Grpc;
        let conn = super::h2::Conn::handshake(socket, keep, grpc).await?;
        conn.set_port(port);
        Ok(Connected::H2(conn))
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

/// A slot's back-off after failed connects, so that a refused port is not
/// a hot loop: no delay before the first connect, then 10 ms before the
/// next, doubling after each failure up to 1 s (or half of `--timeout`,
/// whichever is shorter), with up to a quarter more at random so that the
/// slots do not knock all at once; a connect that succeeds starts over.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    /// Connects failed in a row.
    failures: u32,
}

impl Backoff {
    /// The wait before this slot's next connect, if any.
    pub(crate) fn delay(&self, timeout: Duration) -> Option<Duration> {
        let n = self.failures.checked_sub(1)?;
        let cap = Duration::from_secs(1).min(timeout / 2);
        let d = Duration::from_millis(10)
            .saturating_mul(1 << n.min(16))
            .min(cap);
        Some(d + d * fastrand::u32(0..=256) / 1024)
    }

    /// Note how a connect (or taking a connection) ended. A failure that
    /// stops the endpoint ([`Halt`]) is not waited after: the next connect
    /// fails at once as [`Failure::Stopped`].
    pub(crate) fn record<T>(&mut self, r: &Result<T, Failure>) {
        self.failures = match r {
            Ok(_) | Err(Failure::Stopped) => 0,
            Err(Failure::Tls(reason)) if reason.lasts() => 0,
            Err(_) => self.failures.saturating_add(1),
        };
    }

    /// Wait out the delay before the next connect.
    pub(crate) async fn wait(delay: Option<Duration>) {
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
    }
}

/// Classify a failed TLS handshake: a TLS error by its reason, the rest
/// (a reset, a closed connection) as I/O.
fn classify_tls(e: &io::Error) -> Failure {
    classify_io(e, Failure::Tls(TlsReason::Other))
}

/// A pinned certificate (exactly one given with `--cacert`) whose name
/// check failed `e` because it has no subjectAltName: its subject's common
/// name counts instead, as curl (OpenSSL) lets it (the certificate that
/// `openssl req -x509 -subj /CN=localhost` makes). Any other error stands.
fn common_name(
    e: rustls::Error,
    cert: &CertificateDer<'_>,
    name: &ServerName<'_>,
) -> Result<(), rustls::Error> {
    use rustls::CertificateError as C;
    let no_names = matches!(
        &e,
        rustls::Error::InvalidCertificate(C::NotValidForNameContext { presented, .. })
            if presented.is_empty()
    );
    match subject_common_name(cert) {
        Some(cn) if no_names && cn.eq_ignore_ascii_case(name.to_str().as_bytes()) => Ok(()),
        _ => Err(e),
    }
}

/// The subject's common name (OID 2.5.4.3) of a DER certificate.
pub(super) fn subject_common_name<'a>(cert: &'a CertificateDer<'_>) -> Option<&'a [u8]> {
    /// One DER element: its tag, its contents, and what follows it.
    fn element(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
        let (&tag, rest) = input.split_first()?;
        let (&first, rest) = rest.split_first()?;
        let (len, rest) = if first < 0x80 {
            (usize::from(first), rest)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || rest.len() < n {
                return None;
            }
            let len = rest[..n]
                .iter()
                .fold(0usize, |l, &b| (l << 8) | usize::from(b));
            (len, &rest[n..])
        };
        (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
    }
    let (_, cert, _) = element(cert.as_ref())?;
    let (_, mut tbs, _) = element(cert)?;
    // [0] version (optional), serial, signature, issuer, validity, subject.
    let mut fields = Vec::with_capacity(5);
    while fields.len() < 5 {
        let (tag, contents, rest) = element(tbs)?;
        if !(fields.is_empty() && tag == 0xa0) {
            fields.push(contents);
        }
        tbs = rest;
    }
    let mut rdns = fields[4];
    while let Some((_, mut set, rest)) = element(rdns) {
        while let Some((_, pair, next)) = element(set) {
            let (_, oid, value) = element(pair)?;
            if oid == [0x55, 0x04, 0x03] {
                return element(value).map(|(_, cn, _)| cn);
            }
            set = next;
        }
        rdns = rest;
    }
    None
}

/// Tell each TLS reason once per process on stderr, with its fix: every
/// connection after the first fails the same way and is only counted.
fn tell_once(reason: TlsReason, name: &ServerName<'_>, e: &io::Error) {
    static TOLD: AtomicU32 = AtomicU32::new(0);
    let bit = 1 << reason.index();
    if TOLD.fetch_or(bit, Ordering::Relaxed) & bit == 0 {
        eprintln!(
            "versus: {} for {}: {e}\n  fix: {}",
            reason.name(),
            name.to_str(),
            reason.fix()
        );
    }
}

/// The server certificate check: webpki against the Mozilla roots and
/// `--cacert` (a certificate given there that is exactly the server's own
/// is trusted whatever its CA flag, as curl does; its name is still
/// checked), or with `--insecure` none. The handshake signatures are
/// checked either way, so the session keys are real.
#[derive(Debug)]
struct Verifier {
    /// `None` with `--insecure`.
    webpki: Option<Arc<WebPkiServerVerifier>>,
    /// The certificates of `--cacert`.
    pinned: Vec<CertificateDer<'static>>,
    provider: Arc<rustls::crypto::CryptoProvider>,
}

impl ServerCertVerifier for Verifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(webpki) = &self.webpki else {
            return Ok(ServerCertVerified::assertion());
        };
        let verified =
            webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now);
        let pinned = || {
            self.pinned
                .iter()
                .any(|p| p.as_ref() == end_entity.as_ref())
        };
        match verified {
            // webpki checks validity dates before the CA flag, so this
            // certificate is in date; its name is checked here.
            Err(rustls::Error::InvalidCertificate(rustls::CertificateError::Other(o)))
                if is_ca_used_as_end_entity(&o) && pinned() =>
            {
                let parsed = ParsedCertificate::try_from(end_entity)?;
                verify_server_name(&parsed, server_name)
                    .or_else(|e| common_name(e, end_entity, server_name))?;
                Ok(ServerCertVerified::assertion())
            }
            Err(e) if pinned() => {
                common_name(e, end_entity, server_name)?;
                Ok(ServerCertVerified::assertion())
            }
            verified => verified,
        }
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
            &self.provider.signature_verification_algorithms,
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
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn back_off_grows_after_each_failed_connect_and_a_success_resets_it() {
        let timeout = Duration::from_secs(30);
        let mut b = Backoff::default();
        assert_eq!(b.delay(timeout), None);
        let mut last = Duration::ZERO;
        for n in 0..12 {
            b.record::<()>(&Err(Failure::Refused));
            let d = b.delay(timeout).unwrap();
            let base = Duration::from_millis(10 << n).min(Duration::from_secs(1));
            assert!(d >= base && d <= base * 5 / 4, "{n}: {d:?}");
            assert!(
                d >= last * 3 / 4,
                "never much shorter: {d:?} after {last:?}"
            );
            last = d;
        }
        // Never more than half the timeout.
        assert!(b.delay(Duration::from_millis(100)).unwrap() <= Duration::from_millis(63));
        b.record(&Ok(()));
        assert_eq!(b.delay(timeout), None);
        // A certificate's failure stops the endpoint: nothing to wait for.
        b.record::<()>(&Err(Failure::Refused));
        b.record::<()>(&Err(Failure::Tls(TlsReason::UnknownIssuer)));
        assert_eq!(b.delay(timeout), None);
        b.record::<()>(&Err(Failure::Stopped));
        assert_eq!(b.delay(timeout), None);
    }
}
