//! Mutual TLS: client certificates (`--cert`, `--key`, per endpoint
//! `--endpoint-cert`, `--endpoint-key`) against servers that require one,
//! in-process (rustls) and nginx (`ssl_verify_client on`).

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use common::*;
use versus::endpoint::TlsReason;

/// A CA, a server certificate for 127.0.0.1 and a client certificate
/// it signed, with their keys, as PEM files in a folder of their own.
struct Pki {
    dir: PathBuf,
    ca: rcgen::Certificate,
    server: (rcgen::Certificate, rcgen::KeyPair),
}

impl Pki {
    fn new(name: &str) -> Pki {
        let dir = std::env::temp_dir().join(format!("versus-mtls-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "versus test CA");
        let ca = params.self_signed(&ca_key).unwrap();
        let signed = |names: Vec<String>, usage: rcgen::ExtendedKeyUsagePurpose| {
            let key = rcgen::KeyPair::generate().unwrap();
            let mut params = rcgen::CertificateParams::new(names).unwrap();
            params.extended_key_usages = vec![usage];
            (params.signed_by(&key, &ca, &ca_key).unwrap(), key)
        };
        let server = signed(
            vec!["127.0.0.1".into(), "localhost".into()],
            rcgen::ExtendedKeyUsagePurpose::ServerAuth,
        );
        let (client, client_key) = signed(
            vec!["client.test".into()],
            rcgen::ExtendedKeyUsagePurpose::ClientAuth,
        );
        let pki = Pki { dir, ca, server };
        pki.write("ca.pem", &pki.ca.pem());
        pki.write("server.pem", &pki.server.0.pem());
        pki.write("server.key", &pki.server.1.serialize_pem());
        pki.write("client.pem", &client.pem());
        pki.write("client.key", &client_key.serialize_pem());
        pki.write(
            "both.pem",
            &format!("{}{}", client.pem(), client_key.serialize_pem()),
        );
        // A key that is not the client certificate's.
        pki.write(
            "other.key",
            &rcgen::KeyPair::generate().unwrap().serialize_pem(),
        );
        pki
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.dir.join(name), text).unwrap();
    }

    /// The path of file `name`, as an argument.
    fn file(&self, name: &str) -> String {
        self.dir.join(name).to_str().unwrap().to_string()
    }

    /// A server that requires a client certificate the CA signed.
    fn server(&self) -> Server {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.ca.der().clone()).unwrap();
        let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
            Arc::new(roots),
            provider.clone(),
        )
        .build()
        .unwrap();
        let key = rustls::pki_types::PrivatePkcs8KeyDer::from(self.server.1.serialize_der());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_client_cert_verifier(verifier)
            .with_single_cert(vec![self.server.0.der().clone()], key.into())
            .unwrap();
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Server::start_tls_config(config, |_| Reply::ok("{}"))
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn a_server_that_requires_a_client_certificate_gets_the_one_given() {
    let pki = Pki::new("rustls");
    let server = pki.server();
    let url = server.https_url();
    let cacert = pki.file("ca.pem");

    // Without a certificate: a TLS failure, and a reason that says so. In
    // TLS 1.3 the server's alert comes after the client's side of the
    // handshake, with the first read: of the HTTP/2 preface, or of the
    // first HTTP/1.1 answer.
    for http in ["--http2", "--http1"] {
        let (out, report) = run_lib(&[http, "--cacert", &cacert, &url], &lines(2));
        let e = &out.stats.endpoints[0];
        assert_eq!(e.failures.iter().sum::<u64>(), 2, "{report}");
        assert_eq!(e.tls_reasons[TlsReason::Alert.index()], 2, "{report}");
        assert!(
            report.contains("     tls handshake failed: 2\n       tls: refused by the server: 2\n"),
            "{report}"
        );
    }
    assert_eq!(server.requests(), 0);

    // With it (and its key apart, or in the same file): answered.
    let (cert, key, both) = (
        pki.file("client.pem"),
        pki.file("client.key"),
        pki.file("both.pem"),
    );
    for with in [vec!["--cert", &cert, "--key", &key], vec!["--cert", &both]] {
        let mut args = vec!["--cacert", &cacert];
        args.extend(with);
        args.push(&url);
        let (out, report) = run_lib(&args, &lines(3));
        assert_eq!(out.stats.endpoints[0].responses, 3, "{report}");
        assert_eq!(out.stats.endpoints[0].errors(), 0, "{report}");
    }
}

#[test]
fn a_client_certificate_can_be_given_to_one_endpoint_only() {
    let pki = Pki::new("one");
    let server = pki.server();
    let (with, without) = (
        format!("with={}", server.https_url()),
        format!("without={}", server.https_url()),
    );
    let cert = format!("with={}", pki.file("client.pem"));
    let key = format!("0={}", pki.file("client.key"));
    let (out, report) = run_lib(
        &[
            "--cacert",
            &pki.file("ca.pem"),
            "--endpoint-cert",
            &cert,
            "--endpoint-key",
            &key,
            &with,
            &without,
        ],
        &lines(2),
    );
    assert_eq!(out.stats.endpoints[0].responses, 2, "{report}");
    assert_eq!(out.stats.endpoints[1].responses, 0, "{report}");
    assert_eq!(
        out.stats.endpoints[1].tls_reasons[TlsReason::Alert.index()],
        2
    );
}

/// The usage error (exit 2) of a run with `args`, which must name every
/// one of `told` and never show a key's contents.
fn refused(args: &[&str], told: &[&str], key: &Path) {
    let out = run_bin(args, &lines(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    for t in told {
        assert!(stderr.contains(t), "{t:?} not in {stderr}");
    }
    let secret = std::fs::read_to_string(key).unwrap();
    let body = secret.lines().nth(1).unwrap();
    assert!(
        !stderr.contains(body) && !stderr.contains("PRIVATE KEY"),
        "{stderr}"
    );
}

#[test]
fn unreadable_missing_and_mismatched_files_are_clear_usage_errors() {
    let pki = Pki::new("errors");
    let url = "https://127.0.0.1:1/";
    let (cert, key) = (pki.file("client.pem"), pki.file("client.key"));
    let missing = pki.file("missing.pem");
    let secret = pki.dir.join("client.key");
    refused(
        &["--cert", &missing, "--key", &key, url],
        &["--cert ", "missing.pem", "cannot read it"],
        &secret,
    );
    refused(
        &["--cert", &cert, "--key", &missing, url],
        &["--key ", "missing.pem", "cannot read it"],
        &secret,
    );
    // A key given as the certificate, a certificate given as the key.
    refused(
        &["--cert", &key, "--key", &key, url],
        &["--cert ", "no PEM certificate in the file"],
        &secret,
    );
    refused(
        &["--cert", &cert, "--key", &cert, url],
        &["--key ", "no PEM private key in the file"],
        &secret,
    );
    refused(
        &["--cert", &cert, url],
        &["no private key in the file: give it with --key FILE"],
        &secret,
    );
    refused(
        &["--cert", &cert, "--key", &pki.file("other.key"), url],
        &[
            "other.key is not the key of the certificate in --cert ",
            "client.pem",
        ],
        &pki.dir.join("other.key"),
    );
    let named = format!("a={url}");
    refused(
        &["--endpoint-cert", &format!("b={cert}"), &named],
        &["--endpoint-cert", "no endpoint is named \"b\""],
        &secret,
    );
    refused(
        &[
            "--endpoint-cert",
            &format!("a={cert}"),
            "a=http://127.0.0.1:1/",
        ],
        &["endpoint a does not use TLS"],
        &secret,
    );
    refused(
        &["--endpoint-key", &format!("a={key}"), &named],
        &["endpoint a has no --endpoint-cert"],
        &secret,
    );
    refused(
        &["--endpoint-cert", &format!("a={key}"), &named],
        &[
            "endpoint a: --endpoint-cert ",
            "no PEM certificate in the file",
        ],
        &secret,
    );
}

/// nginx with `ssl_verify_client on` answers 400 without a client
/// certificate (its check is at the HTTP level), and 200 with one its CA
/// signed, given with --cert and --key.
#[test]
#[ignore = "needs nginx: bash .ci/run installs it"]
fn nginx_with_ssl_verify_client_on_takes_the_client_certificate() {
    let pki = Pki::new("nginx");
    let nginx = Nginx::start(
        &pki.dir,
        "",
        &format!(
            "    listen 127.0.0.1:@PORT@ ssl;\n    ssl_certificate {};\n    \
             ssl_certificate_key {};\n    ssl_client_certificate {};\n    \
             ssl_verify_client on;\n    location / {{ return 200 '{{\"ok\":true}}'; }}",
            pki.file("server.pem"),
            pki.file("server.key"),
            pki.file("ca.pem")
        ),
    );
    let url = format!("https://127.0.0.1:{}/", nginx.port);
    let cacert = pki.file("ca.pem");
    let (out, report) = run_lib(&["--cacert", &cacert, &url], &lines(3));
    assert_eq!(out.stats.endpoints[0].status[400], 3, "{report}");
    let (cert, key) = (pki.file("client.pem"), pki.file("client.key"));
    let (out, report) = run_lib(
        &["--cacert", &cacert, "--cert", &cert, "--key", &key, &url],
        &lines(3),
    );
    assert_eq!(out.stats.endpoints[0].status[200], 3, "{report}");
    assert_eq!(out.stats.endpoints[0].errors(), 0, "{report}");
}
