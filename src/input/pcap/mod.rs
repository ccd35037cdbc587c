//! Packet-capture input: HTTP/1.x requests read out of a pcap or pcapng
//! stream (a file, or a live pipe such as `tcpdump -U -w - ...`).
//!
//! [`PcapSource`] reads the capture packet by packet (`capture`),
//! reassembles each TCP connection's client→server bytes (`tcp`, `conn`)
//! and parses requests out of them (`http`). It never reads ahead of what
//! it needs: a request is yielded as soon as the packet completing it has
//! been read. Requests are yielded in order of completion, so the requests
//! of one connection keep their order, while a request that completes
//! earlier on another connection may come first.

mod capture;
mod conn;
mod http;
mod tcp;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;
use std::io::{self, Read};

use self::capture::{Capture, Event};
use self::conn::Tracker;
use super::{Malformed, Next, Request, Source};

/// Bounds on the memory a capture may make the source hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes buffered for one connection (out-of-order segments plus
    /// an incomplete request); beyond it the connection is dropped.
    pub max_stream_bytes: usize,
    /// Most connections tracked at once; beyond it the least recently
    /// active one is evicted.
    pub max_streams: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_stream_bytes: 64 << 20,
            max_streams: 10_000,
        }
    }
}

/// Counters of what the capture held, for the run's report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Packets read.
    pub packets: u64,
    /// Packets that could not be decoded (IP fragments, bad or truncated
    /// headers, unsupported link types).
    pub unparsable_packets: u64,
    /// TCP connections seen.
    pub streams: u64,
    /// Requests extracted.
    pub requests: u64,
    /// Connections that ended with an incomplete request or a sequence gap.
    pub incomplete_streams: u64,
    /// Connections whose client bytes are not HTTP/1.x.
    pub unparsable_streams: u64,
    /// Connections dropped for buffering more than [`Limits::max_stream_bytes`].
    pub dropped_streams: u64,
}

/// A [`Source`] of the HTTP/1.x requests in a pcap or pcapng capture.
pub struct PcapSource {
    input: Input,
    tracker: Tracker,
    out: Output,
}

enum Input {
    /// Not read yet: the header is read by the first `next`.
    Unopened(Box<dyn Read + Send>),
    Open(Capture),
    Done,
}

/// Records waiting to be yielded, and the counters.
#[derive(Default)]
struct Output {
    queue: VecDeque<Next>,
    stats: Stats,
}

impl Output {
    fn request(&mut self, request: Request) {
        self.stats.requests += 1;
        self.queue.push_back(Next::Request(request));
    }

    fn malformed(&mut self, location: String, reason: String) {
        self.queue
            .push_back(Next::Malformed(Malformed { location, reason }));
    }
}

impl PcapSource {
    /// A source reading a capture from `reader`, with default [`Limits`].
    /// Nothing is read until the first [`Source::next`].
    pub fn new(reader: Box<dyn Read + Send>) -> Self {
        Self::with_limits(reader, Limits::default())
    }

    /// A source reading a capture from `reader` within `limits`.
    pub fn with_limits(reader: Box<dyn Read + Send>, limits: Limits) -> Self {
        PcapSource {
            input: Input::Unopened(reader),
            tracker: Tracker::new(limits),
            out: Output::default(),
        }
    }

    /// What was read so far.
    pub fn stats(&self) -> Stats {
        self.out.stats
    }

    /// Reports every connection still open and stops reading.
    fn end(&mut self) {
        self.tracker.finish(&mut self.out);
        self.input = Input::Done;
    }
}

impl Source for PcapSource {
    fn buffered(&self) -> bool {
        // Records already taken out of the capture wait in the queue.
        !self.out.queue.is_empty()
    }

    fn summary(&self) -> Option<String> {
        let s = self.stats();
        Some(format!(
            "capture: {} packets, {} TCP streams, {} requests extracted, {} streams incomplete, {} not HTTP, {} dropped over the size limit, {} packets unparsable",
            s.packets, s.streams, s.requests, s.incomplete_streams, s.unparsable_streams, s.dropped_streams, s.unparsable_packets
        ))
    }

    fn next(&mut self) -> io::Result<Next> {
        loop {
            if let Some(next) = self.out.queue.pop_front() {
                return Ok(next);
            }
            let capture = match &mut self.input {
                Input::Done => return Ok(Next::End),
                Input::Open(capture) => capture,
                Input::Unopened(_) => {
                    if let Input::Unopened(reader) = std::mem::replace(&mut self.input, Input::Done)
                    {
                        match Capture::open(reader)? {
                            Ok(capture) => self.input = Input::Open(capture),
                            Err(reason) => self.out.malformed("input".into(), reason),
                        }
                    }
                    continue;
                }
            };
            let event = capture.next()?;
            let packet = capture.packets();
            self.out.stats.packets = packet;
            match event {
                Event::Segment(segment) => self.tracker.segment(&segment, packet, &mut self.out),
                Event::Unparsable => self.out.stats.unparsable_packets += 1,
                Event::Unsupported(malformed) => {
                    self.out.stats.unparsable_packets += 1;
                    self.out.queue.push_back(Next::Malformed(malformed));
                }
                Event::Failed(malformed) => {
                    self.out.queue.push_back(Next::Malformed(malformed));
                    self.end();
                }
                Event::End => self.end(),
            }
        }
    }
}
