//! Tests of [`PcapSource`]: a real tcpdump/curl recording, and synthetic
//! captures (packets from etherparse's builder, pcap/pcapng framing written
//! here) covering link layers, reassembly, framing and failure modes.

use std::io::{self, Cursor, Read};

use etherparse::PacketBuilder;

use super::*;

/// A request or a malformed record, reduced to what the tests compare.
#[derive(Debug, PartialEq)]
enum Got {
    /// `"METHOD target"` and the body.
    Req(String, Vec<u8>),
    /// Location and reason.
    Bad(String, String),
}

fn req(line: &str, body: &[u8]) -> Got {
    Got::Req(line.to_owned(), body.to_vec())
}

fn bad(location: &str, reason: &str) -> Got {
    Got::Bad(location.to_owned(), reason.to_owned())
}

/// Every record of `source` up to End.
fn records(mut source: PcapSource) -> (Vec<Next>, Stats) {
    let mut records = Vec::new();
    loop {
        match source.next().expect("no I/O error") {
            Next::End => return (records, source.stats()),
            next => records.push(next),
        }
        assert!(records.len() < 1000, "runaway source");
    }
}

fn got(next: Next) -> Got {
    match next {
        Next::Request(r) => {
            let method = r.method.map(|m| m.to_string()).unwrap_or_default();
            Got::Req(
                format!("{method} {}", r.target.unwrap_or_default()),
                r.body.to_vec(),
            )
        }
        Next::Malformed(m) => Got::Bad(m.location, m.reason),
        Next::End => unreachable!("records() stops at End"),
    }
}

fn read_all(reader: impl Read + Send + 'static) -> (Vec<Got>, Stats) {
    read_with(reader, Limits::default())
}

fn read_with(reader: impl Read + Send + 'static, limits: Limits) -> (Vec<Got>, Stats) {
    let (records, stats) = records(PcapSource::with_limits(Box::new(reader), limits));
    (records.into_iter().map(got).collect(), stats)
}

// ---- packets ----

#[derive(Clone, Copy, Debug)]
enum Link {
    Ethernet,
    Vlan,
    QinQ,
    Sll,
    Sll2,
    Raw,
    Null,
}

impl Link {
    fn linktype(self) -> u32 {
        match self {
            Link::Ethernet | Link::Vlan | Link::QinQ => 1,
            Link::Sll => 113,
            Link::Sll2 => 276,
            Link::Raw => 101,
            Link::Null => 0,
        }
    }

    /// Prefixes an IP packet with this link layer's header.
    fn frame(self, ip: &[u8], v6: bool) -> Vec<u8> {
        let ether_type: [u8; 2] = if v6 { [0x86, 0xdd] } else { [0x08, 0x00] };
        let mac = [2, 0, 0, 0, 0, 1];
        let mut frame = match self {
            Link::Ethernet | Link::Vlan | Link::QinQ => {
                let mut f = [mac, mac].concat();
                if let Link::QinQ = self {
                    f.extend([0x88, 0xa8, 0x00, 0x64]);
                }
                if let Link::Vlan | Link::QinQ = self {
                    f.extend([0x81, 0x00, 0x00, 0x2a]);
                }
                f.extend(ether_type);
                f
            }
            Link::Sll => [&[0, 0, 0, 1, 0, 6][..], &mac, &[0, 0], &ether_type].concat(),
            Link::Sll2 => [
                &ether_type[..],
                &[0, 0, 0, 0, 0, 1, 0, 1, 0, 6],
                &mac,
                &[0, 0],
            ]
            .concat(),
            Link::Raw => Vec::new(),
            Link::Null => vec![if v6 { 30 } else { 2 }, 0, 0, 0],
        };
        frame.extend_from_slice(ip);
        frame
    }
}

/// One TCP connection between a client and port 8545, building its packets.
struct Session {
    link: Link,
    v6: bool,
    port: u16,
    /// Next sequence numbers of client and server.
    client: u32,
    server: u32,
}

#[derive(Clone, Copy, Default)]
struct Flags {
    syn: bool,
    ack: bool,
    fin: bool,
    rst: bool,
}

