//! Capture framing and link layers: reads classic pcap (both byte orders,
//! micro- and nanosecond magic) and pcapng (several sections and interfaces)
//! as a stream with `pcap-parser`, and decodes each packet's link layer
//! (Ethernet with VLAN/QinQ, Linux SLL/SLL2, raw IP, BSD loopback) and IP
//! layer with `etherparse` down to an owned TCP [`Segment`].

use std::io::{self, Cursor, Read};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};

use etherparse::{EtherType, NetSlice, SlicedPacket, TransportSlice};
use pcap_parser::traits::{PcapNGPacketBlock, PcapReaderIterator};
use pcap_parser::{Block, LegacyPcapReader, Linktype, PcapBlockOwned, PcapError, PcapNGReader};

use crate::input::Malformed;

/// Size of the read buffer, which bounds the largest record we can read.
const BUFFER_SIZE: usize = 1 << 20;
/// Magic of a pcapng Section Header Block.
const PCAPNG_MAGIC: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];
/// Classic pcap magics as read little-endian: micro, nano, modified (LE),
/// then micro, nano (big-endian files).
const PCAP_MAGICS: [u32; 5] = [
    0xa1b2_c3d4,
    0xa1b2_3c4d,
    0xa1b2_cd34,
    0xd4c3_b2a1,
    0x4d3c_b2a1,
];
/// Length of the classic pcap file header.
const PCAP_HEADER_LEN: usize = 24;
/// Smallest valid Section Header Block.
const MIN_SHB_LEN: usize = 28;
/// Length of a Linux cooked v2 (SLL2) header.
const SLL2_HEADER_LEN: usize = 20;
/// Most interfaces tracked per section; packets on later ones are unparsable.
const MAX_INTERFACES: usize = 1 << 16;
/// LINKTYPE_RAW as some BSDs number it (DLT_RAW 12 and 14).
const RAW_ALIASES: [i32; 2] = [12, 14];

/// One TCP segment, with its payload copied out of the capture buffer.
#[derive(Debug)]
pub(super) struct Segment {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub ack_number: u32,
    pub syn: bool,
    pub ack: bool,
    pub fin: bool,
    pub rst: bool,
    pub payload: Vec<u8>,
}

/// What reading the capture produced next.
#[derive(Debug)]
pub(super) enum Event {
    /// A TCP segment.
    Segment(Segment),
    /// A packet that could not be decoded (IP fragment, bad headers, unknown
    /// interface or link type); counted, not reported. Packets that decode
    /// but are not TCP are skipped without an event.
    Unparsable,
    /// The first packet of an interface whose link type is not supported.
    Unsupported(Malformed),
    /// The capture cannot be read further (truncated or corrupt); final.
    Failed(Malformed),
    /// The capture ended cleanly.
    End,
}

/// A streaming reader of packets from a pcap or pcapng byte stream.
pub(super) struct Capture {
    reader: Box<dyn PcapReaderIterator + Send>,
    io_error: Arc<Mutex<Option<io::Error>>>,
    interfaces: Vec<Interface>,
    packets: u64,
}

/// An interface of the current section (classic pcap has exactly one).
struct Interface {
    linktype: Linktype,
    reported: bool,
}

impl Capture {
    /// Reads just enough of `reader` to recognise the format. The outer error
    /// is an I/O failure, the inner one says why this is not a capture.
    pub fn open(mut reader: Box<dyn Read + Send>) -> io::Result<Result<Capture, String>> {
        let mut prefix = Vec::new();
        fill(&mut reader, &mut prefix, 12)?;
        let Some(magic) = prefix.get(..4) else {
            return Ok(Err(format!(
                "not a pcap or pcapng capture ({} bytes of input)",
                prefix.len()
            )));
        };
        let pcapng = magic == PCAPNG_MAGIC;
        let header_len = if pcapng {
            match shb_len(&prefix) {
                Some(len) => len,
                None => return Ok(Err("not a pcapng capture (bad section header)".into())),
            }
        } else if PCAP_MAGICS.contains(&u32::from_le_bytes([
            magic[0], magic[1], magic[2], magic[3],
        ])) {
            PCAP_HEADER_LEN
        } else {
            return Ok(Err(
                "not a pcap or pcapng capture (unknown magic number)".into()
            ));
        };
        fill(&mut reader, &mut prefix, header_len)?;
        let io_error = Arc::new(Mutex::new(None));
        // The parsers read their header with one `read` call: hand them the
        // complete header first, then the rest of the stream.
        let stream = Cursor::new(prefix).chain(KeepError {
            inner: reader,
            error: Arc::clone(&io_error),
        });
        let reader: Result<Box<dyn PcapReaderIterator + Send>, _> = if pcapng {
            PcapNGReader::new(BUFFER_SIZE, stream).map(|r| Box::new(r) as _)
        } else {
            LegacyPcapReader::new(BUFFER_SIZE, stream).map(|r| Box::new(r) as _)
        };
        Ok(match reader {
            Ok(reader) => Ok(Capture {
                reader,
                io_error,
                interfaces: Vec::new(),
                packets: 0,
            }),
            Err(_) => Err("not a pcap or pcapng capture (bad file header)".into()),
        })
    }

