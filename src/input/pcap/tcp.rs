//! TCP reassembly of one direction of a connection: orders segments by
//! sequence number (buffering segments that arrive early), drops
//! retransmitted and overlapping bytes, and remembers where a FIN ends the
//! stream. Sequence numbers wrap; offsets into the stream do not.

use std::collections::BTreeMap;

use bytes::BytesMut;

/// The reassembly state of one direction.
#[derive(Debug, Default)]
pub(super) struct Reassembler {
    /// Sequence number of the next byte to deliver; set by SYN or by the
    /// first segment seen (a stream seen mid-way starts there).
    next: Option<u32>,
    /// Bytes delivered so far: the stream offset of `next`.
    delivered: u64,
    /// Segments past a hole, by stream offset.
    pending: BTreeMap<u64, Vec<u8>>,
    pending_bytes: usize,
    /// Stream offset at which the FIN was sent.
    fin_at: Option<u64>,
}

impl Reassembler {
    /// Starts the stream after a SYN with initial sequence number `isn`
    /// (ignored once the start is known, e.g. for a retransmitted SYN).
    pub fn syn(&mut self, isn: u32) {
        self.next.get_or_insert(isn.wrapping_add(1));
    }

    /// Adds a segment whose first payload byte has sequence number `seq`,
    /// appending every byte that became contiguous to `out`.
    pub fn push(&mut self, seq: u32, data: &[u8], fin: bool, out: &mut BytesMut) {
        let next = *self.next.get_or_insert(seq);
        // Relative to `next`, within ±2 GiB: sequence numbers wrap.
        let start = self.delivered as i64 + i64::from(seq.wrapping_sub(next) as i32);
        let end = start + data.len() as i64;
        if fin {
            self.fin_at.get_or_insert(end.max(0) as u64);
        }
        let delivered = self.delivered as i64;
        if end <= delivered {
            return; // a retransmission of bytes already delivered
        }
        if start > delivered {
            let slot = self.pending.entry(start as u64).or_default();
            if data.len() > slot.len() {
                self.pending_bytes += data.len() - slot.len();
                *slot = data.to_vec();
            }
            return;
        }
        self.deliver(&data[(delivered - start) as usize..], out);
        while let Some(entry) = self.pending.first_entry() {
            if *entry.key() > self.delivered {
                break;
            }
            let (start, data) = entry.remove_entry();
            self.pending_bytes -= data.len();
            let overlap = (self.delivered - start) as usize;
            if let Some(fresh) = data.get(overlap..) {
                self.deliver(fresh, out);
            }
        }
    }

    /// Whether the FIN was reached: every byte before it was delivered.
    pub fn finished(&self) -> bool {
        self.fin_at.is_some_and(|fin| self.delivered >= fin)
    }

    /// Whether bytes are missing: segments wait behind a hole, or the FIN
    /// lies beyond the delivered bytes.
    pub fn has_gap(&self) -> bool {
        !self.pending.is_empty() || self.fin_at.is_some_and(|fin| self.delivered < fin)
    }

    /// Bytes held while waiting for a hole to fill.
    pub fn buffered(&self) -> usize {
        self.pending_bytes
    }

    fn deliver(&mut self, data: &[u8], out: &mut BytesMut) {
        out.extend_from_slice(data);
        self.delivered += data.len() as u64;
        self.next = self.next.map(|next| next.wrapping_add(data.len() as u32));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(r: &mut Reassembler, seq: u32, data: &[u8], out: &mut BytesMut) {
        r.push(seq, data, false, out);
    }

    #[test]
    fn orders_dedups_and_wraps() {
        let mut r = Reassembler::default();
        let mut out = BytesMut::new();
        let isn = u32::MAX - 3; // data starts at MAX-2 and wraps after 3 bytes
        r.syn(isn);
        push(&mut r, isn.wrapping_add(7), b"ghij", &mut out); // early
        push(&mut r, isn.wrapping_add(5), b"efgh", &mut out); // early, overlaps
        assert!(r.has_gap());
        assert_eq!(r.buffered(), 8);
        push(&mut r, isn.wrapping_add(1), b"abc", &mut out);
        push(&mut r, isn.wrapping_add(1), b"abc", &mut out); // retransmission
        push(&mut r, isn.wrapping_add(3), b"cd", &mut out); // overlap, fills
        assert_eq!(&out[..], b"abcdefghij");
        assert!(!r.has_gap());
        assert_eq!(r.buffered(), 0);
        r.push(isn.wrapping_add(11), b"", true, &mut out);
        assert!(r.finished());
    }

    #[test]
    fn fin_past_a_hole_is_a_gap() {
        let mut r = Reassembler::default();
        let mut out = BytesMut::new();
        push(&mut r, 100, b"ab", &mut out); // mid-stream: starts here
        r.push(105, b"f", true, &mut out);
        assert_eq!(&out[..], b"ab");
        assert!(r.has_gap());
        assert!(!r.finished());
    }
}