const SYN: Flags = Flags {
    syn: true,
    ack: false,
    fin: false,
    rst: false,
};
const ACK: Flags = Flags {
    syn: false,
    ack: true,
    fin: false,
    rst: false,
};

impl Session {
    fn new(port: u16) -> Self {
        Session::on(Link::Ethernet, false, port)
    }

    fn on(link: Link, v6: bool, port: u16) -> Self {
        Session {
            link,
            v6,
            port,
            client: 0xffff_fff0, // the client's sequence wraps early
            server: 5000,
        }
    }

    fn location(&self) -> String {
        if self.v6 {
            format!("stream [fd00::1]:{} → [fd00::2]:8545", self.port)
        } else {
            format!("stream 10.0.0.1:{} → 10.0.0.2:8545", self.port)
        }
    }

    fn packet(&self, from_client: bool, seq: u32, flags: Flags, payload: &[u8]) -> Vec<u8> {
        let (ports, ack) = if from_client {
            ((self.port, 8545), self.server)
        } else {
            ((8545, self.port), self.client)
        };
        let (a, b) = if from_client { (1, 2) } else { (2, 1) };
        let ip = if self.v6 {
            let addr = |n| {
                let mut addr = [0; 16];
                addr[0] = 0xfd;
                addr[15] = n;
                addr
            };
            PacketBuilder::ipv6(addr(a), addr(b), 64)
        } else {
            PacketBuilder::ipv4([10, 0, 0, a], [10, 0, 0, b], 64)
        };
        let mut tcp = ip.tcp(ports.0, ports.1, seq, 65000);
        if flags.syn {
            tcp = tcp.syn();
        }
        if flags.ack {
            tcp = tcp.ack(ack);
        }
        if flags.fin {
            tcp = tcp.fin();
        }
        if flags.rst {
            tcp = tcp.rst();
        }
        let mut bytes = Vec::new();
        tcp.write(&mut bytes, payload).expect("packet builds");
        self.link.frame(&bytes, self.v6)
    }

    /// SYN, SYN-ACK, ACK.
    fn handshake(&mut self) -> Vec<Vec<u8>> {
        let syn = self.packet(true, self.client, SYN, b"");
        self.client = self.client.wrapping_add(1);
        let syn_ack = self.packet(false, self.server, Flags { syn: true, ..ACK }, b"");
        self.server += 1;
        vec![syn, syn_ack, self.packet(true, self.client, ACK, b"")]
    }

    /// A client segment carrying `data` at the current position.
    fn send(&mut self, data: &[u8]) -> Vec<u8> {
        let packet = self.at(0, data);
        self.client = self.client.wrapping_add(data.len() as u32);
        packet
    }

    /// A client segment `offset` bytes past the current position (without
    /// moving it), for out-of-order and retransmitted segments.
    fn at(&self, offset: u32, data: &[u8]) -> Vec<u8> {
        self.packet(true, self.client.wrapping_add(offset), ACK, data)
    }

    fn reply(&mut self, data: &[u8]) -> Vec<u8> {
        let packet = self.packet(false, self.server, ACK, data);
        self.server += data.len() as u32;
        packet
    }

    fn close(&self, flags: Flags) -> Vec<u8> {
        self.packet(true, self.client, flags, b"")
    }
}

// ---- capture framing ----

/// A classic pcap file, little- or big-endian, micro- or nanoseconds.
fn pcap_with(linktype: u32, packets: &[Vec<u8>], big_endian: bool, nanos: bool) -> Vec<u8> {
    let u32b = |v: u32| {
        if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let u16b = |v: u16| {
        if big_endian {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        }
    };
    let mut out = Vec::new();
    out.extend(u32b(if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }));
    out.extend(u16b(2));
    out.extend(u16b(4));
    out.extend(u32b(0));
    out.extend(u32b(0));
    out.extend(u32b(262_144));
    out.extend(u32b(linktype));
    for (i, packet) in packets.iter().enumerate() {
        out.extend(u32b(1_700_000_000 + i as u32));
        out.extend(u32b(0));
        out.extend(u32b(packet.len() as u32));
        out.extend(u32b(packet.len() as u32));
        out.extend(packet);
    }
    out
}

fn pcap(link: Link, packets: &[Vec<u8>]) -> Vec<u8> {
    pcap_with(link.linktype(), packets, false, false)
}

