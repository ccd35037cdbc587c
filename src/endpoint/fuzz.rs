//! Fuzzing the response parsers on stable Rust (proptest; see
//! `tests/fuzz.rs` for the input parsers): HTTP/1.1 heads and bodies as
//! `h1::Conn` reads them, HPACK blocks, HTTP/2 frames as a connection's
//! driver hands them over, and the common name of a `--cacert`
//! certificate. Inputs are built from each protocol's grammar
//! (status lines, framing headers with honest and lying values, chunked
//! bodies, frames of every type) and then corrupted a few bytes at a time.
//! The properties: nothing panics, what is accepted holds to the limits
//! (`--max-body`, the body kept whole), and an HTTP/1.1 answer read where
//! it landed (as on the ring) is the answer read by copies.

use std::pin::Pin;
use std::task::{Context, Poll};

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::h1::Conn as H1Conn;
use super::h2::Conn as H2Conn;
use super::hpack;

/// Inputs per target (`VERSUS_FUZZ_CASES`, as in `tests/fuzz.rs`).
fn cases() -> u32 {
    std::env::var("VERSUS_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000)
}

/// Run `check` on `cases()` inputs of `strategy`, and say how many ran.
fn fuzz<T: std::fmt::Debug>(
    name: &str,
    strategy: impl Strategy<Value = T>,
    check: impl Fn(T) -> Result<(), TestCaseError>,
) {
    let ran = std::cell::Cell::new(0u64);
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&strategy, |input| {
        ran.set(ran.get() + 1);
        check(input)
    });
    println!("fuzz {name}: {} inputs", ran.get());
    if let Err(e) = result {
        panic!("fuzz {name}: {e}");
    }
}

/// `bytes` with a few of them replaced.
fn corrupted(bytes: impl Strategy<Value = Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    (
        bytes,
        proptest::collection::vec((any::<usize>(), any::<u8>()), 0..4),
    )
        .prop_map(|(mut b, changes)| {
            for (at, byte) in changes {
                if !b.is_empty() {
                    let at = at % b.len();
                    b[at] = byte;
                }
            }
            b
        })
}

fn pick(from: &'static [&'static str]) -> impl Strategy<Value = String> {
    proptest::sample::select(from).prop_map(str::to_string)
}

/// A response's bytes, delivered `chunk` at a time, then the end of the
/// stream; whatever is written is taken. With `lend`, each `chunk` lands
/// in the stream's own memory first, as the ring's receives do, and is
/// lent to the reader where it lies (`Io::poll_read_landed`) or read from
/// there.
struct Scripted {
    data: Vec<u8>,
    at: usize,
    chunk: usize,
    lend: bool,
    /// The end of the chunk that landed last (`lend`).
    landed: usize,
}

impl Scripted {
    fn new(data: Vec<u8>, chunk: usize, lend: bool) -> Scripted {
        Scripted {
            data,
            at: 0,
            chunk,
            lend,
            landed: 0,
        }
    }

    /// The end of the bytes the next read may take: the rest of the chunk
    /// that landed, or the next chunk.
    fn end(&self) -> usize {
        if self.at < self.landed {
            self.landed
        } else {
            (self.at + self.chunk).min(self.data.len())
        }
    }
}

impl AsyncRead for Scripted {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let n = (self.end() - self.at).min(buf.remaining());
        buf.put_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Poll::Ready(Ok(()))
    }
}

impl super::io::Io for Scripted {
    fn poll_read_landed(
        &mut self,
        _: &mut Context<'_>,
        read: &mut dyn FnMut(&[u8], Option<std::time::Instant>) -> usize,
    ) -> Poll<std::io::Result<bool>> {
        if !self.lend || self.at == self.data.len() {
            return Poll::Ready(Ok(false));
        }
        self.landed = self.end();
        let n = read(&self.data[self.at..self.landed], None);
        self.at += n;
        Poll::Ready(Ok(true))
    }

    fn lends(&self) -> bool {
        self.lend
    }
}