    /// Packets read so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Reads up to the next packet (blocking on the input as needed).
    pub fn next(&mut self) -> io::Result<Event> {
        loop {
            let Capture {
                reader,
                interfaces,
                packets,
                ..
            } = self;
            match reader.next() {
                Ok((offset, block)) => {
                    let event = decode_block(block, interfaces, packets);
                    reader.consume(offset);
                    if let Some(event) = event {
                        return Ok(event);
                    }
                }
                Err(PcapError::Eof) => return Ok(Event::End),
                Err(PcapError::Incomplete(_)) => {
                    let before = reader.data().len();
                    if reader.refill().is_err() {
                        return Err(self.take_io_error());
                    }
                    if reader.data().len() == before && !reader.reader_exhausted() {
                        return Ok(self.failed("record larger than the 1 MiB read buffer"));
                    }
                }
                Err(PcapError::UnexpectedEof) => {
                    let reason = format!("truncated capture at packet {}", self.packets + 1);
                    return Ok(self.failed(&reason));
                }
                Err(PcapError::BufferTooSmall) => {
                    return Ok(self.failed("record larger than the 1 MiB read buffer"));
                }
                Err(_) => return Ok(self.failed("corrupt capture data")),
            }
        }
    }

    /// The final event for a capture that cannot be read past the next packet.
    fn failed(&self, reason: &str) -> Event {
        Event::Failed(Malformed {
            location: format!("packet {}", self.packets + 1),
            reason: reason.to_owned(),
        })
    }

    /// The I/O error that made the parser's read fail.
    fn take_io_error(&self) -> io::Error {
        self.io_error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_else(|| io::Error::other("capture read failed"))
    }
}

/// Reads from `reader` until `buf` holds `len` bytes or the input ends.
fn fill(reader: &mut dyn Read, buf: &mut Vec<u8>, len: usize) -> io::Result<()> {
    if buf.len() < len {
        let want = (len - buf.len()) as u64;
        reader.take(want).read_to_end(buf)?;
    }
    Ok(())
}

/// Total length of the Section Header Block starting `prefix` (which holds
/// at least its first 12 bytes), if plausible.
fn shb_len(prefix: &[u8]) -> Option<usize> {
    let len: [u8; 4] = prefix.get(4..8)?.try_into().ok()?;
    let len = match prefix.get(8..12)? {
        [0x4d, 0x3c, 0x2b, 0x1a] => u32::from_le_bytes(len),
        [0x1a, 0x2b, 0x3c, 0x4d] => u32::from_be_bytes(len),
        _ => return None,
    };
    let len = usize::try_from(len).ok()?;
    (MIN_SHB_LEN..BUFFER_SIZE).contains(&len).then_some(len)
}

/// A reader that keeps its last error for [`Capture`] to return, since
/// `pcap-parser` turns every read error into a bare `ReadError`. It also
/// retries interrupted reads.
struct KeepError {
    inner: Box<dyn Read + Send>,
    error: Arc<Mutex<Option<io::Error>>>,
}

impl Read for KeepError {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.inner.read(buf) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let kind = e.kind();
                    *self.error.lock().unwrap_or_else(PoisonError::into_inner) = Some(e);
                    return Err(kind.into());
                }
                ok => return ok,
            }
        }
    }
}