/// A pcapng block: type, length, body padded to 32 bits, length.
fn ng_block(kind: u32, body: &[u8]) -> Vec<u8> {
    let padded = body.len().div_ceil(4) * 4;
    let len = (12 + padded) as u32;
    let mut out = [kind.to_le_bytes(), len.to_le_bytes()].concat();
    out.extend(body);
    out.resize(8 + padded, 0);
    out.extend(len.to_le_bytes());
    out
}

/// A pcapng file: one section, these interfaces, then packets as
/// `(interface, bytes)`; interface `None` writes a Simple Packet Block.
fn pcapng(linktypes: &[u32], packets: &[(Option<u32>, Vec<u8>)]) -> Vec<u8> {
    let mut shb = vec![0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0];
    shb.extend((-1i64).to_le_bytes());
    let mut out = ng_block(0x0a0d_0d0a, &shb);
    for &linktype in linktypes {
        let body = [(linktype as u16).to_le_bytes(), [0, 0]].concat();
        out.extend(ng_block(1, &[&body[..], &0u32.to_le_bytes()].concat()));
    }
    for (interface, packet) in packets {
        let len = (packet.len() as u32).to_le_bytes();
        let block = match interface {
            Some(id) => {
                let head = [id.to_le_bytes(), [0; 4], [0; 4], len, len].concat();
                ng_block(6, &[&head[..], packet].concat())
            }
            None => ng_block(3, &[&len[..], packet].concat()),
        };
        out.extend(block);
    }
    out
}

/// A reader handing out 1 to 7 bytes per call, like a slow pipe, and
/// counting what it handed out.
struct Trickle {
    data: Vec<u8>,
    pos: usize,
    calls: usize,
    given: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.calls += 1;
        let n = (self.calls % 7 + 1)
            .min(buf.len())
            .min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        self.given.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
        Ok(n)
    }
}

const POST: &[u8] = b"POST /rpc HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\n\r\n{\"a\":1}";
const GET: &[u8] = b"GET /x?y=1 HTTP/1.1\r\nHost: h\r\n\r\n";

fn post() -> Got {
    req("POST /rpc", b"{\"a\":1}")
}

fn get() -> Got {
    req("GET /x?y=1", b"")
}