impl AsyncWrite for Scripted {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// An HTTP/1.1 response: a status line (interim ones too), framing
/// headers with honest or lying values (or the body's true length), and a
/// plain or chunked body.
fn h1_response() -> impl Strategy<Value = Vec<u8>> {
    let status = pick(&[
        "HTTP/1.1 200 OK",
        "HTTP/1.0 200 OK",
        "HTTP/1.1 204 No Content",
        "HTTP/1.1 304 Not Modified",
        "HTTP/1.1 101 Switching Protocols",
        "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Busy",
        "HTTP/1.1 099 Low",
        "HTTP/2 200",
        "HTTP/1.1 200",
    ]);
    let name = pick(&[
        "content-length",
        "Content-Length",
        "transfer-encoding",
        "connection",
        "x-k",
        "keep-alive",
    ]);
    let value = prop_oneof![
        pick(&[
            "0",
            "5",
            "chunked",
            "gzip, chunked",
            "chunked, gzip",
            "close",
            "keep-alive",
            "-1",
            "+5",
            " 5 ",
            "99999999999999999999",
            "1000000000000",
            "abc",
        ]),
        any::<u16>().prop_map(|n| n.to_string()),
    ];
    let headers = proptest::collection::vec((name, value), 0..5);
    let chunk = (
        proptest::collection::vec(any::<u8>(), 0..24),
        -2i64..3,
        pick(&["", ";ext=1", " ", ";"]),
    );
    let body = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..64),
        (
            proptest::collection::vec(chunk, 0..4),
            pick(&["0\r\n\r\n", "0\r\nx-t: 1\r\n\r\n", "0\r\n", ""]),
        )
            .prop_map(|(chunks, end)| {
                let mut b = Vec::new();
                for (data, lie, ext) in chunks {
                    let size = (data.len() as i64 + lie).max(0);
                    b.extend_from_slice(format!("{size:x}{ext}\r\n").as_bytes());
                    b.extend_from_slice(&data);
                    b.extend_from_slice(b"\r\n");
                }
                b.extend_from_slice(end.as_bytes());
                b
            }),
    ];
    // Some answers say their body's true length, as most servers' do.
    let honest = any::<bool>();
    corrupted(
        (status, headers, body, honest).prop_map(|(status, headers, body, honest)| {
            let mut r = format!("{status}\r\n").into_bytes();
            for (n, v) in headers {
                r.extend_from_slice(format!("{n}: {v}\r\n").as_bytes());
            }
            if honest {
                r.extend_from_slice(format!("Content-Length: {}\r\n", body.len()).as_bytes());
            }
            r.extend_from_slice(b"\r\n");
            r.extend_from_slice(&body);
            r
        }),
    )
}

#[test]
fn fuzz_h1_response() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let keep = [http::HeaderName::from_static("x-k")];
    let heads = crate::endpoint::h1::Heads::default();
    let cases = (
        h1_response(),
        // Bytes at a time, or whole answers in one receive.
        prop_oneof![1usize..64, Just(4096)],
        any::<bool>(),
        any::<bool>(),
        proptest::sample::select(&[0u64, 16, 1 << 20][..]),
    );
    fuzz(
        "h1 response",
        cases,
        |(data, chunk, head, keep_body, max_body)| {
            // Read by copies, and where the bytes landed: the same answer.
            let read = [true, false].map(|lend| {
                let mut conn = H1Conn::new(Scripted::new(data.clone(), chunk, lend));
                conn.request_buf()
                    .extend_from_slice(b"GET / HTTP/1.1\r\n\r\n");
                let r = rt.block_on(conn.exchange(b"", head, max_body, keep_body, &keep, &heads));
                r.map(|a| (a.status, a.headers, a.body, a.body_len, a.keep_alive))
            });
            let [lent, copied] = &read;
            prop_assert_eq!(lent, copied);
            if let Ok((status, _, body, body_len, _)) = copied {
                prop_assert!(*body_len <= max_body);
                prop_assert!((100..1000).contains(status));
                if keep_body {
                    prop_assert_eq!(body.len() as u64, *body_len);
                } else {
                    prop_assert!(body.is_empty());
                }
            }
            Ok(())
        },
    );
}

/// Header blocks: fields as versus and servers encode them (indexed,
/// literal, with and without indexing, table size updates), then
/// corrupted.
fn hpack_blocks() -> impl Strategy<Value = Vec<Vec<u8>>> {
    let field = prop_oneof![
        (1usize..80).prop_map(|i| {
            let mut b = Vec::new();
            hpack::put_indexed(&mut b, i);
            b
        }),
        (1usize..70, proptest::collection::vec(any::<u8>(), 0..20)).prop_map(|(i, v)| {
            let mut b = Vec::new();
            hpack::put_named(&mut b, i, &v);
            b
        }),
        (
            proptest::collection::vec(any::<u8>(), 0..12),
            proptest::collection::vec(any::<u8>(), 0..20)
        )
            .prop_map(|(n, v)| {
                let mut b = Vec::new();
                hpack::put_field(&mut b, &n, &v);
                b
            }),
        // A literal added to the table (0x40), then a table size update.
        proptest::collection::vec(any::<u8>(), 0..8).prop_map(|v| {
            let mut b = vec![0x40, 1, b'x'];
            hpack::put_int(&mut b, 0, 7, v.len());
            b.extend_from_slice(&v);
            b
        }),
        (0usize..8192).prop_map(|n| {
            let mut b = Vec::new();
            hpack::put_int(&mut b, 0x20, 5, n);
            b
        }),
        proptest::collection::vec(any::<u8>(), 0..16),
    ];
    let block = corrupted(proptest::collection::vec(field, 0..8).prop_map(|f| f.concat()));
    proptest::collection::vec(block, 1..4)
}

