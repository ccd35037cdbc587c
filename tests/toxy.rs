//! toxy's benchmark against real toxy (0.3 from npm, on node 14 from npm:
//! toxy 0.3 predates node 16) as the proxy under test, in front of a
//! server started here that answers `Hello world!` once it has the whole
//! body, and of one that answers on the request's head, without waiting
//! for the body, as toxy's benchmark server does (`benchmark/servers.js`,
//! port 9001: `res.end('Hello world!')`). versus is the load generator;
//! the same suites through versus's own faults are beside them.
//! Installed by `.ci/run` (or `bench/toxy.sh`) into bench/.tools/toxy, or
//! where TOXY_DIR says.

mod common;

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn toxy_dir() -> PathBuf {
    std::env::var_os("TOXY_DIR").map_or_else(
        || PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/bench/.tools/toxy")),
        PathBuf::from,
    )
}

/// toxy running one of its suites, stopped when dropped.
struct Toxy(Child);

impl Toxy {
    fn start(suite: &str, target: SocketAddr) -> (Toxy, SocketAddr) {
        let dir = toxy_dir();
        let node = dir.join("node_modules/node/bin/node");
        assert!(
            node.exists(),
            "{} missing: run .ci/run or bench/toxy.sh to install node 14 and toxy",
            node.display()
        );
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let child = Command::new(node)
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/bench/toxy-suite.js"))
            .args([suite, &port.to_string(), &format!("http://{target}")])
            .env("NODE_PATH", dir.join("node_modules"))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node");
        let toxy = Toxy(child);
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(addr).is_err() {
            assert!(Instant::now() < deadline, "toxy did not listen on {addr}");
            std::thread::sleep(Duration::from_millis(50));
        }
        (toxy, addr)
    }
}

impl Drop for Toxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A server that answers `Hello world!` as soon as a request's head has
/// come, then reads (and drops) its body: toxy's benchmark server.
fn answers_on_the_head() -> RawServer {
    use std::io::{Read, Write};
    RawServer::start(|mut s, _| loop {
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            match s.read(&mut byte) {
                Ok(1) => head.push(byte[0]),
                _ => return,
            }
        }
        let reply = b"HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\nHello world!";
        if s.write_all(reply).is_err() {
            return;
        }
        let mut body = vec![0u8; content_length(&String::from_utf8_lossy(&head))];
        if s.read_exact(&mut body).is_err() {
            return;
        }
    })
}

const PAYLOAD: &str = concat!("@", env!("CARGO_MANIFEST_DIR"), "/bench/toxy-payload.json");

/// One suite at 20 requests a second for 3 s; the p50 in seconds and the
/// report.
fn suite(url: &str, forward: bool, fault: Option<&str>) -> (f64, String) {
    let mut args = vec![
        "--rate=20",
        "--stop-after=3s",
        "--drain=30s",
        "--timeout=30s",
        "--max-in-flight=100",
    ];
    args.extend(if forward {
        ["-m", "GET"]
    } else {
        ["-d", PAYLOAD]
    });
    if let Some(f) = fault {
        args.extend(["--fault", f]);
    }
    args.push(url);
    let (out, report) = run_lib(&args, b"");
    let s = &out.stats.endpoints[0];
    assert_eq!(s.status[200], s.completed(), "{report}");
    assert!(s.completed() >= 55, "{report}");
    (s.latency.value_at_quantile(0.5) as f64 / 1e6, report)
}

#[test]
#[ignore = "needs toxy and node 14 from npm: installed by .ci/run"]
fn toxy_suites_against_real_toxy_and_versus_faults() {
    let server = Server::start(|_| Reply::ok("Hello world!"));
    let target: SocketAddr = server.url()[7..].trim_end_matches('/').parse().unwrap();
    let url = |a: SocketAddr| format!("http://{a}/hello");

    // Unpoisoned: through toxy a few milliseconds, as the seed's 3.1 ms.
    let (toxy, at) = Toxy::start("forward", target);
    let (forward, r) = suite(&url(at), true, None);
    assert!(forward < 0.1, "forward p50 {forward} s\n{r}");
    let (payload, r) = suite(&url(at), false, None);
    assert!(payload < 0.1, "payload p50 {payload} s\n{r}");
    drop(toxy);

    // toxy's bandwidth poison throttles the answer: each 1 KB chunk of it
    // is written a second after the last (the first too): `Hello world!`
    // is one chunk, a second.
    let (toxy, at) = Toxy::start("bandwidth", target);
    let (bandwidth, r) = suite(&url(at), false, None);
    assert!(
        (0.95..1.2).contains(&bandwidth),
        "bandwidth p50 {bandwidth} s\n{r}"
    );
    drop(toxy);

    // toxy's slowRead holds the whole body, then passes it on 1 KB at a
    // time, a second before each chunk (the first too): the 1723 bytes
    // are two chunks, whole after 2 s. A server that answers once it has
    // the body answers after 2 s; toxy's own benchmark server answers on
    // the head, which goes out with the first chunk: 1 s, the seed's
    // 1.004 s.
    let (toxy, at) = Toxy::start("slow-read", target);
    let (slow, r) = suite(&url(at), false, None);
    assert!((1.9..2.3).contains(&slow), "slow-read p50 {slow} s\n{r}");
    drop(toxy);
    let on_head = answers_on_the_head();
    let (toxy, at) = Toxy::start("slow-read", on_head.addr);
    let (slow, r) = suite(&url(at), false, None);
    assert!(
        (0.95..1.2).contains(&slow),
        "slow-read, answered on the head: p50 {slow} s\n{r}"
    );
    drop(toxy);

    // versus's own faults, straight to the server: the same shapes.
    let direct = server.url() + "hello";
    let (bandwidth, r) = suite(&direct, false, Some("0=bandwidth 1KB/s up"));
    assert!(
        (0.95..1.2).contains(&bandwidth),
        "versus bandwidth p50 {bandwidth} s\n{r}"
    );
    let (slow, r) = suite(&direct, false, Some("0=slow-read 1KB every 1s"));
    assert!(
        (0.95..1.2).contains(&slow),
        "versus slow-read p50 {slow} s\n{r}"
    );
    let (forward, r) = suite(&direct, true, Some("0=latency 0ms"));
    assert!(forward < 0.05, "versus forward p50 {forward} s\n{r}");
}