/// A whole session on `link`: handshake, a POST, a reply, a GET, FIN.
fn simple_session(link: Link, v6: bool) -> Vec<Vec<u8>> {
    let mut s = Session::on(link, v6, 40000);
    let mut packets = s.handshake();
    packets.push(s.send(POST));
    packets.push(s.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
    packets.push(s.send(GET));
    packets.push(s.close(Flags { fin: true, ..ACK }));
    packets
}

// ---- tests ----

#[test]
fn real_curl_capture_from_tcpdump() {
    let capture = include_bytes!("../../../tests/fixtures/curl-loopback.pcap");
    let (records, stats) = records(PcapSource::new(Box::new(&capture[..])));
    let requests: Vec<Request> = records
        .into_iter()
        .map(|next| match next {
            Next::Request(r) => r,
            other => panic!("unexpected {other:?}"),
        })
        .collect();
    let summary: Vec<_> = requests
        .iter()
        .map(|r| {
            let headers: Vec<_> = r
                .headers
                .iter()
                .map(|(n, v)| format!("{n}: {}", v.to_str().unwrap()))
                .collect();
            let method = r.method.as_ref().unwrap().as_str();
            (method, r.target.as_deref().unwrap(), headers, &r.body[..])
        })
        .collect();
    let curl = |extra: &[&str]| {
        let mut h = vec![
            "user-agent: curl/7.88.1".to_owned(),
            "accept: */*".to_owned(),
        ];
        h.extend(extra.iter().map(|s| s.to_string()));
        h
    };
    let json = br#"{"jsonrpc":"2.0","method":"eth_blockNumber","params":[],"id":1}"#;
    assert_eq!(
        summary,
        [
            ("GET", "/status?verbose=1&id=42", curl(&[]), &b""[..]),
            (
                "POST",
                "/rpc",
                curl(&["content-type: application/json"]),
                json
            ),
            (
                "POST",
                "/upload",
                curl(&["content-type: application/x-www-form-urlencoded"]),
                b"first line of the upload\nsecond line\n",
            ),
            (
                "GET",
                "/pipelined/1?x=1",
                vec!["accept: */*".to_owned()],
                b""
            ),
            (
                "POST",
                "/pipelined/2",
                vec!["content-type: text/plain".to_owned()],
                b"hello"
            ),
        ]
    );
    assert!(requests.iter().all(|r| r.seq == 0));
    assert_eq!(
        stats,
        Stats {
            packets: 42,
            streams: 4,
            requests: 5,
            ..Stats::default()
        }
    );
}

#[test]
fn out_of_order_retransmitted_and_overlapping_segments() {
    let mut s = Session::new(40000);
    let mut packets = s.handshake();
    let (a, rest) = POST.split_at(10);
    let (b, c) = rest.split_at(20);
    packets.push(s.at(30, c)); // third piece first
    packets.push(s.at(0, a));
    packets.push(s.at(0, a)); // retransmission
    packets.push(s.at(5, &POST[5..40])); // overlaps both neighbours
    packets.push(s.at(10, b)); // already covered
    s.send(POST);
    packets.push(s.send(GET));
    let (got, stats) = read_all(Cursor::new(pcap(Link::Ethernet, &packets)));
    assert_eq!(got, [post(), get()]);
    assert_eq!(stats.requests, 2);
}

#[test]
fn every_link_layer_and_ip_version() {
    for link in [
        Link::Ethernet,
        Link::Vlan,
        Link::QinQ,
        Link::Sll,
        Link::Sll2,
        Link::Raw,
        Link::Null,
    ] {
        for v6 in [false, true] {
            let capture = pcap(link, &simple_session(link, v6));
            let (got, stats) = read_all(Cursor::new(capture));
            assert_eq!(got, [post(), get()], "{link:?} v6={v6}");
            assert_eq!((stats.packets, stats.unparsable_packets), (7, 0));
        }
    }
}

#[test]
fn classic_pcap_byte_orders_and_precisions() {
    for big_endian in [false, true] {
        for nanos in [false, true] {
            let capture = pcap_with(1, &simple_session(Link::Ethernet, false), big_endian, nanos);
            assert_eq!(read_all(Cursor::new(capture)).0, [post(), get()]);
        }
    }
}

#[test]
fn pcapng_with_several_interfaces_and_simple_packets() {
    let ethernet = simple_session(Link::Ethernet, false);
    let sll2 = simple_session(Link::Sll2, true);
    // Interleave: interface 0 is Ethernet, 1 is SLL2; some Ethernet packets
    // travel as Simple Packet Blocks (which belong to interface 0).
    let mut packets = Vec::new();
    for (i, (e, s)) in ethernet.into_iter().zip(sll2).enumerate() {
        packets.push((if i % 2 == 0 { Some(0) } else { None }, e));
        packets.push((Some(1), s));
    }
    let (got, stats) = read_all(Cursor::new(pcapng(&[1, 276], &packets)));
    assert_eq!(got, [post(), post(), get(), get()]);
    assert_eq!(stats.streams, 2);
}

#[test]
fn truncated_capture_keeps_complete_requests() {
    let mut s = Session::new(40000);
    let mut packets = s.handshake();
    packets.push(s.send(POST));
    packets.push(s.send(GET));
    packets.push(s.send(POST)); // packet 6: cut in the middle
    let full = pcap(Link::Ethernet, &packets);
    let cut = full.len() - 30;
    let (got, stats) = read_all(Cursor::new(full[..cut].to_vec()));
    assert_eq!(
        got,
        [
            post(),
            get(),
            bad("packet 6", "truncated capture at packet 6")
        ]
    );
    assert_eq!((stats.packets, stats.requests), (5, 2));

    let ng: Vec<_> = packets.into_iter().map(|p| (Some(0), p)).collect();
    let full = pcapng(&[1], &ng);
    for cut in [full.len() - 30, full.len() - 3] {
        let (got, _) = read_all(Cursor::new(full[..cut].to_vec()));
        assert_eq!(
            got,
            [
                post(),
                get(),
                bad("packet 6", "truncated capture at packet 6")
            ]
        );
    }
}

#[test]
fn non_http_streams_are_reported() {
    // With a handshake: the client is known, and its bytes are TLS.
    let mut tls = Session::new(40001);
    let mut packets = tls.handshake();
    packets.push(tls.send(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"));
    // Seen mid-way, both directions garbage.
    let mut odd = Session::new(40002);
    packets.push(odd.reply(b"SSH-2.0-OpenSSH_9.2\r\n"));
    packets.push(odd.send(b"\x00\x00\x01\x0c\x0a\x14"));
    // Seen mid-way, the server speaks first: still found by the request.
    let mut late = Session::new(40003);
    packets.push(late.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
    packets.push(late.send(GET));
    let (got, stats) = read_all(Cursor::new(pcap(Link::Ethernet, &packets)));
    assert_eq!(
        got,
        [
            bad(&tls.location(), "not HTTP: invalid token"),
            // Reported once both directions failed, with the first failure.
            bad(
                "stream 10.0.0.2:8545 → 10.0.0.1:40002",
                "not HTTP: invalid token"
            ),
            get(),
        ]
    );
    assert_eq!((stats.streams, stats.unparsable_streams), (3, 2));
}

#[test]
fn incomplete_requests_and_gaps_are_reported() {
    // Ends mid-body at the end of the capture.
    let mut partial = Session::new(40001);
    let mut packets = partial.handshake();
    packets.push(partial.send(&POST[..53]));
    // A segment is missing before the FIN.
    let mut gap = Session::new(40002);
    packets.extend(gap.handshake());
    packets.push(gap.send(GET));
    let lost = gap.send(POST);
    packets.push(gap.close(Flags { fin: true, ..ACK }));
    drop(lost);
    // Reset mid-head.
    let mut reset = Session::new(40003);
    packets.extend(reset.handshake());
    packets.push(reset.send(&GET[..10]));
    packets.push(reset.close(Flags { rst: true, ..ACK }));
    // Complete, then FIN: nothing to report.
    let mut done = Session::new(40004);
    packets.extend(done.handshake());
    packets.push(done.send(POST));
    packets.push(done.close(Flags { fin: true, ..ACK }));
    let (got, stats) = read_all(Cursor::new(pcap(Link::Ethernet, &packets)));
    assert_eq!(
        got,
        [
            get(),
            bad(&reset.location(), "incomplete request at RST"),
            post(),
            // At the end, in order of first appearance. The FIN past the
            // hole does not end its stream: a retransmission could fill it.
            bad(&partial.location(), "incomplete request at end of capture"),
            bad(&gap.location(), "gap in TCP sequence"),
        ]
    );
    assert_eq!(
        stats,
        Stats {
            packets: 19,
            streams: 4,
            requests: 2,
            incomplete_streams: 3,
            ..Stats::default()
        }
    );
}

#[test]
fn live_pipe_in_tiny_pieces_yields_requests_as_they_complete() {
    let mut s = Session::new(40000);
    let mut packets = s.handshake();
    let pipelined = [POST, GET, POST].concat();
    // Pipelined requests split at awkward places across segments.
    for piece in pipelined.chunks(13) {
        packets.push(s.send(piece));
    }
    for _ in 0..20 {
        packets.push(s.reply(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"));
    }
    for capture in [
        pcap(Link::Ethernet, &packets),
        pcapng(
            &[1],
            &packets
                .iter()
                .map(|p| (Some(0), p.clone()))
                .collect::<Vec<_>>(),
        ),
    ] {
        let total = capture.len();
        let given = std::sync::Arc::default();
        let trickle = Trickle {
            data: capture,
            pos: 0,
            calls: 0,
            given: std::sync::Arc::clone(&given),
        };
        let mut source = PcapSource::new(Box::new(trickle));
        let first = got(source.next().unwrap());
        assert_eq!(first, post());
        let read = given.load(std::sync::atomic::Ordering::SeqCst);
        assert!(
            read < total / 2,
            "read {read} of {total} bytes before the first request"
        );
        let (rest, _) = records(source);
        assert_eq!(
            rest.into_iter().map(got).collect::<Vec<_>>(),
            [get(), post()]
        );
    }
}

#[test]
fn input_that_is_not_a_capture() {
    for input in [
        &b""[..],
        b"GET / HTTP/1.1\r\n\r\n",
        b"\x0a\x0d\x0d\x0a\x00\x00",
    ] {
        let (got, _) = read_all(Cursor::new(input.to_vec()));
        assert!(
            matches!(&got[..], [Got::Bad(location, reason)]
                if location == "input" && reason.starts_with("not a pcap")),
            "{got:?}"
        );
    }
}

#[test]
fn unsupported_link_type_is_reported_once() {
    let packets = simple_session(Link::Ethernet, false);
    let (got, stats) = read_all(Cursor::new(pcap_with(105, &packets, false, false)));
    assert_eq!(got, [bad("packet 1", "unsupported link type 105")]);
    assert_eq!((stats.packets, stats.unparsable_packets), (7, 7));
}

#[test]
fn ip_fragments_are_counted_unparsable() {
    let mut s = Session::on(Link::Raw, false, 40000);
    let mut packets = s.handshake();
    let mut fragment = s.send(POST);
    fragment[6] |= 0x20; // IPv4 "more fragments"
    packets.push(fragment);
    packets.push(s.send(GET));
    let (got, stats) = read_all(Cursor::new(pcap(Link::Raw, &packets)));
    assert_eq!(got, [bad(&s.location(), "gap in TCP sequence")]);
    assert_eq!(stats.unparsable_packets, 1);
}

#[test]
fn limits_drop_large_streams_and_evict_idle_ones() {
    let mut big = Session::new(40001);
    let mut packets = big.handshake();
    packets.push(big.send(b"POST /big HTTP/1.1\r\nContent-Length: 100\r\n\r\n"));
    packets.push(big.send(&[b'x'; 60]));
    let limits = Limits {
        max_stream_bytes: 40,
        max_streams: 10,
    };
    let (got, stats) = read_with(Cursor::new(pcap(Link::Ethernet, &packets)), limits);
    assert_eq!(
        got,
        [bad(
            &big.location(),
            "stream dropped: more than 40 bytes buffered"
        )]
    );
    assert_eq!(stats.dropped_streams, 1);

    // One stream at a time: idle keep-alive connections are evicted and
    // picked up again (mid-way) by their next request.
    let (mut a, mut b) = (Session::new(40001), Session::new(40002));
    let mut packets = a.handshake();
    packets.push(a.send(GET));
    packets.extend(b.handshake());
    packets.push(b.send(POST));
    packets.push(a.send(POST));
    packets.push(b.send(GET));
    let limits = Limits {
        max_streams: 1,
        ..Limits::default()
    };
    let (got, stats) = read_with(Cursor::new(pcap(Link::Ethernet, &packets)), limits);
    assert_eq!(got, [get(), post(), post(), get()]);
    assert_eq!((stats.streams, stats.incomplete_streams), (4, 0));
}

#[test]
fn read_errors_are_returned() {
    let capture = pcap(Link::Ethernet, &simple_session(Link::Ethernet, false));
    let failing = Cursor::new(capture[..100].to_vec()).chain(FailingReader);
    let mut source = PcapSource::new(Box::new(failing));
    let error = loop {
        match source.next() {
            Ok(Next::End) => panic!("the error was swallowed"),
            Ok(_) => {}
            Err(e) => break e,
        }
    };
    assert_eq!(error.to_string(), "pipe broke");
}

struct FailingReader;

impl Read for FailingReader {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Err(io::Error::other("pipe broke"))
    }
}

#[test]
fn buffered_when_requests_taken_from_the_capture_wait() {
    // Three pipelined requests in one segment: taking the first leaves two
    // in the queue; after the last, the next record needs more capture.
    let mut s = Session::new(40000);
    let mut packets = s.handshake();
    packets.push(s.send(&[POST, GET, POST].concat()));
    let mut source = PcapSource::new(Box::new(io::Cursor::new(pcap(Link::Ethernet, &packets))));
    assert_eq!(got(source.next().unwrap()), post());
    assert!(source.buffered());
    assert_eq!(got(source.next().unwrap()), get());
    assert!(source.buffered());
    assert_eq!(got(source.next().unwrap()), post());
    assert!(!source.buffered());
}
