//! The connection table: maps TCP segments to connections, decides which
//! side is the client (by SYN, or else by which side sends a request head
//! first), feeds the client→server bytes through reassembly and the request
//! parser, and reports each connection that ends with an incomplete request,
//! a sequence gap, or bytes that are not HTTP. Bounded by [`Limits`].

use std::collections::HashMap;
use std::mem;
use std::net::SocketAddr;

use super::capture::Segment;
use super::http::RequestParser;
use super::tcp::Reassembler;
use super::{Limits, Output};

/// A connection's two endpoints, lower first; direction 0 is `.0 → .1`.
type Key = (SocketAddr, SocketAddr);

/// All tracked connections.
#[derive(Default)]
pub(super) struct Tracker {
    conns: HashMap<Key, Conn>,
    opened: u64,
    limits: Limits,
}

struct Conn {
    /// Order of first appearance, for a deterministic report at the end.
    id: u64,
    /// Packet number of the last segment, for evicting the least active.
    last_seen: u64,
    state: State,
}

enum State {
    /// No SYN seen: both directions are parsed until one sends a request
    /// head. Indexed by direction.
    Probing(Box<[Side; 2]>),
    /// The client's direction and its stream; the server's bytes are ignored.
    Client(usize, Box<Side>),
    /// Finished or given up; later segments (ACKs, retransmissions) are
    /// ignored until a new SYN reuses the addresses.
    Closed,
}

/// One direction of a connection.
#[derive(Default)]
struct Side {
    reasm: Reassembler,
    http: RequestParser,
    /// Why this direction is not a client (probing only).
    error: Option<String>,
}

/// Why a connection stops being parsed.
enum End {
    /// The stream ended (FIN, RST, end of capture, eviction): report what
    /// is incomplete.
    Closed(&'static str),
    /// This direction's bytes are not HTTP.
    NotHttp(usize, String),
    /// This direction buffered more than the limit.
    Overflow(usize),
}

impl Tracker {
    pub fn new(limits: Limits) -> Self {
        Tracker {
            limits,
            ..Tracker::default()
        }
    }

    /// Handles one segment of packet number `packet`.
    pub fn segment(&mut self, segment: &Segment, packet: u64, out: &mut Output) {
        let dir = usize::from(segment.src > segment.dst);
        let key = if dir == 0 {
            (segment.src, segment.dst)
        } else {
            (segment.dst, segment.src)
        };
        let opening = segment.syn && !segment.ack;
        if opening
            && self
                .conns
                .get(&key)
                .is_some_and(|c| matches!(c.state, State::Closed))
        {
            self.conns.remove(&key);
        }
        if !self.conns.contains_key(&key) {
            if !segment.syn && segment.payload.is_empty() {
                return; // a bare ACK, FIN or RST of a connection we do not know
            }
            self.make_room(out);
            let state = if segment.syn {
                // The SYN's sender is the client; a SYN-ACK's receiver is.
                State::Client(if segment.ack { 1 - dir } else { dir }, Box::default())
            } else {
                State::Probing(Default::default())
            };
            self.opened += 1;
            out.stats.streams += 1;
            self.conns.insert(
                key,
                Conn {
                    id: self.opened,
                    last_seen: packet,
                    state,
                },
            );
        }
        if let Some(conn) = self.conns.get_mut(&key) {
            conn.last_seen = packet;
            if let Some(end) = conn.segment(dir, segment, &self.limits, out) {
                conn.close(key, end, &self.limits, out);
            }
        }
    }

    /// Closes every connection at the end of the capture, in order of first
    /// appearance.
    pub fn finish(&mut self, out: &mut Output) {
        let mut conns: Vec<_> = self.conns.drain().collect();
        conns.sort_by_key(|(_, conn)| conn.id);
        for (key, mut conn) in conns {
            conn.close(key, End::Closed("end of capture"), &self.limits, out);
        }
    }