/// Tracks interfaces from header blocks and decodes packet blocks.
fn decode_block(
    block: PcapBlockOwned<'_>,
    interfaces: &mut Vec<Interface>,
    packets: &mut u64,
) -> Option<Event> {
    let (interface, data) = match &block {
        PcapBlockOwned::LegacyHeader(header) => {
            *interfaces = vec![Interface::new(header.network)];
            return None;
        }
        PcapBlockOwned::NG(Block::SectionHeader(_)) => {
            interfaces.clear();
            return None;
        }
        PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
            if interfaces.len() < MAX_INTERFACES {
                interfaces.push(Interface::new(idb.linktype));
            }
            return None;
        }
        PcapBlockOwned::Legacy(packet) => (0, packet.data),
        PcapBlockOwned::NG(Block::EnhancedPacket(epb)) => (epb.if_id, epb.packet_data()),
        PcapBlockOwned::NG(Block::SimplePacket(spb)) => (0, spb.packet_data()),
        PcapBlockOwned::NG(_) => return None,
    };
    *packets += 1;
    let Some(interface) = usize::try_from(interface)
        .ok()
        .and_then(|i| interfaces.get_mut(i))
    else {
        return Some(Event::Unparsable);
    };
    match decode_link(interface.linktype, data) {
        Link::Tcp(segment) => Some(Event::Segment(segment)),
        Link::Other => None,
        Link::Unsupported if !interface.reported => {
            interface.reported = true;
            Some(Event::Unsupported(Malformed {
                location: format!("packet {packets}"),
                reason: format!("unsupported link type {}", interface.linktype.0),
            }))
        }
        Link::Unparsable | Link::Unsupported => Some(Event::Unparsable),
    }
}

impl Interface {
    fn new(linktype: Linktype) -> Self {
        Interface {
            linktype,
            reported: false,
        }
    }
}

/// What one packet is, as far as this module cares.
enum Link {
    Tcp(Segment),
    /// Decoded, but not TCP over IP (ARP, UDP, ...): skipped silently.
    Other,
    /// Headers that do not decode (often a short snaplen), or an IP fragment
    /// (fragments are not reassembled).
    Unparsable,
    /// The interface's link type is not one we decode.
    Unsupported,
}

/// Decodes one packet down to TCP.
fn decode_link(linktype: Linktype, data: &[u8]) -> Link {
    let sliced = match linktype {
        Linktype::ETHERNET => SlicedPacket::from_ethernet(data),
        Linktype::LINUX_SLL => SlicedPacket::from_linux_sll(data),
        Linktype::LINUX_SLL2 => match (data.get(..2), data.get(SLL2_HEADER_LEN..)) {
            (Some(&[hi, lo]), Some(payload)) => {
                SlicedPacket::from_ether_type(EtherType(u16::from_be_bytes([hi, lo])), payload)
            }
            _ => return Link::Unparsable,
        },
        // A 4-byte address family (host or network order), then IP.
        Linktype::NULL | Linktype::LOOP => match data.get(4..) {
            Some(ip) => SlicedPacket::from_ip(ip),
            None => return Link::Unparsable,
        },
        Linktype::RAW | Linktype::IPV4 | Linktype::IPV6 => SlicedPacket::from_ip(data),
        Linktype(other) if RAW_ALIASES.contains(&other) => SlicedPacket::from_ip(data),
        _ => return Link::Unsupported,
    };
    let Ok(sliced) = sliced else {
        return Link::Unparsable;
    };
    if sliced.is_ip_payload_fragmented() {
        return Link::Unparsable;
    }
    let (src, dst): (IpAddr, IpAddr) = match &sliced.net {
        Some(NetSlice::Ipv4(ip)) => (
            ip.header().source_addr().into(),
            ip.header().destination_addr().into(),
        ),
        Some(NetSlice::Ipv6(ip)) => (
            ip.header().source_addr().into(),
            ip.header().destination_addr().into(),
        ),
        _ => return Link::Other,
    };
    let Some(TransportSlice::Tcp(tcp)) = &sliced.transport else {
        return Link::Other;
    };
    Link::Tcp(Segment {
        src: SocketAddr::new(src, tcp.source_port()),
        dst: SocketAddr::new(dst, tcp.destination_port()),
        seq: tcp.sequence_number(),
        ack_number: tcp.acknowledgment_number(),
        syn: tcp.syn(),
        ack: tcp.ack(),
        fin: tcp.fin(),
        rst: tcp.rst(),
        payload: tcp.payload().to_vec(),
    })
}