#[test]
fn fuzz_hpack_blocks() {
    fuzz("hpack blocks", hpack_blocks(), |blocks| {
        let mut decoder = hpack::Decoder::new(4096);
        for block in blocks {
            let r = decoder.decode(&block, |_| true, |_, _| {});
            if r.is_err() {
                break;
            }
        }
        Ok(())
    });
}

/// One frame: any type (a few more than HTTP/2 has), flags and a small
/// stream id, with a payload that is random or shaped for its type.
/// A header block of literal fields (without indexing).
fn grpc_block(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (n, v) in fields {
        super::hpack::put_field(&mut out, n.as_bytes(), v.as_bytes());
    }
    out
}

fn h2_frame() -> impl Strategy<Value = Vec<u8>> {
    let payload = prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..40),
        // A response head: `:status 200` indexed.
        Just(vec![0x88]),
        // gRPC trailers (and a trailers-only head): `grpc-status` with a
        // code, a number too large, or text; `grpc-message` percent-encoded.
        Just(grpc_block(&[
            ("grpc-status", "5"),
            ("grpc-message", "no%20item%")
        ])),
        Just(grpc_block(&[
            ("grpc-status", "99999999999"),
            ("grpc-message", "%zz%C3")
        ])),
        Just([vec![0x88], grpc_block(&[("grpc-status", "x")])].concat()),
        // A gRPC message prefix claiming more than follows.
        Just(vec![0, 0xff, 0xff, 0xff, 0xff, 1, 2]),
        Just(vec![0, 0, 0, 0, 0, 0, 0, 0]),
        Just(vec![0, 3, 0, 0, 0, 1]),
        Just(vec![0, 4, 0x7f, 0xff, 0xff, 0xff]),
        Just(vec![0, 0, 0x10, 0]),
    ];
    (
        0u8..12,
        any::<u8>(),
        proptest::sample::select(&[0u32, 1, 3, 5, 7, 0x8000_0001][..]),
        payload,
    )
        .prop_map(|(kind, flags, id, payload)| {
            let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
            f.extend_from_slice(&[kind, flags]);
            f.extend_from_slice(&id.to_be_bytes());
            f.extend_from_slice(&payload);
            f
        })
}

#[test]
fn fuzz_h2_frames() {
    let frames = (
        any::<bool>(),
        corrupted(proptest::collection::vec(h2_frame(), 0..24).prop_map(|f| f.concat())),
        1usize..64,
        0usize..4,
        any::<bool>(),
    );
    fuzz(
        "h2 frames",
        frames,
        |(settings_first, input, chunk, streams, keep_body)| {
            // Every other input on a gRPC connection, which reads the
            // grpc-status and grpc-message of every header block too.
            let grpc = input.len() % 2 == 1;
            let conn = H2Conn::detached(vec![http::HeaderName::from_static("x-k")], grpc);
            let mut data = Vec::new();
            if settings_first {
                data.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
            }
            if !conn.receive(&data, 9) {
                return Ok(());
            }
            for _ in 0..streams {
                let _ = conn.open(|_| Ok(&b"{}"[..]), keep_body, 64);
            }
            let before = conn.queued();
            conn.receive(&input, chunk);
            // Replies are acknowledgements and resets: never more than
            // a frame's worth per frame received.
            prop_assert!(conn.queued() <= before + input.len() * 2 + 64);
            Ok(())
        },
    );
}

/// A certificate's DER as rcgen makes it (a common name, a CA flag).
fn certificate() -> impl Strategy<Value = Vec<u8>> {
    (
        any::<bool>(),
        pick(&["localhost", "", "é.example", "a.b.c"]),
    )
        .prop_map(|(ca, cn)| {
            let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
            p.distinguished_name = rcgen::DistinguishedName::new();
            p.distinguished_name.push(rcgen::DnType::CommonName, cn);
            if ca {
                p.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            }
            let key = rcgen::KeyPair::generate().unwrap();
            p.self_signed(&key).unwrap().der().to_vec()
        })
}

/// Certificates corrupted, cut, or random bytes.
fn certificates() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => corrupted(certificate()),
        2 => (certificate(), any::<usize>()).prop_map(|(mut d, at)| {
            d.truncate(at % (d.len() + 1));
            d
        }),
        1 => proptest::collection::vec(any::<u8>(), 0..64),
    ]
}

#[test]
fn fuzz_certificate_common_name() {
    fuzz("certificate common name", certificates(), |der| {
        let cert = rustls::pki_types::CertificateDer::from(der);
        if let Some(cn) = super::connect::subject_common_name(&cert) {
            prop_assert!(cn.len() < cert.len());
        }
        Ok(())
    });
}