    /// Evicts one connection if the table is full: the least recently
    /// active closed one, else the least recently active open one.
    fn make_room(&mut self, out: &mut Output) {
        if self.conns.len() < self.limits.max_streams {
            return;
        }
        let victim = self
            .conns
            .iter()
            .min_by_key(|(_, c)| (!matches!(c.state, State::Closed), c.last_seen))
            .map(|(key, _)| *key);
        if let Some((key, mut conn)) = victim.and_then(|key| self.conns.remove_entry(&key)) {
            conn.close(
                key,
                End::Closed("eviction (too many open streams)"),
                &self.limits,
                out,
            );
        }
    }
}

impl Conn {
    /// Feeds a segment sent in direction `dir`; says if the connection ends.
    fn segment(
        &mut self,
        dir: usize,
        segment: &Segment,
        limits: &Limits,
        out: &mut Output,
    ) -> Option<End> {
        if matches!(self.state, State::Closed) {
            return None;
        }
        if segment.rst {
            return Some(End::Closed("RST"));
        }
        let side = match &mut self.state {
            State::Closed => return None,
            State::Client(client, side) if *client != dir => {
                if segment.syn {
                    // A SYN-ACK acknowledges the client's initial sequence + 1.
                    side.reasm.syn(segment.ack_number.wrapping_sub(1));
                }
                return None;
            }
            State::Client(_, side) => side,
            State::Probing(sides) if sides[dir].error.is_some() => return None,
            State::Probing(sides) => &mut sides[dir],
        };
        let data_seq = if segment.syn {
            side.reasm.syn(segment.seq);
            segment.seq.wrapping_add(1)
        } else {
            segment.seq
        };
        side.reasm
            .push(data_seq, &segment.payload, segment.fin, side.http.buffer());
        let mut requests = Vec::new();
        let parsed = side.http.parse(&mut requests);
        let finished = side.reasm.finished();
        let recognized = side.http.recognized();
        for request in requests {
            out.request(request);
        }
        match (&mut self.state, parsed) {
            (State::Client(..), Err(reason)) => return Some(End::NotHttp(dir, reason)),
            (State::Probing(sides), Err(reason)) => {
                sides[dir] = Side {
                    error: Some(reason),
                    ..Side::default()
                };
                if let Some(first) = sides[1 - dir].error.take() {
                    return Some(End::NotHttp(1 - dir, first));
                }
            }
            (State::Probing(sides), Ok(())) if recognized => {
                self.state = State::Client(dir, Box::new(mem::take(&mut sides[dir])));
            }
            _ => {}
        }
        if self.buffered() > limits.max_stream_bytes {
            return Some(End::Overflow(dir));
        }
        finished.then_some(End::Closed("FIN"))
    }

    /// Bytes buffered for this connection.
    fn buffered(&self) -> usize {
        let sides: &[Side] = match &self.state {
            State::Probing(sides) => &sides[..],
            State::Client(_, side) => std::slice::from_ref(side),
            State::Closed => &[],
        };
        sides
            .iter()
            .map(|s| s.reasm.buffered() + s.http.buffered())
            .sum()
    }

    /// Stops parsing the connection and reports why, if something was lost.
    fn close(&mut self, key: Key, end: End, limits: &Limits, out: &mut Output) {
        let state = mem::replace(&mut self.state, State::Closed);
        let (dir, reason) = match end {
            End::NotHttp(dir, reason) => {
                out.stats.unparsable_streams += 1;
                (dir, format!("not HTTP: {reason}"))
            }
            End::Overflow(dir) => {
                out.stats.dropped_streams += 1;
                let limit = limits.max_stream_bytes;
                (
                    dir,
                    format!("stream dropped: more than {limit} bytes buffered"),
                )
            }
            End::Closed(when) => match unfinished(state, when) {
                Some(Unfinished::Incomplete(dir, reason)) => {
                    out.stats.incomplete_streams += 1;
                    (dir, reason)
                }
                Some(Unfinished::NotHttp(dir, reason)) => {
                    out.stats.unparsable_streams += 1;
                    (dir, format!("not HTTP: {reason}"))
                }
                None => return,
            },
        };
        let (from, to) = if dir == 0 { key } else { (key.1, key.0) };
        out.malformed(format!("stream {from} → {to}"), reason);
    }
}

/// What a closing connection leaves unparsed.
enum Unfinished {
    Incomplete(usize, String),
    NotHttp(usize, String),
}

/// The client's lost bytes, if any. A connection still probing reports a
/// direction with pending bytes that were not rejected, else a rejected one.
fn unfinished(state: State, when: &str) -> Option<Unfinished> {
    let incomplete = |dir: usize, side: &Side| {
        let reason = if side.reasm.has_gap() {
            "gap in TCP sequence".to_owned()
        } else if !side.http.is_idle() {
            format!("incomplete request at {when}")
        } else {
            return None;
        };
        Some(Unfinished::Incomplete(dir, reason))
    };
    match state {
        State::Client(dir, side) => incomplete(dir, &side),
        State::Probing(sides) => {
            let pending = sides
                .iter()
                .enumerate()
                .filter(|(_, side)| side.error.is_none())
                .find_map(|(dir, side)| incomplete(dir, side));
            pending.or_else(|| {
                let (dir, side) = (*sides)
                    .into_iter()
                    .enumerate()
                    .find(|(_, s)| s.error.is_some())?;
                Some(Unfinished::NotHttp(dir, side.error?))
            })
        }
        State::Closed => None,
    }
}
